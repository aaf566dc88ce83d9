// distsampler StreamingShardSampler: disjoint, balanced, local and resumable reads over sharded datasets.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STREAMING_SHARD_SAMPLER_HPP
#define DISTSAMPLER_STREAMING_SHARD_SAMPLER_HPP

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "detail/block_deal.hpp"
#include "../error.hpp"
#include "detail/remaining_segment.hpp"
#include "detail/catalog.hpp"
#include "detail/epoch_order.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "detail/schedule.hpp"
#include "stream.hpp"
#include "detail/walk.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "../world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Streams a dataset made of shards (files of known sample counts) to W ranks x K
/// workers, keeping every promise of the README while each consumer reads locally.
///
/// Composed of: a ShardCatalog (sizes, offsets, total), the epoch's ShardEpochOrder G
/// (a function of seed, epoch, shard sizes and order options only, never of world size
/// or worker count), the RemainingSegment V of G not yet consumed (all of G after
/// set_epoch, or what a resumed SamplerState leaves) and V's BlockDeal over the K =
/// world_size * num_workers consumers, held together in one immutable ShardWalk.
/// Consumer k = worker * W + rank first reads its 1/K contiguous share of V's leading
/// holes (none in a fresh epoch), then blocks k, k + K, k + 2K ... of the rest, then an
/// equal contiguous share of the last partial round, then the tail slot (pad: a flagged
/// duplicate of one of the segment's last samples). A state saved after any per-consumer
/// progress (state(...)) records exactly the consumed positions of G (a prefix plus, per
/// consumer, a few ranges and one strided entry ahead of it), so it resumes exactly once
/// on any world size and worker count, and a resumed segment can be saved and resumed
/// again. Resumed with the same world size and worker count after an equal stop inside
/// the full rounds, every stream continues sample for sample where it stopped, padding
/// flags included; only the samples a pad tail's flagged duplicates repeat may differ
/// (they are the resumed segment's last samples, wrapping around it when fewer remain
/// than padding slots). After any other stop (unequal per-worker progress, or inside the
/// last partial round) the remaining positions are dealt anew: each still read once,
/// but not in the uninterrupted streams' order.
///
/// Node-aware reading: when World's local_world_size (> 1) divides world_size, runs are
/// of 1 and max_open_shards divides canonical_streams, the N = world_size /
/// local_world_size nodes form G = gcd(N, max_open_shards) node groups (node_groups()); group
/// g reads only part g of every block of G, a contiguous 1/G of the lanes, so the ranks of
/// one node read shards other groups do not (about 1.0x the dataset per epoch summed over
/// nodes instead of about Nx). Consumers are then dealt blocks of block_size() =
/// max_open_shards / G samples. Ranks must be numbered node by node (rank = node *
/// local_world_size + local_rank). The global order does not change, so states resume on
/// any world and node shape. docs/SHARDS.md has the measured multiples and the limits.
///
/// Promises: consumers are disjoint and covering (pad: plus flagged duplicates, drop:
/// minus R mod K dropped positions); every consumer has the same count (uneven: counts
/// differ by at most one, and ranks by at most one); a consumer has at most
/// max_open_shards() read_plan ranges (runs of consecutive offsets) open at once. Whether
/// its reads of one shard are sequential depends on the options: with the defaults
/// (ShardSamplerOptions::mixed()) a range is often one record and a shard's offsets go up
/// and down; ShardSamplerOptions::sequential() reads each shard in strictly increasing
/// offsets, one shard at a time (the presets' contracts say exactly what each gives).
///
/// Throws config_error from the constructors for a bad World, num_workers 0, a size sum
/// over 2^64 - 1, or bad options (messages name the parameter and the value).
/// Exception safety: set_epoch and resume build the new segment aside and commit it with
/// a pointer swap; when they throw, the sampler is unchanged and reads what it read before.
/// Complexity: construction and set_epoch O(shards) time and memory; sample(w, i)
/// O(log shards) (plus O(log ranges) in a resumed segment with holes); fill(w, i, n, out)
/// O(n) plus one lookup per range; iteration lazy. Deterministic on every platform.
/// Thread-safety: const members may run concurrently; copies share the immutable segment.
///
/// Iterator invalidation: none. stream(w) and its iterators hold the segment they were
/// made from; after set_epoch, resume, assignment or destruction of the sampler they keep
/// reading that old segment, consistently, to its end (call stream(w) again for the new
/// one). Vectors returned by read_plan and remaining_ranges are copies.
class StreamingShardSampler {
 public:
  using options_type = ShardSamplerOptions;  ///< the options type it is built from
  using iterator = ShardStreamIterator;
  using worker_stream = ShardWorkerStream;

  /// Epoch 0 from its beginning. Throws config_error as described above.
  StreamingShardSampler(std::vector<std::uint64_t> shard_sizes, World world, ShardSamplerOptions options = {})
      : world_(validated(world, options)),
        options_(options),
        slots_(node_slots(world_, options_)),
        catalog_(std::make_shared<const ShardCatalog>(std::move(shard_sizes), "StreamingShardSampler")),
        walk_(fresh(0)),
        key_(std::make_shared<const detail::ShardStateKey>(walk_->order())) {}

  /// The segment `state` leaves, as resume(state). Throws config_error as the first
  /// constructor, state_error as resume.
  StreamingShardSampler(std::vector<std::uint64_t> shard_sizes, World world, ShardSamplerOptions options,
                        const SamplerState& state)
      : StreamingShardSampler(std::move(shard_sizes), world, options) {
    resume(state);
  }

  /// Copies share the immutable catalog and segment. There is no separate move: moving
  /// copies, so a moved-from sampler stays valid and unchanged (two reference counts).
  StreamingShardSampler(const StreamingShardSampler&) = default;
  StreamingShardSampler& operator=(const StreamingShardSampler&) = default;
  ~StreamingShardSampler() = default;

  /// Selects the epoch and starts it from its beginning. O(shards). Strong guarantee.
  void set_epoch(std::uint64_t epoch) { walk_ = fresh(epoch); }

  /// Continues the epoch recorded in `state` (saved by state(...) of a sampler with the
  /// same shard sizes and options but num_workers, on any world size and worker count):
  /// the positions of that epoch's global order the state does not mark consumed are split
  /// over this sampler's consumers. Throws state_error when the state belongs to other
  /// shards or options, or is malformed. O(shards + (ahead ranges + strided entries) log)
  /// time and O(shards + ahead ranges + strided entries) memory at any stop: the segment
  /// keeps holes of consumers far apart compactly (RemainingSegment). Strong guarantee.
  void resume(const SamplerState& state) { resume(state, detail::HoleLimit::automatic()); }
  /// The same with the segment's form of holes forced by `limit` (for tests: both forms
  /// read the same samples and write the same states).
  void resume(const SamplerState& state, detail::HoleLimit limit) {
    state.validate(key(), "StreamingShardSampler::resume");
    ShardEpochOrder order(catalog_, options_, state.epoch);
    RemainingSegment segment = RemainingSegment::after(state, block_size(), limit);
    walk_ = std::make_shared<const ShardWalk>(std::move(order), std::move(segment), consumers(), options_.tail, slots_,
                                              block_size());
  }

  /// The state after every consumer of this segment has read the first `samples_done`
  /// samples of its stream (a consumer with a shorter stream, under Tail::uneven, all of
  /// it). Any count works, not only block boundaries. Throws config_error when
  /// samples_done exceeds the longest stream. O(consumers log consumers + entries of the
  /// resumed state).
  [[nodiscard]] SamplerState state(std::uint64_t samples_done) const {
    return detail::shard_state(*walk_, detail::equal_progress(*walk_, samples_done, "StreamingShardSampler::state"));
  }
  /// The state after worker w of every rank has read the first `progress.done()[w]`
  /// samples of its stream (the usual case, since ranks run in lockstep). Throws
  /// config_error for a wrong entry count or an entry past its stream's end.
  /// O(consumers log consumers + entries of the resumed state).
  [[nodiscard]] SamplerState state(const WorkerProgress& progress) const {
    return detail::shard_state(
        *walk_, detail::worker_progress(*walk_, world_.world_size, progress, "StreamingShardSampler::state"));
  }
  /// The state after consumer c (= worker * world_size + rank) has read the first
  /// `progress.done()[c]` samples of its stream, for every consumer of the job: the
  /// general form, for ranks that did not run in lockstep. Throws config_error for a
  /// wrong entry count or an entry past its stream's end. O(consumers log consumers +
  /// entries of the resumed state) at any stop: a consumer far ahead of the slowest adds
  /// one strided entry, not one range per block_size() samples of lead.
  [[nodiscard]] SamplerState state(const ConsumerProgress& progress) const {
    detail::check_consumer_progress(*walk_, progress, "StreamingShardSampler::state");
    return detail::shard_state(*walk_, progress.done());
  }

  /// What saved states must match (see StateKey): the key every state of this sampler
  /// carries (family "shard", the engine name holding every order option, the shard
  /// sizes' layout hash). Its names view storage this sampler shares with its copies:
  /// valid while one of them lives. O(1), the same for every epoch.
  [[nodiscard]] StateKey key() const noexcept { return key_->get(); }

  [[nodiscard]] std::uint64_t epoch() const noexcept { return walk_->epoch(); }
  [[nodiscard]] std::uint64_t rank() const noexcept { return world_.rank; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return world_.world_size; }
  /// N, the samples of all shards.
  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return catalog_->total(); }
  /// Positions of the epoch consumed before this segment (0 unless resumed).
  [[nodiscard]] std::uint64_t start() const noexcept { return walk_->segment().start(); }
  /// The ranges of the epoch's global order this segment reads, in order (its V): one per
  /// hole a resume left, so O(blocks consumers were ahead) for a state of consumers far
  /// apart. consumed_before() is the compact form.
  [[nodiscard]] std::vector<PositionRange> remaining_ranges() const { return walk_->segment().ranges(); }
  /// What the epoch had consumed before this segment, as the resumed state recorded it
  /// (empty for a fresh epoch): the complement of remaining_ranges(), O(state entries).
  [[nodiscard]] const PositionSet& consumed_before() const noexcept { return walk_->segment().consumed_before(); }
  [[nodiscard]] std::uint64_t num_shards() const noexcept { return catalog_->num_shards(); }
  [[nodiscard]] const std::vector<std::uint64_t>& shard_sizes() const noexcept { return catalog_->sizes(); }
  [[nodiscard]] const ShardCatalog& catalog() const noexcept { return *catalog_; }
  [[nodiscard]] const World& world() const noexcept { return world_; }
  [[nodiscard]] std::uint64_t num_workers() const noexcept { return options_.num_workers; }
  [[nodiscard]] const ShardSamplerOptions& options() const noexcept { return options_; }
  /// K = world_size * num_workers.
  [[nodiscard]] std::uint64_t consumers() const noexcept { return world_.world_size * options_.num_workers; }
  /// The consumers' unit of reading (a state saved at block boundaries is a plain prefix):
  /// max_open_shards * run_length, divided by node_groups() (each node group reads its
  /// part of every block of the order).
  [[nodiscard]] std::uint64_t block_size() const noexcept { return options_.block_size() / slots_.groups(); }
  /// Node groups whose ranks read disjoint lanes of the order (1: node-aware reading is
  /// off). See the class comment.
  [[nodiscard]] std::uint64_t node_groups() const noexcept { return slots_.groups(); }
  /// The bound on shard ranges a consumer has open at once (reading interleaved).
  [[nodiscard]] std::uint64_t max_open_shards() const noexcept { return options_.max_open_shards; }
  /// The current segment, shared and immutable (what stream() iterators hold).
  [[nodiscard]] const std::shared_ptr<const ShardWalk>& walk() const noexcept { return walk_; }

  /// Consumer id of `worker` on this rank: worker * world_size + rank. Throws
  /// config_error for worker >= num_workers.
  [[nodiscard]] std::uint64_t consumer(std::uint64_t worker) const {
    if (worker >= options_.num_workers) {
      detail::throw_out_of_range("StreamingShardSampler", "worker", worker, "num_workers", options_.num_workers);
    }
    return worker * world_.world_size + world_.rank;
  }

  /// Samples `worker` of this rank reads in this segment (the same for every worker
  /// and rank, except under Tail::uneven). O(1).
  [[nodiscard]] std::uint64_t worker_size(std::uint64_t worker) const { return consumer_size(consumer(worker)); }

  /// Samples this rank reads in this segment (sum over its workers). O(num_workers).
  [[nodiscard]] std::uint64_t size() const {
    std::uint64_t total = 0;
    for (std::uint64_t w = 0; w < options_.num_workers; ++w) total += worker_size(w);
    return total;
  }

  /// The i-th sample of `worker`'s stream. O(log shards). Throws config_error for a bad
  /// worker, std::out_of_range for i >= worker_size(worker).
  [[nodiscard]] ShardSample sample(std::uint64_t worker, std::uint64_t i) const {
    const std::uint64_t k = consumer(worker);
    if (i >= consumer_size(k)) {
      throw std::out_of_range("StreamingShardSampler::sample: position " + std::to_string(i) +
                              " is out of range for worker_size " + std::to_string(consumer_size(k)));
    }
    return walk_->sample(k, i);
  }

  /// The global-order position (in [0, N)) of slot i of consumer k (k < consumers(),
  /// i < consumer_size(k); unchecked). O(1) for a fresh epoch, O(log ranges) when resumed.
  [[nodiscard]] std::uint64_t consumer_position(std::uint64_t k, std::uint64_t i) const noexcept {
    return walk_->epoch_position(k, i);
  }
  /// The segment position (in [0, remaining)) of slot i of consumer k: the index into V,
  /// this segment's remaining positions of G. O(1); unchecked.
  [[nodiscard]] std::uint64_t consumer_segment_position(std::uint64_t k, std::uint64_t i) const noexcept {
    return walk_->segment_position(k, i);
  }
  /// Samples consumer k reads (see worker_size). O(1); unchecked.
  [[nodiscard]] std::uint64_t consumer_size(std::uint64_t k) const noexcept { return walk_->size(k); }
  /// True when slot i of consumer k is a flagged padding duplicate.
  [[nodiscard]] bool consumer_is_padding(std::uint64_t k, std::uint64_t i) const noexcept {
    return walk_->is_padding(k, i);
  }
  /// Slot i of consumer k as a ShardSample. O(log shards); unchecked.
  [[nodiscard]] ShardSample consumer_sample(std::uint64_t k, std::uint64_t i) const { return walk_->sample(k, i); }

  /// The sample at position p (< N) of this epoch's global order G. O(log shards).
  /// Independent of world size and worker count.
  [[nodiscard]] ShardSample at_global(std::uint64_t p) const { return walk_->order().at(p); }
  /// The position in the shard sequence Q of global position p (< N). O(1).
  [[nodiscard]] std::uint64_t sequence_position(std::uint64_t p) const noexcept {
    return walk_->order().sequence_position(p);
  }
  /// The sample at position q (< N) of the shard sequence Q. O(log shards).
  [[nodiscard]] ShardSample at_sequence(std::uint64_t q) const { return walk_->order().at_sequence(q); }

  /// The ranges `worker` reads for its slots [first, first + count) (clipped to its
  /// size), in the order their first record is read: what a loader should prefetch.
  /// Within a block up to max_open_shards() ranges are read interleaved; each range in
  /// increasing offsets. O(ranges * log shards).
  [[nodiscard]] std::vector<ShardRange> read_plan(std::uint64_t worker, std::uint64_t first = 0,
                                                  std::uint64_t count = UINT64_MAX) const {
    const std::uint64_t k = consumer(worker), size = consumer_size(k);
    if (first >= size) return {};
    return walk_->read_plan(k, first, size - first < count ? size : first + count);
  }

  /// What `worker` reads in its slots [first, first + count) (clipped to its size) as the
  /// fewest ranges per shard: its records of each shard merged into maximal ranges of
  /// consecutive offsets, and ranges at most `max_gap` records apart joined (a loader then
  /// also reads the up to max_gap records between them). Ordered by the first slot that
  /// reads from each range. The read to issue before serving a window of a stream: with
  /// the defaults a window of 1024 slots is about 64 ranges at max_gap 16. Throws
  /// config_error for a bad worker. O(p log p) for the p ranges read_plan lists.
  [[nodiscard]] std::vector<ShardRange> prefetch_plan(std::uint64_t worker, std::uint64_t first, std::uint64_t count,
                                                      std::uint64_t max_gap = 0) const {
    const std::uint64_t k = consumer(worker), size = consumer_size(k);
    if (first >= size) return {};
    return walk_->merged_plan(k, first, size - first < count ? size : first + count, max_gap);
  }

  /// The shards `worker` reads in this segment, in the order it first needs them: for
  /// each, the first and last slot of its stream reading from it and how many of its
  /// records it reads (padding duplicates included), so a loader of remote shard files
  /// can fetch ahead and evict once the last slot has passed. Exact for fresh and resumed
  /// segments; at most one entry per shard. Computed lane by lane without visiting the
  /// slots of whole rounds: about O(shards + canonical_streams) per consumer, times up to
  /// the rows of a shuffle window when the consumer's rows of a lane come closer than a
  /// window (see shard_schedule in shard_schedule.hpp for the bound and the parts walked
  /// range by range: a resumed segment's front, the last rows of the epoch). Throws
  /// config_error for a bad worker.
  [[nodiscard]] std::vector<ScheduledShard> shard_schedule(std::uint64_t worker) const {
    return distsampler::shard_schedule(*walk_, std::vector<std::uint64_t>{consumer(worker)});
  }
  /// shard_schedule merged over this rank's workers: per shard the earliest first slot,
  /// the latest last slot (each in its worker's stream) and the records all of them read.
  [[nodiscard]] std::vector<ScheduledShard> rank_shard_schedule() const {
    std::vector<std::uint64_t> ks;
    for (std::uint64_t w = 0; w < options_.num_workers; ++w) ks.push_back(w * world_.world_size + world_.rank);
    return distsampler::shard_schedule(*walk_, ks);
  }
  /// shard_schedule merged over every worker of every rank on this rank's node (ranks
  /// node * local_world_size .. + local_world_size - 1; this rank alone when
  /// local_world_size is 1 or does not divide world_size): what a node-local cache
  /// fetches and keeps, shard by shard. Cost: shard_schedule's per consumer of the node.
  [[nodiscard]] std::vector<ScheduledShard> node_shard_schedule() const {
    return distsampler::shard_schedule(*walk_, node_consumers());
  }

  /// prefetch_plan for the whole node of this rank: what every worker of every rank on it
  /// (ranks node * local_world_size .. + local_world_size - 1; this rank alone when
  /// local_world_size is 1) reads in its slots [first, first + count), merged per shard.
  /// Consumers sharing a lane take alternate records of it, so together they read it in
  /// long runs: the read to issue into a node-local cache. O(p log p) for the p pieces.
  [[nodiscard]] std::vector<ShardRange> node_prefetch_plan(std::uint64_t first, std::uint64_t count,
                                                           std::uint64_t max_gap = 0) const {
    const std::uint64_t last = count > UINT64_MAX - first ? UINT64_MAX : first + count;
    return walk_->merged_plan(node_consumers(), first, last, max_gap);
  }

  /// Calls f(sample) for `worker`'s slots [first, first + count) in order (count clipped
  /// to the stream's end), computed a chunk at a time with fill(): the fast way to walk a
  /// stream. Throws config_error for a bad worker. O(count), a 16 KiB stack buffer.
  template <class F>
  void for_each(std::uint64_t worker, F&& f, std::uint64_t first = 0, std::uint64_t count = UINT64_MAX) const {
    const std::uint64_t k = consumer(worker), size = consumer_size(k);
    if (first >= size) return;
    walk_->for_each(k, first, size - first < count ? size : first + count, std::forward<F>(f));
  }

  /// Writes `worker`'s samples of slots [first, first + count) to out[0..count): the
  /// batched form of sample(), with identical results, walking each run once instead of
  /// locating every sample (several times faster per sample). Throws config_error for a
  /// bad worker, std::out_of_range when first + count exceeds worker_size(worker).
  /// O(count + ranges * log shards), no allocation.
  void fill(std::uint64_t worker, std::uint64_t first, std::uint64_t count, ShardSample* out) const {
    const std::uint64_t k = consumer(worker), size = consumer_size(k);
    if (first > size || count > size - first) {
      throw std::out_of_range("StreamingShardSampler::fill: slots [" + std::to_string(first) + ", " +
                              std::to_string(first) + " + " + std::to_string(count) +
                              ") are out of range for worker_size " + std::to_string(size));
    }
    walk_->fill(k, first, count, out);
  }
  /// fill() for consumer k (k < consumers(), first + count <= consumer_size(k)); unchecked.
  void consumer_fill(std::uint64_t k, std::uint64_t first, std::uint64_t count, ShardSample* out) const {
    walk_->fill(k, first, count, out);
  }

  /// The order's engine name in saved states ("shard-shuffle-streams64-open8-run8-window16").
  [[nodiscard]] std::string engine_name() const { return shard_order_name(options_); }

  /// `worker`'s stream of this segment as a lazy range of ShardSample (see the class
  /// comment: it keeps this segment alive). Throws config_error for a bad worker.
  [[nodiscard]] worker_stream stream(std::uint64_t worker) const { return worker_stream(walk_, consumer(worker)); }

 private:
  static World validated(const World& world, const ShardSamplerOptions& options) {
    world.validate("StreamingShardSampler");
    detail::validate_shard_options(options, world.world_size, "StreamingShardSampler");
    return world;
  }

  // Node-aware reading: with N = world_size / local_world_size nodes (local_world_size > 1
  // dividing world_size; ranks numbered node by node), runs of 1 and max_open_shards m
  // dividing canonical_streams, G = gcd(N, m) node groups each read one m / G part of every
  // block: the parts hold contiguous ranges of lanes, so a group reads 1/G of the shard
  // sequence. A function of world_size, local_world_size and the options only, the same on
  // every rank.
  [[nodiscard]] static ConsumerSlots node_slots(const World& world, const ShardSamplerOptions& o) {
    const std::uint64_t per_node = world.local_world_size;
    if (per_node <= 1 || world.world_size % per_node != 0 || o.run_length != 1 ||
        o.canonical_streams % o.max_open_shards != 0) {
      return ConsumerSlots();
    }
    std::uint64_t a = world.world_size / per_node, b = o.max_open_shards;
    while (b != 0) a = std::exchange(b, a % b);
    if (a == 1) return ConsumerSlots();
    return ConsumerSlots(world.world_size, per_node, a);
  }

  // Every consumer of this rank's node (see node_prefetch_plan), worker by worker.
  [[nodiscard]] std::vector<std::uint64_t> node_consumers() const {
    const std::uint64_t per_node = world_.world_size % world_.local_world_size == 0 ? world_.local_world_size : 1;
    const std::uint64_t node_first = world_.rank - world_.rank % per_node;
    std::vector<std::uint64_t> ks;
    for (std::uint64_t w = 0; w < options_.num_workers; ++w) {
      for (std::uint64_t r = node_first; r < node_first + per_node; ++r) ks.push_back(w * world_.world_size + r);
    }
    return ks;
  }

  [[nodiscard]] std::shared_ptr<const ShardWalk> fresh(std::uint64_t epoch) const {
    return std::make_shared<const ShardWalk>(ShardEpochOrder(catalog_, options_, epoch),
                                             RemainingSegment(catalog_->total()), consumers(), options_.tail, slots_,
                                             block_size());
  }

  World world_;
  ShardSamplerOptions options_;
  ConsumerSlots slots_;
  std::shared_ptr<const ShardCatalog> catalog_;
  std::shared_ptr<const ShardWalk> walk_;             // replaced whole, never modified
  std::shared_ptr<const detail::ShardStateKey> key_;  // the names key() views; the same for every epoch
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STREAMING_SHARD_SAMPLER_HPP

// distsampler StreamingShardSampler: disjoint, balanced, local and resumable reads over sharded datasets.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STREAMING_SHARD_SAMPLER_HPP
#define DISTSAMPLER_STREAMING_SHARD_SAMPLER_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "detail/bounded.hpp"
#include "detail/small_permutation.hpp"
#include "detail/mix.hpp"
#include "error.hpp"
#include "feistel.hpp"
#include "partition.hpp"
#include "state.hpp"
#include "version.hpp"
#include "world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The options of a StreamingShardSampler that every rank must agree on. All of them
/// (with the shard sizes) define the epoch's global order; world size and worker count
/// do not.
///
///  - `canonical_streams` (C): the shuffled shard sequence is cut into C contiguous
///    streams ("lanes", MosaicML's canonical nodes); the global order takes runs from
///    them in turn, so at any moment the whole job reads near C places of the dataset.
///  - `max_open_shards` (m): a consumer interleaves m runs at a time, so it never has
///    more than m shard ranges open at once; more runs mix more shards per batch.
///  - `run_length` (L): consecutive samples read from one run (one place of one shard).
///    `block_size() = m * L` is the unit of locality and of the read plan.
///  - `shuffle_window` (w): each lane reads its runs in a random order within consecutive
///    windows of w runs (w * L samples), so a shard's records are not read in file order:
///    its runs come shuffled, a window at a time. 1 reads every lane in order (the shard
///    rotation still changes each epoch). A lane keeps the shards of one window live, so
///    a larger window shuffles more at the cost of more shards touched at once.
///
/// Defaults: 64 streams, 8 open shards, runs of 8 (blocks of 64 samples), windows of 16
/// runs (128 samples per lane).
struct ShardSamplerOptions {
  bool shuffle = true;
  std::uint64_t seed = 0;
  Tail tail = Tail::pad;
  std::uint64_t canonical_streams = 64;
  std::uint64_t max_open_shards = 8;
  std::uint64_t run_length = 8;
  std::uint64_t shuffle_window = 16;
};

/// One sample of a consumer's stream: which shard, which record in it, its global index
/// (the shard's prefix sum in the original shard list + offset), and whether the slot is
/// flagged tail padding (a duplicate that exact evaluation should mask).
struct ShardSample {
  std::uint64_t shard = 0;
  std::uint64_t offset = 0;
  std::uint64_t index = 0;
  bool is_padding = false;

  friend constexpr bool operator==(const ShardSample& a, const ShardSample& b) noexcept {
    return a.shard == b.shard && a.offset == b.offset && a.index == b.index && a.is_padding == b.is_padding;
  }
  friend constexpr bool operator!=(const ShardSample& a, const ShardSample& b) noexcept { return !(a == b); }
};

/// A range of consecutive records [begin, end) of one shard, read in increasing offset
/// order. `first_sample` is the consumer-stream slot of its first record.
struct ShardRange {
  std::uint64_t shard = 0;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t first_sample = 0;

  friend constexpr bool operator==(const ShardRange& a, const ShardRange& b) noexcept {
    return a.shard == b.shard && a.begin == b.begin && a.end == b.end && a.first_sample == b.first_sample;
  }
  friend constexpr bool operator!=(const ShardRange& a, const ShardRange& b) noexcept { return !(a == b); }
};

namespace detail {

/// The per-epoch layout shared by all consumers: shard order and its prefix sums.
struct ShardEpochLayout {
  std::vector<std::uint64_t> order;   ///< order[j] = the shard read j-th
  std::vector<std::uint64_t> prefix;  ///< prefix[j] = samples in order[0..j)
};

}  // namespace detail

/// Streams a dataset made of shards (files of known sample counts) to W ranks x K
/// workers, keeping every promise of the README while each consumer reads locally.
///
/// How an epoch's global order G (a bijection on the N samples) is built, from
/// (seed, epoch, shard sizes, options) only — never from world size or worker count:
///  1. the shard order is shuffled (Fisher-Yates, SplitMix64, unbiased draws) and each
///     shard is read from a per-epoch rotation of its offsets: the sequence Q;
///  2. Q's first C * ns * L samples (ns = N / (C * L)) are cut into C equal lanes of
///     ns runs of L consecutive samples; each lane's runs are permuted within windows of
///     w runs (a keyed permutation per lane and window: an exact Fisher-Yates draw for
///     w <= 16, a FeistelPermutation above); runs are then taken
///     row-major (the first run of every lane, then the second, ...) and each group of m
///     consecutive runs forms a block of m * L samples, read round-robin across its m runs;
///  3. what remains (fewer than m + C runs' worth) follows in Q order.
/// A segment of the epoch is the sequence V of G's positions not yet consumed, in G
/// order: all of G after set_epoch, or what a loaded SamplerState leaves. Consumer
/// k = worker * W + rank (K = W * num_workers) first reads its 1/K contiguous share of
/// V's leading holes (the positions before the first block boundary of G past every
/// consumed one; none in a fresh epoch), then blocks k, k + K, k + 2K ... of the rest,
/// then an equal contiguous share of the last partial round, then the tail slot (pad: a
/// flagged duplicate of one of the segment's last samples). A state saved after any
/// per-consumer progress records exactly the consumed positions of G (a prefix plus a
/// few ranges ahead of it), so it resumes exactly once on any world size and worker
/// count, and a resumed segment can be saved and resumed again. Resumed with the same
/// world size and worker count after an equal stop inside the full rounds, every stream
/// continues sample for sample where it stopped.
///
/// Promises: consumers are disjoint and covering (pad: plus flagged duplicates, drop:
/// minus R mod K dropped positions); every consumer has the same count (uneven: counts
/// differ by at most one, and ranks by at most one); a consumer has at most
/// max_open_shards() shard ranges open at once, each read in increasing offsets.
///
/// Throws config_error from the constructor for a bad World, num_workers 0, a size sum
/// over 2^64 - 1, or bad options (messages name the parameter and the value).
/// Complexity: construction and set_epoch O(shards) time and memory; sample(w, i)
/// O(log shards) (plus O(log ranges) in a resumed segment with holes); fill(w, i, n, out)
/// O(n) plus one lookup per range; iteration lazy. Deterministic on every platform. Thread-safety: const
/// members may run concurrently; copies share the immutable epoch layout.
class StreamingShardSampler {
 public:
  class iterator;
  class worker_stream;

  /// Throws config_error as described above.
  StreamingShardSampler(std::vector<std::uint64_t> shard_sizes, World world, std::uint64_t num_workers,
                        ShardSamplerOptions options = {})
      : sizes_(std::move(shard_sizes)), world_(world), num_workers_(num_workers), options_(options) {
    world_.validate("StreamingShardSampler");
    validate();
    replan();
    set_remaining({});
  }

  /// Selects the epoch and starts it from its beginning. O(shards).
  void set_epoch(std::uint64_t epoch) {
    epoch_ = epoch;
    replan();
    set_remaining({});
  }

  /// Continues the epoch recorded in `state` (saved by a `state*()` member of a sampler
  /// with the same shard sizes and options, on any world size and worker count): the
  /// positions of that epoch's global order the state does not mark consumed are split
  /// over this sampler's consumers. Throws state_error when the state belongs to other
  /// shards or options, or is malformed. O(shards + ahead ranges).
  void load_state(const SamplerState& state) {
    const std::string engine = engine_name();
    state.validate(state_key(engine), "StreamingShardSampler::load_state");
    epoch_ = state.epoch;
    replan();
    std::vector<PositionRange> done = state.ahead;
    if (state.consumed != 0) done.insert(done.begin(), PositionRange{0, state.consumed});
    set_remaining(done);
  }

  /// The state after every consumer of this segment has read the first `samples_done`
  /// samples of its stream (a consumer with a shorter stream, under Tail::uneven, all of
  /// it). Any count works, not only block boundaries. Throws config_error when
  /// samples_done exceeds the longest stream. O(consumers + ranges).
  [[nodiscard]] SamplerState state(std::uint64_t samples_done) const {
    const std::uint64_t k = consumers(), longest = consumer_size(0);
    if (samples_done > longest) {
      detail::throw_config_error("StreamingShardSampler::state: samples_done " + std::to_string(samples_done) +
                                 " exceeds the longest worker stream of this segment (" + std::to_string(longest) +
                                 " samples)");
    }
    std::vector<std::uint64_t> done(static_cast<std::size_t>(k));
    for (std::uint64_t c = 0; c < k; ++c) done[static_cast<std::size_t>(c)] = std::min(samples_done, consumer_size(c));
    return state_of(done);
  }

  /// The state after worker w of every rank has read the first `worker_done[w]` samples
  /// of its stream (one entry per worker; the usual case, since ranks run in lockstep).
  /// Throws config_error for a wrong entry count or an entry past its stream's end.
  /// O(consumers + ranges).
  [[nodiscard]] SamplerState state_per_worker(const std::vector<std::uint64_t>& worker_done) const {
    if (worker_done.size() != num_workers_) {
      detail::throw_config_error("StreamingShardSampler::state_per_worker: " + std::to_string(worker_done.size()) +
                                 " entries (expected num_workers = " + std::to_string(num_workers_) + ")");
    }
    const std::uint64_t w_size = world_.world_size;
    std::vector<std::uint64_t> done(static_cast<std::size_t>(consumers()));
    for (std::uint64_t w = 0; w < num_workers_; ++w) {
      for (std::uint64_t r = 0; r < w_size; ++r) {
        const std::uint64_t c = w * w_size + r, d = worker_done[static_cast<std::size_t>(w)];
        if (d > consumer_size(c)) {
          detail::throw_config_error("StreamingShardSampler::state_per_worker: worker " + std::to_string(w) +
                                     " read " + std::to_string(d) + " samples, past the end of rank " +
                                     std::to_string(r) + "'s stream of " + std::to_string(consumer_size(c)) +
                                     " (expected at most " + std::to_string(consumer_size(c)) + ")");
        }
        done[static_cast<std::size_t>(c)] = d;
      }
    }
    return state_of(done);
  }

  /// The state after consumer c (= worker * world_size + rank) has read the first
  /// `consumer_done[c]` samples of its stream, for every consumer of the job: the general
  /// form, for ranks that did not run in lockstep (gather the counts first). Throws
  /// config_error for a wrong entry count or an entry past its stream's end.
  /// O(consumers + ranges), where a consumer far ahead of the slowest adds one range per
  /// block_size() samples of lead.
  [[nodiscard]] SamplerState state_per_consumer(const std::vector<std::uint64_t>& consumer_done) const {
    if (consumer_done.size() != consumers()) {
      detail::throw_config_error("StreamingShardSampler::state_per_consumer: " +
                                 std::to_string(consumer_done.size()) + " entries (expected consumers() = " +
                                 std::to_string(consumers()) + ")");
    }
    for (std::uint64_t c = 0; c < consumers(); ++c) {
      const std::uint64_t d = consumer_done[static_cast<std::size_t>(c)];
      if (d > consumer_size(c)) {
        detail::throw_config_error("StreamingShardSampler::state_per_consumer: consumer " + std::to_string(c) +
                                   " read " + std::to_string(d) + " samples, past the end of its stream of " +
                                   std::to_string(consumer_size(c)) + " (expected at most " +
                                   std::to_string(consumer_size(c)) + ")");
      }
    }
    return state_of(consumer_done);
  }

  /// How many samples each worker of this rank has handed out once a data loader has
  /// yielded `batches` batches of up to `batch_size` samples, taking batch j from the
  /// workers in turn (worker 0, 1, ..., skipping workers whose stream is exhausted), each
  /// worker batching its own stream with a short last batch: torch's DataLoader with an
  /// iterable dataset over `stream(worker)`. Throws config_error for batch_size 0 or more
  /// batches than this rank's workers have. O(num_workers log num_workers).
  [[nodiscard]] std::vector<std::uint64_t> loader_worker_done(std::uint64_t batches, std::uint64_t batch_size) const {
    const std::string who = "StreamingShardSampler::loader_worker_done: ";
    if (batch_size == 0) detail::throw_config_error(who + "batch_size is 0 (expected at least 1)");
    const std::uint64_t total = rank_batches(world_.rank, batch_size);
    if (batches > total) {
      detail::throw_config_error(who + "batches " + std::to_string(batches) + " exceeds the " +
                                 std::to_string(total) + " batches of this rank's workers at batch_size " +
                                 std::to_string(batch_size));
    }
    return round_robin_done(world_.rank, batches, batch_size);
  }

  /// The state after the data loader of every rank yielded `batches` batches of
  /// `batch_size`, or all it had (see loader_worker_done; ranks differ only under
  /// Tail::uneven). Throws config_error for batch_size 0 or more batches than any rank
  /// has. O(consumers log num_workers + ranges).
  [[nodiscard]] SamplerState state_after_batches(std::uint64_t batches, std::uint64_t batch_size) const {
    const std::string who = "StreamingShardSampler::state_after_batches: ";
    if (batch_size == 0) detail::throw_config_error(who + "batch_size is 0 (expected at least 1)");
    const std::uint64_t w_size = world_.world_size;
    std::uint64_t most = 0;
    for (std::uint64_t r = 0; r < w_size; ++r) most = std::max(most, rank_batches(r, batch_size));
    if (batches > most) {
      detail::throw_config_error(who + "batches " + std::to_string(batches) + " exceeds the " +
                                 std::to_string(most) + " batches of the largest rank at batch_size " +
                                 std::to_string(batch_size));
    }
    std::vector<std::uint64_t> done(static_cast<std::size_t>(consumers()));
    for (std::uint64_t r = 0; r < w_size; ++r) {
      const auto per_worker = round_robin_done(r, std::min(batches, rank_batches(r, batch_size)), batch_size);
      for (std::uint64_t w = 0; w < num_workers_; ++w) {
        done[static_cast<std::size_t>(w * w_size + r)] = per_worker[static_cast<std::size_t>(w)];
      }
    }
    return state_of(done);
  }

  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// Positions of the epoch consumed before this segment (0 unless resumed).
  [[nodiscard]] std::uint64_t start() const noexcept { return n_ - remaining_; }
  /// The ranges of the epoch's global order this segment reads, in order (its V).
  [[nodiscard]] std::vector<PositionRange> remaining_ranges() const {
    std::vector<PositionRange> out;
    for (const Span& sp : spans_) out.push_back(PositionRange{sp.g, sp.g + sp.length});
    return out;
  }
  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return n_; }
  [[nodiscard]] std::uint64_t num_shards() const noexcept { return sizes_.size(); }
  [[nodiscard]] const std::vector<std::uint64_t>& shard_sizes() const noexcept { return sizes_; }
  [[nodiscard]] const World& world() const noexcept { return world_; }
  [[nodiscard]] std::uint64_t num_workers() const noexcept { return num_workers_; }
  [[nodiscard]] const ShardSamplerOptions& options() const noexcept { return options_; }
  /// K = world_size * num_workers.
  [[nodiscard]] std::uint64_t consumers() const noexcept { return world_.world_size * num_workers_; }
  /// max_open_shards * run_length: the unit of locality (a state saved at block boundaries is a plain prefix).
  [[nodiscard]] std::uint64_t block_size() const noexcept { return options_.max_open_shards * options_.run_length; }
  /// The bound on shard ranges a consumer has open at once (reading interleaved).
  [[nodiscard]] std::uint64_t max_open_shards() const noexcept { return options_.max_open_shards; }

  /// Consumer id of `worker` on this rank: worker * world_size + rank.
  [[nodiscard]] std::uint64_t consumer(std::uint64_t worker) const {
    check_worker(worker);
    return worker * world_.world_size + world_.rank;
  }

  /// Samples `worker` of this rank reads in this segment (the same for every worker
  /// and rank, except under Tail::uneven). O(1).
  [[nodiscard]] std::uint64_t worker_size(std::uint64_t worker) const { return consumer_size(consumer(worker)); }

  /// Samples this rank reads in this segment (sum over its workers). O(num_workers).
  [[nodiscard]] std::uint64_t size() const {
    std::uint64_t total = 0;
    for (std::uint64_t w = 0; w < num_workers_; ++w) total += worker_size(w);
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
    return consumer_sample(k, i);
  }

  /// The global-order position (in [0, N)) of slot i of consumer k (k < consumers(),
  /// i < consumer_size(k)). O(1) for a fresh epoch, O(log ranges) when resumed.
  [[nodiscard]] std::uint64_t consumer_position(std::uint64_t k, std::uint64_t i) const noexcept {
    return to_global(consumer_segment_position(k, i));
  }

  /// The segment position (in [0, remaining)) of slot i of consumer k: the index into V,
  /// this segment's remaining positions of G. O(1).
  [[nodiscard]] std::uint64_t consumer_segment_position(std::uint64_t k, std::uint64_t i) const noexcept {
    const Deal& d = deal();
    if (i < d.front) return k * d.front + i;
    i -= d.front;
    std::uint64_t x = 0;
    if (i < d.rounds * d.b) {
      x = ((i / d.b) * d.kk + k) * d.b + i % d.b;
    } else if (i < d.even) {
      x = d.rounds * d.b * d.kk + k * d.partial + (i - d.rounds * d.b);
    } else if (k < d.extra) {
      x = d.even * d.kk + k;
    } else {
      // Padding repeats the segment's last samples (the same ones after an equal resume).
      x = d.r - 1 - (k - d.extra) % d.r;
    }
    return d.base + x;
  }

  /// Samples consumer k reads (see worker_size). O(1).
  [[nodiscard]] std::uint64_t consumer_size(std::uint64_t k) const noexcept {
    const Deal& d = deal();
    switch (options_.tail) {
      case Tail::pad: return d.front + d.even + (d.extra != 0 ? 1 : 0);
      case Tail::drop: return d.front + d.even;
      case Tail::uneven: return d.front + d.even + (k < d.extra ? 1 : 0);
    }
    return d.front + d.even;
  }

  /// True when slot i of consumer k is a flagged padding duplicate.
  [[nodiscard]] bool consumer_is_padding(std::uint64_t k, std::uint64_t i) const noexcept {
    const Deal& d = deal();
    return options_.tail == Tail::pad && i == d.front + d.even && k >= d.extra;
  }

  /// Slot i of consumer k as a ShardSample. O(log shards).
  [[nodiscard]] ShardSample consumer_sample(std::uint64_t k, std::uint64_t i) const {
    ShardSample s = at_global(consumer_position(k, i));
    s.is_padding = consumer_is_padding(k, i);
    return s;
  }

  /// The sample at position p (< N) of this epoch's global order G. O(log shards).
  /// Independent of world size and worker count.
  [[nodiscard]] ShardSample at_global(std::uint64_t p) const { return at_sequence(sequence_position(p)); }

  /// The position in the shard sequence Q of global position p (< N). O(1).
  [[nodiscard]] std::uint64_t sequence_position(std::uint64_t p) const noexcept {
    const std::uint64_t m = options_.max_open_shards, l = options_.run_length, b = m * l;
    if (p < regular_) {
      const std::uint64_t w = p % b;
      return run_start((p / b) * m + w % m) + w / m;
    }
    const std::uint64_t y = p - regular_;
    if (y < leftover_runs_ * l) return run_start((regular_ / b) * m + y / l) + y % l;
    return options_.canonical_streams * lane_length_ + (y - leftover_runs_ * l);
  }

  /// The sample at position q (< N) of the shard sequence Q. O(log shards).
  [[nodiscard]] ShardSample at_sequence(std::uint64_t q) const {
    const auto& pre = layout_->prefix;
    const auto j = static_cast<std::size_t>(std::upper_bound(pre.begin(), pre.end(), q) - pre.begin() - 1);
    const std::uint64_t shard = layout_->order[j];
    const std::uint64_t size = sizes_[static_cast<std::size_t>(shard)];
    const std::uint64_t offset = rotate(q - pre[j], rotation(shard), size);
    return ShardSample{shard, offset, offsets_[static_cast<std::size_t>(shard)] + offset, false};
  }

  /// The ranges `worker` reads for its slots [first, first + count) (clipped to its
  /// size), in the order their first record is read: what a loader should prefetch.
  /// Within a block up to max_open_shards() ranges are read interleaved; each range in
  /// increasing offsets. O(ranges * log shards).
  [[nodiscard]] std::vector<ShardRange> read_plan(std::uint64_t worker, std::uint64_t first = 0,
                                                  std::uint64_t count = UINT64_MAX) const {
    const std::uint64_t k = consumer(worker), size = consumer_size(k);
    std::vector<ShardRange> out;
    if (first >= size) return out;
    const std::uint64_t last = size - first < count ? size : first + count;
    visit_ranges(k, first, last, [&](std::uint64_t shard, std::uint64_t begin, std::uint64_t length, std::uint64_t slot,
                                     std::uint64_t /*stride*/) {
      out.push_back(ShardRange{shard, begin, begin + length, slot});
    });
    // Blocks occupy consecutive slots, so sorting by first slot orders each block's
    // interleaved ranges by first read and keeps blocks in order.
    std::sort(out.begin(), out.end(),
              [](const ShardRange& x, const ShardRange& y) { return x.first_sample < y.first_sample; });
    return out;
  }

  /// Calls f(sample) for `worker`'s slots [first, first + count) in order (count clipped
  /// to the stream's end), computed a chunk at a time with fill(): the fast way to walk a
  /// stream. Throws config_error for a bad worker. O(count), a 16 KiB stack buffer.
  template <class F>
  void for_each(std::uint64_t worker, F&& f, std::uint64_t first = 0, std::uint64_t count = UINT64_MAX) const {
    const std::uint64_t size = worker_size(worker);
    if (first >= size) return;
    const std::uint64_t last = size - first < count ? size : first + count;
    ShardSample chunk[512];
    for (std::uint64_t at = first; at < last;) {
      const std::uint64_t n = std::min<std::uint64_t>(512, last - at);
      fill(worker, at, n, chunk);
      for (std::uint64_t i = 0; i < n; ++i) f(static_cast<const ShardSample&>(chunk[i]));
      at += n;
    }
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
    consumer_fill(k, first, count, out);
  }

  /// fill() for consumer k (k < consumers(), first + count <= consumer_size(k)); unchecked.
  void consumer_fill(std::uint64_t k, std::uint64_t first, std::uint64_t count, ShardSample* out) const {
    visit_ranges(k, first, first + count, [&](std::uint64_t shard, std::uint64_t begin, std::uint64_t length,
                                              std::uint64_t slot, std::uint64_t stride) {
      const std::uint64_t base = offsets_[static_cast<std::size_t>(shard)];
      ShardSample* at = out + (slot - first);
      for (std::uint64_t t = 0; t < length; ++t, at += stride) *at = ShardSample{shard, begin + t, base + begin + t, false};
    });
    // Only the tail slot can be padding.
    const Deal& d = deal();
    const std::uint64_t tail_slot = d.front + d.even;
    if (tail_slot >= first && tail_slot < first + count && consumer_is_padding(k, tail_slot)) {
      out[tail_slot - first].is_padding = true;
    }
  }

  /// The fingerprinted description of the order ("shard-v2 shuffle streams=64 ...").
  [[nodiscard]] std::string engine_name() const {
    return std::string("shard-v2 ") + (options_.shuffle ? "shuffle" : "noshuffle") +
           " streams=" + std::to_string(options_.canonical_streams) +
           " open=" + std::to_string(options_.max_open_shards) + " run=" + std::to_string(options_.run_length) +
           " window=" + std::to_string(options_.shuffle ? options_.shuffle_window : 1) +
           " shards=" + std::to_string(sizes_.size()) + " layout=" + detail::hex64(layout_hash_);
  }

  /// `worker`'s stream as a lazy range of ShardSample.
  [[nodiscard]] worker_stream stream(std::uint64_t worker) const;

  /// Input iterator over one consumer's samples. It computes them a chunk of
  /// `iterator::chunk` at a time with fill() (as fast as fill, several times faster than
  /// sample() per element), so it is about 2 KiB and best not copied in a hot loop.
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = ShardSample;
    using difference_type = std::ptrdiff_t;
    using pointer = const ShardSample*;
    using reference = const ShardSample&;
    static constexpr std::uint64_t chunk = 64;

    iterator() = default;
    [[nodiscard]] const ShardSample& operator*() const noexcept { return buffer_[static_cast<std::size_t>(i_ - first_)]; }
    [[nodiscard]] const ShardSample* operator->() const noexcept { return &**this; }
    iterator& operator++() {
      if (++i_ == first_ + chunk && i_ < end_) refill();
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    /// The slot number within the consumer's stream.
    [[nodiscard]] std::uint64_t position() const noexcept { return i_; }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.i_ == b.i_; }
    friend bool operator!=(const iterator& a, const iterator& b) noexcept { return a.i_ != b.i_; }

   private:
    friend class worker_stream;
    iterator(const StreamingShardSampler* s, std::uint64_t k, std::uint64_t i, std::uint64_t end)
        : sampler_(s), k_(k), i_(i), first_(i), end_(end) {
      if (i_ < end_) refill();
    }
    void refill() {
      first_ = i_;
      sampler_->consumer_fill(k_, i_, std::min(chunk, end_ - i_), buffer_);
    }
    const StreamingShardSampler* sampler_ = nullptr;
    std::uint64_t k_ = 0;
    std::uint64_t i_ = 0;
    std::uint64_t first_ = 0;  // slot of buffer_[0]
    std::uint64_t end_ = 0;
    ShardSample buffer_[chunk] = {};
  };

  /// A range-for view of one worker's stream; refers to the sampler (which must outlive it).
  class worker_stream {
   public:
    [[nodiscard]] iterator begin() const { return iterator(sampler_, k_, 0, sampler_->consumer_size(k_)); }
    [[nodiscard]] iterator end() const {
      const std::uint64_t size = sampler_->consumer_size(k_);
      return iterator(sampler_, k_, size, size);
    }
    [[nodiscard]] std::uint64_t size() const noexcept { return sampler_->consumer_size(k_); }

   private:
    friend class StreamingShardSampler;
    worker_stream(const StreamingShardSampler* s, std::uint64_t k) noexcept : sampler_(s), k_(k) {}
    const StreamingShardSampler* sampler_;
    std::uint64_t k_;
  };

 private:
  // One range of remaining positions: G positions [g, g + length) are V positions [v, v + length).
  struct Span {
    std::uint64_t v = 0;
    std::uint64_t g = 0;
    std::uint64_t length = 0;
  };

  [[nodiscard]] std::uint64_t remaining() const noexcept { return remaining_; }

  // How the segment V is dealt to the K consumers. V starts with `lead_` positions that
  // lie before the first block of G with nothing consumed from it on (the holes a stop
  // inside blocks leaves). Each consumer first reads `front` = lead_ / K of them,
  // contiguously: after an equal stop inside the full rounds with the same K, these are
  // exactly the rest of its own block, so every stream continues where it stopped. The
  // rest, V[base, r), is dealt in blocks (k, k + K, ...), an equal share of the last
  // partial round and a tail slot, as a fresh epoch is.
  // Computed once per segment (set_remaining), read on every sample.
  struct Deal {
    std::uint64_t kk = 1, b = 1, front = 0, base = 0, r = 0, even = 0, extra = 0, rounds = 0, partial = 0;
  };
  [[nodiscard]] const Deal& deal() const noexcept { return deal_; }
  [[nodiscard]] Deal make_deal() const noexcept {
    Deal d;
    d.kk = consumers();
    d.b = block_size();
    d.front = lead_ / d.kk;
    d.base = d.front * d.kk;
    d.r = remaining_ - d.base;
    d.even = d.r / d.kk;
    d.extra = d.r % d.kk;
    d.rounds = d.even / d.b;
    d.partial = d.even - d.rounds * d.b;
    return d;
  }

  // The span holding segment position x (< remaining_).
  [[nodiscard]] const Span& span_of(std::uint64_t x) const noexcept {
    if (spans_.size() == 1) return spans_.front();
    const auto it = std::upper_bound(spans_.begin(), spans_.end(), x,
                                     [](std::uint64_t value, const Span& sp) { return value < sp.v; });
    return *(it - 1);
  }

  [[nodiscard]] std::uint64_t to_global(std::uint64_t x) const noexcept {
    const Span& sp = span_of(x);
    return sp.g + (x - sp.v);
  }

  // Sorts and merges ranges (touching ones too) in place.
  static void merge_ranges(std::vector<PositionRange>& ranges) {
    std::sort(ranges.begin(), ranges.end(),
              [](const PositionRange& a, const PositionRange& b) { return a.begin < b.begin; });
    std::size_t out = 0;
    for (const PositionRange& r : ranges) {
      if (r.begin == r.end) continue;
      if (out != 0 && r.begin <= ranges[out - 1].end) {
        ranges[out - 1].end = std::max(ranges[out - 1].end, r.end);
      } else {
        ranges[out++] = r;
      }
    }
    ranges.resize(out);
  }

  // Makes the segment the complement of `consumed` (G ranges, any order) in [0, N).
  void set_remaining(std::vector<PositionRange> consumed) {
    merge_ranges(consumed);
    spans_.clear();
    std::uint64_t g = 0, v = 0;
    auto add = [&](std::uint64_t end) {
      if (end > g) {
        spans_.push_back(Span{v, g, end - g});
        v += end - g;
      }
    };
    for (const PositionRange& r : consumed) {
      add(r.begin);
      g = r.end;
    }
    add(n_);
    remaining_ = v;
    // The lead: V's positions before the first block boundary of G past every consumed one.
    lead_ = 0;
    if (!consumed.empty()) {
      const std::uint64_t b = block_size(), last = consumed.back().end;
      const std::uint64_t blocks = last / b + (last % b != 0 ? 1 : 0);
      const std::uint64_t aligned = blocks > n_ / b ? n_ : std::min(n_, blocks * b);
      std::uint64_t before = 0;  // consumed positions, all below `last` <= aligned
      for (const PositionRange& r : consumed) before += r.end - r.begin;
      lead_ = aligned - before;
    }
    deal_ = make_deal();
  }

  // Batches of `batch_size` the workers of rank r hold in all (short last batches count).
  [[nodiscard]] std::uint64_t rank_batches(std::uint64_t r, std::uint64_t batch_size) const noexcept {
    std::uint64_t total = 0;
    for (std::uint64_t w = 0; w < num_workers_; ++w) {
      const std::uint64_t size = consumer_size(w * world_.world_size + r);
      total += size / batch_size + (size % batch_size != 0 ? 1 : 0);
    }
    return total;
  }

  // Samples each worker of rank r handed out after `batches` (<= rank_batches) round-robin
  // batches, exhausted workers skipped.
  [[nodiscard]] std::vector<std::uint64_t> round_robin_done(std::uint64_t r, std::uint64_t batches,
                                                            std::uint64_t batch_size) const {
    const auto nw = static_cast<std::size_t>(num_workers_);
    std::vector<std::uint64_t> sizes(nw), per(nw);
    for (std::size_t w = 0; w < nw; ++w) {
      sizes[w] = consumer_size(static_cast<std::uint64_t>(w) * world_.world_size + r);
      per[w] = sizes[w] / batch_size + (sizes[w] % batch_size != 0 ? 1 : 0);
    }
    // After t full turns worker w gave min(per[w], t) batches: find the largest t whose
    // total fits, then the leftover batches go to the next workers still running, in turn.
    std::vector<std::uint64_t> sorted = per;
    std::sort(sorted.begin(), sorted.end());
    std::uint64_t t = 0, below = 0;  // below: batches of the workers that ran out by turn t
    std::size_t i = 0;
    for (;;) {
      while (i < nw && sorted[i] <= t) below += sorted[i++];
      const auto active = static_cast<std::uint64_t>(nw - i);
      if (active == 0) break;
      if (below + sorted[i] * active > batches) {
        t = (batches - below) / active;
        break;
      }
      t = sorted[i];
    }
    std::uint64_t given = 0;
    std::vector<std::uint64_t> done(nw);
    for (std::size_t w = 0; w < nw; ++w) {
      done[w] = std::min(per[w], t);
      given += done[w];
    }
    for (std::size_t w = 0; w < nw && given < batches; ++w) {
      if (per[w] > t) {
        ++done[w];
        ++given;
      }
    }
    for (std::size_t w = 0; w < nw; ++w) done[w] = std::min(sizes[w], done[w] * batch_size);
    return done;
  }

  // The state once consumer c has read its first done[c] slots (validated by the caller).
  [[nodiscard]] SamplerState state_of(const std::vector<std::uint64_t>& done) const {
    const Deal& dl = deal();
    const std::uint64_t kk = dl.kk, b = dl.b, even = dl.even, rounds = dl.rounds, base = dl.base;
    // Segment positions consumed, as ranges: the front reads, then the dealt part, where
    // blocks every consumer finished form a prefix.
    std::uint64_t common = UINT64_MAX;
    for (const std::uint64_t d : done) common = std::min(common, std::min(d - std::min(d, dl.front), rounds * b) / b);
    std::vector<PositionRange> seg;
    if (common != 0) seg.push_back(PositionRange{base, base + common * kk * b});
    for (std::uint64_t k = 0; k < kk; ++k) {
      const std::uint64_t all_done = done[static_cast<std::size_t>(k)];
      seg.push_back(PositionRange{k * dl.front, k * dl.front + std::min(all_done, dl.front)});
      const std::uint64_t d = all_done - std::min(all_done, dl.front), f = std::min(d, rounds * b);
      for (std::uint64_t j = common; j < f / b; ++j) {
        seg.push_back(PositionRange{base + (j * kk + k) * b, base + (j * kk + k + 1) * b});
      }
      if (f % b != 0) seg.push_back(PositionRange{base + ((f / b) * kk + k) * b, base + ((f / b) * kk + k) * b + f % b});
      if (d > rounds * b) {
        const std::uint64_t first = base + rounds * b * kk + k * dl.partial;
        seg.push_back(PositionRange{first, first + (std::min(d, even) - rounds * b)});
      }
      if (d > even && k < dl.extra) seg.push_back(PositionRange{base + even * kk + k, base + even * kk + k + 1});
    }
    merge_ranges(seg);
    // To G positions: the gaps between spans were consumed before this segment.
    std::vector<PositionRange> all;
    std::uint64_t g = 0;
    for (const Span& sp : spans_) {
      if (sp.g > g) all.push_back(PositionRange{g, sp.g});
      g = sp.g + sp.length;
    }
    if (n_ > g) all.push_back(PositionRange{g, n_});
    for (const PositionRange& x : seg) {
      std::uint64_t at = x.begin;
      while (at < x.end) {
        const Span& sp = span_of(at);
        const std::uint64_t piece = std::min(x.end, sp.v + sp.length) - at;
        all.push_back(PositionRange{sp.g + (at - sp.v), sp.g + (at - sp.v) + piece});
        at += piece;
      }
    }
    merge_ranges(all);
    SamplerState s;
    s.dataset_size = n_;
    s.seed = options_.seed;
    s.epoch = epoch_;
    s.set_key(state_key(engine_name()));
    std::size_t first = 0;
    if (!all.empty() && all.front().begin == 0) {
      s.consumed = all.front().end;
      first = 1;
    }
    s.ahead.assign(all.begin() + static_cast<std::ptrdiff_t>(first), all.end());
    return s;
  }

  [[nodiscard]] StateKey state_key(const std::string& engine) const noexcept {
    // shuffle is folded into `engine` and the key always says true, so the shard layout
    // is fingerprinted even for unshuffled streams (StateKey drops engine otherwise).
    // Version 2 is the "shard-v2" order the name spells; the layout is the shard-size catalog.
    return StateKey{"shard", n_, options_.seed, true, options_.tail, engine, 2, layout_hash_, "shard sizes", true};
  }

  // The Q position where run `run` (row-major over lanes) starts.
  [[nodiscard]] std::uint64_t run_start(std::uint64_t run) const noexcept {
    const std::uint64_t c = options_.canonical_streams, lane = run % c;
    return lane * lane_length_ + window_row(lane, run / c) * options_.run_length;
  }

  // Which of its runs a lane reads `row`-th: a keyed permutation within each window of w
  // runs (the last window may be shorter). Windows of up to 16 runs are decoded from one
  // hash (an exact draw); larger ones use a FeistelPermutation. O(1).
  [[nodiscard]] std::uint64_t window_row(std::uint64_t lane, std::uint64_t row) const noexcept {
    const std::uint64_t w = options_.shuffle_window, lane_runs = lane_length_ / options_.run_length;
    if (!options_.shuffle || w <= 1) return row;
    const std::uint64_t window = row / w, base = window * w, size = std::min(w, lane_runs - base);
    if (size <= 1) return row;
    const std::uint64_t key = detail::mix64(detail::splitmix64(epoch_key_ ^ lane) ^ window);
    if (size <= detail::small_permutation_max) return base + detail::small_permutation_at(key, size, row - base);
    return base + FeistelPermutation(size, key, 0)(row - base);
  }

  [[nodiscard]] std::uint64_t rotation(std::uint64_t shard) const noexcept {
    if (!options_.shuffle) return 0;
    const std::uint64_t key = detail::mix64(epoch_key_ ^ detail::splitmix64(shard));
    return detail::mulhi64(key, sizes_[static_cast<std::size_t>(shard)]);
  }

  // (local + rot) mod size for local, rot < size, without overflow near 2^64.
  [[nodiscard]] static constexpr std::uint64_t rotate(std::uint64_t local, std::uint64_t rot,
                                                      std::uint64_t size) noexcept {
    return local < size - rot ? local + rot : local - (size - rot);
  }

  // End (exclusive) of the chunk of consumer k containing slot i: slots up to there map
  // to consecutive global positions.
  [[nodiscard]] std::uint64_t chunk_end_of(std::uint64_t k, std::uint64_t i) const noexcept {
    const Deal& d = deal();
    if (i < d.front) return d.front;
    const std::uint64_t j = i - d.front;
    if (j < d.rounds * d.b) return d.front + (j / d.b + 1) * d.b;
    if (j < d.even) return d.front + d.even;
    return consumer_size(k);
  }

  // Calls sink(shard, begin, length, first_slot, stride) for every range consumer k reads
  // in its slots [first, last) (last <= consumer_size(k)): records begin .. begin +
  // length - 1 of `shard` at slots first_slot, first_slot + stride, ... Ranges of one
  // block come run by run, not in first-read order.
  template <class Sink>
  void visit_ranges(std::uint64_t k, std::uint64_t first, std::uint64_t last, Sink&& sink) const {
    std::uint64_t i = first;
    while (i < last) {
      // A chunk: consecutive slots that map to consecutive segment positions.
      const std::uint64_t chunk_end = std::min(last, chunk_end_of(k, i));
      // The chunk's segment positions [x, x + len) may cross gaps between remaining ranges.
      std::uint64_t x = consumer_segment_position(k, i), len = chunk_end - i, slot = i;
      while (len != 0) {
        const Span& sp = span_of(x);
        const std::uint64_t piece = std::min(len, sp.v + sp.length - x);
        const std::uint64_t g = sp.g + (x - sp.v);
        visit_global(g, g + piece, slot, sink);
        x += piece;
        slot += piece;
        len -= piece;
      }
      i = chunk_end;
    }
  }

  // The ranges read for global positions [g0, g1), the first being slot `slot`.
  template <class Sink>
  void visit_global(std::uint64_t g0, std::uint64_t g1, std::uint64_t slot, Sink& sink) const {
    const std::uint64_t m = options_.max_open_shards, b = block_size();
    std::uint64_t g = g0;
    while (g < g1 && g < regular_) {
      const std::uint64_t block = g / b, w0 = g % b;
      const std::uint64_t w1 = std::min(b, w0 + (g1 - g));
      for (std::uint64_t a = 0; a < m; ++a) {
        // Run a's slots in [w0, w1): w = a + m * u.
        const std::uint64_t u0 = w0 <= a ? 0 : (w0 - a + m - 1) / m;
        if (a + m * u0 >= w1) continue;
        const std::uint64_t u1 = (w1 - a + m - 1) / m;  // first u with a + m*u >= w1
        const std::uint64_t q = run_start(block * m + a);
        const std::uint64_t first_slot = slot + (a + m * u0 - w0);
        visit_sequence(q + u0, q + u1, first_slot, m, sink);
      }
      slot += w1 - w0;
      g += w1 - w0;
    }
    if (g < g1) {
      // Tail region: consecutive global positions are consecutive Q positions, except
      // at run boundaries among the leftover runs.
      while (g < g1) {
        const std::uint64_t q = sequence_position(g);
        const std::uint64_t y = g - regular_, l = options_.run_length;
        std::uint64_t piece = g1 - g;
        if (y < leftover_runs_ * l) piece = std::min(piece, l - y % l);
        visit_sequence(q, q + piece, slot, 1, sink);
        slot += piece;
        g += piece;
      }
    }
  }

  // The shard ranges of Q positions [q0, q1), read one slot every `stride`.
  template <class Sink>
  void visit_sequence(std::uint64_t q0, std::uint64_t q1, std::uint64_t slot, std::uint64_t stride, Sink& sink) const {
    const auto& pre = layout_->prefix;
    std::uint64_t q = q0;
    while (q < q1) {
      const auto j = static_cast<std::size_t>(std::upper_bound(pre.begin(), pre.end(), q) - pre.begin() - 1);
      const std::uint64_t shard = layout_->order[j];
      const std::uint64_t size = sizes_[static_cast<std::size_t>(shard)];
      const std::uint64_t piece_end = std::min(q1, pre[j + 1]);
      const std::uint64_t local = q - pre[j];
      const std::uint64_t off = rotate(local, rotation(shard), size);
      const std::uint64_t len = piece_end - q;
      const std::uint64_t first_len = std::min(len, size - off);  // rotation may wrap once
      sink(shard, off, first_len, slot, stride);
      if (first_len < len) sink(shard, std::uint64_t{0}, len - first_len, slot + first_len * stride, stride);
      slot += len * stride;
      q = piece_end;
    }
  }

  void check_worker(std::uint64_t worker) const {
    if (worker >= num_workers_) {
      detail::throw_config_error("StreamingShardSampler: worker " + std::to_string(worker) +
                                 " is out of range for num_workers " + std::to_string(num_workers_) +
                                 " (expected 0.." + std::to_string(num_workers_ - 1) + ")");
    }
  }

  void validate() {
    const std::string who = "StreamingShardSampler: ";
    if (num_workers_ == 0) detail::throw_config_error(who + "num_workers is 0 (expected at least 1)");
    if (num_workers_ > UINT64_MAX / world_.world_size) {
      detail::throw_config_error(who + "world_size " + std::to_string(world_.world_size) + " * num_workers " +
                                 std::to_string(num_workers_) + " overflows 64 bits (expected a product <= " +
                                 std::to_string(UINT64_MAX) + ")");
    }
    const Tail t = options_.tail;
    if (t != Tail::pad && t != Tail::drop && t != Tail::uneven) {
      detail::throw_config_error(who + "tail " + std::to_string(static_cast<int>(t)) +
                                 " is not a Tail (expected pad, drop or uneven)");
    }
    if (options_.canonical_streams == 0) detail::throw_config_error(who + "canonical_streams is 0 (expected at least 1)");
    if (options_.max_open_shards == 0) detail::throw_config_error(who + "max_open_shards is 0 (expected at least 1)");
    if (options_.run_length == 0) detail::throw_config_error(who + "run_length is 0 (expected at least 1)");
    if (options_.shuffle_window == 0) detail::throw_config_error(who + "shuffle_window is 0 (expected at least 1)");
    if (options_.max_open_shards > options_.canonical_streams) {
      detail::throw_config_error(who + "max_open_shards " + std::to_string(options_.max_open_shards) +
                                 " exceeds canonical_streams " + std::to_string(options_.canonical_streams) +
                                 " (expected max_open_shards <= canonical_streams)");
    }
    if (options_.run_length > UINT64_MAX / options_.max_open_shards) {
      detail::throw_config_error(who + "max_open_shards " + std::to_string(options_.max_open_shards) +
                                 " * run_length " + std::to_string(options_.run_length) +
                                 " overflows 64 bits (expected a block size <= " + std::to_string(UINT64_MAX) + ")");
    }
    offsets_.assign(sizes_.size(), 0);
    std::uint64_t total = 0, h = detail::hash_field(0xcbf29ce484222325u, static_cast<std::uint64_t>(sizes_.size()));
    for (std::size_t s = 0; s < sizes_.size(); ++s) {
      if (sizes_[s] > UINT64_MAX - total) {
        detail::throw_config_error(who + "total samples overflow 64 bits at shard " + std::to_string(s) +
                                   " (size " + std::to_string(sizes_[s]) + " after " + std::to_string(total) +
                                   "; expected a sum <= " + std::to_string(UINT64_MAX) + ")");
      }
      offsets_[s] = total;
      total += sizes_[s];
      h = detail::hash_field(h, sizes_[s]);
    }
    n_ = total;
    layout_hash_ = detail::mix64(h);
    // Lanes: C equal lanes of ns runs of L; the rest follows in Q order.
    const std::uint64_t c = options_.canonical_streams, l = options_.run_length, m = options_.max_open_shards;
    const std::uint64_t runs_per_lane = c > n_ / l ? 0 : n_ / (c * l);
    lane_length_ = runs_per_lane * l;
    const std::uint64_t runs = c * runs_per_lane;
    regular_ = (runs / m) * m * l;
    leftover_runs_ = runs % m;
  }

  void replan() {
    auto layout = std::make_shared<detail::ShardEpochLayout>();
    const std::size_t s = sizes_.size();
    layout->order.resize(s);
    for (std::size_t i = 0; i < s; ++i) layout->order[i] = static_cast<std::uint64_t>(i);
    epoch_key_ = detail::mix64(detail::splitmix64(options_.seed ^ 0x7368617264733031u) ^ detail::splitmix64(~epoch_));
    if (options_.shuffle && s > 1) {
      detail::SplitMix64 stream(epoch_key_);
      for (std::size_t i = s - 1; i > 0; --i) {
        const auto j = static_cast<std::size_t>(detail::bounded_draw(stream, static_cast<std::uint64_t>(i) + 1));
        std::swap(layout->order[i], layout->order[j]);
      }
    }
    layout->prefix.resize(s + 1);
    layout->prefix[0] = 0;
    for (std::size_t i = 0; i < s; ++i) {
      layout->prefix[i + 1] = layout->prefix[i] + sizes_[static_cast<std::size_t>(layout->order[i])];
    }
    layout_ = std::move(layout);
  }

  std::vector<std::uint64_t> sizes_;
  std::vector<std::uint64_t> offsets_;
  World world_;
  std::uint64_t num_workers_ = 1;
  ShardSamplerOptions options_;
  std::uint64_t n_ = 0;
  std::uint64_t layout_hash_ = 0;
  std::uint64_t lane_length_ = 0;
  std::uint64_t regular_ = 0;
  std::uint64_t leftover_runs_ = 0;
  std::uint64_t epoch_ = 0;
  std::uint64_t epoch_key_ = 0;
  std::vector<Span> spans_;  // the segment: remaining G ranges in order
  std::uint64_t remaining_ = 0;
  std::uint64_t lead_ = 0;  // V positions before the first untouched block boundary (see Deal)
  Deal deal_;
  std::shared_ptr<const detail::ShardEpochLayout> layout_;
};

inline StreamingShardSampler::worker_stream StreamingShardSampler::stream(std::uint64_t worker) const {
  return worker_stream(this, consumer(worker));
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STREAMING_SHARD_SAMPLER_HPP

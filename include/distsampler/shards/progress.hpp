// distsampler shard progress: consumers' read counts of a shard segment turned into the SamplerState to resume from.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARD_PROGRESS_HPP
#define DISTSAMPLER_SHARD_PROGRESS_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/position_ranges.hpp"
#include "../error.hpp"
#include "detail/walk.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "../world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Progress of lockstep ranks: worker w of every rank read the first `done()[w]` samples
/// of its stream (one entry per worker). Pass to StreamingShardSampler::state.
class WorkerProgress {
 public:
  explicit WorkerProgress(std::vector<std::uint64_t> worker_done) : done_(std::move(worker_done)) {}
  [[nodiscard]] const std::vector<std::uint64_t>& done() const noexcept { return done_; }

 private:
  std::vector<std::uint64_t> done_;
};

/// Progress of every consumer of the job: consumer c (= worker * world_size + rank) read
/// the first `done()[c]` samples of its stream; for ranks that did not run in lockstep
/// (gather the counts first, e.g. with mpi::shard_state). Pass to StreamingShardSampler::state.
class ConsumerProgress {
 public:
  explicit ConsumerProgress(std::vector<std::uint64_t> consumer_done) : done_(std::move(consumer_done)) {}
  [[nodiscard]] const std::vector<std::uint64_t>& done() const noexcept { return done_; }

 private:
  std::vector<std::uint64_t> done_;
};

namespace detail {

/// The StateKey of a shard order and the names it views (keep this object alive while the
/// key is used). Family "shard"; the engine name carries every option that changes the
/// order (shuffle included, so the key always says shuffle=true and the engine is kept for
/// unshuffled streams too); the layout field is the shard catalog's hash, named "shard
/// sizes" in mismatch messages; ahead ranges are accepted.
class ShardStateKey {
 public:
  explicit ShardStateKey(const ShardEpochOrder& order)
      : engine_(shard_order_name(order.options())),
        legacy_(shard_legacy_order_name(order.options(), order.catalog())),
        size_(order.size()),
        seed_(order.options().seed),
        tail_(order.options().tail),
        layout_(order.catalog().layout_hash()),
        version_(ShardEpochOrder::format_version(order.options())) {}

  [[nodiscard]] StateKey get() const noexcept {
    StateKey k;
    k.sampler = "shard";
    k.dataset_size = size_;
    k.seed = seed_;
    k.shuffle = true;
    k.tail = tail_;
    k.engine = engine_;
    k.engine_version = version_;
    k.layout = layout_;
    k.layout_name = "shard sizes";
    k.accepts_ahead = true;
    k.legacy_engine = legacy_;
    // "shard-v2" was this order's name before states recorded versions; version 3 orders differ.
    k.legacy_order = version_ == 2;
    return k;
  }

 private:
  std::string engine_, legacy_;
  std::uint64_t size_, seed_;
  Tail tail_;
  std::uint64_t layout_;
  std::uint32_t version_;
};

/// Per-consumer counts when every consumer read `samples_done` (a shorter stream: all of
/// it). Throws config_error when samples_done exceeds the longest stream.
[[nodiscard]] inline std::vector<std::uint64_t> equal_progress(const ShardWalk& walk, std::uint64_t samples_done,
                                                               std::string_view who) {
  const std::uint64_t k = walk.consumers(), longest = walk.size(0);
  if (samples_done > longest) {
    throw_config_error(std::string(who) + ": samples_done " + std::to_string(samples_done) +
                       " exceeds the longest worker stream of this segment (" + std::to_string(longest) + " samples)");
  }
  std::vector<std::uint64_t> done(static_cast<std::size_t>(k));
  for (std::uint64_t c = 0; c < k; ++c) done[static_cast<std::size_t>(c)] = std::min(samples_done, walk.size(c));
  return done;
}

/// Per-consumer counts from per-worker ones (the same on every rank of `world_size`).
/// Throws config_error for a wrong entry count or an entry past its stream's end.
[[nodiscard]] inline std::vector<std::uint64_t> worker_progress(const ShardWalk& walk, std::uint64_t world_size,
                                                                const WorkerProgress& progress, std::string_view who) {
  const std::vector<std::uint64_t>& worker_done = progress.done();
  const std::uint64_t workers = walk.consumers() / world_size;
  if (worker_done.size() != workers) {
    throw_config_error(std::string(who) + ": WorkerProgress has " + std::to_string(worker_done.size()) +
                       " entries (expected num_workers = " + std::to_string(workers) + ")");
  }
  std::vector<std::uint64_t> done(static_cast<std::size_t>(walk.consumers()));
  for (std::uint64_t w = 0; w < workers; ++w) {
    for (std::uint64_t r = 0; r < world_size; ++r) {
      const std::uint64_t c = w * world_size + r, d = worker_done[static_cast<std::size_t>(w)], size = walk.size(c);
      if (d > size) {
        throw_config_error(std::string(who) + ": worker " + std::to_string(w) + " read " + std::to_string(d) +
                           " samples, past the end of rank " + std::to_string(r) + "'s stream of " +
                           std::to_string(size) + " (expected at most " + std::to_string(size) + ")");
      }
      done[static_cast<std::size_t>(c)] = d;
    }
  }
  return done;
}

/// Checks per-consumer counts. Throws config_error for a wrong entry count or an entry
/// past its stream's end.
inline void check_consumer_progress(const ShardWalk& walk, const ConsumerProgress& progress, std::string_view who) {
  const std::vector<std::uint64_t>& done = progress.done();
  if (done.size() != walk.consumers()) {
    throw_config_error(std::string(who) + ": ConsumerProgress has " + std::to_string(done.size()) +
                       " entries (expected consumers() = " + std::to_string(walk.consumers()) + ")");
  }
  for (std::uint64_t c = 0; c < walk.consumers(); ++c) {
    const std::uint64_t d = done[static_cast<std::size_t>(c)], size = walk.size(c);
    if (d > size) {
      throw_config_error(std::string(who) + ": consumer " + std::to_string(c) + " read " + std::to_string(d) +
                         " samples, past the end of its stream of " + std::to_string(size) + " (expected at most " +
                         std::to_string(size) + ")");
    }
  }
}

/// The state once consumer c of `walk` has read its first done[c] slots (validated: one
/// entry per consumer, each within its stream): the deal's consumed segment positions
/// (BlockDeal::consumed_compact), mapped to G and joined with what was consumed before
/// the segment (RemainingSegment::epoch_consumed_compact), stored as a prefix, ranges
/// ahead and strided entries, or, when that takes no more bytes, with the entries written
/// out as ranges (consumers only a few blocks apart). O(consumers log consumers + entries
/// of the resumed state).
[[nodiscard]] inline SamplerState shard_state(const ShardWalk& walk, const std::vector<std::uint64_t>& done) {
  std::vector<std::uint64_t> by_slot(done.size());
  for (std::size_t k = 0; k < done.size(); ++k) by_slot[static_cast<std::size_t>(walk.slot(k))] = done[k];
  PositionSet all = walk.segment().epoch_consumed_compact(walk.deal().consumed_compact(by_slot));
  SamplerState s;
  s.dataset_size = walk.order().size();
  s.seed = walk.order().options().seed;
  s.epoch = walk.epoch();
  s.set_key(ShardStateKey(walk.order()).get());
  std::size_t first = 0;
  if (!all.ranges.empty() && all.ranges.front().begin == 0) {
    s.consumed = all.ranges.front().end;
    first = 1;
  }
  s.ahead.assign(all.ranges.begin() + static_cast<std::ptrdiff_t>(first), all.ranges.end());
  s.strided = std::move(all.strided);
  // Consumers only a few blocks apart: when the entries' elements, written as merged
  // ranges (version 3), take no more bytes than the entries (16 per range, 32 per entry
  // and 8 for the version-4 count), write them so. Tried only for at most 16 elements per
  // entry on average, so this stays O(entries).
  std::uint64_t elements = 0;
  for (const StridedRange& e : s.strided) elements += std::min<std::uint64_t>(e.count, 17 * s.strided.size());
  if (!s.strided.empty() && elements <= 16 * s.strided.size()) {
    std::vector<PositionRange> plain;
    if (s.consumed != 0) plain.push_back(PositionRange{0, s.consumed});
    plain.insert(plain.end(), s.ahead.begin(), s.ahead.end());
    append_elements(s.strided, plain);
    merge_ranges(plain);
    const bool prefix = !plain.empty() && plain.front().begin == 0;
    const std::size_t ranges = plain.size() - (prefix ? 1 : 0);
    if (16 * ranges <= 16 * s.ahead.size() + 32 * s.strided.size() + 8) {
      s.consumed = prefix ? plain.front().end : 0;
      s.ahead.assign(plain.begin() + (prefix ? 1 : 0), plain.end());
      s.strided.clear();
    }
  }
  return s;
}

}  // namespace detail

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARD_PROGRESS_HPP

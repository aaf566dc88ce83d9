// distsampler shard schedules: which shards consumers read in a segment, when first and last, and how many records.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARD_SCHEDULE_HPP
#define DISTSAMPLER_SHARD_SCHEDULE_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lane_rounds.hpp"
#include "walk.hpp"
#include "../../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// One shard of a read schedule: consumers read `samples` records of `shard` (padding
/// duplicates included: every slot reading from it counts), the first in stream slot
/// `first_slot`, the last in slot `last_slot`. For several consumers the slots are each
/// consumer's own stream slots (workers of a loader advance about in step, so a slot
/// is a moment of the epoch): the earliest first and the latest last over them.
struct ScheduledShard {
  std::uint64_t shard = 0;
  std::uint64_t first_slot = 0;
  std::uint64_t last_slot = 0;
  std::uint64_t samples = 0;

  friend constexpr bool operator==(const ScheduledShard& a, const ScheduledShard& b) noexcept {
    return a.shard == b.shard && a.first_slot == b.first_slot && a.last_slot == b.last_slot && a.samples == b.samples;
  }
  friend constexpr bool operator!=(const ScheduledShard& a, const ScheduledShard& b) noexcept { return !(a == b); }
};

/// The shard schedule of consumers `consumers` of `walk` over their whole streams in
/// this segment: one ScheduledShard per shard any of them reads, ordered by first_slot
/// (then shard), so a loader can fetch in that order and evict a shard once last_slot
/// has passed. Exact: the same as visiting every slot with ShardWalk::sample.
///
/// Cost, per consumer: the whole rounds lying in G's whole blocks (ShardWalk::lane_rounds,
/// all of a fresh epoch but its last rows) are counted lane by lane without visiting
/// their slots, O((m * p + pieces) * (w / row_step + 1) + m * p * log shards) for m =
/// max_open_shards, p <= canonical_streams the rounds after which the consumer's blocks
/// return to the same lanes, w the shuffle window's rows and pieces the shard pieces of
/// the lanes it reads (about (shards + C) * m * p / C, C = canonical_streams); the other
/// slots are walked range by range: its front (a resumed segment's holes, 1/K of the lead
/// a stop left over the slowest consumer), the round holding the last holes, the last
/// rounds reaching G's positions past its whole blocks (about (m + C) * L / K + one block
/// of slots), the partial round and the tail slot. Memory O(shards). No slot-by-slot walk of the rounds, so at 10^10
/// samples a consumer's schedule costs about as much as its shards.
/// Consumers are unchecked (< walk.consumers()). Deterministic; thread-safe on a shared walk.
[[nodiscard]] inline std::vector<ScheduledShard> shard_schedule(const ShardWalk& walk,
                                                                const std::vector<std::uint64_t>& consumers) {
  const ShardEpochOrder& order = walk.order();
  std::vector<std::uint64_t> where(static_cast<std::size_t>(walk.catalog().num_shards()), UINT64_MAX);
  std::vector<ScheduledShard> out;
  auto add = [&](std::uint64_t shard, std::uint64_t samples, std::uint64_t first, std::uint64_t last) {
    std::uint64_t& at = where[static_cast<std::size_t>(shard)];
    if (at == UINT64_MAX) {
      at = static_cast<std::uint64_t>(out.size());
      out.push_back(ScheduledShard{shard, first, last, samples});
      return;
    }
    ScheduledShard& e = out[static_cast<std::size_t>(at)];
    e.first_slot = std::min(e.first_slot, first);
    e.last_slot = std::max(e.last_slot, last);
    e.samples += samples;
  };
  auto walked = [&](std::uint64_t shard, std::uint64_t begin, std::uint64_t length, std::uint64_t first_slot,
                    std::uint64_t stride) {
    static_cast<void>(begin);
    add(shard, length, first_slot, first_slot + (length - 1) * stride);
  };
  for (const std::uint64_t k : consumers) {
    const std::uint64_t size = walk.size(k);
    const ShardWalk::Rounds r = walk.lane_rounds(k);
    const std::uint64_t s0 = r.rounds != 0 ? r.first_slot : size, s1 = r.rounds != 0 ? s0 + r.rounds * r.width : size;
    walk.visit_ranges(k, 0, s0, walked);
    if (r.rounds != 0) {
      for_each_lane_progression(order, r.g, r.width, r.period, r.rounds, s0,
                                [&](const LaneProgression& pr) { tally_lane_progression(order, pr, add); });
    }
    walk.visit_ranges(k, s1, size, walked);
  }
  std::sort(out.begin(), out.end(), [](const ScheduledShard& a, const ScheduledShard& b) {
    return a.first_slot != b.first_slot ? a.first_slot < b.first_slot : a.shard < b.shard;
  });
  return out;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARD_SCHEDULE_HPP

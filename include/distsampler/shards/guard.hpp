// distsampler shard family's guard customisation points: its overlap sums (segment_sums) and its GuardShape.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARDS_GUARD_HPP
#define DISTSAMPLER_SHARDS_GUARD_HPP

#include <cstdint>
#include <vector>

#include "../detail/mix.hpp"
#include "../overlap_check.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "streaming_shard_sampler.hpp"  // the sampler (which never includes this header)

DISTSAMPLER_NAMESPACE_BEGIN

/// The overlap guards' customisation point for this family (overlap_check.hpp): what
/// `process` (this process's true rank and world size) contributes for the current epoch
/// or resumed segment of a StreamingShardSampler: every worker stream of this rank (padding
/// flagged), and its share of the positions outside remaining_ranges() (consumed before
/// the segment) and of the segment's last positions Tail::drop leaves (remaining mod
/// consumers()). O(size() + N / W); deterministic.
[[nodiscard]] inline ReadSums segment_sums(const StreamingShardSampler& s, const World& process) {
  ReadSums sums;
  for (std::uint64_t w = 0; w < s.num_workers(); ++w) {
    s.for_each(w, [&](const ShardSample& x) {
      if (x.is_padding) {
        sums.padding();
      } else {
        sums.read(x.index);
      }
    });
  }
  const auto ranges = s.remaining_ranges();
  auto skip = [&](std::uint64_t p) { sums.skip(s.at_global(p).index); };
  std::uint64_t p = 0, remaining = 0;
  for (const PositionRange& r : ranges) {
    detail::each_skipped_by(p, r.begin, process, skip);
    p = r.end;
    remaining += r.size();
  }
  detail::each_skipped_by(p, s.dataset_size(), process, skip);
  if (s.options().tail == Tail::drop) {
    std::uint64_t dropped = remaining % s.consumers();  // the segment's last positions
    for (auto r = ranges.rbegin(); r != ranges.rend() && dropped != 0; ++r) {
      const std::uint64_t take = r->size() < dropped ? r->size() : dropped;
      detail::each_skipped_by(r->end - take, r->end, process, skip);
      dropped -= take;
    }
  }
  return sums;
}

/// The guards' shape of a StreamingShardSampler: its worker count, and as layout the hash
/// of its shard sizes (the key's layout) and of what the resumed state had consumed, as it
/// recorded it (O(state entries), not one range per hole). O(state entries).
[[nodiscard]] inline GuardShape guard_shape(const StreamingShardSampler& s) noexcept {
  using detail::hash_field;
  std::uint64_t layout = s.catalog().layout_hash();
  for (const PositionRange& r : s.consumed_before().ranges) layout = hash_field(hash_field(layout, r.begin), r.end);
  for (const StridedRange& r : s.consumed_before().strided) {
    layout = hash_field(hash_field(hash_field(hash_field(layout, r.begin), r.length), r.stride), r.count);
  }
  GuardShape shape;
  shape.num_workers = s.num_workers();
  shape.layout = detail::mix64(layout);
  return shape;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARDS_GUARD_HPP

// distsampler distributed family's guard customisation point: its overlap sums (segment_sums).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DISTRIBUTED_GUARD_HPP
#define DISTSAMPLER_DISTRIBUTED_GUARD_HPP

#include <cstdint>

#include "../overlap_check.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "distributed_sampler.hpp"  // the sampler (which never includes this header)

DISTSAMPLER_NAMESPACE_BEGIN

/// The overlap guards' customisation point for this family (overlap_check.hpp): what
/// `process` (this process's true rank and world size) contributes for the current
/// epoch or resumed segment of a DistributedSampler: every slot it reads (padding
/// flagged), and its share of the positions the segment leaves unread (consumed before
/// start(), and the remainder Tail::drop leaves). Summed over all ranks with
/// overlap_words, the verdict covers all N samples. O(size() + N / W); deterministic.
template <class P>
[[nodiscard]] ReadSums segment_sums(const DistributedSampler<P>& s, const World& process) {
  ReadSums sums;
  for (std::uint64_t i = 0; i < s.size(); ++i) {
    if (s.partition().is_padding(i)) {
      sums.padding();
    } else {
      sums.read(s.get(i));
    }
  }
  const std::uint64_t n = s.dataset_size(), start = s.start(), remaining = n - start;
  const std::uint64_t covered = s.options().tail == Tail::drop ? remaining - remaining % s.world_size() : remaining;
  detail::skip_outside(sums, n, start, covered, process, [&](std::uint64_t p) { return s.index_at_position(p); });
  return sums;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DISTRIBUTED_GUARD_HPP

// distsampler internal: sorting and merging lists of PositionRange.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_POSITION_RANGES_HPP
#define DISTSAMPLER_DETAIL_POSITION_RANGES_HPP

#include <algorithm>
#include <cstddef>
#include <vector>

#include "../state.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

/// Sorts `ranges` by begin and merges overlapping and touching ranges, dropping empty
/// ones, in place: the canonical form of a set of positions. O(r log r), no throw beyond
/// the sort's (none for PositionRange).
inline void merge_ranges(std::vector<PositionRange>& ranges) {
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

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_POSITION_RANGES_HPP

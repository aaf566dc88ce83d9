// distsampler internal: sorting and merging lists of PositionRange, and the stored form of a PositionSet.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_POSITION_RANGES_HPP
#define DISTSAMPLER_DETAIL_POSITION_RANGES_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../../state.hpp"
#include "../../version.hpp"

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

/// Appends the elements of `strided` to `out` as ranges (unmerged). O(elements).
inline void append_elements(const std::vector<StridedRange>& strided, std::vector<PositionRange>& out) {
  for (const StridedRange& s : strided) {
    for (std::uint64_t i = 0; i < s.count; ++i) out.push_back(s.element(i));
  }
}

/// Brings a PositionSet (ranges any order; strided entries mutually disjoint, stride >
/// length, possibly inside or touching ranges) to the form a SamplerState stores: ranges
/// merged; every element that begins at or before the end of the prefix (the range
/// starting at 0) joined to the prefix, repeatedly; entries of one element turned into
/// ranges, empty ones dropped; entries sorted by begin. The set of positions is unchanged.
/// O((ranges + entries) log(ranges + entries)) per pass; a pass repeats only when the
/// prefix grew.
inline void normalize_positions(PositionSet& set) {
  auto by_begin = [](const StridedRange& a, const StridedRange& b) { return a.begin < b.begin; };
  merge_ranges(set.ranges);
  for (bool changed = true; changed;) {
    changed = false;
    std::sort(set.strided.begin(), set.strided.end(), by_begin);
    std::uint64_t prefix = !set.ranges.empty() && set.ranges.front().begin == 0 ? set.ranges.front().end : 0;
    const std::uint64_t before = prefix;
    // In begin order, so a chain of entries each touching the grown prefix joins in one pass.
    for (StridedRange& s : set.strided) {
      if (s.count == 0 || s.begin > prefix) continue;
      const std::uint64_t n = std::min(s.count, (prefix - s.begin) / s.stride + 1);
      prefix = std::max(prefix, s.begin + (n - 1) * s.stride + s.length);
      s.count -= n;
      if (s.count != 0) s.begin += n * s.stride;
    }
    std::vector<StridedRange> kept;
    for (const StridedRange& s : set.strided) {
      if (s.count == 1) {
        set.ranges.push_back(s.element(0));
        changed = true;
      } else if (s.count > 1) {
        kept.push_back(s);
      }
    }
    set.strided.swap(kept);
    if (prefix != before) {
      set.ranges.push_back(PositionRange{0, prefix});
      changed = true;
    }
    merge_ranges(set.ranges);
  }
  std::sort(set.strided.begin(), set.strided.end(), by_begin);
}

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_POSITION_RANGES_HPP

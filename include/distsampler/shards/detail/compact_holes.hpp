// distsampler internal: consumed positions kept as ranges and strided progressions, with rank and select over the rest.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_COMPACT_HOLES_HPP
#define DISTSAMPLER_DETAIL_COMPACT_HOLES_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../../state.hpp"
#include "../../version.hpp"
#include "position_ranges.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

/// A set C of consumed positions of an epoch, stored as it came (ranges and strided
/// progressions, O(ranges + entries) instead of one entry per hole), answering questions
/// about the free positions (those not in C): how many lie below g, where the x-th is, and
/// where a run of free or of consumed positions ends.
///
/// At construction an element that partly overlaps a range joins it (its other positions
/// belong to no other entry, so one pass suffices); elements inside ranges stay in their
/// entries and are counted once, in the range (positions of elements inside each range are
/// summed), so an entry is never cut: a later segment's fronts, one range each over many
/// of an earlier segment's entries, cost nothing per pair. Entries are grouped into
/// clusters: entries whose spans (first element's begin to last element's end) overlap.
/// Entries of a state overlap only within a cluster of one stride, at disjoint offsets in
/// it (SamplerState), which the walks below rely on.
///
/// Complexity, for n = r ranges + e entries and c the largest cluster's entries: memory
/// O(n) (about 5 items per entry); construction O(n log n + p + n c), p the pairs of an
/// entry and a range its span meets; select O(log n + c); next_consumed O(log n) plus the
/// cluster's entries passed over in phase order until one has an element in the next
/// stride (all c when none has); next_free that per item of C touching the run.
/// Immutable after construction.
class CompactHoles {
 public:
  CompactHoles() = default;

  /// The union of `ranges` (sorted and merged, as merge_ranges leaves them) and the elements
  /// of `strided` (entries as a canonical SamplerState holds them: count >= 1, stride >
  /// length, no shared position, entries whose spans overlap of one stride; they may
  /// overlap the ranges). No checks: the caller validated the set.
  CompactHoles(std::vector<PositionRange> ranges, const std::vector<StridedRange>& strided) {
    // Elements partly inside a range join it (their other positions belong to no other
    // entry, so one pass suffices).
    std::vector<PositionRange> joined = ranges;
    for (const StridedRange& s : strided) {
      for_each_overlap(ranges, s, [&](std::uint64_t lo, std::uint64_t hi, const PositionRange& r) {
        if (s.element(lo).begin < r.begin) joined.push_back(s.element(lo));
        if (s.element(hi).end > r.end) joined.push_back(s.element(hi));
      });
    }
    merge_ranges(joined);
    // Now every element meeting a range lies inside it: count those positions per range
    // (counted once, in the range) and keep the entries whole.
    std::vector<std::uint64_t> inside(joined.size(), 0);
    for (const StridedRange& s : strided) {
      for_each_overlap(joined, s, [&](std::uint64_t lo, std::uint64_t hi, const PositionRange& r) {
        inside[static_cast<std::size_t>(&r - joined.data())] += (hi - lo + 1) * s.length;
      });
    }
    std::vector<StridedRange> entries = strided;
    std::sort(entries.begin(), entries.end(),
              [](const StridedRange& a, const StridedRange& b) { return a.begin < b.begin; });
    ranges_ = std::move(joined);
    entries_ = std::move(entries);
    inside_sum_.assign(ranges_.size() + 1, 0);
    for (std::size_t i = 0; i < ranges_.size(); ++i) inside_sum_[i + 1] = inside_sum_[i] + inside[i];
    range_sum_.assign(ranges_.size() + 1, 0);
    for (std::size_t i = 0; i < ranges_.size(); ++i) range_sum_[i + 1] = range_sum_[i] + ranges_[i].size();
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      const StridedRange& s = entries_[i];
      if (clusters_.empty() || s.begin >= clusters_.back().end) {
        clusters_.push_back(Cluster{s.begin, s.end(), i, i + 1, 0});
      } else {
        clusters_.back().end = std::max(clusters_.back().end, s.end());
        clusters_.back().last = i + 1;
      }
      clusters_.back().size += s.size();
    }
    by_phase_.resize(entries_.size());
    for (const Cluster& cl : clusters_) {
      const std::uint64_t stride = entries_[cl.first].stride;
      for (std::size_t i = cl.first; i < cl.last; ++i) by_phase_[i] = i;
      // Sorted by begin within a phase already: entries_ is, and the sort is stable.
      std::stable_sort(by_phase_.begin() + static_cast<std::ptrdiff_t>(cl.first),
                       by_phase_.begin() + static_cast<std::ptrdiff_t>(cl.last), [&](std::size_t a, std::size_t b) {
                         return entries_[a].begin % stride < entries_[b].begin % stride;
                       });
    }
    cluster_sum_.assign(clusters_.size() + 1, 0);
    for (std::size_t i = 0; i < clusters_.size(); ++i) cluster_sum_[i + 1] = cluster_sum_[i] + clusters_[i].size;
    consumed_ = range_sum_.back() + cluster_sum_.back() - inside_sum_.back();
    last_ = std::max(ranges_.empty() ? 0 : ranges_.back().end, clusters_.empty() ? 0 : clusters_.back().end);
    // Marks at every range and entry boundary, with the free positions below each.
    std::vector<std::uint64_t> at{0};
    for (const PositionRange& r : ranges_) {
      at.push_back(r.begin);
      at.push_back(r.end);
    }
    for (const StridedRange& e : entries_) {
      at.push_back(e.begin);
      at.push_back(e.end());
    }
    std::sort(at.begin(), at.end());
    at.erase(std::unique(at.begin(), at.end()), at.end());
    marks_.reserve(at.size());
    for (const std::uint64_t g : at) {
      // Inside a range the free count is the one at its begin.
      const std::size_t r = ranges_before(g);
      const std::uint64_t from = r != 0 && ranges_[r - 1].end > g ? ranges_[r - 1].begin : g;
      marks_.push_back(Mark{g, from - consumed_below(from)});
    }
  }

  /// Positions in C.
  [[nodiscard]] std::uint64_t consumed() const noexcept { return consumed_; }
  /// One past the last position of C (0 when C is empty): every position from here on is free.
  [[nodiscard]] std::uint64_t last() const noexcept { return last_; }
  /// Items stored: ranges, entries (and their order), clusters and marks (8 to 40 bytes each).
  [[nodiscard]] std::uint64_t stored() const noexcept {
    return ranges_.size() + entries_.size() + by_phase_.size() + clusters_.size() + marks_.size();
  }

  /// Positions of C below g, for g not strictly inside a range.
  [[nodiscard]] std::uint64_t consumed_below(std::uint64_t g) const noexcept {
    const std::size_t r = ranges_before(g);
    std::uint64_t n = range_sum_[r] - inside_sum_[r];
    const std::size_t c = clusters_before(g);
    n += cluster_sum_[c];
    if (c != 0 && clusters_[c - 1].end > g) n -= clusters_[c - 1].size - cluster_below(clusters_[c - 1], g);
    return n;
  }

  /// The free position with x free positions below it.
  [[nodiscard]] std::uint64_t select(std::uint64_t x) const noexcept {
    // The last mark with at most x free positions below: the x-th lies in its zone.
    const auto it = std::upper_bound(marks_.begin(), marks_.end(), x,
                                     [](std::uint64_t value, const Mark& m) { return value < m.free; });
    const Mark& m = *(it - 1);
    if (it == marks_.end()) return m.g + (x - m.free);
    const std::size_t c = clusters_before(m.g + 1);
    if (c == 0 || clusters_[c - 1].end <= m.g) return m.g + (x - m.free);
    // Inside a cluster, in no range (the zone has free positions). Marks sit at every
    // entry's begin and end, so an entry either spans the zone or misses it, and every
    // stride of the zone holds the same free positions: skip whole strides, then walk the
    // spanning entries' elements in position order (their phase order) from there.
    const Cluster& cl = clusters_[c - 1];
    const std::uint64_t a = m.g, b = it->g, stride = entries_[cl.first].stride;
    auto spans_zone = [&](const StridedRange& e) { return e.begin <= a && e.end() >= b; };
    std::uint64_t covered = 0;
    for (std::size_t i = cl.first; i < cl.last; ++i) {
      if (spans_zone(entries_[i])) covered += entries_[i].length;
    }
    const std::uint64_t per_stride = stride - std::min(stride, covered), want = x - m.free;
    const std::uint64_t whole = per_stride == 0 ? 0 : std::min(want / per_stride, (b - a) / stride);
    std::uint64_t g = a + whole * stride, left = want - whole * per_stride;
    const std::uint64_t phase = g % stride, period = g - phase;
    // The element holding g, if any, ends where the walk starts.
    for (std::size_t i = cl.first; i < cl.last; ++i) {
      const StridedRange& e = entries_[i];
      if (spans_zone(e) && g >= e.begin && g < e.end() && (g - e.begin) % stride < e.length) {
        g = e.begin + (g - e.begin) / stride * stride + e.length;
        break;
      }
    }
    const auto order_begin = by_phase_.begin() + static_cast<std::ptrdiff_t>(cl.first);
    const std::size_t n = cl.last - cl.first;
    const std::size_t start = static_cast<std::size_t>(
        std::lower_bound(order_begin, order_begin + static_cast<std::ptrdiff_t>(n), phase,
                         [&](std::size_t i, std::uint64_t value) { return entries_[i].begin % stride < value; }) -
        order_begin);
    for (std::size_t step = 0; step < n; ++step) {
      const StridedRange& e = entries_[*(order_begin + static_cast<std::ptrdiff_t>((start + step) % n))];
      // Past the last position (totals near 2^64): no element there.
      if (start + step >= n && period + e.begin % stride > UINT64_MAX - stride) continue;
      const std::uint64_t at = period + e.begin % stride + (start + step >= n ? stride : 0);
      if (!spans_zone(e) || at < g || at < e.begin || (at - e.begin) / stride >= e.count) continue;
      if (left < at - g) break;
      left -= at - g;
      g = at + e.length;
    }
    return g + left;
  }

  /// The first position of C at or after g, or UINT64_MAX when none; g must not lie
  /// strictly inside a run of C's ranges or elements (a free position, or where one ends).
  [[nodiscard]] std::uint64_t next_consumed(std::uint64_t g) const noexcept { return next_item(g).begin; }

  /// The first free position at or after g, under next_consumed's condition on g: the
  /// ranges and elements beginning where the previous one ends are skipped.
  [[nodiscard]] std::uint64_t next_free(std::uint64_t g) const noexcept {
    while (g < last_) {
      const PositionRange item = next_item(g);
      if (item.begin != g) break;
      g = item.end;
    }
    return g;
  }

 private:
  struct Cluster {
    std::uint64_t begin = 0, end = 0;
    std::size_t first = 0, last = 0;  // entries [first, last), and their order by phase in by_phase_
    std::uint64_t size = 0;           // positions of its elements
  };
  struct Mark {
    std::uint64_t g = 0;
    std::uint64_t free = 0;  // free positions below g
  };

  // Calls f(lo, hi, r) for each range r of `ranges` (sorted, disjoint) that shares
  // positions with an element of s: elements lo..hi (inclusive) are those.
  template <class F>
  static void for_each_overlap(const std::vector<PositionRange>& ranges, const StridedRange& s, F&& f) {
    const std::uint64_t end = s.end();
    auto it = std::upper_bound(ranges.begin(), ranges.end(), s.begin,
                               [](std::uint64_t x, const PositionRange& r) { return x < r.end; });
    for (; it != ranges.end() && it->begin < end; ++it) {
      const PositionRange& r = *it;
      // Elements ending after r.begin and beginning before r.end.
      const std::uint64_t lo = r.begin < s.begin + s.length ? 0 : (r.begin - s.begin - s.length) / s.stride + 1;
      const std::uint64_t hi = std::min(s.count - 1, (r.end - 1 - std::min(r.end - 1, s.begin)) / s.stride);
      if (r.end <= s.begin || lo > hi) continue;
      f(lo, hi, r);
    }
  }

  // The first range or element of C beginning at or after g (g not strictly inside one),
  // {UINT64_MAX, UINT64_MAX} when none. O(log(r + e)) plus, inside a cluster, the entries
  // scanned in phase order from g's phase until one has an element in the next stride
  // (entries that ended or not yet began are passed over; all of them when none does).
  [[nodiscard]] PositionRange next_item(std::uint64_t g) const noexcept {
    PositionRange best{UINT64_MAX, UINT64_MAX};
    const std::size_t r = ranges_before(g);  // ranges_[r] is the first beginning at or after g
    if (r < ranges_.size()) best = ranges_[r];
    const std::size_t c = clusters_before(g + 1);
    if (c < clusters_.size() && clusters_[c].begin < best.begin) {
      const StridedRange& first = entries_[clusters_[c].first];
      best = first.element(0);
    }
    if (c == 0 || clusters_[c - 1].end <= g) return best;
    const Cluster& cl = clusters_[c - 1];
    const std::uint64_t stride = entries_[cl.first].stride, phase = g % stride, period = g - phase;
    const auto order_begin = by_phase_.begin() + static_cast<std::ptrdiff_t>(cl.first);
    const auto order_end = by_phase_.begin() + static_cast<std::ptrdiff_t>(cl.last);
    const auto from = std::lower_bound(order_begin, order_end, phase, [&](std::size_t i, std::uint64_t value) {
      return entries_[i].begin % stride < value;
    });
    const std::size_t n = cl.last - cl.first, start = static_cast<std::size_t>(from - order_begin);
    for (std::size_t step = 0; step < n; ++step) {
      const bool wrapped = start + step >= n;
      const StridedRange& s = entries_[*(order_begin + static_cast<std::ptrdiff_t>((start + step) % n))];
      if (wrapped && period + s.begin % stride > UINT64_MAX - stride) continue;  // past the last position
      const std::uint64_t at = period + s.begin % stride + (wrapped ? stride : 0);
      if (at >= s.begin && (at - s.begin) / stride < s.count) {
        if (at < best.begin) best = PositionRange{at, at + s.length};
        return best;
      }
    }
    for (std::size_t i = cl.first; i < cl.last; ++i) {
      const std::uint64_t at = element_at_or_after(entries_[i], g);
      if (at < best.begin) best = PositionRange{at, at + entries_[i].length};
    }
    return best;
  }

  // Ranges beginning before g.
  [[nodiscard]] std::size_t ranges_before(std::uint64_t g) const noexcept {
    return static_cast<std::size_t>(
        std::lower_bound(ranges_.begin(), ranges_.end(), g,
                         [](const PositionRange& r, std::uint64_t x) { return r.begin < x; }) -
        ranges_.begin());
  }
  // Clusters beginning before g.
  [[nodiscard]] std::size_t clusters_before(std::uint64_t g) const noexcept {
    return static_cast<std::size_t>(std::lower_bound(clusters_.begin(), clusters_.end(), g,
                                                     [](const Cluster& c, std::uint64_t x) { return c.begin < x; }) -
                                    clusters_.begin());
  }
  // Positions of the cluster's elements below g.
  [[nodiscard]] std::uint64_t cluster_below(const Cluster& cl, std::uint64_t g) const noexcept {
    std::uint64_t n = 0;
    for (std::size_t i = cl.first; i < cl.last && entries_[i].begin < g; ++i) n += entries_[i].size_below(g);
    return n;
  }
  // The begin of s's first element at or after g (g in no element of s), or UINT64_MAX.
  [[nodiscard]] static std::uint64_t element_at_or_after(const StridedRange& s, std::uint64_t g) noexcept {
    if (g <= s.begin) return s.begin;
    const std::uint64_t j = (g - s.begin) / s.stride + ((g - s.begin) % s.stride != 0 ? 1 : 0);
    return j < s.count ? s.begin + j * s.stride : UINT64_MAX;
  }

  std::vector<PositionRange> ranges_;      // sorted, merged, disjoint from every element
  std::vector<std::uint64_t> range_sum_;   // positions of the first i ranges
  std::vector<std::uint64_t> inside_sum_;  // positions of elements inside the first i ranges
  std::vector<StridedRange> entries_;      // sorted by begin; elements inside ranges or disjoint from them
  std::vector<Cluster> clusters_;
  std::vector<std::size_t> by_phase_;       // each cluster's entries by (begin mod stride, begin)
  std::vector<std::uint64_t> cluster_sum_;  // positions of the first i clusters
  std::vector<Mark> marks_;
  std::uint64_t consumed_ = 0;
  std::uint64_t last_ = 0;
};

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_COMPACT_HOLES_HPP

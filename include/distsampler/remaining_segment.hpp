// distsampler RemainingSegment: the positions of an epoch's order not yet consumed, and where each lies in the epoch.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_REMAINING_SEGMENT_HPP
#define DISTSAMPLER_REMAINING_SEGMENT_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "detail/position_ranges.hpp"
#include "error.hpp"
#include "state.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// A segment of an epoch of N positions: V, the positions of the epoch's order G not yet
/// consumed, in G order (all of G for a fresh epoch, the complement of a saved state's
/// consumed ranges when resumed). Segment position x (< size()) is G position
/// epoch_position(x). The segment also knows its lead: the positions of V before the
/// first block boundary of G past every consumed position (the holes a stop inside
/// blocks leaves; 0 for a fresh epoch), which BlockDeal hands out first.
///
/// Complexity: construction O(ranges log ranges); epoch_position O(log ranges) (O(1)
/// without holes). Immutable after construction: const members may run concurrently.
class RemainingSegment {
 public:
  /// An empty epoch.
  RemainingSegment() = default;

  /// All of an epoch of `total` positions.
  explicit RemainingSegment(std::uint64_t total) : RemainingSegment(total, {}, 1) {}

  /// The complement of `consumed` (G ranges, any order, overlaps allowed) in [0, total),
  /// with the lead measured in blocks of `block_size`. Throws config_error for block_size
  /// 0, or when a range is reversed or ends past `total`.
  RemainingSegment(std::uint64_t total, std::vector<PositionRange> consumed, std::uint64_t block_size)
      : RemainingSegment(total, std::move(consumed), {}, block_size) {}

  /// What a (validated) SamplerState leaves of its epoch: the complement of its prefix
  /// [0, consumed), its ahead ranges and its strided elements in [0, dataset_size). The
  /// segment keeps the state's ranges and entries (O(ranges + entries)) to compose the
  /// next state compactly, and its spans: one per hole, so a resume from strided entries
  /// takes O(elements) time and 24 bytes per element (one per block a consumer was ahead).
  /// Throws config_error as the constructor does.
  [[nodiscard]] static RemainingSegment after(const SamplerState& state, std::uint64_t block_size) {
    std::vector<PositionRange> consumed;
    consumed.reserve(state.ahead.size() + 1);
    if (state.consumed != 0) consumed.push_back(PositionRange{0, state.consumed});
    consumed.insert(consumed.end(), state.ahead.begin(), state.ahead.end());
    return RemainingSegment(state.dataset_size, std::move(consumed), state.strided, block_size);
  }

  /// N, the epoch's positions.
  [[nodiscard]] std::uint64_t total() const noexcept { return total_; }
  /// Positions in the segment.
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  /// Positions of the epoch consumed before this segment.
  [[nodiscard]] std::uint64_t start() const noexcept { return total_ - size_; }
  /// Segment positions before the first block boundary of G past every consumed position.
  [[nodiscard]] std::uint64_t lead() const noexcept { return lead_; }

  /// The G position of segment position x (< size()).
  [[nodiscard]] std::uint64_t epoch_position(std::uint64_t x) const noexcept {
    const Span& sp = span_of(x);
    return sp.g + (x - sp.v);
  }

  /// The G ranges of the segment, in order.
  [[nodiscard]] std::vector<PositionRange> ranges() const {
    std::vector<PositionRange> out;
    out.reserve(spans_.size());
    for (const Span& sp : spans_) out.push_back(PositionRange{sp.g, sp.g + sp.length});
    return out;
  }

  /// Calls f(g, length) for the consecutive G pieces of segment positions [x, x + count)
  /// (x + count <= size()), in order.
  template <class F>
  void for_each_piece(std::uint64_t x, std::uint64_t count, F&& f) const {
    while (count != 0) {
      const Span& sp = span_of(x);
      const std::uint64_t piece = std::min(count, sp.v + sp.length - x);
      f(sp.g + (x - sp.v), piece);
      x += piece;
      count -= piece;
    }
  }

  /// The G positions consumed once the segment positions `segment_consumed` (ranges
  /// within [0, size())) are read: what was consumed before the segment plus their G
  /// images, as sorted, merged ranges. O(ranges log ranges).
  [[nodiscard]] std::vector<PositionRange> epoch_consumed(const std::vector<PositionRange>& segment_consumed) const {
    std::vector<PositionRange> all;
    std::uint64_t g = 0;
    for (const Span& sp : spans_) {
      if (sp.g > g) all.push_back(PositionRange{g, sp.g});
      g = sp.g + sp.length;
    }
    if (total_ > g) all.push_back(PositionRange{g, total_});
    for (const PositionRange& x : segment_consumed) {
      for_each_piece(x.begin, x.end - x.begin, [&](std::uint64_t at, std::uint64_t length) {
        all.push_back(PositionRange{at, at + length});
      });
    }
    detail::merge_ranges(all);
    return all;
  }

  /// The same in the form a state stores (detail::normalize_positions), O(entries) at any
  /// stop: what was consumed before the segment as the state held it, plus each segment
  /// range [x, y) as the G range from epoch_position(x) to epoch_position(y - 1) (the
  /// positions between them not in the segment were consumed before), and each strided
  /// entry moved to G: its elements in the contiguous G part of the segment (past the
  /// lead) keep their stride, those before it become ranges (at most one per entry when
  /// the entry comes from a BlockDeal of this segment). O((ranges + entries) log).
  [[nodiscard]] PositionSet epoch_consumed_compact(const PositionSet& segment_consumed) const {
    PositionSet all = before_;
    auto hull = [&](std::uint64_t x, std::uint64_t y) {
      all.ranges.push_back(PositionRange{epoch_position(x), epoch_position(y - 1) + 1});
    };
    for (const PositionRange& r : segment_consumed.ranges) {
      if (r.begin < r.end) hull(r.begin, r.end);
    }
    for (const StridedRange& s : segment_consumed.strided) {
      std::uint64_t i = 0;
      // Elements until the rest lies in one span (past the lead, for a deal of this
      // segment: at most one element) are placed one by one.
      const Span* const last = &span_of(s.end() - 1);
      for (; i < s.count && &span_of(s.element(i).begin) != last; ++i) hull(s.element(i).begin, s.element(i).end);
      if (i < s.count)
        all.strided.push_back(StridedRange{epoch_position(s.begin + i * s.stride), s.length, s.stride, s.count - i});
    }
    detail::normalize_positions(all);
    return all;
  }

 private:
  // The complement of `ranges` and the elements of `strided` (canonical, as a state holds them).
  RemainingSegment(std::uint64_t total, std::vector<PositionRange> ranges, std::vector<StridedRange> strided,
                   std::uint64_t block_size)
      : total_(total) {
    if (block_size == 0) detail::throw_config_error("RemainingSegment: block_size is 0 (expected at least 1)");
    for (const PositionRange& r : ranges) {
      if (r.begin > r.end || r.end > total) {
        detail::throw_config_error("RemainingSegment: consumed range [" + std::to_string(r.begin) + ", " +
                                   std::to_string(r.end) + ") is not within the epoch's " + std::to_string(total) +
                                   " positions (expected begin <= end <= " + std::to_string(total) + ")");
      }
    }
    detail::merge_ranges(ranges);
    std::vector<PositionRange> consumed = ranges;
    if (!strided.empty()) {
      detail::append_elements(strided, consumed);
      detail::merge_ranges(consumed);
    }
    before_.ranges = std::move(ranges);
    before_.strided = std::move(strided);
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
    add(total);
    size_ = v;
    if (!consumed.empty()) {
      const std::uint64_t b = block_size, last = consumed.back().end;
      const std::uint64_t blocks = last / b + (last % b != 0 ? 1 : 0);
      const std::uint64_t aligned = blocks > total / b ? total : std::min(total, blocks * b);
      std::uint64_t before = 0;  // consumed positions, all below `last` <= aligned
      for (const PositionRange& r : consumed) before += r.end - r.begin;
      lead_ = aligned - before;
    }
  }

  // G positions [g, g + length) are segment positions [v, v + length).
  struct Span {
    std::uint64_t v = 0;
    std::uint64_t g = 0;
    std::uint64_t length = 0;
  };

  [[nodiscard]] const Span& span_of(std::uint64_t x) const noexcept {
    if (spans_.size() == 1) return spans_.front();
    const auto it = std::upper_bound(spans_.begin(), spans_.end(), x,
                                     [](std::uint64_t value, const Span& sp) { return value < sp.v; });
    return *(it - 1);
  }

  std::vector<Span> spans_;
  PositionSet before_;  // what the state left consumed, as it stored it
  std::uint64_t total_ = 0;
  std::uint64_t size_ = 0;
  std::uint64_t lead_ = 0;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_REMAINING_SEGMENT_HPP

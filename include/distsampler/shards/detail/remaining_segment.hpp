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

#include "compact_holes.hpp"
#include "position_ranges.hpp"
#include "../../error.hpp"
#include "../../state.hpp"
#include "../../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

namespace detail {

/// How a RemainingSegment stores its holes: one span each when the consumed ranges and
/// strided elements number at most max_pieces, else compactly (detail::CompactHoles).
/// automatic(): max(4096, 64 * (ranges + strided entries)); the others force a form (tests).
struct HoleLimit {
  std::uint64_t max_pieces = 0;
  bool automatic_limit = true;

  [[nodiscard]] static constexpr HoleLimit automatic() noexcept { return HoleLimit{}; }
  [[nodiscard]] static constexpr HoleLimit at_most(std::uint64_t pieces) noexcept { return HoleLimit{pieces, false}; }
  /// Always spans.
  [[nodiscard]] static constexpr HoleLimit spans() noexcept { return at_most(UINT64_MAX); }
  /// Compact whenever anything was consumed.
  [[nodiscard]] static constexpr HoleLimit compact() noexcept { return at_most(0); }
};

}  // namespace detail

/// A segment of an epoch of N positions: V, the positions of the epoch's order G not yet
/// consumed, in G order (all of G for a fresh epoch, the complement of a saved state's
/// consumed ranges when resumed). Segment position x (< size()) is G position
/// epoch_position(x). The segment also knows its lead: the positions of V before the
/// first block boundary of G past every consumed position (the holes a stop inside
/// blocks leaves; 0 for a fresh epoch), which BlockDeal hands out first.
///
/// All holes lie before G position lead() + start() (the block boundary past the last
/// consumed position): from segment position lead() on, the segment is contiguous in G.
/// The holes are stored in one of two forms, with identical results:
///  - spans, one per run of consecutive free positions, when the consumed ranges and
///    strided elements number at most max(4096, 64 * (ranges + strided entries));
///  - compactly, as the consumed ranges and strided entries themselves (detail::CompactHoles),
///    when a state's entries stand for more elements than that (consumers far apart: 512
///    consumers up to 10^6 samples apart are 10^7 holes but 10^3 entries).
///
/// Complexity, for r consumed ranges and e strided entries, with n = r + e and c the
/// entries of the largest cluster of overlapping entries (at most the consumers that
/// saved the state): memory O(n) in both forms (as spans at most max(4096, 64 n) spans of
/// 24 bytes; compact about 5 items of 8 to 40 bytes per range or entry, 4308 for a state
/// of 512 consumers up to 10^6 samples apart). Construction O(n log n) plus O(spans) as
/// spans; compact O(n log n + p + n c), p the pairs of an entry and a range its span
/// meets. epoch_position is O(1) from lead() on and
/// without holes; before lead() O(log spans) as spans and O(log n + c) compact.
/// for_each_piece adds O(1) per piece as spans and, compact, O(log n) plus the entries
/// passed over in phase order (those without an element in the next stride) per piece.
/// Immutable after construction: const members may run concurrently.
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
      : RemainingSegment(total, std::move(consumed), {}, block_size, detail::HoleLimit::automatic()) {}

  /// What a (validated) SamplerState leaves of its epoch: the complement of its prefix
  /// [0, consumed), its ahead ranges and its strided elements in [0, dataset_size). The
  /// segment keeps the state's ranges and entries (O(ranges + entries)) to compose the
  /// next state compactly, and its holes as spans or compactly (see the class comment;
  /// `limit` forces a form, for tests): O(ranges + entries) memory at any stop. Throws
  /// config_error as the constructor does.
  [[nodiscard]] static RemainingSegment after(const SamplerState& state, std::uint64_t block_size,
                                              detail::HoleLimit limit = detail::HoleLimit::automatic()) {
    std::vector<PositionRange> consumed;
    consumed.reserve(state.ahead.size() + 1);
    if (state.consumed != 0) consumed.push_back(PositionRange{0, state.consumed});
    consumed.insert(consumed.end(), state.ahead.begin(), state.ahead.end());
    return RemainingSegment(state.dataset_size, std::move(consumed), state.strided, block_size, limit);
  }

  /// N, the epoch's positions.
  [[nodiscard]] std::uint64_t total() const noexcept { return total_; }
  /// Positions in the segment.
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  /// Positions of the epoch consumed before this segment.
  [[nodiscard]] std::uint64_t start() const noexcept { return total_ - size_; }
  /// Segment positions before the first block boundary of G past every consumed position.
  [[nodiscard]] std::uint64_t lead() const noexcept { return lead_; }
  /// True when the holes are stored compactly (see the class comment).
  [[nodiscard]] bool compact() const noexcept { return compact_; }
  /// What the segment stores: its spans, the state's ranges and entries it keeps, and the
  /// items of the compact form. O(ranges + entries) compact, whatever the holes.
  [[nodiscard]] std::uint64_t stored_entries() const noexcept {
    return spans_.size() + before_.ranges.size() + before_.strided.size() + holes_.stored();
  }
  /// What was consumed before the segment, as the state (or the constructor) gave it.
  [[nodiscard]] const PositionSet& consumed_before() const noexcept { return before_; }

  /// The G position of segment position x (< size()).
  [[nodiscard]] std::uint64_t epoch_position(std::uint64_t x) const noexcept {
    if (x >= lead_) return x + start();
    if (compact_) return holes_.select(x);
    const Span& sp = span_of(x);
    return sp.g + (x - sp.v);
  }

  /// The G ranges of the segment, in order. O(holes) entries whatever the form, so not for
  /// resumed segments at scale: use for_each_piece or epoch_consumed_compact.
  [[nodiscard]] std::vector<PositionRange> ranges() const {
    std::vector<PositionRange> out;
    if (!compact_) {
      out.reserve(spans_.size());
      for (const Span& sp : spans_) out.push_back(PositionRange{sp.g, sp.g + sp.length});
      return out;
    }
    for (std::uint64_t g = holes_.next_free(0); g < total_;) {
      const std::uint64_t end = std::min(total_, holes_.next_consumed(g));
      out.push_back(PositionRange{g, end});
      g = holes_.next_free(end);
    }
    return out;
  }

  /// Calls f(g, length) for the consecutive G pieces of segment positions [x, x + count)
  /// (x + count <= size()), in order.
  template <class F>
  void for_each_piece(std::uint64_t x, std::uint64_t count, F&& f) const {
    if (count == 0) return;
    if (compact_) {
      // From the x-th free position, runs of free positions up to the next consumed one.
      std::uint64_t g = epoch_position(x);
      while (true) {
        const std::uint64_t piece = g >= holes_.last() ? count : std::min(count, holes_.next_consumed(g) - g);
        f(g, piece);
        count -= piece;
        if (count == 0) return;
        g = holes_.next_free(g + piece);
      }
    }
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
    for (const PositionRange& r : ranges()) {
      if (r.begin > g) all.push_back(PositionRange{g, r.begin});
      g = r.end;
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
      // Elements until the rest lies in one run of consecutive G positions (past the
      // lead, for a deal of this segment: at most one element) are placed one by one.
      const std::uint64_t y = s.end() - 1, gy = epoch_position(y);
      for (; i < s.count && gy - epoch_position(s.element(i).begin) != y - s.element(i).begin; ++i)
        hull(s.element(i).begin, s.element(i).end);
      if (i < s.count)
        all.strided.push_back(StridedRange{epoch_position(s.begin + i * s.stride), s.length, s.stride, s.count - i});
    }
    detail::normalize_positions(all);
    return all;
  }

 private:
  // The complement of `ranges` and the elements of `strided` (canonical, as a state holds them).
  RemainingSegment(std::uint64_t total, std::vector<PositionRange> ranges, std::vector<StridedRange> strided,
                   std::uint64_t block_size, detail::HoleLimit limit)
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
    std::uint64_t pieces = ranges.size();
    for (const StridedRange& s : strided) pieces = s.count > UINT64_MAX - pieces ? UINT64_MAX : pieces + s.count;
    const std::uint64_t max_pieces =
        limit.automatic_limit ? std::max<std::uint64_t>(4096, 64 * (ranges.size() + strided.size())) : limit.max_pieces;
    std::uint64_t before = 0, last = 0;  // consumed positions, all below `last`
    if (pieces > max_pieces) {
      holes_ = detail::CompactHoles(ranges, strided);
      compact_ = true;
      before = holes_.consumed();
      last = holes_.last();
      size_ = total - before;
    } else {
      std::vector<PositionRange> consumed = ranges;
      if (!strided.empty()) {
        detail::append_elements(strided, consumed);
        detail::merge_ranges(consumed);
      }
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
        before += r.end - r.begin;
      }
      add(total);
      size_ = v;
      last = consumed.empty() ? 0 : consumed.back().end;
    }
    if (last != 0) {
      const std::uint64_t b = block_size;
      const std::uint64_t blocks = last / b + (last % b != 0 ? 1 : 0);
      const std::uint64_t aligned = blocks > total / b ? total : std::min(total, blocks * b);
      lead_ = aligned - before;
    }
    before_.ranges = std::move(ranges);
    before_.strided = std::move(strided);
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

  std::vector<Span> spans_;     // the holes as spans (empty when compact)
  detail::CompactHoles holes_;  // the holes compactly (empty unless compact)
  bool compact_ = false;
  PositionSet before_;  // what the state left consumed, as it stored it
  std::uint64_t total_ = 0;
  std::uint64_t size_ = 0;
  std::uint64_t lead_ = 0;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_REMAINING_SEGMENT_HPP

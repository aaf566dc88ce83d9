// distsampler ShardWalk: one segment of a shard epoch dealt to K consumers, walked range by range (fill, read plan).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARD_WALK_HPP
#define DISTSAMPLER_SHARD_WALK_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "block_deal.hpp"
#include "remaining_segment.hpp"
#include "catalog.hpp"
#include "epoch_order.hpp"
#include "lane_rounds.hpp"
#include "../../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

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

/// Everything one segment's reads depend on, composed: the epoch order G, the remaining
/// segment V of it and V's BlockDeal over K consumers. Slot i of consumer k is segment
/// position deal().position(k, i), G position segment().epoch_position(...), sample
/// order().at(...). Walking turns a run of slots into shard ranges: consecutive slots of
/// one chunk (see BlockDeal::chunk_end) are consecutive segment positions, split at the
/// segment's holes into G pieces, which the order splits into runs and shard ranges.
///
/// Consumer arguments are unchecked (k < consumers(), slots within size(k)): the sampler
/// checks them. Complexity: sample O(log shards + log ranges); fill O(count + ranges *
/// log shards), no allocation; read_plan O(ranges log ranges). Immutable: a sampler, its
/// copies, streams and iterators share one through a shared_ptr; const members may run
/// concurrently.
class ShardWalk {
 public:
  /// Deals the segment in blocks of `block_size` (0: the order's block_size()), consumer k
  /// taking slot slots.slot(k) of the deal, whose partial round is cut in slots.groups()
  /// groups (BlockDeal).
  ShardWalk(ShardEpochOrder order, RemainingSegment segment, std::uint64_t consumers, Tail tail,
            ConsumerSlots slots = {}, std::uint64_t block_size = 0)
      : order_(std::move(order)),
        segment_(std::move(segment)),
        deal_(segment_.size(), segment_.lead(), consumers, block_size == 0 ? order_.block_size() : block_size, tail,
              slots.groups()),
        slots_(slots) {}

  [[nodiscard]] const ShardEpochOrder& order() const noexcept { return order_; }
  [[nodiscard]] const RemainingSegment& segment() const noexcept { return segment_; }
  [[nodiscard]] const BlockDeal& deal() const noexcept { return deal_; }
  [[nodiscard]] const ShardCatalog& catalog() const noexcept { return order_.catalog(); }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return order_.epoch(); }
  [[nodiscard]] std::uint64_t consumers() const noexcept { return deal_.consumers(); }
  /// The deal slot of consumer k: every member taking a consumer reads that slot.
  [[nodiscard]] std::uint64_t slot(std::uint64_t k) const noexcept { return slots_.slot(k); }
  [[nodiscard]] const ConsumerSlots& slots() const noexcept { return slots_; }
  /// The segment position of slot i of consumer k.
  [[nodiscard]] std::uint64_t segment_position(std::uint64_t k, std::uint64_t i) const noexcept {
    return deal_.position(slot(k), i);
  }
  /// True when slot i of consumer k is a flagged padding duplicate.
  [[nodiscard]] bool is_padding(std::uint64_t k, std::uint64_t i) const noexcept {
    return deal_.is_padding(slot(k), i);
  }
  /// The segment positions consumed once consumer k read done[k] slots (see BlockDeal::consumed).
  [[nodiscard]] std::vector<PositionRange> consumed(const std::vector<std::uint64_t>& done) const {
    std::vector<std::uint64_t> by_slot(done.size());
    for (std::size_t k = 0; k < done.size(); ++k) by_slot[static_cast<std::size_t>(slot(k))] = done[k];
    return deal_.consumed(by_slot);
  }

  /// Slots consumer k reads.
  [[nodiscard]] std::uint64_t size(std::uint64_t k) const noexcept { return deal_.size(slot(k)); }
  /// The G position of slot i of consumer k.
  [[nodiscard]] std::uint64_t epoch_position(std::uint64_t k, std::uint64_t i) const noexcept {
    return segment_.epoch_position(deal_.position(slot(k), i));
  }
  /// Slot i of consumer k as a ShardSample (padding flagged).
  [[nodiscard]] ShardSample sample(std::uint64_t k, std::uint64_t i) const noexcept {
    ShardSample s = order_.at(epoch_position(k, i));
    s.is_padding = deal_.is_padding(slot(k), i);
    return s;
  }

  /// Calls sink(shard, begin, length, first_slot, stride) for every range consumer k
  /// reads in its slots [first, last) (last <= size(k)): records begin .. begin + length
  /// - 1 of `shard` at slots first_slot, first_slot + stride, ... Ranges of one block come
  /// run by run, not in first-read order.
  template <class Sink>
  void visit_ranges(std::uint64_t k, std::uint64_t first, std::uint64_t last, Sink&& sink) const {
    const std::uint64_t d = slot(k);
    std::uint64_t i = first;
    while (i < last) {
      const std::uint64_t chunk_end = std::min(last, deal_.chunk_end(d, i));
      std::uint64_t at = i;
      segment_.for_each_piece(deal_.position(d, i), chunk_end - i, [&](std::uint64_t g, std::uint64_t piece) {
        order_.visit(g, g + piece, at, sink);
        at += piece;
      });
      i = chunk_end;
    }
  }

  /// The whole rounds of consumer k that lie in G's whole blocks, read at one pace:
  /// slots [first_slot, first_slot + rounds * width) where round j (< rounds) reads G
  /// positions [g + j * period, g + j * period + width) (see for_each_lane_progression).
  /// The consumer's other slots (its front, a round holding holes of the segment, rounds
  /// reaching G's last, partial rows, the partial round and the tail slot) lie outside.
  struct Rounds {
    std::uint64_t first_slot = 0, rounds = 0, g = 0, width = 0, period = 0;
  };
  /// Consumer k's Rounds (rounds 0 when it has none, or when the deal's blocks do not
  /// tile the order's: width above block_size() or period not a multiple of it). O(log
  /// ranges).
  [[nodiscard]] Rounds lane_rounds(std::uint64_t k) const noexcept {
    const std::uint64_t d = slot(k), kk = deal_.consumers(), b = deal_.block_size(), ob = order_.block_size();
    if (b > ob || kk > UINT64_MAX / b || (kk * b) % ob != 0) return {};
    const std::uint64_t period = kk * b, first = deal_.front() * kk + d * b, lead = segment_.lead();
    // Segment positions from the lead on are consecutive in G; earlier ones are holes.
    const std::uint64_t j0 = first >= lead ? 0 : (lead - first + period - 1) / period;
    if (j0 >= deal_.rounds()) return {};
    const std::uint64_t g = segment_.epoch_position(first + j0 * period), regular = order_.regular_size();
    if (g > regular || regular - g < b) return {};
    const std::uint64_t j1 = std::min(deal_.rounds(), j0 + (regular - g - b) / period + 1);
    return Rounds{deal_.front() + j0 * b, j1 - j0, g, b, period};
  }

  /// Writes consumer k's samples of slots [first, first + count) to out[0..count): the
  /// batched form of sample(), identical results. Whole rounds (lane_rounds) are read
  /// lane by lane with a shard cursor each; the rest run by run.
  void fill(std::uint64_t k, std::uint64_t first, std::uint64_t count, ShardSample* out) const noexcept {
    const ShardCatalog& cat = catalog();
    auto by_runs = [&](std::uint64_t from, std::uint64_t to) {
      visit_ranges(k, from, to,
                   [&](std::uint64_t shard, std::uint64_t begin, std::uint64_t length, std::uint64_t first_slot,
                       std::uint64_t stride) {
                     const std::uint64_t base = cat.shard_offset(shard);
                     ShardSample* at = out + (first_slot - first);
                     for (std::uint64_t t = 0; t < length; ++t, at += stride) {
                       *at = ShardSample{shard, begin + t, base + begin + t, false};
                     }
                   });
    };
    const std::uint64_t last = first + count;
    const Rounds r = lane_rounds(k);
    bool done = false;
    if (r.rounds != 0) {
      // The rounds of r wholly inside [first, last): [j_a, j_b).
      const std::uint64_t r_end = r.first_slot + r.rounds * r.width;
      const std::uint64_t j_a = first <= r.first_slot ? 0 : (first - r.first_slot + r.width - 1) / r.width;
      const std::uint64_t j_b = last >= r_end ? r.rounds : (last <= r.first_slot ? 0 : (last - r.first_slot) / r.width);
      if (j_b >= j_a + 2) {
        const std::uint64_t s0 = r.first_slot + j_a * r.width, s1 = r.first_slot + j_b * r.width;
        by_runs(first, s0);
        for_each_lane_progression(
            order_, r.g + j_a * r.period, r.width, r.period, j_b - j_a, s0, [&](const LaneProgression& pr) {
              read_lane_progression(order_, pr, [&](std::uint64_t at, const ShardSample& x) { out[at - first] = x; });
            });
        by_runs(s1, last);
        done = true;
      }
    }
    if (!done) by_runs(first, last);
    // Only the tail slot can be padding.
    const std::uint64_t tail_slot = deal_.tail_slot();
    if (tail_slot >= first && tail_slot < first + count && deal_.is_padding(slot(k), tail_slot)) {
      out[tail_slot - first].is_padding = true;
    }
  }

  /// Calls f(sample) for consumer k's slots [first, last) in order, computed 512 at a time
  /// with fill() (a 16 KiB stack buffer).
  template <class F>
  void for_each(std::uint64_t k, std::uint64_t first, std::uint64_t last, F&& f) const {
    ShardSample chunk[512];
    for (std::uint64_t at = first; at < last;) {
      const std::uint64_t n = std::min<std::uint64_t>(512, last - at);
      fill(k, at, n, chunk);
      for (std::uint64_t i = 0; i < n; ++i) f(static_cast<const ShardSample&>(chunk[i]));
      at += n;
    }
  }

  /// The ranges consumer k reads for its slots [first, last), in the order their first
  /// record is read: what a loader should prefetch.
  [[nodiscard]] std::vector<ShardRange> read_plan(std::uint64_t k, std::uint64_t first, std::uint64_t last) const {
    std::vector<ShardRange> out;
    visit_ranges(k, first, last,
                 [&](std::uint64_t shard, std::uint64_t begin, std::uint64_t length, std::uint64_t first_slot,
                     std::uint64_t /*stride*/) {
                   out.push_back(ShardRange{shard, begin, begin + length, first_slot});
                 });
    // Blocks occupy consecutive slots, so sorting by first slot orders each block's
    // interleaved ranges by first read and keeps blocks in order.
    std::sort(out.begin(), out.end(),
              [](const ShardRange& x, const ShardRange& y) { return x.first_sample < y.first_sample; });
    return out;
  }

  /// The records consumer k reads in its slots [first, last), merged per shard into the
  /// fewest ranges: ranges of one shard that touch, or leave at most `max_gap` records
  /// between them, become one (so a range may cover up to max_gap unread records per gap).
  /// Ordered by first_sample, the first slot reading from the range. O(p log p) for the p
  /// pieces read_plan would list.
  [[nodiscard]] std::vector<ShardRange> merged_plan(std::uint64_t k, std::uint64_t first, std::uint64_t last,
                                                    std::uint64_t max_gap) const {
    return merged_plan(std::vector<std::uint64_t>{k}, first, last, max_gap);
  }
  /// merged_plan over the slots [first, min(last, size(k))) of every consumer k in
  /// `consumers`: what they read together (first_sample is the earliest slot of any).
  [[nodiscard]] std::vector<ShardRange> merged_plan(const std::vector<std::uint64_t>& consumers, std::uint64_t first,
                                                    std::uint64_t last, std::uint64_t max_gap) const {
    std::vector<ShardRange> pieces;
    for (const std::uint64_t k : consumers) {
      if (first >= std::min(last, size(k))) continue;
      visit_ranges(k, first, std::min(last, size(k)),
                   [&](std::uint64_t shard, std::uint64_t begin, std::uint64_t length, std::uint64_t first_slot,
                       std::uint64_t /*stride*/) {
                     pieces.push_back(ShardRange{shard, begin, begin + length, first_slot});
                   });
    }
    std::sort(pieces.begin(), pieces.end(), [](const ShardRange& x, const ShardRange& y) {
      return x.shard != y.shard ? x.shard < y.shard : x.begin < y.begin;
    });
    std::vector<ShardRange> out;
    for (const ShardRange& r : pieces) {
      if (!out.empty() && out.back().shard == r.shard && r.begin - std::min(r.begin, out.back().end) <= max_gap) {
        out.back().end = std::max(out.back().end, r.end);
        out.back().first_sample = std::min(out.back().first_sample, r.first_sample);
      } else {
        out.push_back(r);
      }
    }
    std::sort(out.begin(), out.end(),
              [](const ShardRange& x, const ShardRange& y) { return x.first_sample < y.first_sample; });
    return out;
  }

 private:
  ShardEpochOrder order_;
  RemainingSegment segment_;
  BlockDeal deal_;
  ConsumerSlots slots_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARD_WALK_HPP

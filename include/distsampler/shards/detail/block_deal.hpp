// distsampler BlockDeal: which positions of a segment each of K consumers reads, dealt in blocks (pure integer math).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_BLOCK_DEAL_HPP
#define DISTSAMPLER_BLOCK_DEAL_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "position_ranges.hpp"
#include "../../error.hpp"
#include "../../partition.hpp"
#include "../../state.hpp"
#include "../../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// How a segment of `remaining` positions (0 .. remaining - 1, in order) is dealt to K
/// consumers in blocks of b, the block counterpart of StridedPartition. The segment
/// starts with `lead` positions (the holes a stop inside blocks left before the first
/// untouched block); consumer k reads, in its slots 0, 1, ...:
///  1. its front: positions [k * F, (k + 1) * F) with F = lead / K (rounded down);
///  2. from base = F * K on, blocks k, k + K, k + 2K, ... of b positions for `rounds()`
///     full rounds, then an equal contiguous share of `partial()` positions of the last,
///     partial round;
///  3. one tail slot: the next leftover position for the first extra() consumers; under
///     Tail::pad the others get a flagged duplicate of one of the segment's last
///     positions, under drop nothing (the extra() leftovers are dropped), under uneven the
///     first extra() consumers read one more.
/// After an equal stop inside the full rounds, resumed with the same K, each front is the
/// rest of the consumer's own block, so every stream continues where it stopped.
///
/// With G `groups` (G divides K; consumer k is in group k mod G, the i = k / G-th of it)
/// the last, partial round is cut like the full ones: its positions form units of G
/// blocks, group g owns block g of each whole unit plus a g-th contiguous share of what
/// is left (fewer than G * b positions), and the group's consumers read equal contiguous
/// shares of that in order. So a group that reads block g of every unit in the full
/// rounds also does in the partial one. G = 1 is the plain contiguous share.
///
/// The constructor throws config_error for consumers or block_size 0, groups 0 or not
/// dividing consumers, or lead > remaining; members taking a consumer k or slot i do not
/// check them (k < consumers(), i < size(k)). Everything is O(1) except consumed() and
/// consumed_compact() (see there). Immutable: const members may run concurrently.
class BlockDeal {
 public:
  constexpr BlockDeal() noexcept = default;
  constexpr BlockDeal(std::uint64_t remaining, std::uint64_t lead, std::uint64_t consumers, std::uint64_t block_size,
                      Tail tail, std::uint64_t groups = 1)
      : kk_(consumers), b_(block_size), tail_(tail), groups_(groups) {
    if (consumers == 0) detail::throw_config_error("BlockDeal: consumers is 0 (expected at least 1)");
    if (block_size == 0) detail::throw_config_error("BlockDeal: block_size is 0 (expected at least 1)");
    if (groups == 0 || consumers % groups != 0) {
      detail::throw_config_error("BlockDeal: groups " + std::to_string(groups) + " does not divide consumers " +
                                 std::to_string(consumers) + " (expected a divisor of consumers)");
    }
    if (lead > remaining) {
      detail::throw_config_error("BlockDeal: lead " + std::to_string(lead) + " exceeds remaining " +
                                 std::to_string(remaining) + " (expected lead <= remaining)");
    }
    front_ = lead / kk_;
    base_ = front_ * kk_;
    r_ = remaining - base_;
    even_ = r_ / kk_;
    extra_ = r_ % kk_;
    rounds_ = even_ / b_;
    partial_ = even_ - rounds_ * b_;
    group_whole_ = (kk_ / groups_) * partial_ / b_;
    group_rest_ = (kk_ / groups_) * partial_ - group_whole_ * b_;
  }

  [[nodiscard]] constexpr std::uint64_t consumers() const noexcept { return kk_; }
  [[nodiscard]] constexpr std::uint64_t block_size() const noexcept { return b_; }
  [[nodiscard]] constexpr Tail tail() const noexcept { return tail_; }
  /// F: slots of every consumer's front.
  [[nodiscard]] constexpr std::uint64_t front() const noexcept { return front_; }
  /// Full rounds of K blocks after the fronts.
  [[nodiscard]] constexpr std::uint64_t rounds() const noexcept { return rounds_; }
  /// Each consumer's share of the last, partial round.
  [[nodiscard]] constexpr std::uint64_t partial() const noexcept { return partial_; }
  /// G, the consumer groups of the partial round.
  [[nodiscard]] constexpr std::uint64_t groups() const noexcept { return groups_; }
  /// Leftover positions (fewer than K) after the equal shares: the tail slot's.
  [[nodiscard]] constexpr std::uint64_t extra() const noexcept { return extra_; }
  /// The slot of the tail (read only by some consumers, or padded): F + rounds * b + partial.
  [[nodiscard]] constexpr std::uint64_t tail_slot() const noexcept { return front_ + even_; }

  /// Slots consumer k (< K) reads. Equal for all under pad and drop; under uneven the
  /// first extra() read one more.
  [[nodiscard]] constexpr std::uint64_t size(std::uint64_t k) const noexcept {
    switch (tail_) {
      case Tail::pad:
        return front_ + even_ + (extra_ != 0 ? 1 : 0);
      case Tail::drop:
        return front_ + even_;
      case Tail::uneven:
        return front_ + even_ + (k < extra_ ? 1 : 0);
    }
    return front_ + even_;
  }

  /// The segment position (< remaining) of slot i (< size(k)) of consumer k.
  [[nodiscard]] constexpr std::uint64_t position(std::uint64_t k, std::uint64_t i) const noexcept {
    if (i < front_) return k * front_ + i;
    i -= front_;
    std::uint64_t x = 0;
    if (i < rounds_ * b_) {
      x = ((i / b_) * kk_ + k) * b_ + i % b_;
    } else if (i < even_) {
      x = partial_position(k, i - rounds_ * b_);
    } else if (k < extra_) {
      x = even_ * kk_ + k;
    } else {
      // Padding repeats the segment's last samples (the same ones after an equal resume).
      x = r_ - 1 - (k - extra_) % r_;
    }
    return base_ + x;
  }

  /// True when slot i of consumer k is a flagged padding duplicate (only the tail slot
  /// under Tail::pad, for consumers k >= extra()).
  [[nodiscard]] constexpr bool is_padding(std::uint64_t k, std::uint64_t i) const noexcept {
    return tail_ == Tail::pad && i == tail_slot() && k >= extra_;
  }

  /// End (exclusive) of the chunk of consumer k holding slot i: slots i .. end - 1 map to
  /// consecutive segment positions.
  [[nodiscard]] constexpr std::uint64_t chunk_end(std::uint64_t k, std::uint64_t i) const noexcept {
    if (i < front_) return front_;
    const std::uint64_t j = i - front_;
    if (j < rounds_ * b_) return front_ + (j / b_ + 1) * b_;
    if (j < even_) {
      const std::uint64_t y = (k / groups_) * partial_ + (j - rounds_ * b_);
      if (y >= group_whole_ * b_) return front_ + even_;
      return std::min(front_ + even_, i + (b_ - y % b_));
    }
    return size(k);
  }

  /// The segment positions consumed once consumer k has read its first done[k] slots
  /// (done.size() == K, done[k] <= size(k); unchecked), as sorted, merged ranges: the
  /// elements of consumed_compact() spelled out. O(K + ranges), ranges growing with the
  /// blocks consumers are ahead of the slowest.
  [[nodiscard]] std::vector<PositionRange> consumed(const std::vector<std::uint64_t>& done) const {
    PositionSet set = consumed_compact(done);
    detail::append_elements(set.strided, set.ranges);
    detail::merge_ranges(set.ranges);
    return set.ranges;
  }

  /// The same positions in O(K) entries at any stop: blocks every consumer finished form
  /// one range; each consumer adds at most a front, a partial block, up to three pieces of
  /// its share of the partial round and its tail slot as ranges, and its whole blocks past
  /// the slowest consumer's as one strided entry (blocks j * K + k, stride K * b), joined
  /// with the neighbouring consumer's when both have as many (so at most 1 + 6K ranges
  /// before merging, and at most K strided entries, of one stride, at disjoint offsets
  /// of their first round). O(K log K).
  [[nodiscard]] PositionSet consumed_compact(const std::vector<std::uint64_t>& done) const {
    std::uint64_t common = UINT64_MAX;
    for (const std::uint64_t d : done) common = std::min(common, std::min(d - std::min(d, front_), rounds_ * b_) / b_);
    PositionSet set;
    std::vector<PositionRange>& seg = set.ranges;
    if (common != 0) seg.push_back(PositionRange{base_, base_ + common * kk_ * b_});
    for (std::uint64_t k = 0; k < kk_; ++k) {
      const std::uint64_t all_done = done[static_cast<std::size_t>(k)];
      seg.push_back(PositionRange{k * front_, k * front_ + std::min(all_done, front_)});
      const std::uint64_t d = all_done - std::min(all_done, front_), f = std::min(d, rounds_ * b_);
      if (f / b_ > common) {
        const std::uint64_t first = base_ + (common * kk_ + k) * b_, n = f / b_ - common;
        if (n == 1 || kk_ == 1) {
          // One block, or one consumer's blocks back to back: a plain range.
          seg.push_back(PositionRange{first, first + (kk_ == 1 ? n * b_ : b_)});
        } else if (!set.strided.empty() && set.strided.back().count == n &&
                   set.strided.back().begin + set.strided.back().length == first) {
          set.strided.back().length += b_;
        } else {
          set.strided.push_back(StridedRange{first, b_, kk_ * b_, n});
        }
      }
      if (f % b_ != 0) {
        const std::uint64_t first = base_ + ((f / b_) * kk_ + k) * b_;
        seg.push_back(PositionRange{first, first + f % b_});
      }
      for (std::uint64_t y = rounds_ * b_; y < std::min(d, even_);) {
        // Contiguous pieces of the partial share, split where its group's blocks end.
        const std::uint64_t first = partial_position(k, y - rounds_ * b_);
        const std::uint64_t end = chunk_end(k, front_ + y) - front_;
        const std::uint64_t stop = std::min(end, std::min(d, even_));
        seg.push_back(PositionRange{base_ + first, base_ + first + (stop - y)});
        y = stop;
      }
      if (d > even_ && k < extra_) seg.push_back(PositionRange{base_ + even_ * kk_ + k, base_ + even_ * kk_ + k + 1});
    }
    detail::merge_ranges(seg);
    return set;
  }

 private:
  std::uint64_t kk_ = 1;  // K consumers
  std::uint64_t b_ = 1;   // block size
  Tail tail_ = Tail::pad;
  std::uint64_t front_ = 0;    // F
  std::uint64_t base_ = 0;     // F * K: where the dealt part starts
  std::uint64_t r_ = 0;        // positions dealt after the fronts
  std::uint64_t even_ = 0;     // equal share of each consumer after its front
  std::uint64_t extra_ = 0;    // r mod K
  std::uint64_t rounds_ = 0;   // full rounds of K blocks
  std::uint64_t partial_ = 0;  // share of the partial round
  std::uint64_t groups_ = 1;
  std::uint64_t group_whole_ = 0;  // whole blocks of each group in the partial round
  std::uint64_t group_rest_ = 0;   // each group's share of the rest of the partial round

  // Offset from base_ of slot y (< partial) of consumer k's partial-round share.
  [[nodiscard]] constexpr std::uint64_t partial_position(std::uint64_t k, std::uint64_t y) const noexcept {
    const std::uint64_t g = k % groups_, at = (k / groups_) * partial_ + y, start = rounds_ * b_ * kk_;
    if (at < group_whole_ * b_) return start + ((at / b_) * groups_ + g) * b_ + at % b_;
    return start + group_whole_ * groups_ * b_ + g * group_rest_ + (at - group_whole_ * b_);
  }
};

/// Which BlockDeal slot each consumer of a job takes, so that the consumers of one node
/// read neighbouring slots: consumer c = worker * W + rank of a job of W ranks, `per_node`
/// ranks per node (node = rank / per_node) and any number of workers per rank belongs to
/// node group g = node mod G for `groups` = G dividing the node count, and takes slot
/// i * G + g, where i numbers the group's consumers by worker, then node / G, then the rank
/// within the node (so worker 0 of every rank comes first, as without groups). Block j
/// of a deal's rounds goes to slot j mod K, so with blocks that are the G parts of a
/// longer unit, group g reads part g of every unit. With one group the slot is the
/// consumer itself. A bijection of [0, K), K = W * workers.
///
/// The constructor throws config_error unless per_node and groups are at least 1,
/// per_node divides W and groups divides W / per_node. O(1), immutable.
class ConsumerSlots {
 public:
  constexpr ConsumerSlots() noexcept = default;
  constexpr ConsumerSlots(std::uint64_t world_size, std::uint64_t per_node, std::uint64_t groups)
      : w_(world_size), per_node_(per_node), groups_(groups) {
    if (per_node == 0 || groups == 0 || world_size % per_node != 0 || (world_size / per_node) % groups != 0) {
      detail::throw_config_error("ConsumerSlots: " + std::to_string(groups) + " groups of nodes of " +
                                 std::to_string(per_node) + " ranks do not divide world_size " +
                                 std::to_string(world_size) +
                                 " (expected per_node dividing world_size and groups dividing the node count)");
    }
  }

  /// G, the node groups (1: every consumer's slot is itself).
  [[nodiscard]] constexpr std::uint64_t groups() const noexcept { return groups_; }

  /// The slot of consumer c (< K; unchecked).
  [[nodiscard]] constexpr std::uint64_t slot(std::uint64_t c) const noexcept {
    if (groups_ == 1) return c;
    const std::uint64_t worker = c / w_, rank = c % w_, node = rank / per_node_;
    const std::uint64_t i = (worker * (w_ / per_node_ / groups_) + node / groups_) * per_node_ + rank % per_node_;
    return i * groups_ + node % groups_;
  }

  friend constexpr bool operator==(const ConsumerSlots& a, const ConsumerSlots& b) noexcept {
    return a.groups_ == b.groups_ && (a.groups_ == 1 || (a.w_ == b.w_ && a.per_node_ == b.per_node_));
  }

 private:
  std::uint64_t w_ = 1, per_node_ = 1, groups_ = 1;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_BLOCK_DEAL_HPP

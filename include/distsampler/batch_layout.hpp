// distsampler BatchLayout: the positions each rank reads per micro-batch and step of an epoch (Megatron's layout).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_BATCH_LAYOUT_HPP
#define DISTSAMPLER_BATCH_LAYOUT_HPP

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "detail/checked.hpp"
#include "error.hpp"
#include "options.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The split of positions [start, N) of an epoch's order into optimizer steps, micro-batch
/// rounds and ranks. With m = micro_batch_size, W = world_size, K = accumulation_steps and
/// G = m * W * K, the epoch's grid cuts the order from position 0 into steps of G; grid
/// step s holds positions [s*G, (s+1)*G), its round k (0..K-1) the next m*W positions and
/// rank r the r-th run of m of them:
///
///     grid position(s, k, r, e) = s*G + (k*W + r)*m + e,   e < m
///
/// So the positions of a step depend only on G, never on how G factors into W and K, and
/// after k rounds of a step the consumed positions are a prefix of the order. The tail
/// (the last N mod G positions) follows BatchSamplerOptions: drop leaves them out, pad
/// adds a step whose slots past them wrap to position (j - N mod G) mod N of the epoch
/// (flagged by is_padding), uneven adds a step spreading exactly them over the W*K
/// micro-batch slots (sizes differ by at most 1).
///
/// A layout from `start` (a resumed epoch) continues that grid when `start` is where a
/// run of this shape can stop, the end of some round: start a multiple of m*W before
/// the tail, or inside the tail the end of one of its rounds. Then step 0 is the rest of
/// grid step s0 = start / G, its last K - k0 rounds (k0 = lead(), the rounds of s0 done
/// before `start`, every rank alike), and step i > 0 is grid step s0 + i whole: the layout
/// reads exactly the positions, padding and tail the uninterrupted run of this shape
/// reads after `start`. Any other start (an elastic resume whose saved position is not
/// at a round end of the new shape) begins a new grid at `start`: steps of G from there,
/// the tail being the last (N - start) mod G positions, padding still wrapping to
/// position 0; every position of [start, N) is read once (drop: minus that tail). Either
/// way every rank has micro_batches(step) rounds in each step.
///
/// Pure integer math, like StridedPartition: O(1) time and memory per call, no overflow
/// for any 64-bit N (G is checked at construction; positions past N are never formed).
/// Per-slot functions take (step, k, r, e) unchecked: step < num_steps(), k <
/// micro_batches(step), r < world_size(), e < length(step, k, r). A value type; noexcept
/// after construction; deterministic.
class BatchLayout {
 public:
  constexpr BatchLayout() noexcept = default;

  /// Throws config_error, prefixed by `who`, when micro_batch_size, world_size or
  /// accumulation_steps is 0, G overflows 64 bits, start > dataset_size or tail is not a Tail.
  BatchLayout(std::uint64_t dataset_size, std::uint64_t start, std::uint64_t micro_batch_size, std::uint64_t world_size,
              std::uint64_t accumulation_steps, Tail tail, std::string_view who = "BatchLayout")
      : n_(dataset_size), m_(micro_batch_size), w_(world_size), k_(accumulation_steps), tail_(tail) {
    detail::check_tail(tail, who);
    if (k_ == 0) detail::throw_config_error(std::string(who) + ": accumulation_steps is 0 (expected at least 1)");
    (void)round_size(m_, w_, who);
    g_ = detail::checked_product(who, {{"micro_batch_size", m_}, {"world_size", w_}, {"accumulation_steps", k_}});
    if (start > n_) {
      detail::throw_config_error(std::string(who) + ": start " + std::to_string(start) + " exceeds dataset_size " +
                                 std::to_string(n_) + " (expected 0.." + std::to_string(n_) + ")");
    }
    rebase(start);
  }

  /// m * W, the positions of one micro-batch round. Throws config_error, prefixed by
  /// `who`, when m or W is 0 or the product overflows 64 bits.
  [[nodiscard]] static std::uint64_t round_size(std::uint64_t micro_batch_size, std::uint64_t world_size,
                                                std::string_view who) {
    if (micro_batch_size == 0) {
      detail::throw_config_error(std::string(who) + ": micro_batch_size is 0 (expected at least 1)");
    }
    if (world_size == 0) detail::throw_config_error(std::string(who) + ": world_size is 0 (expected at least 1)");
    return detail::checked_mul(who, "micro_batch_size", micro_batch_size, "world_size", world_size);
  }

  /// The same layout over positions [start, N); start <= dataset_size() (unchecked).
  [[nodiscard]] BatchLayout from(std::uint64_t start) const noexcept {
    BatchLayout out = *this;
    out.rebase(start);
    return out;
  }

  [[nodiscard]] constexpr std::uint64_t dataset_size() const noexcept { return n_; }
  [[nodiscard]] constexpr std::uint64_t start() const noexcept { return start_; }
  [[nodiscard]] constexpr std::uint64_t micro_batch_size() const noexcept { return m_; }
  [[nodiscard]] constexpr std::uint64_t world_size() const noexcept { return w_; }
  [[nodiscard]] constexpr std::uint64_t accumulation_steps() const noexcept { return k_; }
  /// G = micro_batch_size x world_size x accumulation_steps.
  [[nodiscard]] constexpr std::uint64_t global_batch_size() const noexcept { return g_; }
  [[nodiscard]] constexpr Tail tail() const noexcept { return tail_; }
  /// Steps of the layout, the same on every rank: the grid's steps from the one step 0
  /// continues, counting a partial last step under pad and uneven.
  [[nodiscard]] constexpr std::uint64_t num_steps() const noexcept { return num_steps_; }
  /// Steps before the tail's partial step (the first of them may lack lead() rounds).
  [[nodiscard]] constexpr std::uint64_t full_steps() const noexcept { return full_ > first_ ? full_ - first_ : 0; }
  /// Positions of the grid's partial last step: (N - origin()) mod G.
  [[nodiscard]] constexpr std::uint64_t remainder() const noexcept { return rem_; }

  /// End of the real positions the layout reads: [start(), read_end()) are read once,
  /// [read_end(), N) is what Tail::drop leaves out (empty under pad and uneven).
  [[nodiscard]] constexpr std::uint64_t read_end() const noexcept {
    if (tail_ != Tail::drop) return n_;
    return std::max(start_, origin_ + full_ * g_);
  }

  /// Micro-batch rounds of `step`: accumulation_steps(), less lead() in step 0.
  [[nodiscard]] constexpr std::uint64_t micro_batches(std::uint64_t step) const noexcept {
    return step == 0 ? k_ - lead_ : k_;
  }
  /// Rounds of the grid step that step 0 continues which were read before start().
  [[nodiscard]] constexpr std::uint64_t lead() const noexcept { return lead_; }
  /// The first grid position of this layout's grid: 0, or start() when it begins a new grid.
  [[nodiscard]] constexpr std::uint64_t origin() const noexcept { return origin_; }

  /// Samples in micro-batch k of rank r in `step`: m, except in the last step under uneven.
  [[nodiscard]] constexpr std::uint64_t length(std::uint64_t step, std::uint64_t k, std::uint64_t r) const noexcept {
    if (!uneven_last(step)) return m_;
    const std::uint64_t slot = round_of(step, k) * w_ + r, all = k_ * w_;
    return rem_ / all + (slot < rem_ % all ? 1 : 0);
  }

  /// The epoch-order position of element e of rank r's micro-batch k in `step` (< N).
  [[nodiscard]] constexpr std::uint64_t position(std::uint64_t step, std::uint64_t k, std::uint64_t r,
                                                 std::uint64_t e) const noexcept {
    const std::uint64_t gs = first_ + step, base = origin_ + gs * g_, round = round_of(step, k);
    if (uneven_last(step)) {
      const std::uint64_t slot = round * w_ + r, all = k_ * w_;
      return base + slot * (rem_ / all) + std::min(slot, rem_ % all) + e;
    }
    const std::uint64_t j = (round * w_ + r) * m_ + e;
    if (gs < full_ || j < rem_) return base + j;
    return (j - rem_) % n_;  // Tail::pad: wrap around to the start of the epoch's order
  }

  /// True when that slot is padding (pad's last step, past the real positions).
  [[nodiscard]] constexpr bool is_padding(std::uint64_t step, std::uint64_t k, std::uint64_t r,
                                          std::uint64_t e) const noexcept {
    if (first_ + step < full_ || tail_ != Tail::pad) return false;
    return (round_of(step, k) * w_ + r) * m_ + e >= rem_;
  }

  /// The epoch's consumed prefix after every rank finished `steps_done` steps and, in the
  /// next step, `micro_batches_done` rounds: start() for (0, 0), else the grid position
  /// where that round ends, up to N (inside uneven's last step, the slots' share of the
  /// remainder). Throws config_error, prefixed by `who`, when steps_done > num_steps(),
  /// micro_batches_done >= micro_batches(steps_done), or micro_batches_done > 0 at the end. O(1).
  [[nodiscard]] std::uint64_t consumed(std::uint64_t steps_done, std::uint64_t micro_batches_done,
                                       std::string_view who) const {
    if (steps_done > num_steps_) {
      detail::throw_config_error(std::string(who) + ": steps_done " + std::to_string(steps_done) +
                                 " exceeds num_steps " + std::to_string(num_steps_) + " (expected 0.." +
                                 std::to_string(num_steps_) + ")");
    }
    const std::uint64_t rounds = steps_done == num_steps_ ? 1 : micro_batches(steps_done);
    if (micro_batches_done >= rounds) {
      detail::throw_config_error(std::string(who) + ": micro_batches_done " + std::to_string(micro_batches_done) +
                                 " is out of range (expected 0.." + std::to_string(rounds - 1) + ")");
    }
    if (steps_done == 0 && micro_batches_done == 0) return start_;
    const std::uint64_t gs = first_ + steps_done, gk = round_of(steps_done, micro_batches_done);
    const std::uint64_t round = m_ * w_;  // no overflow: divides g_
    if (gs < full_ || (gs == full_ && gk == 0)) return origin_ + gs * g_ + gk * round;
    if (gs > full_) return n_;
    // Inside the partial last step (pad or uneven).
    const std::uint64_t base = origin_ + full_ * g_;
    if (tail_ == Tail::pad) {
      const std::uint64_t done = gk * round;
      return done >= rem_ ? n_ : base + done;
    }
    const std::uint64_t slots = gk * w_, all = k_ * w_;
    return base + slots * (rem_ / all) + std::min(slots, rem_ % all);
  }

  friend constexpr bool operator==(const BatchLayout& a, const BatchLayout& b) noexcept {
    return a.n_ == b.n_ && a.start_ == b.start_ && a.m_ == b.m_ && a.w_ == b.w_ && a.k_ == b.k_ && a.tail_ == b.tail_;
  }
  friend constexpr bool operator!=(const BatchLayout& a, const BatchLayout& b) noexcept { return !(a == b); }

 private:
  constexpr void rebase(std::uint64_t start) noexcept {
    start_ = start;
    origin_ = start;
    first_ = 0;
    lead_ = 0;
    if (start != 0 && start < n_) align(start);
    const std::uint64_t remaining = n_ - origin_;
    full_ = remaining / g_;
    rem_ = remaining % g_;
    num_steps_ = full_ + (rem_ != 0 && tail_ != Tail::drop ? 1 : 0) - first_;
  }

  // Continues the epoch's grid when `start` is the end of one of its rounds (see the class
  // comment): sets origin_ = 0, first_ and lead_; leaves a new grid at `start` otherwise.
  constexpr void align(std::uint64_t start) noexcept {
    const std::uint64_t round = m_ * w_, tail_rem = n_ % g_, tail_begin = n_ - tail_rem;
    std::uint64_t slots = 0;  // micro-batch slots of the grid step done before `start`
    if (start < tail_begin || tail_ == Tail::drop) {
      if (start % round != 0) return;
      first_ = start / g_;
      lead_ = start % g_ / round;
      origin_ = 0;
      return;
    }
    const std::uint64_t d = start - tail_begin;  // 0 < d < tail_rem
    if (tail_ == Tail::pad) {
      if (d % round != 0) return;
      slots = d / m_;
    } else {
      // Uneven: slot i holds q + 1 positions for i < r, else q; find the slots ending at d.
      const std::uint64_t all = k_ * w_, q = tail_rem / all, r = tail_rem % all, wide = d / (q + 1);
      if (d % (q + 1) == 0 && wide <= r) {
        slots = wide;
      } else if (q != 0 && wide >= r && (d - r * (q + 1)) % q == 0) {
        slots = r + (d - r * (q + 1)) / q;
      } else {
        return;
      }
    }
    if (slots % w_ != 0) return;
    first_ = n_ / g_;
    lead_ = slots / w_;
    origin_ = 0;
  }

  // The grid round of micro-batch k of `step`.
  [[nodiscard]] constexpr std::uint64_t round_of(std::uint64_t step, std::uint64_t k) const noexcept {
    return step == 0 ? k + lead_ : k;
  }

  [[nodiscard]] constexpr bool uneven_last(std::uint64_t step) const noexcept {
    return first_ + step == full_ && tail_ == Tail::uneven;
  }

  std::uint64_t n_ = 0;
  std::uint64_t start_ = 0;
  std::uint64_t m_ = 1;
  std::uint64_t w_ = 1;
  std::uint64_t k_ = 1;
  std::uint64_t g_ = 1;
  Tail tail_ = Tail::drop;
  std::uint64_t origin_ = 0;  // the grid's first position
  std::uint64_t first_ = 0;   // the grid step that step 0 continues
  std::uint64_t lead_ = 0;    // rounds of grid step first_ read before start_
  std::uint64_t full_ = 0;    // grid steps of G real positions
  std::uint64_t rem_ = 0;     // the grid's tail: positions past its full steps
  std::uint64_t num_steps_ = 0;
};

/// Fills in `options`' accumulation_steps and global_batch_size (BatchShapeOptions)
/// against `world_size`. Throws config_error, prefixed by `who`, when micro_batch_size is
/// 0 (telling to call `options_name`().with_micro_batch_size(m)), global_batch_size is not
/// a multiple of micro_batch_size x world_size or disagrees with an accumulation_steps
/// other than 1, or as BatchLayout's constructor (accumulation_steps 0, G overflowing 64
/// bits, options.tail not a Tail); `options` is unchanged then. O(1). Deterministic.
template <class Options>
void resolve_batch_shape(Options& options, std::uint64_t world_size, std::string_view who,
                         std::string_view options_name) {
  const std::string w(who);
  const std::uint64_t m = options.micro_batch_size;
  if (m == 0) {
    detail::throw_config_error(w + ": micro_batch_size is 0 (expected at least 1; set it with " +
                               std::string(options_name) + "().with_micro_batch_size(m))");
  }
  std::uint64_t accumulation = options.accumulation_steps;
  if (options.global_batch_size != 0) {
    const std::uint64_t g = options.global_batch_size;
    const std::uint64_t round = BatchLayout::round_size(m, world_size, who);
    if (g % round != 0) {
      detail::throw_config_error(w + ": global_batch_size " + std::to_string(g) + " is not a multiple of " +
                                 "micro_batch_size " + std::to_string(m) + " x world_size " +
                                 std::to_string(world_size) + " (expected a positive multiple of " +
                                 std::to_string(round) + ")");
    }
    if (accumulation != 1 && accumulation != g / round) {
      detail::throw_config_error(w + ": accumulation_steps " + std::to_string(accumulation) +
                                 " disagrees with global_batch_size " + std::to_string(g) + " (expected " +
                                 std::to_string(g / round) +
                                 " = global_batch_size / (micro_batch_size x world_size); set only one of them)");
    }
    accumulation = g / round;
  }
  // The layout validates the tail, the accumulation steps and that G fits 64 bits.
  const std::uint64_t global = BatchLayout(0, 0, m, world_size, accumulation, options.tail, who).global_batch_size();
  options.accumulation_steps = accumulation;
  options.global_batch_size = global;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_BATCH_LAYOUT_HPP

// distsampler token budgets: TokenBatchSampler's options (TokenBatchOptions, TokenCost, the oversize policy).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TOKENS_OPTIONS_HPP
#define DISTSAMPLER_TOKENS_OPTIONS_HPP

#include <cstdint>
#include <string>
#include <string_view>

#include "../error.hpp"
#include "../options.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// How a micro-batch's cost is measured against the token budget.
///  - padded: count x longest length (the tokens of the padded tensor);
///  - linear: the sum of the lengths (packed sequences);
///  - quadratic: the sum over samples of d + floor(d*d / q) (attention's quadratic term).
enum class TokenCost : std::uint8_t { padded = 0, linear = 1, quadratic = 2 };

/// What happens to a sample whose cost alone exceeds the budget.
///  - error: the constructor throws config_error naming the first such sample;
///  - own_batch: the sample forms a micro-batch of its own (flagged `oversize`, the one
///    kind of micro-batch allowed over the budget);
///  - skip: the sample is not read this epoch and is counted (TokenEpochStats::skipped_samples).
enum class Oversize : std::uint8_t { error = 0, own_batch = 1, skip = 2 };

[[nodiscard]] constexpr std::string_view to_string(TokenCost cost) noexcept {
  switch (cost) {
    case TokenCost::padded:
      return "padded";
    case TokenCost::linear:
      return "linear";
    case TokenCost::quadratic:
      return "quadratic";
  }
  return "invalid";
}

[[nodiscard]] constexpr std::string_view to_string(Oversize oversize) noexcept {
  switch (oversize) {
    case Oversize::error:
      return "error";
    case Oversize::own_batch:
      return "own_batch";
    case Oversize::skip:
      return "skip";
  }
  return "invalid";
}

/// TokenBatchSampler's options, the same on every rank, set by name:
///
///     TokenBatchOptions().with_max_tokens(16384).with_accumulation_steps(2).with_seed(7)
///
/// `max_tokens` (the budget per micro-batch) is required: 0 throws config_error. The
/// epoch's order is cut into windows of `window` samples; each window is sorted by length
/// and cut greedily into micro-batches whose cost (see TokenCost) stays within the budget,
/// with at most `max_samples` samples (0: no limit) and, when `batch_multiple` b > 1, a
/// sample count that is a multiple of b whenever the micro-batch holds at least b samples
/// (the last one of a window and balancing splits excepted). `longest_first` puts the
/// micro-batch holding the epoch's longest sample into the first step. `tail` stays
/// Tail::uneven, the only tail this sampler has: every sample is read once, and ranks
/// short of a micro-batch get an empty one.
struct TokenBatchOptions : OrderOptions<TokenBatchOptions> {
  std::uint64_t max_tokens = 0;                   ///< budget per micro-batch under `cost` (required)
  TokenCost cost = TokenCost::padded;             ///< cost model of the budget
  std::uint64_t quadratic_q = 1024;               ///< q of TokenCost::quadratic (d + d*d/q); at least 1
  std::uint64_t max_samples = 0;                  ///< samples per micro-batch at most; 0: no limit
  std::uint64_t batch_multiple = 1;               ///< sample counts a multiple of this when possible
  std::uint64_t window = std::uint64_t{1} << 20;  ///< samples sorted together (memory O(window))
  std::uint64_t accumulation_steps = 1;           ///< K, micro-batches per rank per optimizer step
  bool longest_first = false;                     ///< the epoch's longest sample in step 0
  Oversize oversize = Oversize::error;            ///< samples over the budget on their own

  constexpr TokenBatchOptions() noexcept : OrderOptions(Tail::uneven) {}  // user-provided: not an aggregate
  constexpr TokenBatchOptions& with_max_tokens(std::uint64_t value) noexcept {
    max_tokens = value;
    return *this;
  }
  /// The cost model; `q` is used by TokenCost::quadratic only.
  constexpr TokenBatchOptions& with_cost(TokenCost value, std::uint64_t q = 1024) noexcept {
    cost = value;
    quadratic_q = q;
    return *this;
  }
  constexpr TokenBatchOptions& with_max_samples(std::uint64_t value) noexcept {
    max_samples = value;
    return *this;
  }
  constexpr TokenBatchOptions& with_batch_multiple(std::uint64_t value) noexcept {
    batch_multiple = value;
    return *this;
  }
  constexpr TokenBatchOptions& with_window(std::uint64_t value) noexcept {
    window = value;
    return *this;
  }
  constexpr TokenBatchOptions& with_accumulation_steps(std::uint64_t value) noexcept {
    accumulation_steps = value;
    return *this;
  }
  constexpr TokenBatchOptions& with_longest_first(bool value) noexcept {
    longest_first = value;
    return *this;
  }
  constexpr TokenBatchOptions& with_oversize(Oversize value) noexcept {
    oversize = value;
    return *this;
  }

  /// The cost of one sample of `length` tokens alone (saturating at 2^64 - 1).
  [[nodiscard]] constexpr std::uint64_t sample_cost(std::uint64_t length) const noexcept {
    if (cost != TokenCost::quadratic) return length;
    const std::uint64_t square = length * length / quadratic_q;  // length < 2^32: no overflow
    return length + square < length ? UINT64_MAX : length + square;
  }

  /// Throws config_error, prefixed by `who`, naming the first option out of its range.
  void validate(std::string_view who) const {
    const std::string w(who);
    if (max_tokens == 0) {
      detail::throw_config_error(w + ": max_tokens is 0 (expected a token budget of at least 1; call with_max_tokens)");
    }
    if (cost != TokenCost::padded && cost != TokenCost::linear && cost != TokenCost::quadratic) {
      detail::throw_config_error(w + ": cost " + std::to_string(static_cast<int>(cost)) +
                                 " is not a TokenCost (expected padded, linear or quadratic)");
    }
    if (cost == TokenCost::quadratic && quadratic_q == 0) {
      detail::throw_config_error(w + ": quadratic_q is 0 (expected at least 1 for the cost d + d*d/q)");
    }
    if (batch_multiple == 0) detail::throw_config_error(w + ": batch_multiple is 0 (expected at least 1)");
    if (window == 0 || window > UINT32_MAX) {
      detail::throw_config_error(w + ": window " + std::to_string(window) +
                                 " is out of range (expected 1..4294967295)");
    }
    if (accumulation_steps == 0) detail::throw_config_error(w + ": accumulation_steps is 0 (expected at least 1)");
    if (oversize != Oversize::error && oversize != Oversize::own_batch && oversize != Oversize::skip) {
      detail::throw_config_error(w + ": oversize " + std::to_string(static_cast<int>(oversize)) +
                                 " is not an Oversize (expected error, own_batch or skip)");
    }
    if (tail != Tail::uneven) {
      detail::throw_config_error(w + ": tail " + std::string(to_string(tail)) +
                                 " is not supported (expected uneven: every sample once, empty micro-batches flagged)");
    }
  }

  friend constexpr bool operator==(const TokenBatchOptions& a, const TokenBatchOptions& b) noexcept {
    return a.same_order_options(b) && a.max_tokens == b.max_tokens && a.cost == b.cost &&
           a.quadratic_q == b.quadratic_q && a.max_samples == b.max_samples && a.batch_multiple == b.batch_multiple &&
           a.window == b.window && a.accumulation_steps == b.accumulation_steps && a.longest_first == b.longest_first &&
           a.oversize == b.oversize;
  }
  friend constexpr bool operator!=(const TokenBatchOptions& a, const TokenBatchOptions& b) noexcept {
    return !(a == b);
  }
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_TOKENS_OPTIONS_HPP

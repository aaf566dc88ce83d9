// distsampler token batches: the micro-batches a TokenBatchSampler hands out and its epoch stats (its lengths: lengths.hpp).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TOKENS_MICRO_BATCH_HPP
#define DISTSAMPLER_TOKENS_MICRO_BATCH_HPP

#include <cstdint>
#include <vector>

#include "../lengths.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// One micro-batch a rank reads: dataset indices (none for an empty micro-batch, the
/// marker a rank gets when the window had fewer micro-batches than ranks need; run it as
/// a step with zero loss weight, or skip the forward pass but join the collectives).
struct TokenMicroBatch {
  std::vector<std::uint64_t> indices;
  std::uint64_t tokens = 0;  ///< sum of the lengths
  std::uint64_t padded = 0;  ///< count x longest length
  bool oversize = false;     ///< one sample over the budget (Oversize::own_batch)

  [[nodiscard]] bool empty() const noexcept { return indices.empty(); }
};

/// What an epoch's plan holds, over every rank (the same on every rank), from the
/// sampler's start on.
struct TokenEpochStats {
  std::uint64_t steps = 0;
  std::uint64_t micro_batches = 0;        ///< steps x world_size x accumulation_steps, empties included
  std::uint64_t empty_micro_batches = 0;  ///< markers for ranks short of a micro-batch
  std::uint64_t splits = 0;               ///< micro-batches added by splitting to balance
  std::uint64_t merges = 0;               ///< micro-batches removed by merging to balance
  std::uint64_t skipped_samples = 0;      ///< over the budget under Oversize::skip
  std::uint64_t oversize_batches = 0;     ///< lone samples over the budget (Oversize::own_batch)
  std::uint64_t tokens = 0;               ///< real tokens read
  std::uint64_t padded = 0;               ///< padded tokens (count x longest per micro-batch)
  /// Over the steps where every rank has tokens: the largest and the mean of (most real
  /// tokens of a rank in the step) / (fewest); 1 is perfect balance.
  double max_step_ratio = 1.0;
  double mean_step_ratio = 1.0;
  std::uint64_t steps_with_empty_rank = 0;  ///< steps where some rank reads no token

  /// tokens / padded: 1 when no padding is needed.
  [[nodiscard]] double padding_efficiency() const noexcept {
    return padded == 0 ? 1.0 : static_cast<double>(tokens) / static_cast<double>(padded);
  }
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_TOKENS_MICRO_BATCH_HPP

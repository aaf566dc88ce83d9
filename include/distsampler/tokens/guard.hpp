// distsampler token family's guard customisation points: its overlap sums (segment_sums) and its GuardShape.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TOKENS_GUARD_HPP
#define DISTSAMPLER_TOKENS_GUARD_HPP

#include <cstdint>

#include "../overlap_check.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "token_batch_sampler.hpp"  // the sampler (which never includes this header)

DISTSAMPLER_NAMESPACE_BEGIN

/// The overlap guards' customisation point for this family (overlap_check.hpp): what
/// `process` (this process's true rank and world size) contributes for the current epoch
/// or resumed segment of a TokenBatchSampler: every sample of this rank's micro-batches in every
/// step (empty micro-batches read nothing), and its share (every W-th, by rank) of the
/// samples the segment leaves unread: skipped under Oversize::skip, and consumed before
/// start(). O(N log M) (every window is planned); deterministic.
[[nodiscard]] inline ReadSums segment_sums(const TokenBatchSampler& s, const World& process) {
  ReadSums sums;
  const std::uint64_t w = process.world_size, mine = process.rank;
  std::uint64_t unread = 0;
  auto skip = [&](std::uint64_t index) {
    if (unread++ % w == mine) sums.skip(index);
  };
  s.for_each_window([&](const TokenWindow& window) {
    for (std::uint64_t step = window.first_step(); step < window.end_step(); ++step) {
      for (std::uint64_t k = 0; k < s.accumulation_steps(); ++k) {
        for (const std::uint64_t index : window.micro_batch(step, k, s.rank()).indices) sums.read(index);
      }
    }
    const WindowPlan& plan = window.plan();
    for (std::uint64_t i = plan.planned; i < plan.samples.size(); ++i) skip(window.index_of(i));
  });
  s.for_each_consumed(skip);
  return sums;
}

/// The guards' shape of a TokenBatchSampler: its accumulation steps, and as layout the
/// hash of the lengths and budget options (layout_hash(), the key's layout). O(1).
[[nodiscard]] inline GuardShape guard_shape(const TokenBatchSampler& s) noexcept {
  GuardShape shape;
  shape.accumulation_steps = s.accumulation_steps();
  shape.layout = s.layout_hash();
  return shape;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_TOKENS_GUARD_HPP

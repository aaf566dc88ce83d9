// distsampler batch family's guard customisation points: its overlap sums (segment_sums) and its GuardShape.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_BATCH_GUARD_HPP
#define DISTSAMPLER_BATCH_GUARD_HPP

#include <cstdint>

#include "../overlap_check.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "batch_sampler.hpp"  // the sampler (which never includes this header)

DISTSAMPLER_NAMESPACE_BEGIN

/// The overlap guards' customisation point for this family (overlap_check.hpp): what
/// `process` (this process's true rank and world size) contributes for the current epoch
/// or resumed segment of a DistributedBatchSampler: every micro-batch of every step this rank
/// reads, and its share of the positions before start() and past layout().read_end()
/// (what Tail::drop leaves out). O(num_steps x G / W + N / W); deterministic.
template <class P>
[[nodiscard]] ReadSums segment_sums(const DistributedBatchSampler<P>& s, const World& process) {
  return detail::layout_sums(s.layout(), s.rank(), s.dataset_size(), s.start(), process,
                             [&](std::uint64_t p) { return s.index_at_position(p); });
}

/// The guards' shape of a DistributedBatchSampler: its micro-batch size and accumulation
/// steps (ranks must agree on them, though saved states do not record them). O(1).
template <class P>
[[nodiscard]] GuardShape guard_shape(const DistributedBatchSampler<P>& s) noexcept {
  GuardShape shape;
  shape.micro_batch_size = s.micro_batch_size();
  shape.accumulation_steps = s.accumulation_steps();
  return shape;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_BATCH_GUARD_HPP

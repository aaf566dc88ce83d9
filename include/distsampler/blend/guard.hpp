// distsampler blend family's guard customisation points: its overlap sums over the run's positions and its GuardShape.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_BLEND_GUARD_HPP
#define DISTSAMPLER_BLEND_GUARD_HPP

#include <cstdint>

#include "../batch_layout.hpp"
#include "../overlap_check.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "blend_sampler.hpp"  // the sampler (which never includes this header)

DISTSAMPLER_NAMESPACE_BEGIN

/// The overlap guards' customisation point for this family (overlap_check.hpp): what
/// `process` (this process's true rank and world size) contributes for the run, or the
/// resumed segment, of a BlendSampler: the position of every sequence of every micro-batch
/// of every step this rank reads, and its share of the positions before start(). The slots
/// are the run's positions 0..dataset_size()-1: which source and which of its sequences a
/// position holds follows from the key (seed, shuffle, and in its layout hash the sources'
/// lengths, L, mode, weights, schedule, mixing block and end), so ranks that agree on the
/// key and cover the positions once read every source's sequences once. O(num_steps x G /
/// W + length / W); deterministic.
[[nodiscard]] inline ReadSums segment_sums(const BlendSampler& s, const World& process) {
  return detail::layout_sums(s.layout(), s.rank(), s.dataset_size(), s.start(), process,
                             [](std::uint64_t p) { return p; });
}

/// The guards' shape of a BlendSampler: its micro-batch size and accumulation steps (ranks
/// must agree on them, though saved states do not record them), and as layout the key's
/// hash of the blend settings. O(1).
[[nodiscard]] inline GuardShape guard_shape(const BlendSampler& s) noexcept {
  GuardShape shape;
  shape.micro_batch_size = s.micro_batch_size();
  shape.accumulation_steps = s.accumulation_steps();
  shape.layout = s.layout_hash();
  return shape;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_BLEND_GUARD_HPP

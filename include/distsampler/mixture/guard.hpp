// distsampler mixture family's guard customisation points: its overlap sums over mixture positions and its GuardShape.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_MIXTURE_GUARD_HPP
#define DISTSAMPLER_MIXTURE_GUARD_HPP

#include <cstdint>

#include "../batch_layout.hpp"
#include "../overlap_check.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "mixture_sampler.hpp"  // the sampler (which never includes this header)

DISTSAMPLER_NAMESPACE_BEGIN

/// The overlap guards' customisation point for this family (overlap_check.hpp): what
/// `process` (this process's true rank and world size) contributes for the current epoch
/// or resumed segment of a MixtureSampler: the mixture position of every slot of every
/// micro-batch of every step this rank reads (padding flagged), and its share of the
/// positions before start() and past layout().read_end() (what Tail::drop leaves). The
/// slots are the epoch's positions 0..dataset_size()-1 (the epoch length): which source
/// and which of its samples a position holds follows from the key (seed, and the sizes,
/// weights, schedule, block and end in its layout hash), so ranks that agree on the key
/// and cover the positions once also agree on every source's count. O(num_steps x G / W +
/// length / W); deterministic.
[[nodiscard]] inline ReadSums segment_sums(const MixtureSampler& s, const World& process) {
  return detail::layout_sums(s.layout(), s.rank(), s.dataset_size(), s.start(), process,
                             [](std::uint64_t p) { return p; });
}

/// The guards' shape of a MixtureSampler: its micro-batch size and accumulation steps
/// (ranks must agree on them, though saved states do not record them), and as layout the
/// key's hash of the mixture settings (sizes, weights, schedule, block, end). O(1).
[[nodiscard]] inline GuardShape guard_shape(const MixtureSampler& s) noexcept {
  GuardShape shape;
  shape.micro_batch_size = s.micro_batch_size();
  shape.accumulation_steps = s.accumulation_steps();
  shape.layout = s.key().layout;
  return shape;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_MIXTURE_GUARD_HPP

// distsampler resume: the state of a DistributedSampler, and the name kept for the resumable sampler.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_RESUME_HPP
#define DISTSAMPLER_RESUME_HPP

#include <cstdint>

#include "distributed_sampler.hpp"
#include "feistel.hpp"
#include "state.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// `sampler.state(samples_done)` with errors prefixed "make_state": the state after
/// every rank has read its first `samples_done` slots of the sampler's current segment.
/// Throws config_error when samples_done exceeds the largest rank's size. O(1).
template <class Permutation>
[[nodiscard]] SamplerState make_state(const DistributedSampler<Permutation>& sampler, std::uint64_t samples_done) {
  return detail::strided_state(sampler.key(), sampler.start(), sampler.world_size(), sampler.epoch(), samples_done,
                               "make_state");
}

/// DistributedSampler resumes by itself (constructor from a SamplerState, `resume`,
/// `state`); this name is kept for code written against the earlier separate class.
template <class Permutation = FeistelPermutation>
using ResumedDistributedSampler = DistributedSampler<Permutation>;

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_RESUME_HPP

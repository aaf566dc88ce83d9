// distsampler weighted sampling: WeightedSampler's options (WeightedSamplerOptions).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_WEIGHTED_OPTIONS_HPP
#define DISTSAMPLER_WEIGHTED_OPTIONS_HPP

#include <cstdint>

#include "../options.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// WeightedSampler's options, set by name: OrderOptions' seed and tail (default pad;
/// `shuffle` is not used), `num_samples` per epoch (0 = the dataset size) and
/// `replacement` (default true, torch's WeightedRandomSampler default).
struct WeightedSamplerOptions : OrderOptions<WeightedSamplerOptions> {
  std::uint64_t num_samples = 0;
  bool replacement = true;

  constexpr WeightedSamplerOptions() noexcept : OrderOptions(Tail::pad) {}  // user-provided: not an aggregate
  constexpr WeightedSamplerOptions& with_num_samples(std::uint64_t value) noexcept {
    num_samples = value;
    return *this;
  }
  constexpr WeightedSamplerOptions& with_replacement(bool value) noexcept {
    replacement = value;
    return *this;
  }
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_WEIGHTED_OPTIONS_HPP

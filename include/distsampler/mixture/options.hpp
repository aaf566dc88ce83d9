// distsampler mixtures: MixtureSampler's options (MixtureOptions, MixtureEnd).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_MIXTURE_OPTIONS_HPP
#define DISTSAMPLER_MIXTURE_OPTIONS_HPP

#include <cstdint>
#include <vector>

#include "../options.hpp"
#include "../version.hpp"
#include "schedule.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Where a mixture epoch ends.
enum class MixtureEnd {
  first_exhausted,  ///< when the first source finishes its first pass (no sample repeats in the epoch)
  all_seen,         ///< when the last source finishes its first pass (every sample seen at least once)
  samples,          ///< after end_count positions
  steps,            ///< after end_count mixing blocks (optimizer steps of the global batch)
};

/// MixtureSampler's options, set by name like BatchSamplerOptions:
///
///     MixtureOptions().with_micro_batch_size(4).with_global_batch_size(64).with_seed(42)
///         .with_schedule({{1000, {0.2, 0.8}}}).with_end(MixtureEnd::steps, 5000)
///
/// The order fields (shuffle, seed, tail; default tail drop) come from OrderOptions,
/// `micro_batch_size`, `accumulation_steps` and `global_batch_size` from BatchShapeOptions
/// (as BatchSamplerOptions'). `mixing_block` (0 = the global batch size at construction) is
/// the block over which proportions are exact and the unit of schedule steps; it defines
/// the order, so a run that resumes with another global batch size sets it to the old one.
/// `schedule` lists weight changes (steps strictly increasing from 1). `replacement`
/// draws each sample of a source uniformly with replacement instead of walking the
/// source's permutation.
struct MixtureOptions : OrderOptions<MixtureOptions>, BatchShapeOptions<MixtureOptions> {
  std::uint64_t mixing_block = 0;
  MixtureEnd end = MixtureEnd::first_exhausted;
  std::uint64_t end_count = 0;  ///< positions (samples) or blocks (steps) for those ends
  bool replacement = false;
  std::vector<WeightChange> schedule;

  MixtureOptions() noexcept : OrderOptions(Tail::drop) {}  // user-provided: not an aggregate
  MixtureOptions& with_mixing_block(std::uint64_t value) noexcept {
    mixing_block = value;
    return *this;
  }
  /// `count` is ignored by first_exhausted and all_seen.
  MixtureOptions& with_end(MixtureEnd value, std::uint64_t count = 0) noexcept {
    end = value;
    end_count = count;
    return *this;
  }
  MixtureOptions& with_replacement(bool value) noexcept {
    replacement = value;
    return *this;
  }
  MixtureOptions& with_schedule(std::vector<WeightChange> value) {
    schedule = std::move(value);
    return *this;
  }
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_MIXTURE_OPTIONS_HPP

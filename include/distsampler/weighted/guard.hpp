// distsampler weighted family's guard customisation points: its overlap sums over draw positions, slots and GuardShape.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_WEIGHTED_GUARD_HPP
#define DISTSAMPLER_WEIGHTED_GUARD_HPP

#include <cstdint>

#include "../detail/mix.hpp"
#include "../options.hpp"
#include "../overlap_check.hpp"
#include "../state/format.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "weighted_sampler.hpp"  // the sampler (which never includes this header)

DISTSAMPLER_NAMESPACE_BEGIN

/// The slots a WeightedSampler's overlap sums cover: the num_samples draw positions of an
/// epoch (draws repeat dataset indices by design, so the positions, not the indices, are
/// what ranks must split disjointly). O(1).
[[nodiscard]] inline std::uint64_t guard_slots(const WeightedSampler& s) noexcept { return s.options().num_samples; }

/// The overlap guards' customisation point for this family (overlap_check.hpp): what
/// `process` (this process's true rank and world size) contributes for the current epoch
/// or resumed segment of a WeightedSampler: the draw position of every slot it reads
/// (padding flagged; its read count is its number of draws), and its share of the
/// positions the segment leaves unread (drawn before start(), and the remainder Tail::drop
/// leaves). Summed over all ranks, the verdict covers positions 0..num_samples-1.
/// O(size() + num_samples / W); deterministic.
[[nodiscard]] inline ReadSums segment_sums(const WeightedSampler& s, const World& process) {
  ReadSums sums;
  const StridedPartition& part = s.partition();
  for (std::uint64_t i = 0; i < part.size(); ++i) {
    if (part.is_padding(i)) {
      sums.padding();
    } else {
      sums.read(part.epoch_position(i, s.start()));
    }
  }
  const std::uint64_t n = guard_slots(s), start = s.start(), remaining = n - start;
  const std::uint64_t covered = s.options().tail == Tail::drop ? remaining - remaining % s.world_size() : remaining;
  detail::skip_outside(sums, n, start, covered, process, [](std::uint64_t p) { return p; });
  return sums;
}

/// The guards' shape of a WeightedSampler: as layout a hash of what defines its draws
/// beside the key's seed and tail: the weights (key().layout), num_samples and
/// replacement, so a rank built with other weights or another epoch length is named. O(1).
[[nodiscard]] inline GuardShape guard_shape(const WeightedSampler& s) noexcept {
  std::uint64_t h = detail::hash_field(0xcbf29ce484222325u, "distsampler-weighted-guard-v1");
  h = detail::hash_field(h, s.key().layout);
  h = detail::hash_field(h, s.options().num_samples);
  h = detail::hash_field(h, std::uint64_t{s.options().replacement ? 1u : 0u});
  GuardShape shape;
  shape.layout = detail::mix64(h);
  return shape;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_WEIGHTED_GUARD_HPP

// distsampler streams family's guard customisation points: the plan's pieces of a pass as overlap sums, and its shape.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STREAMS_GUARD_HPP
#define DISTSAMPLER_STREAMS_GUARD_HPP

#include <cstdint>

#include "../detail/mix.hpp"
#include "../overlap_check.hpp"
#include "../state/format.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "plan.hpp"
#include "stream_sampler.hpp"  // the sampler (which never includes this header)

DISTSAMPLER_NAMESPACE_BEGIN

/// The slots a StreamSampler's overlap sums cover: the pieces of a fresh pass, every
/// shard cut into plan().parts() parts (shards x parts; record counts are unknown, so the
/// plan's pieces, not the records, are what consumers split). O(1). The product must fit
/// in 64 bits (it does for any plan that can be dealt).
[[nodiscard]] inline std::uint64_t guard_slots(const StreamSampler& s) noexcept {
  return s.plan().shards() * s.plan().parts();
}

/// The overlap guards' customisation point for this family (overlap_check.hpp): the
/// pieces this rank's consumers (rank x num_workers + w for each loader worker w) are
/// dealt in pass epoch(), the first pass the plan deals in full, each piece read as slot
/// shard x parts + part; nothing is skipped. Summed over all ranks, the verdict says
/// whether the plan gives every piece of the pass to exactly one consumer (a rank built
/// with another seed, other byte hints or another share deals other pieces). Deals the
/// pass on a copy of the plan (the sampler is not changed): O(shards x parts x log
/// consumers) time and memory. `process` is unused: every rank feeds its own pieces.
/// Call it before the sampler's plan releases pass epoch() (release_before).
[[nodiscard]] inline ReadSums segment_sums(const StreamSampler& s, const World& /*process*/) {
  ReadSums sums;
  StreamPlan plan = s.plan();  // dealing is lazy and fills the plan: deal on a copy
  const std::uint64_t pass = s.epoch(), parts = plan.parts();
  for (std::uint64_t w = 0; w < s.num_workers(); ++w) {
    for (const StreamPiece& piece : plan.share(pass, s.rank() * s.num_workers() + w)) {
      sums.read(piece.shard * parts + piece.part);
    }
  }
  return sums;
}

/// The guards' shape of a StreamSampler: its loader workers per rank (the plan's consumers
/// are world_size x num_workers) and as layout a hash of the shard count and byte hints
/// (key().layout) and the share option. O(1).
[[nodiscard]] inline GuardShape guard_shape(const StreamSampler& s) noexcept {
  std::uint64_t h = detail::hash_field(0xcbf29ce484222325u, "distsampler-streams-guard-v1");
  h = detail::hash_field(h, s.key().layout);
  h = detail::hash_field(h, s.plan().share_option());
  GuardShape shape;
  shape.num_workers = s.num_workers();
  shape.layout = detail::mix64(h);
  return shape;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STREAMS_GUARD_HPP

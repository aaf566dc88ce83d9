// distsampler options shared by the samplers: shuffle, seed and tail.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_OPTIONS_HPP
#define DISTSAMPLER_OPTIONS_HPP

#include <cstdint>

#include "partition.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The options every rank must agree on (unlike World, they are the same everywhere).
///
/// `seed` is shared by all ranks: one shared seed and a partition is what makes ranks
/// disjoint; per-rank seeds (`42 + rank`) give each rank its own full shuffle, so ranks
/// overlap. torch's negative seeds are taken mod 2^64: seed -1 is 2^64 - 1.
struct SamplerOptions {
  bool shuffle = true;
  std::uint64_t seed = 0;
  Tail tail = Tail::pad;

  friend constexpr bool operator==(const SamplerOptions& a, const SamplerOptions& b) noexcept {
    return a.shuffle == b.shuffle && a.seed == b.seed && a.tail == b.tail;
  }
  friend constexpr bool operator!=(const SamplerOptions& a, const SamplerOptions& b) noexcept { return !(a == b); }
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_OPTIONS_HPP

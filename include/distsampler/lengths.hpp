// distsampler LengthView: a read-only view of per-sample token counts, the input of every family that reads lengths.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_LENGTHS_HPP
#define DISTSAMPLER_LENGTHS_HPP

#include <cstdint>
#include <vector>

#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// A read-only view of per-sample (per-document) lengths: any contiguous memory (a vector,
/// a memory-mapped file of native-endian 32-bit values, a NumPy array). The memory must
/// outlive the sampler that reads it.
struct LengthView {
  const std::uint32_t* data = nullptr;
  std::uint64_t size = 0;

  constexpr LengthView() noexcept = default;
  constexpr LengthView(const std::uint32_t* values, std::uint64_t count) noexcept : data(values), size(count) {}
  LengthView(const std::vector<std::uint32_t>& values) noexcept  // NOLINT: implicit by design
      : data(values.data()), size(values.size()) {}
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_LENGTHS_HPP

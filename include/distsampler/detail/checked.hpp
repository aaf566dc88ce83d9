// distsampler internal: the one checked product of sizes (world, accumulation, micro-batch, ...) for every family.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_CHECKED_HPP
#define DISTSAMPLER_DETAIL_CHECKED_HPP

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "../error.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

/// One factor of a checked product: the name the message gives it and its value.
struct Factor {
  std::string_view name;
  std::uint64_t value;
};

/// True when a * b fits 64 bits. O(1), noexcept.
[[nodiscard]] constexpr bool mul_fits(std::uint64_t a, std::uint64_t b) noexcept {
  return a == 0 || b <= UINT64_MAX / a;
}

/// The product of `factors` (1 when empty). Throws config_error "<who>: <name1> <v1> x
/// <name2> <v2> [x ...] overflows 64 bits" naming every factor when the product does not
/// fit 64 bits; a zero factor makes the product 0, which always fits. Every product of
/// sizes in the library (world_size, accumulation_steps, micro_batch_size, num_workers,
/// block sizes) goes through here. O(number of factors); deterministic.
[[nodiscard]] inline std::uint64_t checked_product(std::string_view who, std::initializer_list<Factor> factors) {
  std::uint64_t p = 1;
  bool zero = false, over = false;
  for (const Factor& f : factors) {
    if (f.value == 0) zero = true;
    if (!mul_fits(p, f.value)) over = true;
    p *= f.value;
  }
  if (zero) return 0;
  if (over) {
    std::string m(who);
    m += ": ";
    bool first = true;
    for (const Factor& f : factors) {
      if (!first) m += " x ";
      first = false;
      m += f.name;
      m += ' ';
      m += std::to_string(f.value);
    }
    m += " overflows 64 bits";
    throw_config_error(m);
  }
  return p;
}

/// checked_product(who, {{a_name, a}, {b_name, b}}).
[[nodiscard]] inline std::uint64_t checked_mul(std::string_view who, std::string_view a_name, std::uint64_t a,
                                               std::string_view b_name, std::uint64_t b) {
  return checked_product(who, {{a_name, a}, {b_name, b}});
}

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_CHECKED_HPP

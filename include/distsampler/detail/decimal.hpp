// distsampler internal: the one strict, overflow-checked decimal parser (environment, states, command line).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_DECIMAL_HPP
#define DISTSAMPLER_DETAIL_DECIMAL_HPP

#include <cstdint>
#include <string_view>

#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

/// Why a decimal parse failed; `ok` when it did not.
enum class DecimalError { ok, empty, sign, space, not_digit, overflow };

/// The outcome of parse_decimal: `value` is meaningful only when `error == ok`.
struct DecimalParse {
  std::uint64_t value = 0;
  DecimalError error = DecimalError::ok;
};

/// Parses all of `text` as an unsigned decimal integer: digits 0-9 only (no sign, no white
/// space, no prefix), at most 18446744073709551615. Leading zeros are accepted.
/// O(length), noexcept, identical on every platform.
[[nodiscard]] constexpr DecimalParse parse_decimal(std::string_view text) noexcept {
  if (text.empty()) return {0, DecimalError::empty};
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c == '-' || c == '+') return {0, DecimalError::sign};
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return {0, DecimalError::space};
    if (c < '0' || c > '9') return {0, DecimalError::not_digit};
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return {0, DecimalError::overflow};
    value = value * 10 + digit;
  }
  return {value, DecimalError::ok};
}

/// What a failed parse_decimal means, phrased to follow "<name> <value> ": e.g. "has a sign
/// (expected an unsigned decimal integer)". Static text; "" for `ok`.
[[nodiscard]] constexpr const char* describe(DecimalError error) noexcept {
  switch (error) {
    case DecimalError::ok:
      return "";
    case DecimalError::empty:
      return "is empty (expected a decimal integer)";
    case DecimalError::sign:
      return "has a sign (expected an unsigned decimal integer)";
    case DecimalError::space:
      return "contains white space (expected only digits 0-9)";
    case DecimalError::not_digit:
      return "is not a decimal integer (expected only digits 0-9)";
    case DecimalError::overflow:
      return "overflows 64 bits (expected at most 18446744073709551615)";
  }
  return "";
}

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_DECIMAL_HPP

// distsampler errors: config_error for bad configuration, state_error for bad saved state.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_ERROR_HPP
#define DISTSAMPLER_ERROR_HPP

#include <stdexcept>
#include <cstdint>
#include <string>
#include <string_view>

#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Thrown for bad configuration: an out-of-range rank, an unparsable environment
/// variable, a size that would overflow. The message names the parameter (or
/// environment variable), the value seen and what was expected.
class config_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// Thrown when saved sampler state is malformed, truncated, of an unknown
/// version, or belongs to another dataset or option set.
class state_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Keeps a function out of line where the compiler supports it (GCC, Clang, MSVC); empty
/// elsewhere. For the throw helpers, whose callers' hot paths stay small.
#if defined(__GNUC__) || defined(__clang__)
#define DISTSAMPLER_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define DISTSAMPLER_NOINLINE __declspec(noinline)
#else
#define DISTSAMPLER_NOINLINE
#endif

namespace detail {

// Out-of-line throw helpers ([[noreturn]], never inlined where DISTSAMPLER_NOINLINE works)
// keep the callers' hot paths small.
[[noreturn]] DISTSAMPLER_NOINLINE inline void throw_config_error(const std::string& message) {
  throw config_error(message);
}
[[noreturn]] DISTSAMPLER_NOINLINE inline void throw_state_error(const std::string& message) {
  throw state_error(message);
}

/// The one phrasing of a value outside [0, bound): "<who>: <name> <value> is out of range
/// for <bound_name> <bound> (expected 0..<bound - 1>)", or "(expected none: <bound_name> is
/// 0)" when the range is empty. The house form of every "X is out of range for Y" message.
[[nodiscard]] inline std::string out_of_range_message(std::string_view who, std::string_view name, std::uint64_t value,
                                                      std::string_view bound_name, std::uint64_t bound) {
  std::string m(who);
  m += ": ";
  m += name;
  m += ' ';
  m += std::to_string(value);
  m += " is out of range for ";
  m += bound_name;
  m += ' ';
  m += std::to_string(bound);
  m += bound == 0 ? std::string(" (expected none: ") + std::string(bound_name) + " is 0)"
                  : " (expected 0.." + std::to_string(bound - 1) + ")";
  return m;
}

/// Throws config_error with out_of_range_message(...).
[[noreturn]] DISTSAMPLER_NOINLINE inline void throw_out_of_range(std::string_view who, std::string_view name,
                                                                 std::uint64_t value, std::string_view bound_name,
                                                                 std::uint64_t bound) {
  throw_config_error(out_of_range_message(who, name, value, bound_name, bound));
}

}  // namespace detail

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_ERROR_HPP

// distsampler errors: config_error for bad configuration, state_error for bad saved state.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_ERROR_HPP
#define DISTSAMPLER_ERROR_HPP

#include <stdexcept>
#include <string>

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

namespace detail {

// Out-of-line, never-inlined throw helpers keep the callers' hot paths small.
[[noreturn]] inline void throw_config_error(const std::string& message) { throw config_error(message); }
[[noreturn]] inline void throw_state_error(const std::string& message) { throw state_error(message); }

}  // namespace detail

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_ERROR_HPP

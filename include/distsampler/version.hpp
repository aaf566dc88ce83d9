// distsampler version: the one place the version number lives (CMake reads it).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_VERSION_HPP
#define DISTSAMPLER_VERSION_HPP

#define DISTSAMPLER_VERSION_MAJOR 0
#define DISTSAMPLER_VERSION_MINOR 3
#define DISTSAMPLER_VERSION_PATCH 0

/// The version as one integer, major * 10000 + minor * 100 + patch.
#define DISTSAMPLER_VERSION \
  (DISTSAMPLER_VERSION_MAJOR * 10000 + DISTSAMPLER_VERSION_MINOR * 100 + DISTSAMPLER_VERSION_PATCH)

/// Every public name lives in `distsampler::v0`, reachable as `distsampler::`.
/// The inline namespace changes with an incompatible major version, so two
/// versions linked into one program are distinct types instead of an ODR violation.
#define DISTSAMPLER_NAMESPACE_BEGIN \
  namespace distsampler {           \
  inline namespace v0 {
#define DISTSAMPLER_NAMESPACE_END \
  }                               \
  }

#endif  // DISTSAMPLER_VERSION_HPP

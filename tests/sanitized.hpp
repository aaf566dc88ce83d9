// distsampler tests: DISTSAMPLER_TEST_SANITIZED is defined in AddressSanitizer builds (GCC's and Clang's spelling).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TESTS_SANITIZED_HPP
#define DISTSAMPLER_TESTS_SANITIZED_HPP

#if defined(__SANITIZE_ADDRESS__)
#define DISTSAMPLER_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DISTSAMPLER_TEST_SANITIZED 1
#endif
#endif

#endif  // DISTSAMPLER_TESTS_SANITIZED_HPP

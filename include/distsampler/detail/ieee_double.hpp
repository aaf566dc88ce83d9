// distsampler internal: refuses x87 excess precision, under which the weighted and mixture samplers' doubles differ.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_IEEE_DOUBLE_HPP
#define DISTSAMPLER_DETAIL_IEEE_DOUBLE_HPP

#include <cfloat>

// The weighted sampler's alias table and the mixture's integer weights come from basic IEEE
// double operations, identical on every platform whose doubles round to 53 bits after each
// operation (FLT_EVAL_METHOD 0: x86-64, 32-bit x86 with SSE2 math, ARM, POWER, s390x, ...).
// 32-bit x86 with x87 math keeps 64-bit intermediates and would pick other samples, so such a
// build is refused unless DISTSAMPLER_ALLOW_EXCESS_PRECISION accepts output that differs
// from every other platform.
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0 && !defined(DISTSAMPLER_ALLOW_EXCESS_PRECISION)
// clang-format off
#error "distsampler: FLT_EVAL_METHOD is not 0 (x87 math): weighted and mixture samples would differ from \
other platforms (expected -msse2 -mfpmath=sse, or DISTSAMPLER_ALLOW_EXCESS_PRECISION to accept that)"
// clang-format on
#endif

#endif  // DISTSAMPLER_DETAIL_IEEE_DOUBLE_HPP

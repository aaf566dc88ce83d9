// distsampler forwarding header: the 0.1 path <distsampler/torch_pass.hpp>, now <distsampler/torch/pass.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/torch/pass.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_TORCH_PASS_HPP
#define DISTSAMPLER_COMPAT_TORCH_PASS_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/torch_pass.hpp> is deprecated: include <distsampler/torch/pass.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/torch/pass.hpp>
#endif  // DISTSAMPLER_COMPAT_TORCH_PASS_HPP

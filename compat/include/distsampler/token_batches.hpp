// distsampler forwarding header: the 0.1 path <distsampler/token_batches.hpp>, now <distsampler/tokens/token_batch_sampler.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/tokens/token_batch_sampler.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_TOKEN_BATCHES_HPP
#define DISTSAMPLER_COMPAT_TOKEN_BATCHES_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/token_batches.hpp> is deprecated: include <distsampler/tokens/token_batch_sampler.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/tokens/token_batch_sampler.hpp>
#endif  // DISTSAMPLER_COMPAT_TOKEN_BATCHES_HPP

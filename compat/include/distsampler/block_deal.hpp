// distsampler forwarding header: the 0.1 path <distsampler/block_deal.hpp>, now <distsampler/shards/block_deal.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/shards/block_deal.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_BLOCK_DEAL_HPP
#define DISTSAMPLER_COMPAT_BLOCK_DEAL_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/block_deal.hpp> is deprecated: include <distsampler/shards/block_deal.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/shards/block_deal.hpp>
#endif  // DISTSAMPLER_COMPAT_BLOCK_DEAL_HPP

// distsampler forwarding header: the 0.1 path <distsampler/loader_round_robin.hpp>, now <distsampler/shards/loader_round_robin.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/shards/loader_round_robin.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_LOADER_ROUND_ROBIN_HPP
#define DISTSAMPLER_COMPAT_LOADER_ROUND_ROBIN_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/loader_round_robin.hpp> is deprecated: include <distsampler/shards/loader_round_robin.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/shards/loader_round_robin.hpp>
#endif  // DISTSAMPLER_COMPAT_LOADER_ROUND_ROBIN_HPP

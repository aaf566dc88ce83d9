// distsampler forwarding header: the 0.1 path <distsampler/shard_options.hpp>, now <distsampler/shards/options.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/shards/options.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_SHARD_OPTIONS_HPP
#define DISTSAMPLER_COMPAT_SHARD_OPTIONS_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/shard_options.hpp> is deprecated: include <distsampler/shards/options.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/shards/options.hpp>
#endif  // DISTSAMPLER_COMPAT_SHARD_OPTIONS_HPP

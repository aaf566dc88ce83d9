// distsampler forwarding header: the 0.1 path <distsampler/streaming_shard_sampler.hpp>, now <distsampler/shards/streaming_shard_sampler.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/shards/streaming_shard_sampler.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_STREAMING_SHARD_SAMPLER_HPP
#define DISTSAMPLER_COMPAT_STREAMING_SHARD_SAMPLER_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/streaming_shard_sampler.hpp> is deprecated: include <distsampler/shards/streaming_shard_sampler.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/shards/streaming_shard_sampler.hpp>
#endif  // DISTSAMPLER_COMPAT_STREAMING_SHARD_SAMPLER_HPP

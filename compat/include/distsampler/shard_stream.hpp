// distsampler forwarding header: the 0.1 path <distsampler/shard_stream.hpp>, now <distsampler/shards/stream.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/shards/stream.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_SHARD_STREAM_HPP
#define DISTSAMPLER_COMPAT_SHARD_STREAM_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/shard_stream.hpp> is deprecated: include <distsampler/shards/stream.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/shards/stream.hpp>
#endif  // DISTSAMPLER_COMPAT_SHARD_STREAM_HPP

// distsampler forwarding header: the 0.1 path <distsampler/shard_lane_rounds.hpp>, now <distsampler/shards/lane_rounds.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/shards/lane_rounds.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_SHARD_LANE_ROUNDS_HPP
#define DISTSAMPLER_COMPAT_SHARD_LANE_ROUNDS_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/shard_lane_rounds.hpp> is deprecated: include <distsampler/shards/lane_rounds.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/shards/lane_rounds.hpp>
#endif  // DISTSAMPLER_COMPAT_SHARD_LANE_ROUNDS_HPP

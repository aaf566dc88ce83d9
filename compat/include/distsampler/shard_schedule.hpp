// distsampler forwarding header: the 0.1 path <distsampler/shard_schedule.hpp>, now <distsampler/shards/schedule.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/shards/schedule.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_SHARD_SCHEDULE_HPP
#define DISTSAMPLER_COMPAT_SHARD_SCHEDULE_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/shard_schedule.hpp> is deprecated: include <distsampler/shards/schedule.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/shards/schedule.hpp>
#endif  // DISTSAMPLER_COMPAT_SHARD_SCHEDULE_HPP

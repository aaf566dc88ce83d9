// distsampler forwarding header: the 0.1 path <distsampler/shard_progress.hpp>, now <distsampler/shards/progress.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/shards/progress.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_SHARD_PROGRESS_HPP
#define DISTSAMPLER_COMPAT_SHARD_PROGRESS_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/shard_progress.hpp> is deprecated: include <distsampler/shards/progress.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/shards/progress.hpp>
#endif  // DISTSAMPLER_COMPAT_SHARD_PROGRESS_HPP

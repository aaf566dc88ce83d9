// distsampler forwarding header: the 0.1 path <distsampler/remaining_segment.hpp>, now <distsampler/shards/remaining_segment.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/shards/remaining_segment.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_REMAINING_SEGMENT_HPP
#define DISTSAMPLER_COMPAT_REMAINING_SEGMENT_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/remaining_segment.hpp> is deprecated: include <distsampler/shards/remaining_segment.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/shards/remaining_segment.hpp>
#endif  // DISTSAMPLER_COMPAT_REMAINING_SEGMENT_HPP

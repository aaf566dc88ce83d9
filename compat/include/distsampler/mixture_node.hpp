// distsampler forwarding header: the 0.1 path <distsampler/mixture_node.hpp>, now <distsampler/mixture/node.hpp>.
// SPDX-License-Identifier: MIT
// Kept for the 0.2 releases only and removed in 0.3: include <distsampler/mixture/node.hpp> instead.
// Define DISTSAMPLER_WARN_OLD_INCLUDES to be warned at every use of an old path.
#ifndef DISTSAMPLER_COMPAT_MIXTURE_NODE_HPP
#define DISTSAMPLER_COMPAT_MIXTURE_NODE_HPP
#if defined(DISTSAMPLER_WARN_OLD_INCLUDES)
#warning "<distsampler/mixture_node.hpp> is deprecated: include <distsampler/mixture/node.hpp> (removed in distsampler 0.3)"
#endif
#include <distsampler/mixture/node.hpp>
#endif  // DISTSAMPLER_COMPAT_MIXTURE_NODE_HPP

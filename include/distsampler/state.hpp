// distsampler SamplerState: the tiny, versioned, checksummed position of a run within its epochs (save, load, check).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STATE_HPP
#define DISTSAMPLER_STATE_HPP

#include "state/values.hpp"  // StateKey, the ranges and SamplerState
#include "state/check.hpp"   // canonical form checks and validation
#include "state/io.hpp"      // the text and byte forms

#endif  // DISTSAMPLER_STATE_HPP

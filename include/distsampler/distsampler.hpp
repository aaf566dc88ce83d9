// distsampler umbrella header: the whole public core (standard library only), every family's sampler, options and
// guard points (each family's guard.hpp includes its sampler), none of their detail/ internals; adapters such as
// fmt.hpp are included separately. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DISTSAMPLER_HPP
#define DISTSAMPLER_DISTSAMPLER_HPP

#include "batch_layout.hpp"
#include "batch/guard.hpp"  // and batch_sampler.hpp
#include "blend/guard.hpp"  // and blend_sampler.hpp
#include "distributed/guard.hpp"  // and distributed_sampler.hpp
#include "epoch_order.hpp"
#include "error.hpp"
#include "feistel.hpp"
#include "mesh.hpp"
#include "mesh_check.hpp"
#include "shards/loader_round_robin.hpp"
#include "mixture/guard.hpp"  // and mixture_sampler.hpp
#include "mixture/options.hpp"
#include "options.hpp"
#include "partition.hpp"
#include "permutation.hpp"
#include "overlap_check.hpp"
#include "packing/options.hpp"
#include "packing/guard.hpp"  // and packed_sequence_sampler.hpp
#include "state.hpp"
#include "shards/options.hpp"
#include "shards/guard.hpp"  // and streaming_shard_sampler.hpp
#include "streams/options.hpp"
#include "streams/guard.hpp"  // and stream_sampler.hpp
#include "tokens/options.hpp"
#include "tokens/guard.hpp"  // and token_batch_sampler.hpp
#include "verify.hpp"
#include "version.hpp"
#include "weighted/options.hpp"
#include "weighted/guard.hpp"  // and weighted_sampler.hpp
#include "worker_schedule.hpp"
#include "world.hpp"

#endif  // DISTSAMPLER_DISTSAMPLER_HPP

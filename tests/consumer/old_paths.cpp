// The 0.1 release's public include paths still compile (forwarding headers) and name the same entities.
// SPDX-License-Identifier: MIT
#include <distsampler/block_deal.hpp>
#include <distsampler/loader_round_robin.hpp>
#include <distsampler/mixture.hpp>
#include <distsampler/mixture_node.hpp>
#include <distsampler/mixture_schedule.hpp>
#include <distsampler/remaining_segment.hpp>
#include <distsampler/shard_catalog.hpp>
#include <distsampler/shard_epoch_order.hpp>
#include <distsampler/shard_lane_rounds.hpp>
#include <distsampler/shard_options.hpp>
#include <distsampler/shard_progress.hpp>
#include <distsampler/shard_schedule.hpp>
#include <distsampler/shard_stream.hpp>
#include <distsampler/shard_walk.hpp>
#include <distsampler/streaming_shard_sampler.hpp>
#include <distsampler/token_batches.hpp>
#include <distsampler/token_plan.hpp>
// The new paths of the same headers, in the same translation unit: include guards make them one.
#include <distsampler/mixture/mixture_sampler.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>
#include <distsampler/tokens/token_batch_sampler.hpp>

#include <cstdint>
#include <string>
#include <vector>

// Builds a shard and a token sampler through the old paths: every sample of each, once on one rank, gives
// "old paths: shard 15 token 8".
std::string consumer_old_paths() {
  namespace ds = distsampler;
  const std::vector<std::uint64_t> shards = {5, 7, 3};
  const ds::StreamingShardSampler shard(shards, ds::World(0, 1), ds::ShardSamplerOptions().with_seed(1));
  const std::vector<std::uint32_t> lengths = {3, 1, 4, 1, 5, 9, 2, 6};
  const ds::TokenBatchSampler tokens(lengths.size(), ds::LengthView{lengths.data(), lengths.size()}, ds::World(0, 1),
                                     ds::TokenBatchOptions().with_max_tokens(10));
  std::uint64_t token_samples = 0;
  for (std::uint64_t step = 0; step < tokens.num_steps(); ++step) {
    token_samples += tokens.micro_batch(step, 0).indices.size();
  }
  return "old paths: shard " + std::to_string(shard.size()) + " token " + std::to_string(token_samples);
}

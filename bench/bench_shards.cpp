// Benchmarks of StreamingShardSampler: planning an epoch of 10^5 shards / 10^10 samples, and the per-sample stream cost.
// SPDX-License-Identifier: MIT
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include <distsampler/streaming_shard_sampler.hpp>

namespace {

// 10^5 shards of 10^5 samples = 10^10 samples.
std::vector<std::uint64_t> big_layout() { return std::vector<std::uint64_t>(100000, 100000); }

void BM_ShardPlanEpoch(benchmark::State& state) {
  distsampler::StreamingShardSampler s(big_layout(), distsampler::World(3, 64), 8, {});
  std::uint64_t epoch = 0;
  for (auto _ : state) {
    s.set_epoch(++epoch);  // shuffles 10^5 shards and rebuilds the prefix sums
    benchmark::DoNotOptimize(s.worker_size(0));
  }
}
BENCHMARK(BM_ShardPlanEpoch)->Unit(benchmark::kMillisecond);

void BM_ShardConstruct(benchmark::State& state) {
  const auto sizes = big_layout();
  for (auto _ : state) {
    distsampler::StreamingShardSampler s(sizes, distsampler::World(3, 64), 8, {});
    benchmark::DoNotOptimize(s.dataset_size());
  }
}
BENCHMARK(BM_ShardConstruct)->Unit(benchmark::kMillisecond);

void BM_ShardStreamPerSample(benchmark::State& state) {
  distsampler::StreamingShardSampler s(big_layout(), distsampler::World(3, 64), 8, {});
  s.set_epoch(1);
  std::uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.sample(5, i));
    if (++i == s.worker_size(5)) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ShardStreamPerSample);

void BM_ShardReadPlanPerBlock(benchmark::State& state) {
  distsampler::StreamingShardSampler s(big_layout(), distsampler::World(3, 64), 8, {});
  s.set_epoch(1);
  std::uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.read_plan(5, i, s.block_size()));
    i += s.block_size();
    if (i >= s.worker_size(5)) i = 0;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(s.block_size()));
}
BENCHMARK(BM_ShardReadPlanPerBlock);

}  // namespace

BENCHMARK_MAIN();

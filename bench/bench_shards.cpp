// Benchmarks of StreamingShardSampler: planning an epoch of 10^5 shards / 10^10 samples, and the per-sample stream
// cost. SPDX-License-Identifier: MIT
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include <distsampler/shards/detail/remaining_segment.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>

namespace {

// 10^5 shards of 10^5 samples = 10^10 samples.
std::vector<std::uint64_t> big_layout() { return std::vector<std::uint64_t>(100000, 100000); }

void BM_ShardPlanEpoch(benchmark::State& state) {
  distsampler::StreamingShardSampler s(big_layout(), distsampler::World(3, 64),
                                       distsampler::ShardSamplerOptions().with_num_workers(8));
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
    distsampler::StreamingShardSampler s(sizes, distsampler::World(3, 64),
                                         distsampler::ShardSamplerOptions().with_num_workers(8));
    benchmark::DoNotOptimize(s.dataset_size());
  }
}
BENCHMARK(BM_ShardConstruct)->Unit(benchmark::kMillisecond);

// range(0): shuffle_window; range(1): 1 = resumed from a state saved mid-block (a
// segment with one hole per consumer), 0 = a fresh epoch.
distsampler::StreamingShardSampler stream_sampler(const benchmark::State& state) {
  distsampler::ShardSamplerOptions o;
  o.shuffle_window = static_cast<std::uint64_t>(state.range(0));
  distsampler::StreamingShardSampler s(big_layout(), distsampler::World(3, 64), o.with_num_workers(8));
  s.set_epoch(1);
  if (state.range(1) != 0) s.resume(s.state(1000003));
  return s;
}

// fill(worker, i, 1024, out) again and again over slots [0, end), starting over at end.
void time_fill(benchmark::State& state, const distsampler::StreamingShardSampler& s, std::uint64_t worker,
               std::uint64_t end) {
  std::vector<distsampler::ShardSample> out(1024);
  std::uint64_t i = 0;
  for (auto _ : state) {
    s.fill(worker, i, out.size(), out.data());
    benchmark::DoNotOptimize(out.data());
    i += out.size();
    if (i + out.size() > end) i = 0;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(out.size()));
}

// The cluster of the state rows: 64 ranks x 8 workers, 8 ranks per node, epoch 1.
distsampler::StreamingShardSampler cluster_job() {
  distsampler::StreamingShardSampler s(big_layout(), distsampler::World(3, 64, 3, 8),
                                       distsampler::ShardSamplerOptions().with_num_workers(8));
  s.set_epoch(1);
  return s;
}

// The job that resumes the cluster's states: 32 ranks x 4 workers, 4 ranks per node.
distsampler::StreamingShardSampler resuming_job() {
  return distsampler::StreamingShardSampler(big_layout(), distsampler::World(1, 32, 1, 4),
                                            distsampler::ShardSamplerOptions().with_num_workers(4));
}

void BM_ShardStreamPerSample(benchmark::State& state) {
  const auto s = stream_sampler(state);
  std::uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.sample(5, i));
    if (++i == s.worker_size(5)) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ShardStreamPerSample)
    ->ArgNames({"window", "resumed"})
    ->Args({1, 0})
    ->Args({16, 0})
    ->Args({64, 0})
    ->Args({16, 1});

void BM_ShardFillPerSample(benchmark::State& state) {
  // The batched path a loader takes: a batch of 1024 samples at a time.
  const auto s = stream_sampler(state);
  time_fill(state, s, 5, s.worker_size(5));
}
BENCHMARK(BM_ShardFillPerSample)
    ->ArgNames({"window", "resumed"})
    ->Args({1, 0})
    ->Args({16, 0})
    ->Args({64, 0})
    ->Args({16, 1});

void BM_ShardFillRunsOf8(benchmark::State& state) {
  // The sequential-reader options (8 open shards, runs of 8, window 16) for comparison.
  distsampler::StreamingShardSampler s(big_layout(), distsampler::World(3, 64),
                                       distsampler::ShardSamplerOptions()
                                           .with_canonical_streams(64)
                                           .with_max_open_shards(8)
                                           .with_run_length(8)
                                           .with_num_workers(8));
  s.set_epoch(1);
  time_fill(state, s, 5, s.worker_size(5));
}
BENCHMARK(BM_ShardFillRunsOf8);

void BM_ShardFillSmallJob(benchmark::State& state) {
  // 8 ranks x 2 workers: a consumer reads every second row of its lanes, 8 rows per window.
  distsampler::StreamingShardSampler s(big_layout(), distsampler::World(3, 8),
                                       distsampler::ShardSamplerOptions().with_num_workers(2));
  s.set_epoch(1);
  time_fill(state, s, 1, s.worker_size(1));
}
BENCHMARK(BM_ShardFillSmallJob);

void BM_ShardIteratePerSample(benchmark::State& state) {
  // for (auto x : s.stream(w)): the chunked iterator, restarted at the end of the stream.
  const auto s = stream_sampler(state);
  const auto stream = s.stream(5);
  auto it = stream.begin();
  const auto end = stream.end();
  for (auto _ : state) {
    benchmark::DoNotOptimize(it->index);
    if (++it == end) it = stream.begin();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ShardIteratePerSample)->ArgNames({"window", "resumed"})->Args({1, 0})->Args({16, 0})->Args({16, 1});

void BM_ShardReadPlanPerBlock(benchmark::State& state) {
  const auto s = stream_sampler(state);
  std::uint64_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.read_plan(5, i, s.block_size()));
    i += s.block_size();
    if (i >= s.worker_size(5)) i = 0;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(s.block_size()));
}
BENCHMARK(BM_ShardReadPlanPerBlock)->ArgNames({"window", "resumed"})->Args({1, 0})->Args({16, 0})->Args({16, 1});

void BM_ShardStateMidBlock(benchmark::State& state) {
  // 512 consumers stopped 3 samples into a block: a state with 512 ranges.
  distsampler::StreamingShardSampler s(big_layout(), distsampler::World(3, 64),
                                       distsampler::ShardSamplerOptions().with_num_workers(8));
  s.set_epoch(1);
  for (auto _ : state) benchmark::DoNotOptimize(s.state(1000003));
}
BENCHMARK(BM_ShardStateMidBlock)->Unit(benchmark::kMicrosecond);

void BM_ShardPrefetchWindow(benchmark::State& state) {
  // prefetch_plan for windows of 4096 slots, gaps of up to 16 records joined.
  const auto s = stream_sampler(state);
  std::uint64_t i = 0, ranges = 0, windows = 0;
  for (auto _ : state) {
    const auto plan = s.prefetch_plan(5, i, 4096, 16);
    ranges += plan.size();
    ++windows;
    i += 4096;
    if (i >= s.worker_size(5)) i = 0;
  }
  state.counters["ranges"] = static_cast<double>(ranges) / static_cast<double>(windows);
  state.SetItemsProcessed(state.iterations() * 4096);
}
BENCHMARK(BM_ShardPrefetchWindow)->ArgNames({"window", "resumed"})->Args({16, 0})->Args({16, 1});

void BM_ShardNodePrefetchWindow(benchmark::State& state) {
  // node_prefetch_plan: the 64 consumers of one node (8 ranks x 8 workers), 1024 slots each.
  const auto s = cluster_job();
  std::uint64_t i = 0, ranges = 0, windows = 0;
  for (auto _ : state) {
    const auto plan = s.node_prefetch_plan(i, 1024);
    ranges += plan.size();
    ++windows;
    i += 1024;
  }
  state.counters["ranges"] = static_cast<double>(ranges) / static_cast<double>(windows);
  state.SetItemsProcessed(state.iterations() * 64 * 1024);
}
BENCHMARK(BM_ShardNodePrefetchWindow)->Unit(benchmark::kMillisecond);

// 512 consumers (64 ranks x 8 workers, 8 per node) each stopped at its own count, up to
// `spread` apart.
distsampler::ConsumerProgress any_stop(const distsampler::StreamingShardSampler& s, std::uint64_t spread = 1000) {
  std::vector<std::uint64_t> done;
  std::uint64_t x = 12345;
  for (std::uint64_t c = 0; c < s.consumers(); ++c) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    done.push_back(5000000 + (x >> 40) % spread);
  }
  return distsampler::ConsumerProgress(done);
}

// The size of a state: its byte form, its ahead ranges and its strided entries.
void count_state(benchmark::State& state, const distsampler::SamplerState& st) {
  state.counters["bytes"] = static_cast<double>(st.to_bytes().size());
  state.counters["ranges"] = static_cast<double>(st.ahead.size());
  state.counters["strided"] = static_cast<double>(st.strided.size());
}

void BM_ShardStateAnyStop(benchmark::State& state) {
  // range(0): how far apart the consumers stop at most (samples).
  const auto s = cluster_job();
  const auto progress = any_stop(s, static_cast<std::uint64_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(s.state(progress));
  count_state(state, s.state(progress));
}
BENCHMARK(BM_ShardStateAnyStop)->ArgName("spread")->Arg(1000)->Arg(1000000)->Unit(benchmark::kMicrosecond);

void BM_ShardStateAfterResume(benchmark::State& state) {
  // The any-stop state (consumers up to range(0) apart) resumed on 32 ranks x 4 workers (4
  // per node), whose 128 consumers stop again up to 1000 samples apart, some still inside
  // their fronts.
  const auto s = cluster_job();
  auto t = resuming_job();
  t.resume(s.state(any_stop(s, static_cast<std::uint64_t>(state.range(0)))));
  std::vector<std::uint64_t> done;
  std::uint64_t x = 777;
  for (std::uint64_t c = 0; c < t.consumers(); ++c) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    done.push_back((x >> 40) % 1000 + (c % 2 == 0 ? 0 : 200000));
  }
  const distsampler::ConsumerProgress progress(done);
  for (auto _ : state) benchmark::DoNotOptimize(t.state(progress));
  count_state(state, t.state(progress));
}
BENCHMARK(BM_ShardStateAfterResume)->ArgName("spread")->Arg(1000)->Arg(1000000)->Unit(benchmark::kMicrosecond);

void BM_ShardResumeAnyStop(benchmark::State& state) {
  // Resume that state on another world (32 ranks x 4 workers, 4 per node); range(0): how
  // far apart the consumers stopped at most; range(1): 1 = the holes forced into spans.
  const auto s = cluster_job();
  const auto st = s.state(any_stop(s, static_cast<std::uint64_t>(state.range(0))));
  auto t = resuming_job();
  const auto limit =
      state.range(1) != 0 ? distsampler::detail::HoleLimit::spans() : distsampler::detail::HoleLimit::automatic();
  for (auto _ : state) {
    t.resume(st, limit);
    benchmark::DoNotOptimize(t.worker_size(0));
  }
  const auto segment = distsampler::RemainingSegment::after(st, t.block_size(), limit);
  state.counters["stored"] = static_cast<double>(segment.stored_entries());
  state.counters["compact"] = segment.compact() ? 1 : 0;
}
BENCHMARK(BM_ShardResumeAnyStop)
    ->ArgNames({"spread", "spans"})
    ->Args({1000, 0})
    ->Args({1000, 1})
    ->Args({1000000, 0})
    ->Args({1000000, 1})
    ->Unit(benchmark::kMillisecond);

void BM_ShardFillFront(benchmark::State& state) {
  // fill of 1024 slots at a time through consumer 0's front (the holes) after resuming the
  // state of consumers up to range(0) apart; range(1): 1 = the holes forced into spans.
  const auto s = cluster_job();
  auto t = resuming_job();
  t.resume(s.state(any_stop(s, static_cast<std::uint64_t>(state.range(0)))),
           state.range(1) != 0 ? distsampler::detail::HoleLimit::spans() : distsampler::detail::HoleLimit::automatic());
  const std::uint64_t front = distsampler::RemainingSegment::after(t.state(0), t.block_size()).lead() / t.consumers();
  time_fill(state, t, 0, front);
  state.counters["front"] = static_cast<double>(front);
}
BENCHMARK(BM_ShardFillFront)
    ->ArgNames({"spread", "spans"})
    ->Args({1000, 0})
    ->Args({1000, 1})
    ->Args({1000000, 0})
    ->Args({1000000, 1});

// range(0): 0 = one consumer's shard_schedule, 1 = the node's 64 consumers (node_shard_schedule);
// range(1): 1 = resumed from a state of 512 consumers stopped up to 1000 samples apart;
// range(2): 1 = 8 ranks per node (8 node groups), 0 = locality unknown.
void BM_ShardSchedule(benchmark::State& state) {
  const std::uint64_t per_node = state.range(2) != 0 ? 8 : 1;
  distsampler::StreamingShardSampler s(big_layout(), distsampler::World(3, 64, 3 % per_node, per_node),
                                       distsampler::ShardSamplerOptions().with_num_workers(8));
  s.set_epoch(1);
  if (state.range(1) != 0) s.resume(s.state(any_stop(s)));
  std::size_t entries = 0;
  for (auto _ : state) {
    const auto plan = state.range(0) != 0 ? s.node_shard_schedule() : s.shard_schedule(5);
    entries = plan.size();
    benchmark::DoNotOptimize(plan.data());
  }
  state.counters["entries"] = static_cast<double>(entries);
}
BENCHMARK(BM_ShardSchedule)
    ->ArgNames({"node", "resumed", "groups"})
    ->Args({0, 0, 0})
    ->Args({0, 1, 0})
    ->Args({0, 0, 1})
    ->Args({0, 1, 1})
    ->Args({1, 0, 1})
    ->Args({1, 1, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

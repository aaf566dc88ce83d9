// Benchmarks of the permutation engines: FeistelPermutation per index (sequential, random, fill, one rank's strided
// epoch) and TorchRandperm construction. SPDX-License-Identifier: MIT
//
//   bench_permutation                       N = 10^6 and 10^7 for TorchRandperm
//   bench_permutation --large               also N = 10^8 (needs about 400 MB)
//   bench_permutation --benchmark_filter=RankScan
//
// "per_index" is the inverse of the items rate: CPU time per produced index.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <distsampler/detail/mix.hpp>
#include <distsampler/feistel.hpp>
#include <distsampler/permutation.hpp>

namespace {

using distsampler::FeistelPermutation;
using distsampler::TorchRandperm;

constexpr std::size_t batch = 4096;

// items_per_second, and its inverse "per_index" (seconds, printed with an SI prefix: 5.1n = 5.1 ns).
void set_rate(benchmark::State& state, std::uint64_t items) {
  state.SetItemsProcessed(static_cast<std::int64_t>(items));
  state.counters["per_index"] =
      benchmark::Counter(static_cast<double>(items), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// p(i) for consecutive positions, one call per index.
void FeistelSequential(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const FeistelPermutation p(n, 42, 1);
  std::uint64_t position = 0, items = 0;
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (std::size_t j = 0; j < batch; ++j) {
      sum += p(position);
      position = position + 1 == n ? 0 : position + 1;
    }
    benchmark::DoNotOptimize(sum);
    items += batch;
  }
  set_rate(state, items);
}

// p(i) for positions drawn at random (precomputed, so only the permutation is timed).
void FeistelRandom(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const FeistelPermutation p(n, 42, 1);
  std::vector<std::uint64_t> positions(batch);
  std::uint64_t x = 7;
  for (auto& position : positions) {
    x = distsampler::detail::splitmix64(x);
    position = x % n;
  }
  std::uint64_t items = 0;
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (const std::uint64_t position : positions) sum += p(position);
    benchmark::DoNotOptimize(sum);
    items += batch;
  }
  set_rate(state, items);
}

// inverse() for consecutive indices.
void FeistelInverse(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const FeistelPermutation p(n, 42, 1);
  std::uint64_t index = 0, items = 0;
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (std::size_t j = 0; j < batch; ++j) {
      sum += p.inverse(index);
      index = index + 1 == n ? 0 : index + 1;
    }
    benchmark::DoNotOptimize(sum);
    items += batch;
  }
  set_rate(state, items);
}

// fill(): consecutive positions, `batch` per call.
void FeistelFill(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  const FeistelPermutation p(n, 42, 1);
  std::vector<std::uint64_t> out(batch);
  std::uint64_t first = 0, items = 0;
  for (auto _ : state) {
    p.fill(first, batch, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    first = first + 2 * batch > n ? 0 : first + batch;
    items += batch;
  }
  set_rate(state, items);
}

// One rank's whole epoch of N = 10^9 with world_size 64: positions rank, rank + 64, ...
// (15,625,000 indices), by operator() or by strided fill(). One iteration = one epoch.
constexpr std::uint64_t scan_n = 1'000'000'000, scan_world = 64, scan_rank = 5;

void RankScanOperator(benchmark::State& state) {
  const FeistelPermutation p(scan_n, 42, 1);
  std::uint64_t items = 0;
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (std::uint64_t position = scan_rank; position < scan_n; position += scan_world) sum += p(position);
    benchmark::DoNotOptimize(sum);
    items += (scan_n - scan_rank + scan_world - 1) / scan_world;
  }
  set_rate(state, items);
}

void RankScanFill(benchmark::State& state) {
  const FeistelPermutation p(scan_n, 42, 1);
  const std::uint64_t count = (scan_n - scan_rank + scan_world - 1) / scan_world;
  std::vector<std::uint64_t> out(batch);
  std::uint64_t items = 0;
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (std::uint64_t done = 0; done < count; done += batch) {
      const std::uint64_t m = count - done < batch ? count - done : batch;
      p.fill(scan_rank + done * scan_world, m, out.data(), scan_world);
      sum += out[0];
    }
    benchmark::DoNotOptimize(sum);
    items += count;
  }
  set_rate(state, items);
}

// Constructing torch's exact order: O(N) time and memory before the first index.
void TorchRandpermConstruct(benchmark::State& state) {
  const auto n = static_cast<std::uint64_t>(state.range(0));
  std::uint64_t items = 0;
  for (auto _ : state) {
    const TorchRandperm p(n, 42, 1);
    benchmark::DoNotOptimize(p(n / 2));
    items += n;
  }
  set_rate(state, items);
}

// Constructing a FeistelPermutation: the per-epoch setup cost.
void FeistelConstruct(benchmark::State& state) {
  std::uint64_t epoch = 0;
  for (auto _ : state) {
    const FeistelPermutation p(scan_n, 42, epoch++);
    benchmark::DoNotOptimize(p);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool large = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--large") == 0) {
      large = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  const std::vector<std::int64_t> feistel_sizes = {1'000'000, 10'000'000, (std::int64_t{1} << 29) + 1, 1'000'000'000};
  for (const std::int64_t n : feistel_sizes) {
    benchmark::RegisterBenchmark("FeistelSequential", FeistelSequential)->Arg(n);
    benchmark::RegisterBenchmark("FeistelRandom", FeistelRandom)->Arg(n);
    benchmark::RegisterBenchmark("FeistelInverse", FeistelInverse)->Arg(n);
    benchmark::RegisterBenchmark("FeistelFill", FeistelFill)->Arg(n);
  }
  benchmark::RegisterBenchmark("FeistelConstruct", FeistelConstruct);
  benchmark::RegisterBenchmark("RankScanOperator/N=1e9/W=64", RankScanOperator)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("RankScanFill/N=1e9/W=64", RankScanFill)->Unit(benchmark::kMillisecond);
  auto* torch = benchmark::RegisterBenchmark("TorchRandpermConstruct", TorchRandpermConstruct);
  torch->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond);
  if (large) torch->Arg(100'000'000);

  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

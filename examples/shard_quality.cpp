// Measures shuffle quality on sorted one-class shards: mean total-variation distance of batch class histograms
// (docs/SHARDS.md). SPDX-License-Identifier: MIT
//
// Dataset: 1000 shards of 1000 samples; shard s holds only class s / 100 (10 classes, sorted).
// Each of 8 ranks (1 worker) reads micro-batches of 64; the global batch is the i-th
// micro-batch of every rank (512). Prints two Markdown tables: batch class mixing, and
// within-shard order against the shards a rank touches (the shuffle window's trade-off).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <vector>

#include <distsampler/shards/streaming_shard_sampler.hpp>

namespace {

constexpr std::uint64_t shards = 1000, shard_size = 1000, classes = 10, ranks = 8, batch = 64;
constexpr std::uint64_t n = shards * shard_size;

std::uint64_t class_of(std::uint64_t index) { return (index / shard_size) * classes / shards; }

// Mean TV distance to the uniform class mix over consecutive micro-batches (per rank) and
// global batches; streams[r] = rank r's indices in read order (equal lengths).
void report(const char* name, const std::vector<std::vector<std::uint64_t>>& streams) {
  const std::uint64_t steps = streams[0].size() / batch;
  double micro = 0, global = 0;
  for (std::uint64_t step = 0; step < steps; ++step) {
    std::vector<double> all(classes, 0);
    for (const auto& s : streams) {
      std::vector<double> h(classes, 0);
      for (std::uint64_t i = step * batch; i < (step + 1) * batch; ++i) h[class_of(s[i])] += 1;
      double tv = 0;
      for (std::uint64_t c = 0; c < classes; ++c) {
        tv += std::fabs(h[c] / batch - 1.0 / classes);
        all[c] += h[c];
      }
      micro += tv / 2;
    }
    double tv = 0;
    for (std::uint64_t c = 0; c < classes; ++c) tv += std::fabs(all[c] / (batch * ranks) - 1.0 / classes);
    global += tv / 2;
  }
  std::printf("| %-44s | %.3f | %.3f |\n", name, micro / static_cast<double>(steps * ranks),
              global / static_cast<double>(steps));
}

std::vector<std::uint64_t> fisher_yates(std::uint64_t count, std::uint64_t seed) {
  std::vector<std::uint64_t> p(count);
  for (std::uint64_t i = 0; i < count; ++i) p[i] = i;
  distsampler::detail::SplitMix64 rng(seed);
  for (std::uint64_t i = count - 1; i > 0; --i) std::swap(p[i], p[distsampler::detail::bounded_draw(rng, i + 1)]);
  return p;
}

// Fraction of records whose next record read from the same shard is its file successor
// (offset + 1, cyclically); `order` lists global indices in read order.
double in_order_successors(const std::vector<std::uint64_t>& order) {
  std::vector<std::uint64_t> last(shards, UINT64_MAX);
  std::uint64_t pairs = 0, in_order = 0;
  for (const std::uint64_t index : order) {
    const std::uint64_t shard = index / shard_size, offset = index % shard_size;
    if (last[shard] != UINT64_MAX) {
      ++pairs;
      in_order += offset == (last[shard] + 1) % shard_size ? 1u : 0u;
    }
    last[shard] = offset;
  }
  return static_cast<double>(in_order) / static_cast<double>(pairs);
}

// Mean number of distinct shards in 1024 consecutive samples of a rank's stream.
double shards_per_window(const std::vector<std::uint64_t>& stream) {
  const std::uint64_t window = 1024;
  double total = 0;
  std::uint64_t windows = 0;
  for (std::uint64_t begin = 0; begin + window <= stream.size(); begin += window, ++windows) {
    std::set<std::uint64_t> seen;
    for (std::uint64_t i = begin; i < begin + window; ++i) seen.insert(stream[i] / shard_size);
    total += static_cast<double>(seen.size());
  }
  return total / static_cast<double>(windows);
}

void report_order(const char* name, const std::vector<std::uint64_t>& global_order,
                  const std::vector<std::uint64_t>& rank0_stream) {
  std::printf("| %-44s | %.3f | %.1f |\n", name, in_order_successors(global_order), shards_per_window(rank0_stream));
}

void within_shard_table() {
  std::printf("\n| order | in-order successors | shards per 1024 samples of a rank |\n|---|---|---|\n");
  {
    const auto p = fisher_yates(n, 1);
    std::vector<std::uint64_t> rank0;
    for (std::uint64_t i = 0; i < n; i += ranks) rank0.push_back(p[i]);
    report_order("full global shuffle (Fisher-Yates)", p, rank0);
  }
  const std::vector<std::uint64_t> sizes(shards, shard_size);
  for (const std::uint64_t run : {std::uint64_t{8}, std::uint64_t{1}}) {
    for (const std::uint64_t window :
         {std::uint64_t{1}, std::uint64_t{4}, std::uint64_t{16}, std::uint64_t{64}, std::uint64_t{256}}) {
      distsampler::ShardSamplerOptions o;
      o.seed = 3;
      o.canonical_streams = 64;
      o.run_length = run;
      o.max_open_shards = run == 8 ? 8 : 64;
      o.shuffle_window = window;
      distsampler::StreamingShardSampler s(sizes, distsampler::World(0, ranks), o);
      s.set_epoch(1);
      std::vector<std::uint64_t> order, rank0;
      for (std::uint64_t p = 0; p < n; ++p) order.push_back(s.at_global(p).index);
      for (const auto x : s.stream(0)) rank0.push_back(x.index);
      char name[96];
      std::snprintf(name, sizeof name, "open=%llu run=%llu window=%llu (%llu samples per lane)",
                    static_cast<unsigned long long>(o.max_open_shards), static_cast<unsigned long long>(run),
                    static_cast<unsigned long long>(window), static_cast<unsigned long long>(window * run));
      report_order(name, order, rank0);
    }
  }
  distsampler::StreamingShardSampler s(sizes, distsampler::World(0, ranks),
                                       distsampler::ShardSamplerOptions().with_seed(3));
  s.set_epoch(1);
  std::vector<std::uint64_t> order, rank0;
  for (std::uint64_t p = 0; p < n; ++p) order.push_back(s.at_global(p).index);
  for (const auto x : s.stream(0)) rank0.push_back(x.index);
  report_order("defaults: streams=512 open=64 run=1 window=16", order, rank0);
}

}  // namespace

int main() {
  std::printf("| order | micro-batch TV (64) | global-batch TV (512) |\n|---|---|---|\n");
  {
    const auto p = fisher_yates(n, 1);
    std::vector<std::vector<std::uint64_t>> streams(ranks);
    for (std::uint64_t i = 0; i < n; ++i) streams[i % ranks].push_back(p[i]);
    report("full global shuffle (Fisher-Yates)", streams);
  }
  {
    // WebDataset-style: shuffle the shard order, give each rank a contiguous share of shards.
    const auto order = fisher_yates(shards, 2);
    std::vector<std::vector<std::uint64_t>> streams(ranks);
    for (std::uint64_t j = 0; j < shards; ++j) {
      for (std::uint64_t i = 0; i < shard_size; ++i) streams[j * ranks / shards].push_back(order[j] * shard_size + i);
    }
    report("shard-order shuffle, contiguous shards per rank", streams);
  }
  const std::vector<std::uint64_t> sizes(shards, shard_size);
  for (const std::uint64_t run : {std::uint64_t{64}, std::uint64_t{8}, std::uint64_t{1}}) {
    for (const std::uint64_t open : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{4}, std::uint64_t{8},
                                     std::uint64_t{16}, std::uint64_t{64}}) {
      if (open * run > 512 || (run == 1 && open < 8)) continue;
      distsampler::ShardSamplerOptions o;
      o.seed = 3;
      o.canonical_streams = 64;
      o.max_open_shards = open;
      o.run_length = run;
      std::vector<std::vector<std::uint64_t>> streams;
      for (std::uint64_t r = 0; r < ranks; ++r) {
        distsampler::StreamingShardSampler s(sizes, distsampler::World(r, ranks), o);
        s.set_epoch(1);
        std::vector<std::uint64_t> v;
        for (const auto x : s.stream(0)) v.push_back(x.index);
        streams.push_back(v);
      }
      char name[96];
      std::snprintf(name, sizeof name, "StreamingShardSampler open=%llu run=%llu (block %llu)",
                    static_cast<unsigned long long>(open), static_cast<unsigned long long>(run),
                    static_cast<unsigned long long>(open * run));
      report(name, streams);
    }
  }
  {
    std::vector<std::vector<std::uint64_t>> streams;
    for (std::uint64_t r = 0; r < ranks; ++r) {
      distsampler::StreamingShardSampler s(sizes, distsampler::World(r, ranks),
                                           distsampler::ShardSamplerOptions().with_seed(3));
      s.set_epoch(1);
      std::vector<std::uint64_t> v;
      for (const auto x : s.stream(0)) v.push_back(x.index);
      streams.push_back(v);
    }
    report("defaults: streams=512 open=64 run=1 (block 64)", streams);
  }
  within_shard_table();
  return 0;
}

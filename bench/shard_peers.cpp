// Side by side: StreamingShardSampler and a transcription of MosaicML Streaming's ordering, on the sorted worst case
// (docs/SHARDS.md). SPDX-License-Identifier: MIT
//
// Dataset: 1000 shards of 1000 samples, shard s holds class s / 100 only. Mixing, locality
// and state size for 1 node x 8 ranks x 2 workers, micro-batches of 64 from one worker
// stream (a rank's j-th from worker j mod 2), global batch = the j-th micro-batch of every
// rank; shard reads per epoch for 4 nodes x 8 ranks x 1 worker. Prints one Markdown table.
//
// The MosaicML part follows the published algorithms of streaming/base/shuffle (py1s, py1e)
// and streaming/base/partition/orig.py, written here from their description: shards are
// shuffled once per run and cut into canonical nodes of equal sample counts; each epoch,
// every canonical node shuffles the order of its shard pieces; py1s then shuffles the
// samples within each piece, py1e instead moves every sample of a piece by a uniform shift
// of at most (b - piece) / 2 positions (b drawn in [0.75, 1.25) x the shuffle block size)
// within its canonical node and sorts by the shifted positions. The partition interleaves
// the canonical nodes sample by sample, deals that sequence to physical nodes in turn, a
// node's share to its ranks in turn, and a rank's share to its workers in batches. Our own
// generator (SplitMix64) replaces numpy's, so orders differ from theirs sample by sample but
// not in distribution; padding for uneven shapes is left out (the shapes here divide).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <distsampler/detail/bounded.hpp>
#include <distsampler/detail/mix.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>

namespace {

namespace ds = distsampler;

constexpr std::uint64_t shards = 1000, shard_size = 1000, n = shards * shard_size, classes = 10;
constexpr std::uint64_t ranks = 8, workers = 2, micro = 64;

std::uint64_t shard_of(std::uint64_t index) { return index / shard_size; }
std::uint64_t class_of(std::uint64_t index) { return shard_of(index) * classes / shards; }

// streams[rank][worker]: global indices in read order.
using Streams = std::vector<std::vector<std::vector<std::uint64_t>>>;

void fisher_yates(std::vector<std::uint64_t>& v, ds::detail::SplitMix64& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[ds::detail::bounded_draw(rng, i)]);
}

double uniform01(ds::detail::SplitMix64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// ---- MosaicML Streaming's ordering, transcribed ----

struct Piece {
  std::uint64_t begin, end;  // sample ids [begin, end) of one shard
};

// The epoch's global order: py1s or py1e over `canonical` canonical nodes.
std::vector<std::uint64_t> mosaic_order(bool py1e, std::uint64_t canonical, std::uint64_t block, std::uint64_t seed,
                                        std::uint64_t epoch) {
  std::vector<std::uint64_t> shard_order(shards);
  std::iota(shard_order.begin(), shard_order.end(), 0);
  ds::detail::SplitMix64 run_rng(seed);
  fisher_yates(shard_order, run_rng);
  // Cut the shuffled shards at canonical node boundaries (equal sample counts).
  std::vector<std::vector<Piece>> nodes(canonical);
  std::uint64_t at = 0;
  for (const std::uint64_t s : shard_order) {
    std::uint64_t b = s * shard_size;
    const std::uint64_t e = b + shard_size;
    while (b < e) {
      const std::uint64_t node = at * canonical / n;
      const std::uint64_t node_end = (node + 1) * n / canonical;
      const std::uint64_t take = std::min(e - b, node_end - at);
      nodes[node].push_back(Piece{b, b + take});
      b += take;
      at += take;
    }
  }
  ds::detail::SplitMix64 rng(seed + epoch);
  std::vector<std::uint64_t> ids;
  ids.reserve(n);
  for (auto& pieces : nodes) {
    std::vector<std::uint64_t> perm(pieces.size());
    std::iota(perm.begin(), perm.end(), 0);
    fisher_yates(perm, rng);
    std::vector<Piece> shuffled;
    for (const auto p : perm) shuffled.push_back(pieces[p]);
    std::vector<std::uint64_t> samples;
    for (const Piece& p : shuffled) {
      std::vector<std::uint64_t> in(p.end - p.begin);
      std::iota(in.begin(), in.end(), p.begin);
      fisher_yates(in, rng);
      samples.insert(samples.end(), in.begin(), in.end());
    }
    if (!py1e) {
      ids.insert(ids.end(), samples.begin(), samples.end());
      continue;
    }
    const auto total = static_cast<double>(samples.size());
    std::vector<double> position(samples.size());
    double offset = 0;
    std::size_t i = 0;
    for (const Piece& p : shuffled) {
      const auto size = static_cast<double>(p.end - p.begin);
      const auto lo = static_cast<std::uint64_t>(0.75 * static_cast<double>(block));
      const auto hi = static_cast<std::uint64_t>(1.25 * static_cast<double>(block));
      const auto b = static_cast<double>(lo + ds::detail::bounded_draw(rng, hi - lo));
      const double cutoff = std::max(0.0, (b - size) / 2);
      const double lower = std::max(-cutoff, -offset), upper = std::min(cutoff, total - offset - size);
      for (std::uint64_t k = 0; k < p.end - p.begin; ++k, ++i) {
        position[i] = static_cast<double>(i) + lower + (upper - lower) * uniform01(rng);
      }
      offset += size;
    }
    std::vector<std::uint64_t> by(samples.size());
    std::iota(by.begin(), by.end(), 0);
    std::stable_sort(by.begin(), by.end(), [&](std::uint64_t a, std::uint64_t c) { return position[a] < position[c]; });
    for (const auto k : by) ids.push_back(samples[k]);
  }
  return ids;
}

// The partition over `canonical` canonical nodes of `nodes` physical nodes x `per_node`
// ranks x `per_rank` workers, batches of `batch`: streams[node * per_node + rank][worker].
Streams mosaic_partition(const std::vector<std::uint64_t>& ids, std::uint64_t canonical, std::uint64_t nodes,
                         std::uint64_t per_node, std::uint64_t per_rank, std::uint64_t batch) {
  // Canonical node rows (equal here), interleaved sample by sample.
  const std::uint64_t row = n / canonical;
  std::vector<std::uint64_t> flat;
  flat.reserve(n);
  for (std::uint64_t t = 0; t < row; ++t) {
    for (std::uint64_t c = 0; c < canonical; ++c) flat.push_back(ids[c * row + t]);
  }
  Streams out(nodes * per_node, std::vector<std::vector<std::uint64_t>>(per_rank));
  const std::uint64_t per_node_samples = flat.size() / nodes, per_rank_samples = per_node_samples / per_node;
  for (std::uint64_t node = 0; node < nodes; ++node) {
    for (std::uint64_t r = 0; r < per_node; ++r) {
      std::vector<std::uint64_t> mine;
      for (std::uint64_t t = 0; t < per_rank_samples; ++t) mine.push_back(flat[(t * per_node + r) * nodes + node]);
      for (std::uint64_t j = 0; (j + 1) * batch <= mine.size(); ++j) {
        auto& s = out[node * per_node + r][j % per_rank];
        s.insert(s.end(), mine.begin() + static_cast<std::ptrdiff_t>(j * batch),
                 mine.begin() + static_cast<std::ptrdiff_t>((j + 1) * batch));
      }
    }
  }
  return out;
}

// ---- distsampler ----

Streams sampler_streams(const ds::ShardSamplerOptions& o, std::uint64_t nodes, std::uint64_t per_node,
                        std::uint64_t per_rank) {
  const std::vector<std::uint64_t> sizes(shards, shard_size);
  const std::uint64_t w = nodes * per_node;
  Streams out(w, std::vector<std::vector<std::uint64_t>>(per_rank));
  for (std::uint64_t r = 0; r < w; ++r) {
    const ds::World world = nodes == 1 ? ds::World(r, w) : ds::World(r, w, r % per_node, per_node);
    ds::StreamingShardSampler s(sizes, world, ds::ShardSamplerOptions(o).with_num_workers(per_rank));
    s.set_epoch(1);
    for (std::uint64_t k = 0; k < per_rank; ++k) {
      s.for_each(k, [&](const ds::ShardSample& x) { out[r][k].push_back(x.index); });
    }
  }
  return out;
}

// A full shuffle dealt micro-batch by micro-batch (global batch j = positions [512 j, 512 (j + 1))).
Streams full_shuffle_streams(std::uint64_t nodes, std::uint64_t per_node, std::uint64_t per_rank) {
  std::vector<std::uint64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  ds::detail::SplitMix64 rng(1);
  fisher_yates(p, rng);
  const std::uint64_t w = nodes * per_node;
  Streams out(w, std::vector<std::vector<std::uint64_t>>(per_rank));
  for (std::uint64_t j = 0; (j + 1) * w * micro <= n; ++j) {
    for (std::uint64_t r = 0; r < w; ++r) {
      auto& s = out[r][j % per_rank];
      const auto first = p.begin() + static_cast<std::ptrdiff_t>((j * w + r) * micro);
      s.insert(s.end(), first, first + static_cast<std::ptrdiff_t>(micro));
    }
  }
  return out;
}

// ---- metrics ----

struct Row {
  double micro_tv = 0, global_tv = 0, in_order = 0, per_stream = 0, job = 0, node_reads = 0;
  std::string state;
};

void mixing(const Streams& s, Row& row) {
  std::uint64_t steps = UINT64_MAX;
  for (const auto& rank : s) {
    for (const auto& v : rank) steps = std::min<std::uint64_t>(steps, v.size() / micro * workers);
  }
  double micro_sum = 0, global_sum = 0;
  for (std::uint64_t j = 0; j < steps; ++j) {
    std::vector<double> all(classes, 0);
    for (const auto& rank : s) {
      std::vector<double> h(classes, 0);
      const auto& v = rank[j % workers];
      for (std::uint64_t i = (j / workers) * micro; i < (j / workers + 1) * micro; ++i) h[class_of(v[i])] += 1;
      double tv = 0;
      for (std::uint64_t c = 0; c < classes; ++c) {
        tv += std::fabs(h[c] / micro - 1.0 / classes);
        all[c] += h[c];
      }
      micro_sum += tv / 2;
    }
    double tv = 0;
    for (std::uint64_t c = 0; c < classes; ++c) tv += std::fabs(all[c] / static_cast<double>(micro * ranks) - 0.1);
    global_sum += tv / 2;
  }
  row.micro_tv = micro_sum / static_cast<double>(steps * ranks);
  row.global_tv = global_sum / static_cast<double>(steps);
}

void locality(const Streams& s, Row& row) {
  std::uint64_t pairs = 0, in_order = 0, windows = 0, distinct = 0, moments = 0, job = 0;
  std::vector<std::uint64_t> last(shards), stamp(shards, UINT64_MAX), job_stamp(shards, UINT64_MAX);
  std::uint64_t longest = 0;
  for (const auto& rank : s) {
    for (const auto& v : rank) {
      longest = std::max<std::uint64_t>(longest, v.size());
      std::fill(last.begin(), last.end(), UINT64_MAX);
      for (const auto x : v) {
        const std::uint64_t sh = shard_of(x), off = x % shard_size;
        if (last[sh] != UINT64_MAX) {
          ++pairs;
          in_order += off == (last[sh] + 1) % shard_size ? 1u : 0u;
        }
        last[sh] = off;
      }
      for (std::uint64_t b = 0; b + 1024 <= v.size(); b += 1024, ++windows) {
        for (std::uint64_t i = b; i < b + 1024; ++i) {
          auto& st = stamp[shard_of(v[i])];
          if (st != windows) ++distinct;
          st = windows;
        }
      }
    }
  }
  // The job at a moment: the shards every stream reads in its next 1024 samples.
  for (std::uint64_t b = 0; b + 1024 <= longest; b += 1024, ++moments) {
    for (const auto& rank : s) {
      for (const auto& v : rank) {
        for (std::uint64_t i = b; i < std::min<std::uint64_t>(b + 1024, v.size()); ++i) {
          auto& st = job_stamp[shard_of(v[i])];
          if (st != moments) ++job;
          st = moments;
        }
      }
    }
  }
  row.in_order = static_cast<double>(in_order) / static_cast<double>(pairs);
  row.per_stream = static_cast<double>(distinct) / static_cast<double>(windows);
  row.job = static_cast<double>(job) / static_cast<double>(moments);
}

// Shards each node reads in the epoch, summed over nodes, per shard; streams are rank-major.
double node_reads(const Streams& s, std::uint64_t per_node) {
  std::vector<std::vector<bool>> seen(s.size() / per_node, std::vector<bool>(shards, false));
  for (std::size_t r = 0; r < s.size(); ++r) {
    for (const auto& v : s[r]) {
      for (const auto x : v) seen[r / per_node][shard_of(x)] = true;
    }
  }
  std::uint64_t reads = 0;
  for (const auto& node : seen) reads += static_cast<std::uint64_t>(std::count(node.begin(), node.end(), true));
  return static_cast<double>(reads) / shards;
}

void print(const char* name, const Row& r) {
  std::printf("| %-44s | %.3f | %.3f | %.3f | %.1f | %.0f | %.2f | %s |\n", name, r.micro_tv, r.global_tv, r.in_order,
              r.per_stream, r.job, r.node_reads, r.state.c_str());
}

// Bytes of a state saved with every consumer stopped at its own count (the worst case),
// and with all at one block boundary.
std::string sampler_state_bytes(const ds::ShardSamplerOptions& o) {
  const std::vector<std::uint64_t> sizes(shards, shard_size);
  ds::StreamingShardSampler s(sizes, ds::World(0, ranks), ds::ShardSamplerOptions(o).with_num_workers(workers));
  s.set_epoch(1);
  std::vector<std::uint64_t> done;
  ds::detail::SplitMix64 rng(7);
  for (std::uint64_t c = 0; c < s.consumers(); ++c) done.push_back(20000 + ds::detail::bounded_draw(rng, 1000));
  const auto uneven = s.state(ds::ConsumerProgress(done)).to_bytes().size();
  const auto aligned = s.state(s.block_size() * 100).to_bytes().size();
  return std::to_string(aligned) + " / " + std::to_string(uneven);
}

void sampler_row(const char* name, const ds::ShardSamplerOptions& o) {
  Row row;
  const Streams s = sampler_streams(o, 1, ranks, workers);
  mixing(s, row);
  locality(s, row);
  row.node_reads = node_reads(sampler_streams(o, 4, 8, 1), 8);
  row.state = sampler_state_bytes(o);
  print(name, row);
}

void mosaic_row(const char* name, bool py1e, std::uint64_t canonical, std::uint64_t canonical_4_nodes,
                std::uint64_t block) {
  Row row;
  const Streams s = mosaic_partition(mosaic_order(py1e, canonical, block, 3, 1), canonical, 1, ranks, workers, micro);
  mixing(s, row);
  locality(s, row);
  row.node_reads = node_reads(
      mosaic_partition(mosaic_order(py1e, canonical_4_nodes, block, 3, 1), canonical_4_nodes, 4, 8, 1, micro), 8);
  row.state = "5 integers";
  print(name, row);
}

}  // namespace

int main() {
  std::printf(
      "| order (1 node x 8 ranks x 2 workers; reads: 4 nodes x 8) | micro TV | global TV | in-order successors | "
      "shards per 1024 of a stream | shards at a moment (job) | shard reads per epoch / shards (4x8) | state bytes "
      "(block stop / any stop) |\n|---|---|---|---|---|---|---|---|\n");
  {
    Row row;
    const Streams s = full_shuffle_streams(1, ranks, workers);
    mixing(s, row);
    locality(s, row);
    row.node_reads = node_reads(full_shuffle_streams(4, 8, 1), 8);
    row.state = "-";
    print("full shuffle (Fisher-Yates)", row);
  }
  sampler_row("distsampler defaults (512 x open 64 x run 1)", ds::ShardSamplerOptions().with_seed(3));
  sampler_row(
      "distsampler 64 x open 8 x run 8 (runs of 8)",
      ds::ShardSamplerOptions().with_seed(3).with_canonical_streams(64).with_max_open_shards(8).with_run_length(8));
  sampler_row("distsampler 512 x open 16 x run 4",
              ds::ShardSamplerOptions().with_seed(3).with_max_open_shards(16).with_run_length(4));
  mosaic_row("MosaicML py1e, 1 canonical node, block 2^22", true, 1, 1, std::uint64_t{1} << 22);
  mosaic_row("MosaicML py1e, 1 canonical node, block 2^16", true, 1, 1, std::uint64_t{1} << 16);
  mosaic_row("MosaicML py1e, 4 canonical nodes, block 2^22", true, 4, 4, std::uint64_t{1} << 22);
  mosaic_row("MosaicML py1s, 1 canonical node", false, 1, 1, 0);
  mosaic_row("MosaicML py1s, 64 canonical nodes", false, 64, 64, 0);
  return 0;
}

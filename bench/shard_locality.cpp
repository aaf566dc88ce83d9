// Locality and mixing of the StreamingShardSampler presets side by side, next to a full shuffle (docs/SHARDS.md).
// SPDX-License-Identifier: MIT
//
// Layout: 1000 shards of uneven sizes (2000..18000 records, scaled to 10^7 samples in all);
// shard s holds only class 10 s / 1000 (sorted: the worst case for mixing). Job: 8 ranks x
// 4 workers (32 consumers), epoch 1, seed 3. Per worker stream (padding duplicates left
// out): shards touched in the epoch, shard switches per 1000 samples, the fraction of
// reads that go back in their shard (consecutive reads of one shard by one worker at a
// lower offset), reads that are the file successor of the worker's previous read of the
// shard, the most shards open at one slot (a shard is open from the slot of the worker's
// first read of it to the slot of its last), and the mean distinct shards in 1024
// consecutive samples. Mixing: micro-batches of 64 from one worker stream (a rank's j-th
// from worker j mod 4, as torch's DataLoader), global batch = the j-th micro-batch of every
// rank (512); TV = mean total-variation distance of a batch's class histogram from the
// dataset's class mix. Prints one Markdown table.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <distsampler/detail/bounded.hpp>
#include <distsampler/detail/mix.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>

namespace {

constexpr std::uint64_t shards = 1000, total = 10000000, classes = 10, ranks = 8, workers = 4, batch = 64;
constexpr std::uint64_t consumers = ranks * workers;

struct Read {
  std::uint32_t shard, offset;
};
// streams[worker * ranks + rank]: that consumer's reads in stream order.
using Streams = std::vector<std::vector<Read>>;

std::vector<std::uint64_t> layout() {
  distsampler::detail::SplitMix64 rng(0x5eed);
  std::vector<std::uint64_t> raw(shards), sizes(shards);
  std::uint64_t sum = 0;
  for (auto& r : raw) sum += (r = 2000 + distsampler::detail::bounded_draw(rng, 16001));
  std::uint64_t given = 0;
  for (std::uint64_t s = 0; s < shards; ++s) given += (sizes[s] = raw[s] * total / sum);
  for (std::uint64_t s = 0; given < total; s = (s + 1) % shards, ++given) ++sizes[s];
  return sizes;
}

std::uint64_t class_of(std::uint32_t shard) { return shard * classes / shards; }

struct Row {
  double touched_mean = 0, touched_max = 0, switches = 0, backward = 0, successors = 0, open_max = 0;
  double per_window = 0, micro_tv = 0, global_tv = 0;
};

// Mixing over the epoch's global batches.
void mixing(const Streams& streams, const std::vector<double>& mix, Row& row) {
  std::uint64_t per_rank = UINT64_MAX;
  for (std::uint64_t r = 0; r < ranks; ++r) {
    std::uint64_t count = 0;
    for (std::uint64_t w = 0; w < workers; ++w) count += streams[w * ranks + r].size() / batch;
    per_rank = std::min(per_rank, count);
  }
  double micro = 0, global = 0;
  for (std::uint64_t j = 0; j < per_rank; ++j) {
    std::vector<double> all(classes, 0);
    for (std::uint64_t r = 0; r < ranks; ++r) {
      const auto& s = streams[(j % workers) * ranks + r];
      std::vector<double> h(classes, 0);
      for (std::uint64_t i = (j / workers) * batch; i < (j / workers + 1) * batch; ++i) h[class_of(s[i].shard)] += 1;
      double tv = 0;
      for (std::uint64_t c = 0; c < classes; ++c) {
        tv += std::fabs(h[c] / batch - mix[c]);
        all[c] += h[c];
      }
      micro += tv / 2;
    }
    double tv = 0;
    for (std::uint64_t c = 0; c < classes; ++c) tv += std::fabs(all[c] / (batch * ranks) - mix[c]);
    global += tv / 2;
  }
  row.micro_tv = micro / static_cast<double>(per_rank * ranks);
  row.global_tv = global / static_cast<double>(per_rank);
}

void locality(const Streams& streams, Row& row) {
  double switches = 0, backward = 0, successors = 0, pairs = 0, windows = 0, in_windows = 0;
  for (const auto& s : streams) {
    std::vector<std::uint64_t> first(shards, UINT64_MAX), last_slot(shards, 0), last_offset(shards, 0);
    for (std::uint64_t i = 0; i < s.size(); ++i) {
      const Read x = s[i];
      if (first[x.shard] == UINT64_MAX) {
        first[x.shard] = i;
      } else {
        pairs += 1;
        if (x.offset < last_offset[x.shard]) backward += 1;
        if (x.offset == last_offset[x.shard] + 1) successors += 1;
      }
      last_slot[x.shard] = i;
      last_offset[x.shard] = x.offset;
      if (i != 0 && s[i - 1].shard != x.shard) switches += 1;
    }
    std::vector<std::int64_t> delta(s.size() + 1, 0);
    std::uint64_t touched = 0;
    for (std::uint64_t sh = 0; sh < shards; ++sh) {
      if (first[sh] == UINT64_MAX) continue;
      ++touched;
      delta[first[sh]] += 1;
      delta[last_slot[sh] + 1] -= 1;
    }
    std::int64_t open = 0, most = 0;
    for (std::uint64_t i = 0; i < s.size(); ++i) most = std::max(most, open += delta[i]);
    row.touched_mean += static_cast<double>(touched) / consumers;
    row.touched_max = std::max(row.touched_max, static_cast<double>(touched));
    row.open_max = std::max(row.open_max, static_cast<double>(most));
    std::vector<std::uint64_t> stamp(shards, UINT64_MAX);
    for (std::uint64_t b = 0; b + 1024 <= s.size(); b += 1024) {
      for (std::uint64_t i = b; i < b + 1024; ++i) {
        if (stamp[s[i].shard] != b) {
          stamp[s[i].shard] = b;
          in_windows += 1;
        }
      }
      windows += 1;
    }
  }
  std::uint64_t samples = 0;
  for (const auto& s : streams) samples += s.size();
  row.switches = switches * 1000 / static_cast<double>(samples);
  row.backward = backward / pairs;
  row.successors = successors / pairs;
  row.per_window = in_windows / windows;
}

Streams sampler_streams(const std::vector<std::uint64_t>& sizes, const distsampler::ShardSamplerOptions& options) {
  Streams streams(consumers);
  std::vector<distsampler::ShardSample> buffer(4096);
  for (std::uint64_t r = 0; r < ranks; ++r) {
    distsampler::StreamingShardSampler s(sizes, distsampler::World(r, ranks),
                                         distsampler::ShardSamplerOptions(options).with_num_workers(workers));
    s.set_epoch(1);
    for (std::uint64_t w = 0; w < workers; ++w) {
      auto& out = streams[s.consumer(w)];
      const std::uint64_t n = s.worker_size(w);
      for (std::uint64_t i = 0; i < n; i += buffer.size()) {
        const std::uint64_t count = std::min<std::uint64_t>(buffer.size(), n - i);
        s.fill(w, i, count, buffer.data());
        for (std::uint64_t k = 0; k < count; ++k) {
          if (!buffer[k].is_padding) {
            out.push_back(
                Read{static_cast<std::uint32_t>(buffer[k].shard), static_cast<std::uint32_t>(buffer[k].offset)});
          }
        }
      }
    }
  }
  return streams;
}

Streams full_shuffle(const std::vector<std::uint64_t>& sizes) {
  std::vector<Read> all;
  all.reserve(total);
  for (std::uint32_t s = 0; s < shards; ++s) {
    for (std::uint32_t o = 0; o < sizes[s]; ++o) all.push_back(Read{s, o});
  }
  distsampler::detail::SplitMix64 rng(3);
  for (std::uint64_t i = all.size() - 1; i > 0; --i)
    std::swap(all[i], all[distsampler::detail::bounded_draw(rng, i + 1)]);
  Streams streams(consumers);
  for (std::uint64_t i = 0; i < all.size(); ++i) streams[i % consumers].push_back(all[i]);
  return streams;
}

void print(const char* name, const Row& r) {
  std::printf("| %-46s | %.1f (%.0f) | %.1f | %.3f | %.3f | %.0f | %.1f | %.3f | %.3f |\n", name, r.touched_mean,
              r.touched_max, r.switches, r.backward, r.successors, r.open_max, r.per_window, r.micro_tv, r.global_tv);
}

}  // namespace

int main() {
  const auto start = std::chrono::steady_clock::now();
  const auto sizes = layout();
  std::vector<double> mix(classes, 0);
  for (std::uint32_t s = 0; s < shards; ++s) mix[class_of(s)] += static_cast<double>(sizes[s]) / total;
  std::printf(
      "| order (1000 uneven shards, 10^7 samples, 8 ranks x 4 workers) | shards per worker per epoch: mean (max) | "
      "shard switches per 1000 samples | backward reads in a shard | in-order successors | max open shards | "
      "shards per 1024 of a stream | micro TV (64) | global TV (512) |\n|---|---|---|---|---|---|---|---|---|\n");
  using distsampler::ShardSamplerOptions;
  struct Preset {
    const char* name;
    ShardSamplerOptions options;
  };
  const Preset presets[] = {
      {"mixed() = defaults (512 x open 64 x run 1, w 16)", ShardSamplerOptions::mixed()},
      {"sequential() (1 x open 1 x run 1024, w 1)", ShardSamplerOptions::sequential()},
      {"sequential(), canonical_streams 32 (= K)", ShardSamplerOptions::sequential().with_canonical_streams(32)},
      {"64 x open 8 x run 8, w 16",
       ShardSamplerOptions().with_canonical_streams(64).with_max_open_shards(8).with_run_length(8)},
  };
  {
    Row row;
    const Streams streams = full_shuffle(sizes);
    locality(streams, row);
    mixing(streams, mix, row);
    print("full shuffle (Fisher-Yates, dealt round robin)", row);
  }
  for (const auto& p : presets) {
    Row row;
    const Streams streams = sampler_streams(sizes, ShardSamplerOptions(p.options).with_seed(3));
    locality(streams, row);
    mixing(streams, mix, row);
    print(p.name, row);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n(%.1f s)\n", seconds);
  return 0;
}

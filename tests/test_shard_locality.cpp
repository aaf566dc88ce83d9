// Tests of the shard presets' read guarantees (sequential(), mixed()), walked on real worker streams.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include <distsampler/shards/streaming_shard_sampler.hpp>

#include "shard_test_util.hpp"

namespace {

using distsampler::ConsumerProgress;
using shard_test::SamplerState;
using shard_test::ShardSample;
using shard_test::ShardSamplerOptions;
using shard_test::StreamingShardSampler;
using shard_test::Tail;
using shard_test::TestRng;
using shard_test::World;

// What one worker stream does, measured from its samples alone (padding duplicates, which
// the presets exclude from their guarantees, are skipped and counted).
struct LocalityReport {
  std::uint64_t samples = 0, padding = 0;
  std::uint64_t backward = 0;     // reads of a shard at an offset not above the worker's last one of it
  std::uint64_t max_open = 0;     // most shards open at one slot: read at or before it and at or after it
  std::uint64_t switches = 0;     // consecutive non-padding samples of different shards
  std::uint64_t shards = 0;       // distinct shards read
  std::uint64_t broken_runs = 0;  // pairs inside one run of L slots that are not the file's next record
};

// Walks `s`'s stream of `worker`. With run_length L > 0, slots [j L, (j + 1) L) that end
// before the stream's last slot are checked to be consecutive records: the same shard's
// next offset, or offset 0 of another shard right after the last record of the previous.
LocalityReport locality_walk(const StreamingShardSampler& s, std::uint64_t worker, std::uint64_t run_length) {
  LocalityReport r;
  const auto& sizes = s.shard_sizes();
  std::vector<ShardSample> xs;
  for (const ShardSample x : s.stream(worker)) xs.push_back(x);
  std::map<std::uint64_t, std::uint64_t> last_offset, first_slot, last_slot;
  std::uint64_t previous_shard = UINT64_MAX;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const ShardSample& x = xs[i];
    if (x.is_padding) {
      ++r.padding;
      continue;
    }
    ++r.samples;
    const auto seen = last_offset.find(x.shard);
    if (seen != last_offset.end() && x.offset <= seen->second) ++r.backward;
    last_offset[x.shard] = x.offset;
    if (first_slot.count(x.shard) == 0) first_slot[x.shard] = i;
    last_slot[x.shard] = i;
    if (previous_shard != UINT64_MAX && x.shard != previous_shard) ++r.switches;
    previous_shard = x.shard;
  }
  r.shards = first_slot.size();
  // Open shards per slot, as a sweep over [first, last] intervals.
  std::vector<std::int64_t> delta(xs.size() + 1, 0);
  for (const auto& [shard, first] : first_slot) {
    delta[first] += 1;
    delta[last_slot[shard] + 1] -= 1;
  }
  std::int64_t open = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    open += delta[i];
    r.max_open = std::max(r.max_open, static_cast<std::uint64_t>(open));
  }
  if (run_length != 0) {
    for (std::size_t i = 0; i + 1 < xs.size(); ++i) {
      const std::size_t next = i + 1;
      const bool inside_run = next % run_length != 0 && (next / run_length + 1) * run_length <= xs.size() - 1;
      if (!inside_run) continue;
      const ShardSample &a = xs[i], &b = xs[next];
      const bool same = b.shard == a.shard && b.offset == a.offset + 1;
      const bool crossed = b.shard != a.shard && b.offset == 0 && a.offset + 1 == sizes[a.shard];
      if (!same && !crossed) ++r.broken_runs;
    }
  }
  return r;
}

// Checks the sequential() guarantees on every worker of every rank; returns the shards
// read summed over all consumers.
std::uint64_t locality_check_sequential(const std::vector<StreamingShardSampler>& ranks, std::uint64_t run_length) {
  std::uint64_t touched = 0;
  for (const auto& s : ranks) {
    for (std::uint64_t w = 0; w < s.num_workers(); ++w) {
      const LocalityReport r = locality_walk(s, w, run_length);
      INFO("rank " << s.rank() << " worker " << w << " samples " << r.samples);
      CHECK(r.backward == 0);
      CHECK(r.max_open <= 1);
      CHECK(r.switches + 1 <= std::max<std::uint64_t>(r.shards, 1));
      CHECK(r.broken_runs == 0);
      CHECK(r.padding <= 1);
      touched += r.shards;
    }
  }
  return touched;
}

std::uint64_t locality_nonempty(const std::vector<std::uint64_t>& sizes) {
  return static_cast<std::uint64_t>(std::count_if(sizes.begin(), sizes.end(), [](std::uint64_t v) { return v != 0; }));
}

Tail locality_tail(std::uint64_t i) { return i % 3 == 0 ? Tail::pad : i % 3 == 1 ? Tail::drop : Tail::uneven; }

}  // namespace

TEST_CASE("the presets have the documented values and the defaults are mixed()", "[shard][locality]") {
  const ShardSamplerOptions defaults;
  CHECK(defaults == ShardSamplerOptions::mixed());
  CHECK(defaults.canonical_streams == 512);
  CHECK(defaults.max_open_shards == 64);
  CHECK(defaults.run_length == 1);
  CHECK(defaults.shuffle_window == 16);
  CHECK(defaults.rotate_shards);
  CHECK(defaults.num_workers == 1);
  CHECK(defaults.shuffle);
  CHECK(defaults.tail == Tail::pad);

  constexpr ShardSamplerOptions seq = ShardSamplerOptions::sequential();
  static_assert(seq.canonical_streams == 1 && seq.max_open_shards == 1 && seq.run_length == 1024 &&
                    seq.shuffle_window == 1 && !seq.rotate_shards,
                "sequential() is a constant expression with the documented values");
  CHECK(seq.shuffle);
  CHECK(seq.seed == 0);
  CHECK(seq.tail == Tail::pad);
  CHECK(seq.num_workers == 1);
  CHECK(seq != defaults);
  CHECK(ShardSamplerOptions::sequential().with_seed(7).with_num_workers(3).seed == 7);
  CHECK(distsampler::shard_order_name(seq) == "shard-shuffle-streams1-open1-run1024-window1-norotate");
  CHECK(distsampler::shard_order_name(ShardSamplerOptions(seq).with_shuffle(false)) ==
        "shard-noshuffle-streams1-open1-run1024-window1");
  CHECK(distsampler::shard_order_name(ShardSamplerOptions::mixed()) == "shard-shuffle-streams512-open64-run1-window16");
}

TEST_CASE("without rotation every shard of the shuffled sequence is read from offset 0", "[shard][locality]") {
  const std::vector<std::uint64_t> sizes = {5, 7, 3};
  const auto rotated =
      ShardSamplerOptions().with_seed(4).with_canonical_streams(1).with_max_open_shards(1).with_shuffle_window(1);
  auto plain = ShardSamplerOptions(rotated).with_rotate_shards(false);
  StreamingShardSampler a(sizes, World(), plain), b(sizes, World(), rotated);
  bool some_rotated = false;
  for (std::uint64_t epoch = 0; epoch < 6; ++epoch) {
    a.set_epoch(epoch);
    b.set_epoch(epoch);
    // One lane, runs of 1, no window: position p is Q position p, so each shard's records
    // come together, in file order from 0 without rotation.
    std::uint64_t expected_offset = 0, shard = UINT64_MAX;
    for (std::uint64_t p = 0; p < a.dataset_size(); ++p) {
      const ShardSample x = a.at_global(p);
      if (x.shard != shard) {
        CHECK(expected_offset == (shard == UINT64_MAX ? 0 : sizes[shard]));
        shard = x.shard;
        expected_offset = 0;
      }
      CHECK(x.offset == expected_offset++);
      if (b.at_global(p).offset != x.offset) some_rotated = true;
    }
  }
  CHECK(some_rotated);  // with rotation (the default) shards start elsewhere
}

TEST_CASE("sequential(): every worker reads each shard in strictly increasing offsets, one shard at a time",
          "[shard][locality]") {
  TestRng rng{0x5e9};
  for (std::uint64_t trial = 0; trial < 60; ++trial) {
    const auto sizes = shard_test::random_sizes(rng, 40, trial % 5 == 0 ? 3000 : 120);
    const std::uint64_t world = 1 + rng.below(5), workers = 1 + rng.below(4);
    // The preset's runs of 1024, and short runs so that small layouts have many rounds.
    const std::uint64_t run = trial % 2 == 0 ? 1024 : 1 + rng.below(9);
    const auto o =
        ShardSamplerOptions::sequential().with_seed(trial).with_tail(locality_tail(trial)).with_run_length(run);
    INFO("trial " << trial << " shards " << sizes.size() << " world " << world << " workers " << workers << " run "
                  << run);
    const auto ranks = shard_test::make_ranks(sizes, world, workers, o, trial % 3);
    shard_test::check_segment(ranks);
    locality_check_sequential(ranks, run);
  }
}

TEST_CASE("sequential(): the guarantees hold in segments resumed from any stop on another world", "[shard][locality]") {
  TestRng rng{0xbac4};
  for (std::uint64_t trial = 0; trial < 40; ++trial) {
    const auto sizes = shard_test::random_sizes(rng, 30, 200);
    const std::uint64_t run = 1 + rng.below(12);
    const auto o =
        ShardSamplerOptions::sequential().with_seed(trial).with_tail(locality_tail(trial)).with_run_length(run);
    std::uint64_t world = 1 + rng.below(4), workers = 1 + rng.below(3);
    auto ranks = shard_test::make_ranks(sizes, world, workers, o, 1);
    std::vector<std::uint64_t> reads(static_cast<std::size_t>(ranks.front().dataset_size()), 0);
    for (std::uint64_t segment = 0; segment < 3; ++segment) {
      INFO("trial " << trial << " segment " << segment << " world " << world << " workers " << workers);
      if (segment == 0) shard_test::check_segment(ranks);
      // Fronts of resumed segments are not whole runs: check order and openness only.
      locality_check_sequential(ranks, segment == 0 ? run : 0);
      const auto& s0 = ranks.front();
      std::vector<std::uint64_t> done(static_cast<std::size_t>(s0.consumers()));
      for (const auto& s : ranks) {
        for (std::uint64_t w = 0; w < workers; ++w) {
          const std::uint64_t c = s.consumer(w), d = rng.below(s.consumer_size(c) + 1);
          done[static_cast<std::size_t>(c)] = d;
          for (std::uint64_t i = 0; i < d; ++i) {
            const ShardSample x = s.sample(w, i);
            if (!x.is_padding) ++reads[static_cast<std::size_t>(x.index)];
          }
        }
      }
      // What the stopped consumers read, over all segments so far: nothing twice.
      for (const std::uint64_t count : reads) REQUIRE(count <= 1);
      const SamplerState state = s0.state(ConsumerProgress(done));
      world = 1 + rng.below(4);
      workers = 1 + rng.below(3);
      ranks.clear();
      for (std::uint64_t r = 0; r < world; ++r) {
        ranks.emplace_back(sizes, World(r, world), ShardSamplerOptions(o).with_num_workers(workers));
        ranks.back().resume(state);
      }
    }
  }
}

TEST_CASE("sequential() with one lane per consumer: each worker reads its own stretch of the shard sequence",
          "[shard][locality]") {
  TestRng rng{0x1a7e};
  for (std::uint64_t trial = 0; trial < 40; ++trial) {
    const auto sizes = shard_test::random_sizes(rng, 60, trial % 4 == 0 ? 2000 : 90);
    const std::uint64_t world = 1 + rng.below(4), workers = 1 + rng.below(3), k = world * workers;
    const std::uint64_t run = trial % 2 == 0 ? 1024 : 1 + rng.below(6);
    const auto o = ShardSamplerOptions::sequential()
                       .with_canonical_streams(k)
                       .with_seed(trial)
                       .with_tail(locality_tail(trial))
                       .with_run_length(run);
    INFO("trial " << trial << " world " << world << " workers " << workers << " run " << run);
    const auto ranks = shard_test::make_ranks(sizes, world, workers, o, trial);
    shard_test::check_segment(ranks);
    const std::uint64_t touched = locality_check_sequential(ranks, 0);
    // The consumers read at most 3K contiguous pieces of the shard sequence (a lane, a share
    // of the rest and a tail slot each): only shards cut between pieces have two readers.
    CHECK(touched <= locality_nonempty(sizes) + 3 * k);
  }
}

TEST_CASE("sequential() at scale: 8 ranks x 4 workers over 1000 uneven shards", "[shard][locality]") {
  TestRng rng{0x10c};
  std::vector<std::uint64_t> sizes(1000);
  for (auto& v : sizes) v = 200 + rng.below(3801);  // 200..4000 records, 2.1 million in all
  const auto ranks = shard_test::make_ranks(sizes, 8, 4, ShardSamplerOptions::sequential().with_seed(5), 2);
  shard_test::check_segment(ranks);
  locality_check_sequential(ranks, 1024);
}

TEST_CASE("mixed() keeps no order within a shard: the defaults read some shard backwards on every worker",
          "[shard][locality]") {
  TestRng rng{0x3d};
  std::vector<std::uint64_t> sizes(200);
  for (auto& v : sizes) v = 100 + rng.below(901);
  const auto ranks = shard_test::make_ranks(sizes, 4, 2, ShardSamplerOptions::mixed().with_seed(1), 1);
  for (const auto& s : ranks) {
    for (std::uint64_t w = 0; w < 2; ++w) {
      const LocalityReport r = locality_walk(s, w, 0);
      INFO("rank " << s.rank() << " worker " << w);
      // Measured: about 47% of the reads go back in their shard, the shard changes on 99.8%
      // of the samples, and 67-70 shards are open at once (each lane keeps one or two).
      CHECK(r.backward * 4 > r.samples);
      CHECK(r.switches * 10 > r.samples * 9);
      CHECK(r.max_open >= 32);
    }
  }
}

TEST_CASE("a state of sequential() does not resume a sampler that rotates shards", "[shard][locality]") {
  const std::vector<std::uint64_t> sizes = {300, 200, 500};
  StreamingShardSampler seq(sizes, World(0, 2), ShardSamplerOptions::sequential().with_run_length(16));
  const SamplerState state = seq.state(40);
  StreamingShardSampler rotating(sizes, World(0, 2),
                                 ShardSamplerOptions::sequential().with_run_length(16).with_rotate_shards(true));
  CHECK_THROWS_WITH(rotating.resume(state), Catch::Contains("engine") &&
                                                Catch::Contains("shard-shuffle-streams1-open1-run16-window1-norotate"));
  StreamingShardSampler again(sizes, World(0, 3), ShardSamplerOptions::sequential().with_run_length(16));
  again.resume(state);
  CHECK(again.dataset_size() == 1000);
}

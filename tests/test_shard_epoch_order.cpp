// Tests of ShardEpochOrder: shard shuffle, rotations, lanes, windows and blocks of an epoch's order.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <distsampler/detail/small_permutation.hpp>
#include <distsampler/shards/detail/epoch_order.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>

#include "shard_test_util.hpp"

using namespace shard_test;
using distsampler::ShardCatalog;
using distsampler::ShardEpochOrder;

namespace {

std::shared_ptr<const ShardCatalog> catalog_of(std::vector<std::uint64_t> sizes) {
  return std::make_shared<const ShardCatalog>(std::move(sizes));
}

std::vector<std::uint64_t> indices(const ShardEpochOrder& order) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t p = 0; p < order.size(); ++p) out.push_back(order.at(p).index);
  return out;
}

}  // namespace

TEST_CASE("an epoch order is a bijection onto the catalog, a pure function of its inputs", "[shard][order]") {
  TestRng rng{5150};
  for (int trial = 0; trial < 60; ++trial) {
    const auto catalog = catalog_of(random_sizes(rng, 20, 50));
    const auto options =
        small_options(static_cast<std::uint64_t>(trial), Tail::pad, rng.next()).with_shuffle_window(1 + rng.below(20));
    const std::uint64_t epoch = rng.below(4);
    const ShardEpochOrder order(catalog, options, epoch);
    INFO("trial " << trial << " n " << order.size());
    REQUIRE(order.size() == catalog->total());
    CHECK(order.epoch() == epoch);
    std::vector<bool> seen(static_cast<std::size_t>(order.size()), false);
    for (std::uint64_t p = 0; p < order.size(); ++p) {
      const ShardSample x = order.at(p);
      REQUIRE(x.offset < catalog->shard_size(x.shard));
      REQUIRE(x.index == catalog->index(x.shard, x.offset));
      REQUIRE_FALSE(seen[static_cast<std::size_t>(x.index)]);
      seen[static_cast<std::size_t>(x.index)] = true;
      REQUIRE(order.at_sequence(order.sequence_position(p)) == x);
    }
    // The same inputs give the same order; tail and worker count are not inputs.
    const ShardEpochOrder again(catalog_of(catalog->sizes()),
                                ShardSamplerOptions(options).with_tail(Tail::drop).with_num_workers(3), epoch);
    CHECK(indices(again) == indices(order));
    // The shard permutation is a permutation.
    auto shards = order.shard_order();
    std::sort(shards.begin(), shards.end());
    for (std::size_t j = 0; j < shards.size(); ++j) REQUIRE(shards[j] == j);
  }
}

TEST_CASE("unshuffled, lanes and blocks interleave runs of the shards in file order", "[shard][order]") {
  const auto plain = ShardSamplerOptions().with_shuffle(false);
  // One lane, one run per block: the file order itself.
  const ShardEpochOrder identity(
      catalog_of({4, 0, 3}),
      ShardSamplerOptions(plain).with_canonical_streams(1).with_max_open_shards(1).with_run_length(2), 5);
  CHECK(indices(identity) == std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 6});
  // Two lanes of three runs of 1 (Q = 0..5, lane 0 = 0 1 2, lane 1 = 3 4 5), blocks of two
  // runs read row-major: 0 3, 1 4, 2 5; the seventh sample is the remainder, in Q order.
  const auto two_lanes =
      ShardSamplerOptions(plain).with_canonical_streams(2).with_max_open_shards(2).with_run_length(1);
  CHECK(indices(ShardEpochOrder(catalog_of({7}), two_lanes, 0)) == std::vector<std::uint64_t>{0, 3, 1, 4, 2, 5, 6});
  CHECK(indices(ShardEpochOrder(catalog_of({2, 5}), two_lanes, 9)) == std::vector<std::uint64_t>{0, 3, 1, 4, 2, 5, 6});
  // Runs of 2 in two lanes of 4 (lane 0 = 0..3, lane 1 = 4..7), one run per block.
  const auto runs = ShardSamplerOptions(plain).with_canonical_streams(2).with_max_open_shards(1).with_run_length(2);
  CHECK(indices(ShardEpochOrder(catalog_of({9}), runs, 0)) == std::vector<std::uint64_t>{0, 1, 4, 5, 2, 3, 6, 7, 8});
  // Four lanes of two runs of 1 (lane j = 2j, 2j + 1), blocks of two runs: a block's lanes
  // are spread (0 and 2, then 1 and 3), not neighbours.
  const auto spread = ShardSamplerOptions(plain).with_canonical_streams(4).with_max_open_shards(2).with_run_length(1);
  CHECK(indices(ShardEpochOrder(catalog_of({8}), spread, 0)) == std::vector<std::uint64_t>{0, 4, 2, 6, 1, 5, 3, 7});
}

TEST_CASE("a row's columns map to lanes spread over the sequence, and the order's version says when that changed it",
          "[shard][order]") {
  // Seven lanes, three per block: residue 0 columns (0, 3, 6) take lanes 0..2, residue 1
  // columns (1, 4) lanes 3 and 4, residue 2 columns (2, 5) lanes 5 and 6.
  const std::vector<std::uint64_t> expected{0, 3, 5, 1, 4, 6, 2};
  for (std::uint64_t j = 0; j < 7; ++j) CHECK(ShardEpochOrder::spread_lane(j, 7, 3) == expected[j]);
  // Identity for one lane per block or one block per row: the contiguous lanes of version 2.
  for (std::uint64_t j = 0; j < 9; ++j) {
    CHECK(ShardEpochOrder::spread_lane(j, 9, 1) == j);
    CHECK(ShardEpochOrder::spread_lane(j, 9, 9) == j);
  }
  CHECK(ShardEpochOrder::format_version(ShardSamplerOptions()) == 3);
  CHECK(ShardEpochOrder::format_version(ShardSamplerOptions().with_canonical_streams(8).with_max_open_shards(8)) == 2);
  CHECK(ShardEpochOrder::format_version(ShardSamplerOptions().with_max_open_shards(1)) == 2);
}

TEST_CASE("visiting a span of the order yields its samples as shard ranges", "[shard][order][walk]") {
  TestRng rng{8086};
  for (int trial = 0; trial < 40; ++trial) {
    const auto catalog = catalog_of(random_sizes(rng, 12, 40));
    const ShardEpochOrder order(catalog, small_options(static_cast<std::uint64_t>(trial), Tail::pad, rng.next()), 1);
    const std::uint64_t n = order.size();
    const std::uint64_t g0 = rng.below(n + 1), g1 = g0 + rng.below(n - g0 + 1), slot0 = rng.below(100);
    std::vector<ShardSample> got(static_cast<std::size_t>(g1 - g0));
    std::vector<bool> hit(got.size(), false);
    auto sink = [&](std::uint64_t shard, std::uint64_t begin, std::uint64_t length, std::uint64_t slot,
                    std::uint64_t stride) {
      REQUIRE(begin + length <= catalog->shard_size(shard));
      for (std::uint64_t t = 0; t < length; ++t) {
        const auto at = static_cast<std::size_t>(slot + t * stride - slot0);
        REQUIRE(at < got.size());
        REQUIRE_FALSE(hit[at]);
        hit[at] = true;
        got[at] = ShardSample{shard, begin + t, catalog->index(shard, begin + t), false};
      }
    };
    order.visit(g0, g1, slot0, sink);
    INFO("trial " << trial << " [" << g0 << ", " << g1 << ")");
    for (std::uint64_t p = g0; p < g1; ++p) {
      REQUIRE(hit[static_cast<std::size_t>(p - g0)]);
      REQUIRE(got[static_cast<std::size_t>(p - g0)] == order.at(p));
    }
  }
}

TEST_CASE("an epoch order refuses options that do not describe one", "[shard][order][errors]") {
  const auto catalog = catalog_of({3, 4});
  CHECK_THROWS_AS(ShardEpochOrder(catalog, ShardSamplerOptions().with_run_length(0), 0), distsampler::config_error);
  CHECK_THROWS_WITH(ShardEpochOrder(catalog, ShardSamplerOptions().with_run_length(0), 0),
                    "ShardEpochOrder: run_length is 0 (expected at least 1)");
  CHECK_THROWS_WITH(
      ShardEpochOrder(catalog, ShardSamplerOptions().with_canonical_streams(4).with_max_open_shards(8), 0),
      "ShardEpochOrder: max_open_shards 8 exceeds canonical_streams 4 (expected max_open_shards <= "
      "canonical_streams)");
}

TEST_CASE("shard order and within-shard order change every epoch", "[shard][order]") {
  std::vector<std::uint64_t> sizes(50, 20);
  StreamingShardSampler s(sizes, World());
  std::vector<std::vector<std::uint64_t>> orders;
  for (std::uint64_t epoch = 0; epoch < 4; ++epoch) {
    s.set_epoch(epoch);
    std::vector<std::uint64_t> order;
    for (const auto x : s.stream(0)) order.push_back(x.index);
    orders.push_back(order);
  }
  for (std::size_t a = 0; a < orders.size(); ++a) {
    for (std::size_t b = a + 1; b < orders.size(); ++b) {
      std::uint64_t same = 0;
      for (std::size_t i = 0; i < orders[a].size(); ++i) same += orders[a][i] == orders[b][i] ? 1u : 0u;
      CHECK(same < orders[a].size() / 20);
    }
  }
  // The first record read of a shard is not always offset 0: the shard is rotated.
  std::uint64_t nonzero_starts = 0;
  for (const auto& r : s.read_plan(0)) nonzero_starts += r.begin != 0 ? 1u : 0u;
  CHECK(nonzero_starts > 20);
  // Same seed and epoch: identical stream (deterministic); another seed: different.
  ShardSamplerOptions other;
  other.seed = 1;
  StreamingShardSampler t(sizes, World(), other);
  t.set_epoch(3);
  StreamingShardSampler u(sizes, World());
  u.set_epoch(3);
  std::uint64_t same_seed = 0, other_seed = 0;
  for (std::uint64_t i = 0; i < s.worker_size(0); ++i) {
    same_seed += u.sample(0, i) == s.sample(0, i) ? 1u : 0u;
    other_seed += t.sample(0, i) == s.sample(0, i) ? 1u : 0u;
  }
  CHECK(same_seed == s.worker_size(0));
  CHECK(other_seed < 100);
}

namespace {

// Fraction of a shard's records (over all shards) whose next record read from the same
// shard is its file successor (offset + 1, cyclically): 1 = file order up to rotation.
double in_order_successors(const StreamingShardSampler& s) {
  std::vector<std::vector<std::uint64_t>> per_shard(static_cast<std::size_t>(s.num_shards()));
  for (std::uint64_t p = 0; p < s.dataset_size(); ++p) {
    const auto x = s.at_global(p);
    per_shard[static_cast<std::size_t>(x.shard)].push_back(x.offset);
  }
  std::uint64_t pairs = 0, in_order = 0;
  for (std::size_t j = 0; j < per_shard.size(); ++j) {
    const auto& offs = per_shard[j];
    const auto size = s.shard_sizes()[j];
    for (std::size_t i = 1; i < offs.size(); ++i) {
      ++pairs;
      in_order += offs[i] == (offs[i - 1] + 1) % size ? 1u : 0u;
    }
  }
  return pairs == 0 ? 0.0 : static_cast<double>(in_order) / static_cast<double>(pairs);
}

}  // namespace

TEST_CASE("small window permutations are bijections with near-uniform draws", "[shard][order][window]") {
  using distsampler::detail::small_permutation_at;
  TestRng rng{99};
  for (std::uint64_t n = 1; n <= distsampler::detail::small_permutation_max; ++n) {
    for (int trial = 0; trial < 200; ++trial) {
      const std::uint64_t key = rng.next();
      std::uint32_t seen = 0;
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t v = small_permutation_at(key, n, i);
        REQUIRE(v < n);
        seen |= std::uint32_t{1} << v;
      }
      REQUIRE(seen == (std::uint32_t{1} << n) - 1);
    }
  }
  // All 24 permutations of 4 from 48000 keys: each expected 2000 times; chi-square with
  // 23 degrees of freedom stays far below 60 (p < 1e-4) for a uniform draw.
  std::map<std::uint64_t, std::uint64_t> counts;
  for (int trial = 0; trial < 48000; ++trial) {
    const std::uint64_t key = rng.next();
    std::uint64_t code = 0;
    for (std::uint64_t i = 0; i < 4; ++i) code = code * 4 + small_permutation_at(key, 4, i);
    ++counts[code];
  }
  REQUIRE(counts.size() == 24);
  double chi2 = 0;
  for (const auto& [code, c] : counts)
    chi2 += (static_cast<double>(c) - 2000.0) * (static_cast<double>(c) - 2000.0) / 2000.0;
  CHECK(chi2 < 60);
  // The 128-bit multiply and the portable one agree.
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t a = rng.next() >> rng.below(64), b = rng.next() >> rng.below(64);
    REQUIRE(distsampler::detail::mulhi64(a, b) == distsampler::detail::mulhi64_portable(a, b));
  }
  CHECK(distsampler::detail::mulhi64_portable(UINT64_MAX, UINT64_MAX) == UINT64_MAX - 1);
}

TEST_CASE("shuffle windows reorder a shard's runs and stay within their window of the lane", "[shard][order][window]") {
  const std::vector<std::uint64_t> sizes(40, 100);  // 4000 samples
  ShardSamplerOptions o;
  o.canonical_streams = 8;
  o.max_open_shards = 4;
  o.run_length = 1;
  o.shuffle_window = 1;
  StreamingShardSampler in_order(sizes, World(), o);
  in_order.set_epoch(2);
  CHECK(in_order_successors(in_order) > 0.95);
  for (const std::uint64_t w : {2u, 7u, 16u, 64u}) {
    o.shuffle_window = w;
    StreamingShardSampler s(sizes, World(), o);
    s.set_epoch(2);
    INFO("window " << w);
    // Runs of 1 in windows of w: a record's file successor comes next only by chance.
    CHECK(in_order_successors(s) < (w == 2 ? 0.7 : 0.3));
    // Bound: the runs read in rows [t*w, (t+1)*w) of a lane are that lane's runs
    // t*w .. (t+1)*w - 1 of Q, so a window never reaches past its w runs of the lane.
    // Column j of a row is lane (j mod 4) * 2 + j / 4 (a block's 4 lanes spread by 8 / 4).
    const std::uint64_t c = 8, lane_length = 4000 / c, b = 4;
    for (std::uint64_t p = 0; p < 4000; ++p) {
      const std::uint64_t run = (p / b) * 4 + (p % b) % 4, column = run % c, row = run / c;
      const std::uint64_t lane = (column % 4) * 2 + column / 4;
      const std::uint64_t q = s.sequence_position(p);
      const std::uint64_t window_begin = lane * lane_length + (row / w) * w;
      REQUIRE(q >= window_begin);
      REQUIRE(q < std::min(window_begin + w, (lane + 1) * lane_length));
    }
  }
  // Runs of 8 keep 7 of 8 successors in order; the window moves the runs around.
  o.run_length = 8;
  o.shuffle_window = 16;
  StreamingShardSampler runs(sizes, World(), o);
  const double f = in_order_successors(runs);
  CHECK(f > 0.85);
  CHECK(f < 0.93);
  // Unshuffled: the window does not apply.
  o.shuffle = false;
  StreamingShardSampler plain(sizes, World(), o);
  CHECK(in_order_successors(plain) > 0.99);
}

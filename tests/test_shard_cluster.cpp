// Tests of the shard sampler at cluster scale: default options mix like a full shuffle, nodes read disjoint shards.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <distsampler/detail/bounded.hpp>
#include <distsampler/detail/mix.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>

#include "shard_test_util.hpp"

using namespace shard_test;

namespace {

// The setting of docs/SHARDS.md: 8 ranks x 2 workers, micro-batches of 64 from one worker
// stream, a rank's j-th micro-batch from worker j mod 2 (a DataLoader taking its workers in
// turn), global batch j = the j-th micro-batch of every rank.
constexpr std::uint64_t setting_ranks = 8, setting_workers = 2, setting_micro = 64,
                        setting_consumers = setting_ranks * setting_workers;

// A class-sorted layout: shard s holds only class shard_class[s]; classes appear in shard order.
struct SortedLayout {
  std::string name;
  std::vector<std::uint64_t> sizes;
  std::vector<std::uint64_t> shard_class;
  std::uint64_t classes = 10;
};

SortedLayout sorted_layout(std::string name, std::vector<std::uint64_t> sizes) {
  SortedLayout l{std::move(name), std::move(sizes), {}, 10};
  for (std::size_t s = 0; s < l.sizes.size(); ++s) l.shard_class.push_back(s * l.classes / l.sizes.size());
  return l;
}

// Mean TV distance of batch class histograms from the dataset's class mix: setting_micro-batches
// (per consumer) and global batches; batches[j][r] lists the shards of rank r's j-th
// setting_micro-batch.
struct Mixing {
  double micro_tv = 0, global_tv = 0;
};

Mixing mixing(const SortedLayout& l, const std::vector<std::vector<std::vector<std::uint64_t>>>& batches) {
  std::vector<double> mix(static_cast<std::size_t>(l.classes), 0);
  double total = 0;
  for (std::size_t s = 0; s < l.sizes.size(); ++s) {
    mix[static_cast<std::size_t>(l.shard_class[s])] += static_cast<double>(l.sizes[s]);
    total += static_cast<double>(l.sizes[s]);
  }
  for (auto& m : mix) m /= total;
  auto tv = [&](const std::vector<double>& h, double n) {
    double d = 0;
    for (std::size_t c = 0; c < h.size(); ++c) d += std::fabs(h[c] / n - mix[c]);
    return d / 2;
  };
  Mixing out;
  for (const auto& step : batches) {
    std::vector<double> all(mix.size(), 0);
    for (const auto& shards : step) {
      std::vector<double> h(mix.size(), 0);
      for (const std::uint64_t s : shards) h[static_cast<std::size_t>(l.shard_class[static_cast<std::size_t>(s)])] += 1;
      out.micro_tv += tv(h, static_cast<double>(setting_micro));
      for (std::size_t c = 0; c < h.size(); ++c) all[c] += h[c];
    }
    out.global_tv += tv(all, static_cast<double>(setting_micro * setting_ranks));
  }
  out.micro_tv /= static_cast<double>(batches.size() * setting_ranks);
  out.global_tv /= static_cast<double>(batches.size());
  return out;
}

// The first `steps` global batches of a full shuffle of the layout (Fisher-Yates with the
// library's unbiased draws), dealt setting_micro-batch by setting_micro-batch.
std::vector<std::vector<std::vector<std::uint64_t>>> full_shuffle_batches(const SortedLayout& l, std::uint64_t steps) {
  std::vector<std::uint64_t> shard_of;
  for (std::size_t s = 0; s < l.sizes.size(); ++s)
    shard_of.insert(shard_of.end(), static_cast<std::size_t>(l.sizes[s]), s);
  distsampler::detail::SplitMix64 rng(99);
  const std::uint64_t n = shard_of.size(), need = steps * setting_ranks * setting_micro;
  // A partial Fisher-Yates: the first `need` draws of a uniform permutation.
  for (std::uint64_t i = 0; i < need; ++i) {
    const std::uint64_t j = i + distsampler::detail::bounded_draw(rng, n - i);
    std::swap(shard_of[static_cast<std::size_t>(i)], shard_of[static_cast<std::size_t>(j)]);
  }
  std::vector<std::vector<std::vector<std::uint64_t>>> batches(static_cast<std::size_t>(steps));
  std::uint64_t at = 0;
  for (auto& step : batches) {
    for (std::uint64_t r = 0; r < setting_ranks; ++r, at += setting_micro) {
      step.emplace_back(shard_of.begin() + static_cast<std::ptrdiff_t>(at),
                        shard_of.begin() + static_cast<std::ptrdiff_t>(at + setting_micro));
    }
  }
  return batches;
}

struct Measured {
  Mixing sampler, full;
  double shards_per_1024 = 0;  // mean distinct shards in 1024 consecutive samples of a stream
};

// Reads the first `steps` global batches from samplers with `options` and measures them.
Measured measure(const SortedLayout& l, const ShardSamplerOptions& options, std::uint64_t steps) {
  const std::uint64_t per_worker = (steps + setting_workers - 1) / setting_workers * setting_micro;
  std::vector<std::vector<std::uint64_t>> streams;  // consumer c = worker * setting_ranks + rank
  streams.resize(static_cast<std::size_t>(setting_consumers));
  for (std::uint64_t r = 0; r < setting_ranks; ++r) {
    StreamingShardSampler s(l.sizes, World(r, setting_ranks),
                            ShardSamplerOptions(options).with_num_workers(setting_workers));
    s.set_epoch(1);
    for (std::uint64_t w = 0; w < setting_workers; ++w) {
      REQUIRE(s.worker_size(w) >= per_worker);
      auto& v = streams[static_cast<std::size_t>(w * setting_ranks + r)];
      s.for_each(
          w, [&](const ShardSample& x) { v.push_back(x.shard); }, 0, per_worker);
    }
  }
  std::vector<std::vector<std::vector<std::uint64_t>>> batches(static_cast<std::size_t>(steps));
  for (std::uint64_t j = 0; j < steps; ++j) {
    for (std::uint64_t r = 0; r < setting_ranks; ++r) {
      const auto& v = streams[static_cast<std::size_t>((j % setting_workers) * setting_ranks + r)];
      const auto first = static_cast<std::ptrdiff_t>((j / setting_workers) * setting_micro);
      batches[static_cast<std::size_t>(j)].emplace_back(v.begin() + first, v.begin() + first + setting_micro);
    }
  }
  Measured m;
  m.sampler = mixing(l, batches);
  m.full = mixing(l, full_shuffle_batches(l, steps));
  std::vector<std::uint64_t> seen(l.sizes.size(), UINT64_MAX);
  std::uint64_t windows = 0, distinct = 0;
  for (std::size_t c = 0; c < streams.size(); ++c) {
    for (std::uint64_t begin = 0; begin + 1024 <= per_worker; begin += 1024, ++windows) {
      const std::uint64_t stamp = windows;
      for (std::uint64_t i = begin; i < begin + 1024; ++i) {
        auto& last = seen[static_cast<std::size_t>(streams[c][static_cast<std::size_t>(i)])];
        if (last != stamp) ++distinct;
        last = stamp;
      }
    }
  }
  m.shards_per_1024 = static_cast<double>(distinct) / static_cast<double>(windows);
  return m;
}

std::vector<std::uint64_t> uneven_sizes() {
  TestRng rng{2024};
  std::vector<std::uint64_t> sizes(400);
  for (auto& s : sizes) s = 200 + rng.below(4600);
  return sizes;
}

}  // namespace

TEST_CASE("default options mix micro- and global batches like a full shuffle on class-sorted layouts",
          "[shard][mixing]") {
  // Each row: the layout, the global batches measured, and the documented bound on the mean
  // distinct shards per 1024 samples of a stream (docs/SHARDS.md, "Defaults that mix").
  struct Row {
    SortedLayout layout;
    std::uint64_t steps;
    double max_shards_per_1024;
  };
  const std::vector<Row> rows = {
      {sorted_layout("1000 shards x 1000", std::vector<std::uint64_t>(1000, 1000)), 512, 70},
      {sorted_layout("400 uneven shards of 200..4800", uneven_sizes()), 384, 70},
      {sorted_layout("20 shards x 40000", std::vector<std::uint64_t>(20, 40000)), 384, 20},
      {sorted_layout("40000 shards x 10", std::vector<std::uint64_t>(40000, 10)), 384, 280},
  };
  for (const Row& row : rows) {
    const Measured m = measure(row.layout, ShardSamplerOptions().with_seed(3), row.steps);
    INFO(row.layout.name << ": micro " << m.sampler.micro_tv << " (full " << m.full.micro_tv << "), global "
                         << m.sampler.global_tv << " (full " << m.full.global_tv << "), shards per 1024 "
                         << m.shards_per_1024);
    CHECK(m.sampler.micro_tv <= 1.10 * m.full.micro_tv);
    CHECK(m.sampler.global_tv <= 1.25 * m.full.global_tv);
    CHECK(m.shards_per_1024 <= row.max_shards_per_1024);
  }
}

TEST_CASE("the previous default (contiguous lanes, runs of 8) fails the mixing bound this test enforces",
          "[shard][mixing]") {
  // The measurement itself must be able to fail: runs of 8 from 8 neighbouring lanes mix
  // a micro-batch from 8 places only.
  const auto l = sorted_layout("1000 shards x 1000", std::vector<std::uint64_t>(1000, 1000));
  const auto old =
      ShardSamplerOptions().with_seed(3).with_canonical_streams(64).with_max_open_shards(8).with_run_length(8);
  const Measured m = measure(l, old, 128);
  INFO("micro " << m.sampler.micro_tv << " global " << m.sampler.global_tv);
  CHECK(m.sampler.micro_tv > 2 * m.full.micro_tv);
  CHECK(m.sampler.global_tv > 2 * m.full.global_tv);
  CHECK(m.shards_per_1024 < 20);
}

namespace {

// Shards each node reads in a whole epoch, summed over nodes, per shard: 1.0 when every
// shard is read on one node only. World(r, W, r mod per_node, per_node).
double node_read_multiple(const std::vector<std::uint64_t>& sizes, std::uint64_t world_size, std::uint64_t per_node,
                          std::uint64_t per_rank, const ShardSamplerOptions& options, std::uint64_t* groups = nullptr) {
  const std::uint64_t nodes = world_size / per_node;
  std::vector<std::vector<bool>> touched(static_cast<std::size_t>(nodes), std::vector<bool>(sizes.size(), false));
  std::vector<bool> any(sizes.size(), false);
  for (std::uint64_t r = 0; r < world_size; ++r) {
    StreamingShardSampler s(sizes, World(r, world_size, r % per_node, per_node),
                            ShardSamplerOptions(options).with_num_workers(per_rank));
    s.set_epoch(2);
    if (groups != nullptr) *groups = s.node_groups();
    auto& mine = touched[static_cast<std::size_t>(r / per_node)];
    for (std::uint64_t w = 0; w < per_rank; ++w) {
      s.for_each(w, [&](const ShardSample& x) { mine[static_cast<std::size_t>(x.shard)] = true; });
    }
  }
  std::uint64_t reads = 0, nonempty = 0;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    nonempty += sizes[s] != 0 ? 1u : 0u;
    for (const auto& node : touched) reads += node[s] ? 1u : 0u;
  }
  return static_cast<double>(reads) / static_cast<double>(nonempty);
}

}  // namespace

TEST_CASE("the ranks of a node read shards no other node reads", "[shard][nodes]") {
  const std::vector<std::uint64_t> sizes(1000, 1000);
  std::uint64_t groups = 0;
  // 4 nodes x 8 GPUs, 1 and 2 workers: each node reads its quarter of the shard sequence.
  const double one = node_read_multiple(sizes, 32, 8, 1, ShardSamplerOptions().with_seed(5), &groups);
  CHECK(groups == 4);
  CHECK(one <= 1.01);
  CHECK(node_read_multiple(std::vector<std::uint64_t>(1000, 200), 32, 8, 2, ShardSamplerOptions().with_seed(5)) <=
        1.01);
  // Without node-aware reading (runs of 2) the same job reads the dataset about once per node.
  const double plain = node_read_multiple(std::vector<std::uint64_t>(1000, 200), 32, 8, 1,
                                          ShardSamplerOptions().with_seed(5).with_run_length(2));
  CHECK(plain > 3.5);
  // 3 nodes share no factor with 64 open shards: no node groups, every node reads all.
  groups = 0;
  CHECK(node_read_multiple(std::vector<std::uint64_t>(120, 100), 6, 2, 1, ShardSamplerOptions(), &groups) > 2.5);
  CHECK(groups == 1);
  // Fewer shards than nodes: node regions (quarters of the sequence) cut shards, so the
  // nodes share them: 3 shards over 4 regions are read 2 + 2 + 2 times, and the last one
  // by every node for the few samples after the lanes: 8 reads where a node-less deal
  // makes 12.
  CHECK(node_read_multiple({100000, 100000, 100000}, 8, 2, 1, ShardSamplerOptions().with_seed(1)) == Approx(8.0 / 3));
}

TEST_CASE("node-aware deals are disjoint, covering and balanced, and resume exactly once when nodes change",
          "[shard][nodes][resume]") {
  TestRng rng{4242};
  const std::vector<ShardSamplerOptions> variants = {
      ShardSamplerOptions().with_canonical_streams(4).with_max_open_shards(2).with_run_length(1),
      ShardSamplerOptions().with_canonical_streams(8).with_max_open_shards(4).with_run_length(1).with_shuffle_window(3),
      ShardSamplerOptions().with_canonical_streams(6).with_max_open_shards(6).with_run_length(1),
      ShardSamplerOptions().with_canonical_streams(16).with_max_open_shards(8).with_run_length(1),
  };
  for (int trial = 0; trial < 60; ++trial) {
    const auto sizes = random_sizes(rng, 14, 40);
    const Tail tail = trial % 3 == 0 ? Tail::pad : trial % 3 == 1 ? Tail::drop : Tail::uneven;
    const auto options = ShardSamplerOptions(variants[static_cast<std::size_t>(trial) % variants.size()])
                             .with_tail(tail)
                             .with_seed(rng.next());
    std::uint64_t n = 0;
    for (auto s : sizes) n += s;
    std::vector<std::uint64_t> reads(static_cast<std::size_t>(n), 0);
    std::vector<bool> read_pos(static_cast<std::size_t>(n), false);
    std::string saved;
    std::uint64_t last_dropped = 0;
    std::uint64_t entry_bound = 0;  // 16 (1 + 9K) bytes per segment, as in the sampler tests' resume property
    const int segments = 2 + static_cast<int>(rng.below(3));
    for (int seg = 0; seg < segments; ++seg) {
      const std::uint64_t per_node = 1 + rng.below(4), nodes = 1 + rng.below(4), w = per_node * nodes;
      const std::uint64_t n_workers = 1 + rng.below(3);
      std::vector<StreamingShardSampler> ranks;
      for (std::uint64_t r = 0; r < w; ++r) {
        ranks.emplace_back(sizes, World(r, w, r % per_node, per_node),
                           ShardSamplerOptions(options).with_num_workers(n_workers));
        if (saved.empty()) {
          ranks.back().set_epoch(3);
        } else {
          // Holes as spans on some ranks, compact on others: they must read the same.
          ranks.back().resume(SamplerState::from_text(saved), (r + static_cast<std::uint64_t>(seg)) % 2 == 0
                                                                  ? HoleLimit::compact()
                                                                  : HoleLimit::spans());
        }
      }
      if (saved.empty()) check_segment(ranks);
      const auto& s0 = ranks.front();
      for (std::uint64_t wk = 0; wk < n_workers; ++wk) check_plan_against_stream(ranks.back(), wk);
      const std::uint64_t k = s0.consumers();
      std::vector<std::uint64_t> done(static_cast<std::size_t>(k));
      const bool final_segment = seg + 1 == segments;
      for (std::uint64_t c = 0; c < k; ++c) {
        done[static_cast<std::size_t>(c)] = final_segment ? s0.consumer_size(c) : rng.below(s0.consumer_size(c) + 1);
      }
      // Consumers of other ranks, read through their own samplers.
      for (std::uint64_t c = 0; c < k; ++c) {
        const auto& s = ranks[static_cast<std::size_t>(c % w)];
        REQUIRE(s.consumer_size(c) == s0.consumer_size(c));
        for (std::uint64_t i = 0; i < done[static_cast<std::size_t>(c)]; ++i) {
          const auto x = s.consumer_sample(c, i);
          REQUIRE(s.consumer_position(c, i) == s0.consumer_position(c, i));
          if (x.is_padding) continue;
          ++reads[static_cast<std::size_t>(x.index)];
          read_pos[static_cast<std::size_t>(s.consumer_position(c, i))] = true;
        }
      }
      const SamplerState state =
          ranks[static_cast<std::size_t>(rng.below(w))].state(distsampler::ConsumerProgress(done));
      if (w > 1) REQUIRE(ranks[1].state(distsampler::ConsumerProgress(done)) == state);  // the other form
      INFO("trial " << trial << " segment " << seg << " world " << w << " per node " << per_node << " workers "
                    << n_workers << " groups " << s0.node_groups() << " state " << state.to_text());
      CHECK(consumed_positions(state) == read_pos);
      entry_bound += 16 * (1 + 9 * k);
      CHECK(16 * state.ahead.size() + 32 * state.strided.size() <= entry_bound);
      saved = state.to_text();
      last_dropped = tail == Tail::drop ? (n - s0.start()) % k : 0;
    }
    std::uint64_t missing = 0;
    for (const auto c : reads) {
      REQUIRE(c <= 1);
      missing += c == 0 ? 1u : 0u;
    }
    CHECK(missing == last_dropped);
  }
}

TEST_CASE("consumer slots group the consumers of a node and refuse layouts that do not divide", "[shard][nodes]") {
  using distsampler::ConsumerSlots;
  // 4 ranks, 2 per node, 2 node groups, 2 workers: slot = (worker * 1 + node / 2 ...) * 2 + node.
  const ConsumerSlots slots(4, 2, 2);
  // Consumer c = worker * 4 + rank; node = rank / 2; i = worker * 2 + rank mod 2; slot = 2i + node.
  const std::vector<std::uint64_t> expected{0, 2, 1, 3, 4, 6, 5, 7};
  for (std::uint64_t c = 0; c < 8; ++c) CHECK(slots.slot(c) == expected[c]);
  CHECK(ConsumerSlots().slot(5) == 5);
  CHECK_THROWS_AS(ConsumerSlots(6, 4, 1), distsampler::config_error);
  CHECK_THROWS_WITH(ConsumerSlots(8, 2, 3),
                    "ConsumerSlots: 3 groups of nodes of 2 ranks do not divide world_size 8 "
                    "(expected per_node dividing world_size and groups dividing the node count)");
}

TEST_CASE("a prefetch plan covers exactly a window's records in the fewest ranges per shard", "[shard][prefetch]") {
  TestRng rng{9090};
  for (int trial = 0; trial < 80; ++trial) {
    const auto sizes = random_sizes(rng, 12, 60);
    auto options = small_options(static_cast<std::uint64_t>(trial), Tail::pad, rng.next());
    if (trial % 2 == 0) options = ShardSamplerOptions().with_seed(rng.next());
    const std::uint64_t w = 1 + rng.below(3), workers = 1 + rng.below(2);
    const auto ranks = make_ranks(sizes, w, workers, options, rng.below(3));
    const auto& s = ranks[static_cast<std::size_t>(rng.below(w))];
    const std::uint64_t worker = rng.below(workers), size = s.worker_size(worker);
    const std::uint64_t first = rng.below(size + 1), count = rng.below(size - first + 2);
    const std::uint64_t gap = rng.below(3) == 0 ? 0 : rng.below(20);
    const auto plan = s.prefetch_plan(worker, first, count, gap);
    // The records the window reads, per shard.
    std::vector<std::vector<bool>> read(sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) read[i].assign(static_cast<std::size_t>(sizes[i]), false);
    const std::uint64_t last = std::min(size, first + count);
    std::vector<std::uint64_t> first_slot(sizes.size(), UINT64_MAX);
    for (std::uint64_t i = first; i < last; ++i) {
      const auto x = s.sample(worker, i);
      read[static_cast<std::size_t>(x.shard)][static_cast<std::size_t>(x.offset)] = true;
    }
    INFO("trial " << trial << " window [" << first << ", " << last << ") gap " << gap << " ranges " << plan.size());
    std::vector<std::vector<bool>> covered = read;
    for (auto& c : covered) c.assign(c.size(), false);
    std::uint64_t previous_first = 0;
    for (const auto& r : plan) {
      REQUIRE(r.begin < r.end);
      REQUIRE(r.end <= sizes[static_cast<std::size_t>(r.shard)]);
      auto& shard_read = read[static_cast<std::size_t>(r.shard)];
      // Tight ends: a range begins and ends with records the window reads.
      REQUIRE(shard_read[static_cast<std::size_t>(r.begin)]);
      REQUIRE(shard_read[static_cast<std::size_t>(r.end - 1)]);
      // Ordered by first read slot, which reads the range.
      REQUIRE(r.first_sample >= previous_first);
      previous_first = r.first_sample;
      const auto at = s.sample(worker, r.first_sample);
      REQUIRE(at.shard == r.shard);
      REQUIRE((at.offset >= r.begin && at.offset < r.end));
      std::uint64_t unread_run = 0;
      for (std::uint64_t o = r.begin; o < r.end; ++o) {
        REQUIRE_FALSE(covered[static_cast<std::size_t>(r.shard)][static_cast<std::size_t>(o)]);  // disjoint
        covered[static_cast<std::size_t>(r.shard)][static_cast<std::size_t>(o)] = true;
        unread_run = shard_read[static_cast<std::size_t>(o)] ? 0 : unread_run + 1;
        REQUIRE(unread_run <= gap);  // only gaps of at most max_gap are read along
      }
    }
    // Covering, and fewest: two ranges of a shard are more than max_gap records apart.
    for (std::size_t sh = 0; sh < sizes.size(); ++sh) {
      std::uint64_t unread = 0;
      bool inside = false, seen = false;
      for (std::size_t o = 0; o < read[sh].size(); ++o) {
        if (read[sh][o]) REQUIRE(covered[sh][o]);
        if (covered[sh][o] && !inside && seen) REQUIRE(unread > gap);
        if (covered[sh][o]) {
          inside = true;
          seen = true;
          unread = 0;
        } else {
          inside = false;
          ++unread;
        }
      }
    }
  }
}

TEST_CASE("with the defaults a window of 1024 samples is about one read per open lane", "[shard][prefetch]") {
  const std::vector<std::uint64_t> sizes(1000, 1000);
  StreamingShardSampler s(sizes, World(3, 8), ShardSamplerOptions().with_num_workers(2));
  const auto exact = s.prefetch_plan(1, 4096, 1024);
  const auto joined = s.prefetch_plan(1, 4096, 1024, 16);
  std::uint64_t total = 0;
  for (const auto& r : joined) total += r.end - r.begin;
  INFO("exact " << exact.size() << " joined " << joined.size() << " records " << total);
  // The two workers of a rank share 64 lanes, taking alternate rows of windows of 16: the
  // window reads 16 of the 32 records each lane advances, so exact ranges are short and
  // a gap of 16 joins each lane's into one.
  CHECK(exact.size() > 500);
  CHECK(joined.size() <= 72);
  CHECK(total <= 3 * 1024);
  CHECK(s.read_plan(1, 4096, 1024).size() == 1024);
}

TEST_CASE("a node's consumers together read each lane in long runs", "[shard][prefetch][nodes]") {
  // 4 nodes x 8 GPUs x 2 workers over 1000 x 1000: node 1's 16 consumers, 1024 slots each.
  const std::vector<std::uint64_t> sizes(1000, 1000);
  const auto o = ShardSamplerOptions().with_num_workers(2).with_seed(8);
  StreamingShardSampler s(sizes, World(9, 32, 1, 8), o);
  const auto plan = s.node_prefetch_plan(2048, 1024);
  // Exactly the union of the node's consumers' records.
  std::vector<std::vector<bool>> read(1000, std::vector<bool>(1000, false)), covered = read;
  for (std::uint64_t r = 8; r < 16; ++r) {
    StreamingShardSampler t(sizes, World(r, 32, r % 8, 8), o);
    for (std::uint64_t w = 0; w < 2; ++w) {
      t.for_each(
          w, [&](const ShardSample& x) { read[x.shard][x.offset] = true; }, 2048, 1024);
    }
  }
  std::uint64_t records = 0;
  for (const auto& r : plan) {
    for (std::uint64_t o2 = r.begin; o2 < r.end; ++o2) {
      REQUIRE(read[r.shard][o2]);
      REQUIRE_FALSE(covered[r.shard][o2]);
      covered[r.shard][o2] = true;
      ++records;
    }
  }
  CHECK(records == 16 * 1024);
  CHECK(covered == read);
  // The node reads its 128 lanes, 128 consecutive records each (plus shard boundaries):
  // a few ranges per lane, where one consumer alone needs hundreds for its 1024 samples.
  INFO("node ranges " << plan.size() << ", one consumer " << s.prefetch_plan(0, 2048, 1024).size());
  CHECK(plan.size() <= 128 * 3);
  CHECK(s.prefetch_plan(0, 2048, 1024).size() > 200);
  // Locality unknown: the node is the rank itself, its two workers' records merged.
  StreamingShardSampler alone(sizes, World(9, 32), o);
  std::uint64_t alone_records = 0;
  for (const auto& r : alone.node_prefetch_plan(0, 64)) alone_records += r.end - r.begin;
  CHECK(alone_records == 128);
  CHECK(alone.node_prefetch_plan(0, 64).size() <=
        alone.prefetch_plan(0, 0, 64).size() + alone.prefetch_plan(1, 0, 64).size());
}

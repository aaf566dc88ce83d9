// Tests of StreamingShardSampler: disjoint, covering, balanced, local, hardware-independent and exactly-once on resume.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <distsampler/streaming_shard_sampler.hpp>
#include <distsampler/verify.hpp>

namespace {

using distsampler::PartitionChecker;
using distsampler::SamplerState;
using distsampler::ShardRange;
using distsampler::ShardSample;
using distsampler::ShardSamplerOptions;
using distsampler::StreamingShardSampler;
using distsampler::Tail;
using distsampler::World;

// A small deterministic generator for test layouts (never std distributions).
struct TestRng {
  std::uint64_t state;
  std::uint64_t next() {
    state += 0x9e3779b97f4a7c15u;
    return distsampler::detail::mix64(state);
  }
  std::uint64_t below(std::uint64_t bound) { return distsampler::detail::mulhi64(next(), bound); }
};

std::vector<std::uint64_t> random_sizes(TestRng& rng, std::uint64_t max_shards, std::uint64_t max_size) {
  std::vector<std::uint64_t> sizes(static_cast<std::size_t>(rng.below(max_shards + 1)));
  for (auto& s : sizes) s = rng.below(4) == 0 ? 0 : rng.below(max_size + 1);
  return sizes;
}

// One sampler per rank.
std::vector<StreamingShardSampler> make_ranks(const std::vector<std::uint64_t>& sizes, std::uint64_t world_size,
                                              std::uint64_t workers, const ShardSamplerOptions& options,
                                              std::uint64_t epoch) {
  std::vector<StreamingShardSampler> ranks;
  for (std::uint64_t r = 0; r < world_size; ++r) {
    ranks.emplace_back(sizes, World(r, world_size), workers, options);
    ranks.back().set_epoch(epoch);
  }
  return ranks;
}

// Checks that the read plan of one worker, replayed, yields exactly its stream: ranges
// start in plan order, each is read in increasing consecutive offsets, and no more
// than max_open_shards ranges are open at once. Returns the most ranges open at once.
std::uint64_t check_plan_against_stream(const StreamingShardSampler& s, std::uint64_t worker) {
  const auto plan = s.read_plan(worker);
  std::uint64_t total = 0;
  for (const auto& r : plan) total += r.end - r.begin;
  REQUIRE(total == s.worker_size(worker));
  // Replay: a slot must be the first record of the next unstarted range, or the next
  // record of an already started, unfinished range.
  std::vector<std::uint64_t> next(plan.size()), remaining(plan.size());
  for (std::size_t r = 0; r < plan.size(); ++r) {
    next[r] = plan[r].begin;
    remaining[r] = plan[r].end - plan[r].begin;
  }
  std::size_t started = 0;
  std::uint64_t open = 0, max_open = 0;
  for (std::uint64_t i = 0; i < total; ++i) {
    const ShardSample x = s.sample(worker, i);
    std::size_t hit = SIZE_MAX;
    if (started < plan.size() && plan[started].first_sample == i) {
      hit = started++;
      ++open;
      max_open = std::max(max_open, open);
    } else {
      for (std::size_t r = 0; r < started; ++r) {
        if (remaining[r] != 0 && plan[r].shard == x.shard && next[r] == x.offset) {
          hit = r;
          break;
        }
      }
    }
    INFO("worker " << worker << " slot " << i << " shard " << x.shard << " offset " << x.offset);
    REQUIRE(hit != SIZE_MAX);
    REQUIRE(plan[hit].shard == x.shard);
    REQUIRE(next[hit] == x.offset);
    ++next[hit];
    if (--remaining[hit] == 0) --open;
  }
  CHECK(started == plan.size());
  CHECK(max_open <= s.max_open_shards());
  // The batched fill gives the same samples, for the whole stream and for windows of it.
  std::vector<ShardSample> filled(static_cast<std::size_t>(total));
  s.fill(worker, 0, total, filled.data());
  for (std::uint64_t i = 0; i < total; ++i) REQUIRE(filled[static_cast<std::size_t>(i)] == s.sample(worker, i));
  std::vector<ShardSample> walked;
  s.for_each(worker, [&](const ShardSample& x) { walked.push_back(x); });
  REQUIRE(walked == filled);
  // The range-for iterator (chunked) agrees, through pre- and post-increment.
  const auto stream = s.stream(worker);
  REQUIRE(stream.size() == total);
  std::uint64_t slot = 0;
  for (auto it = stream.begin(); it != stream.end(); ++slot) {
    REQUIRE(it.position() == slot);
    const ShardSample here = *it;
    REQUIRE(here == filled[static_cast<std::size_t>(slot)]);
    const auto old = it++;
    REQUIRE(*old == here);
    REQUIRE(old->offset == here.offset);
  }
  REQUIRE(slot == total);
  walked.clear();
  s.for_each(worker, [&](const ShardSample& x) { walked.push_back(x); }, total / 3, total);  // clipped at the end
  REQUIRE(walked == std::vector<ShardSample>(filled.begin() + static_cast<std::ptrdiff_t>(total / 3), filled.end()));
  for (std::uint64_t first = 0; first < total; first += 1 + first / 3) {
    const std::uint64_t count = std::min<std::uint64_t>(total - first, 1 + (first * 7) % 23);
    std::vector<ShardSample> part(static_cast<std::size_t>(count));
    s.fill(worker, first, count, part.data());
    for (std::uint64_t i = 0; i < count; ++i) REQUIRE(part[static_cast<std::size_t>(i)] == s.sample(worker, first + i));
  }
  return max_open;
}

// Checks disjoint/covering/balanced of one segment over every consumer, per rank and per worker slot.
void check_segment(const std::vector<StreamingShardSampler>& ranks) {
  const auto& s0 = ranks.front();
  const std::uint64_t w = s0.world().world_size, workers = s0.num_workers(), k_all = s0.consumers();
  const Tail tail = s0.options().tail;
  PartitionChecker checker(s0.dataset_size(), k_all, tail);
  std::vector<std::uint64_t> rank_sizes;
  for (const auto& s : ranks) {
    rank_sizes.push_back(s.size());
    for (std::uint64_t wk = 0; wk < workers; ++wk) {
      for (const ShardSample x : s.stream(wk)) {
        REQUIRE(x.shard < s.num_shards());
        REQUIRE(x.offset < s.shard_sizes()[static_cast<std::size_t>(x.shard)]);
        checker.add(s.consumer(wk), x.index, x.is_padding);
      }
    }
  }
  const auto report = checker.finish();
  INFO(report.summary());
  CHECK(report.ok());
  // Ranks: equal sizes, uneven within one. Worker slots: equal on every rank.
  const auto [lo, hi] = std::minmax_element(rank_sizes.begin(), rank_sizes.end());
  CHECK(*hi - *lo <= (tail == Tail::uneven ? 1u : 0u));
  if (tail != Tail::uneven) {
    for (std::uint64_t wk = 0; wk < workers; ++wk) {
      for (const auto& s : ranks) CHECK(s.worker_size(wk) == ranks.front().worker_size(wk));
    }
  }
  (void)w;
}

ShardSamplerOptions small_options(std::uint64_t variant, Tail tail, std::uint64_t seed) {
  ShardSamplerOptions o;
  o.seed = seed;
  o.tail = tail;
  switch (variant % 4) {
    case 0: o.canonical_streams = 1; o.max_open_shards = 1; o.run_length = 1; break;
    case 1: o.canonical_streams = 4; o.max_open_shards = 2; o.run_length = 2; break;
    case 2: o.canonical_streams = 3; o.max_open_shards = 3; o.run_length = 1; break;
    default: o.canonical_streams = 5; o.max_open_shards = 2; o.run_length = 3; o.shuffle = variant % 8 != 3; break;
  }
  return o;
}

// The set of global-order positions a state marks consumed, from its documented meaning.
std::vector<bool> consumed_positions(const SamplerState& st) {
  std::vector<bool> done(static_cast<std::size_t>(st.dataset_size), false);
  for (std::uint64_t p = 0; p < st.consumed; ++p) done[static_cast<std::size_t>(p)] = true;
  for (const auto& r : st.ahead) {
    for (std::uint64_t p = r.begin; p < r.end; ++p) done[static_cast<std::size_t>(p)] = true;
  }
  return done;
}

// Torch's DataLoader over iterable workers, simulated step by step: batch j comes from
// the next worker in turn that still has samples; returns samples handed out per worker.
std::vector<std::uint64_t> simulate_loader(const std::vector<std::uint64_t>& worker_sizes, std::uint64_t batches,
                                           std::uint64_t batch_size) {
  std::vector<std::uint64_t> done(worker_sizes.size(), 0);
  std::size_t w = 0;
  for (std::uint64_t j = 0; j < batches; ++j) {
    std::size_t tries = 0;
    while (done[w] == worker_sizes[w]) {
      w = (w + 1) % worker_sizes.size();
      REQUIRE(++tries <= worker_sizes.size());
    }
    done[w] = std::min(worker_sizes[w], done[w] + batch_size);
    w = (w + 1) % worker_sizes.size();
  }
  return done;
}

}  // namespace

TEST_CASE("small shard layouts are disjoint, covering and balanced for every world, worker count and tail",
          "[shards]") {
  TestRng rng{12345};
  for (int layout = 0; layout < 24; ++layout) {
    const auto sizes = random_sizes(rng, 7, 9);
    for (const Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
      for (std::uint64_t w = 1; w <= 6; ++w) {
        for (std::uint64_t workers = 1; workers <= 3; ++workers) {
          const auto options = small_options(static_cast<std::uint64_t>(layout) + w, tail, rng.next());
          INFO("layout " << layout << " shards " << sizes.size() << " W " << w << " workers " << workers
                         << " tail " << distsampler::to_string(tail) << " streams " << options.canonical_streams);
          const auto ranks = make_ranks(sizes, w, workers, options, static_cast<std::uint64_t>(layout % 3));
          check_segment(ranks);
          for (const auto& s : ranks) {
            for (std::uint64_t wk = 0; wk < workers; ++wk) check_plan_against_stream(s, wk);
          }
        }
      }
    }
  }
}

TEST_CASE("fewer shards than consumers and wildly unequal shards still balance", "[shards]") {
  SECTION("three shards, eighteen consumers") {
    for (const Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
      ShardSamplerOptions o;
      o.tail = tail;
      o.seed = 7;
      check_segment(make_ranks({5, 0, 40}, 6, 3, o, 2));
    }
  }
  SECTION("one shard of 10^6 and a thousand of 10") {
    std::vector<std::uint64_t> sizes(1000, 10);
    sizes.insert(sizes.begin() + 500, 1000000);
    ShardSamplerOptions o;
    o.seed = 2024;
    const auto ranks = make_ranks(sizes, 4, 2, o, 5);
    check_segment(ranks);
    CHECK(ranks[0].size() == ranks[3].size());
    const auto opened = check_plan_against_stream(ranks[1], 1);
    CHECK(opened == o.max_open_shards);
  }
}

TEST_CASE("seeded large layouts keep every promise", "[shards]") {
  TestRng rng{99};
  for (int round = 0; round < 4; ++round) {
    auto sizes = random_sizes(rng, 400, 700);
    ShardSamplerOptions o;
    o.seed = rng.next();
    o.tail = round % 3 == 0 ? Tail::pad : round % 3 == 1 ? Tail::drop : Tail::uneven;
    o.canonical_streams = 1 + rng.below(70);
    o.max_open_shards = 1 + rng.below(std::min<std::uint64_t>(o.canonical_streams, 12));
    o.run_length = 1 + rng.below(16);
    const std::uint64_t w = 1 + rng.below(8), workers = 1 + rng.below(4);
    INFO("round " << round << " W " << w << " workers " << workers);
    const auto ranks = make_ranks(sizes, w, workers, o, rng.next());
    check_segment(ranks);
    check_plan_against_stream(ranks.back(), workers - 1);
  }
}

TEST_CASE("the global order depends on seed, epoch, shard sizes and options, not on world or workers", "[shards]") {
  TestRng rng{4242};
  const auto sizes = random_sizes(rng, 30, 40);
  ShardSamplerOptions o;
  o.seed = 11;
  o.canonical_streams = 6;
  o.max_open_shards = 3;
  o.run_length = 2;
  StreamingShardSampler single(sizes, World(), 1, o);
  single.set_epoch(3);
  const std::uint64_t n = single.dataset_size();
  std::vector<std::uint64_t> order;
  for (std::uint64_t p = 0; p < n; ++p) order.push_back(single.at_global(p).index);
  {
    auto sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (std::uint64_t p = 0; p < n; ++p) REQUIRE(sorted[static_cast<std::size_t>(p)] == p);
  }
  for (std::uint64_t w = 1; w <= 5; ++w) {
    for (std::uint64_t workers = 1; workers <= 3; ++workers) {
      const auto ranks = make_ranks(sizes, w, workers, o, 3);
      for (std::uint64_t p = 0; p < n; ++p) REQUIRE(ranks.back().at_global(p).index == order[static_cast<std::size_t>(p)]);
      // After any equal progress d, the state marks exactly the positions read; at block
      // boundaries of the full rounds, they are a prefix of the order.
      const std::uint64_t longest = ranks.front().worker_size(0);
      for (std::uint64_t done = 0; done <= longest; ++done) {
        std::vector<bool> read(static_cast<std::size_t>(n), false);
        for (const auto& s : ranks) {
          for (std::uint64_t wk = 0; wk < workers; ++wk) {
            for (std::uint64_t i = 0; i < std::min(done, s.worker_size(wk)); ++i) {
              const auto x = s.sample(wk, i);
              if (!x.is_padding) read[static_cast<std::size_t>(x.index)] = true;
            }
          }
        }
        const SamplerState st = ranks[static_cast<std::size_t>(done % w)].state(done);
        INFO("W " << w << " workers " << workers << " done " << done << " state " << st.to_text());
        const auto marked = consumed_positions(st);
        for (std::uint64_t p = 0; p < n; ++p) {
          REQUIRE(marked[static_cast<std::size_t>(p)] == read[static_cast<std::size_t>(order[static_cast<std::size_t>(p)])]);
        }
        const std::uint64_t k = ranks.front().consumers(), b = ranks.front().block_size();
        if (done % b == 0 && done <= (n / k / b) * b) CHECK(st.ahead.empty());
      }
    }
  }
}

TEST_CASE("shard order and within-shard order change every epoch", "[shards]") {
  std::vector<std::uint64_t> sizes(50, 20);
  StreamingShardSampler s(sizes, World(), 1, {});
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
  StreamingShardSampler t(sizes, World(), 1, other);
  t.set_epoch(3);
  StreamingShardSampler u(sizes, World(), 1, {});
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

TEST_CASE("small window permutations are bijections with near-uniform draws", "[shards][window]") {
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
  for (const auto& [code, c] : counts) chi2 += (static_cast<double>(c) - 2000.0) * (static_cast<double>(c) - 2000.0) / 2000.0;
  CHECK(chi2 < 60);
  // The 128-bit multiply and the portable one agree.
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t a = rng.next() >> rng.below(64), b = rng.next() >> rng.below(64);
    REQUIRE(distsampler::detail::mulhi64(a, b) == distsampler::detail::mulhi64_portable(a, b));
  }
  CHECK(distsampler::detail::mulhi64_portable(UINT64_MAX, UINT64_MAX) == UINT64_MAX - 1);
}

TEST_CASE("shuffle windows reorder a shard's runs and stay within their window of the lane", "[shards][window]") {
  const std::vector<std::uint64_t> sizes(40, 100);  // 4000 samples
  ShardSamplerOptions o;
  o.canonical_streams = 8;
  o.max_open_shards = 4;
  o.run_length = 1;
  o.shuffle_window = 1;
  StreamingShardSampler in_order(sizes, World(), 1, o);
  in_order.set_epoch(2);
  CHECK(in_order_successors(in_order) > 0.95);
  for (const std::uint64_t w : {2u, 7u, 16u, 64u}) {
    o.shuffle_window = w;
    StreamingShardSampler s(sizes, World(), 1, o);
    s.set_epoch(2);
    INFO("window " << w);
    // Runs of 1 in windows of w: a record's file successor comes next only by chance.
    CHECK(in_order_successors(s) < (w == 2 ? 0.7 : 0.3));
    // Bound: the runs read in rows [t*w, (t+1)*w) of a lane are that lane's runs
    // t*w .. (t+1)*w - 1 of Q, so a window never reaches past its w runs of the lane.
    const std::uint64_t c = 8, lane_length = 4000 / c, b = 4;
    for (std::uint64_t p = 0; p < 4000; ++p) {
      const std::uint64_t run = (p / b) * 4 + (p % b) % 4, lane = run % c, row = run / c;
      const std::uint64_t q = s.sequence_position(p);
      const std::uint64_t window_begin = lane * lane_length + (row / w) * w;
      REQUIRE(q >= window_begin);
      REQUIRE(q < std::min(window_begin + w, (lane + 1) * lane_length));
    }
  }
  // Runs of 8 keep 7 of 8 successors in order; the window moves the runs around.
  o.run_length = 8;
  o.shuffle_window = 16;
  StreamingShardSampler runs(sizes, World(), 1, o);
  const double f = in_order_successors(runs);
  CHECK(f > 0.85);
  CHECK(f < 0.93);
  // Unshuffled: the window does not apply.
  o.shuffle = false;
  StreamingShardSampler plain(sizes, World(), 1, o);
  CHECK(in_order_successors(plain) > 0.99);
}

TEST_CASE("resuming at random points with other world sizes and worker counts reads each sample exactly once",
          "[shards][resume]") {
  // Segments of random length on random worlds; every consumer stops at its own random
  // point (equal, per worker, per consumer, or where a round-robin loader stops). The
  // state must mark exactly what was read, and the next segment must read the rest.
  TestRng rng{777};
  for (int trial = 0; trial < 150; ++trial) {
    const auto sizes = random_sizes(rng, 12, 30);
    const Tail tail = trial % 3 == 0 ? Tail::pad : trial % 3 == 1 ? Tail::drop : Tail::uneven;
    auto options = small_options(static_cast<std::uint64_t>(trial), tail, rng.next());
    const std::uint64_t epoch = rng.below(5);
    std::uint64_t n = 0;
    for (auto s : sizes) n += s;
    std::vector<std::uint64_t> reads(static_cast<std::size_t>(n), 0);
    std::vector<bool> read_pos(static_cast<std::size_t>(n), false);  // by global-order position
    std::string saved;
    std::uint64_t last_dropped = 0;
    const int segments = 1 + static_cast<int>(rng.below(5));
    for (int seg = 0; seg < segments; ++seg) {
      const std::uint64_t w = 1 + rng.below(6), workers = 1 + rng.below(3);
      std::vector<StreamingShardSampler> ranks;
      for (std::uint64_t r = 0; r < w; ++r) {
        ranks.emplace_back(sizes, World(r, w), workers, options);
        if (saved.empty()) {
          ranks.back().set_epoch(epoch);
        } else {
          ranks.back().load_state(rng.below(2) == 0 ? SamplerState::from_text(saved)
                                                    : SamplerState::from_bytes(SamplerState::from_text(saved).to_bytes()));
        }
      }
      const auto& s0 = ranks.front();
      // The segment is exactly what earlier segments left.
      {
        std::vector<bool> in_segment(static_cast<std::size_t>(n), false);
        for (const auto& r : s0.remaining_ranges()) {
          for (std::uint64_t p = r.begin; p < r.end; ++p) in_segment[static_cast<std::size_t>(p)] = true;
        }
        for (std::uint64_t p = 0; p < n; ++p) REQUIRE(in_segment[static_cast<std::size_t>(p)] == !read_pos[static_cast<std::size_t>(p)]);
      }
      // The read plan still replays the stream with at most max_open_shards ranges open,
      // also when the segment has holes.
      for (std::uint64_t wk = 0; wk < workers; ++wk) check_plan_against_stream(ranks.back(), wk);
      const std::uint64_t k = s0.consumers();
      std::vector<std::uint64_t> done(static_cast<std::size_t>(k));
      SamplerState state;
      const bool final_segment = seg + 1 == segments;
      const std::uint64_t how = final_segment ? 0 : rng.below(4);
      if (how == 0) {  // equal progress
        const std::uint64_t d = final_segment ? s0.worker_size(0) : rng.below(s0.worker_size(0) + 1);
        for (std::uint64_t c = 0; c < k; ++c) done[static_cast<std::size_t>(c)] = std::min(d, s0.consumer_size(c));
        state = ranks[static_cast<std::size_t>(rng.below(w))].state(d);
      } else if (how == 1) {  // per worker, equal across ranks
        std::vector<std::uint64_t> per(static_cast<std::size_t>(workers));
        std::uint64_t shortest = UINT64_MAX;
        for (std::uint64_t c = 0; c < k; ++c) shortest = std::min(shortest, s0.consumer_size(c));
        for (auto& d : per) d = rng.below(shortest + 1);
        for (std::uint64_t c = 0; c < k; ++c) done[static_cast<std::size_t>(c)] = per[static_cast<std::size_t>(c / w)];
        state = ranks[static_cast<std::size_t>(rng.below(w))].state_per_worker(per);
      } else if (how == 2) {  // every consumer on its own
        for (std::uint64_t c = 0; c < k; ++c) done[static_cast<std::size_t>(c)] = rng.below(s0.consumer_size(c) + 1);
        state = s0.state_per_consumer(done);
      } else {  // a round-robin loader on every rank
        const std::uint64_t batch = 1 + rng.below(7);
        std::uint64_t most = 0;
        std::vector<std::vector<std::uint64_t>> rank_sizes(static_cast<std::size_t>(w));
        for (std::uint64_t r = 0; r < w; ++r) {
          std::uint64_t total = 0;
          for (std::uint64_t wk = 0; wk < workers; ++wk) {
            const std::uint64_t size = ranks[static_cast<std::size_t>(r)].worker_size(wk);
            rank_sizes[static_cast<std::size_t>(r)].push_back(size);
            total += (size + batch - 1) / batch;
          }
          most = std::max(most, total);
        }
        const std::uint64_t batches = rng.below(most + 1);
        for (std::uint64_t r = 0; r < w; ++r) {
          std::uint64_t total = 0;
          for (const auto size : rank_sizes[static_cast<std::size_t>(r)]) total += (size + batch - 1) / batch;
          const auto per = simulate_loader(rank_sizes[static_cast<std::size_t>(r)], std::min(batches, total), batch);
          if (batches <= total) CHECK(ranks[static_cast<std::size_t>(r)].loader_worker_done(batches, batch) == per);
          for (std::uint64_t wk = 0; wk < workers; ++wk) done[static_cast<std::size_t>(wk * w + r)] = per[static_cast<std::size_t>(wk)];
        }
        state = ranks[static_cast<std::size_t>(rng.below(w))].state_after_batches(batches, batch);
      }
      for (std::uint64_t c = 0; c < k; ++c) {
        const auto& s = ranks[static_cast<std::size_t>(c % w)];
        for (std::uint64_t i = 0; i < done[static_cast<std::size_t>(c)]; ++i) {
          const auto x = s.consumer_sample(c, i);
          if (x.is_padding) continue;
          ++reads[static_cast<std::size_t>(x.index)];
          read_pos[static_cast<std::size_t>(s.consumer_position(c, i))] = true;
        }
      }
      INFO("trial " << trial << " segment " << seg << " how " << how << " state " << state.to_text());
      CHECK(state.epoch == epoch);
      CHECK(consumed_positions(state) == read_pos);
      saved = state.to_text();
      last_dropped = tail == Tail::drop ? (n - s0.start()) % k : 0;
    }
    INFO("trial " << trial << " n " << n << " tail " << distsampler::to_string(tail));
    std::uint64_t missing = 0;
    for (const auto c : reads) {
      REQUIRE(c <= 1);
      missing += c == 0 ? 1u : 0u;
    }
    CHECK(missing == last_dropped);
  }
}

TEST_CASE("with the same world and workers, every stream continues exactly where an equal stop left it",
          "[shards][resume]") {
  TestRng rng{31337};
  for (int trial = 0; trial < 120; ++trial) {
    const auto sizes = random_sizes(rng, 14, 60);
    const Tail tail = trial % 3 == 0 ? Tail::pad : trial % 3 == 1 ? Tail::drop : Tail::uneven;
    const auto options = small_options(static_cast<std::uint64_t>(trial), tail, rng.next());
    const std::uint64_t w = 1 + rng.below(4), workers = 1 + rng.below(3);
    const auto original = make_ranks(sizes, w, workers, options, 1);
    const auto& s0 = original.front();
    const std::uint64_t k = s0.consumers(), b = s0.block_size();
    const std::uint64_t full = (s0.dataset_size() / k / b) * b;  // slots of the full rounds
    // Stop twice at equal counts inside the full rounds, reloading the same world each time.
    const std::uint64_t first_stop = rng.below(full + 1);
    const std::uint64_t second_stop = first_stop + rng.below(full - first_stop + 1);
    SamplerState st = original[static_cast<std::size_t>(rng.below(w))].state(first_stop);
    for (const std::uint64_t stop : {first_stop, second_stop}) {  // the second resumes the resumed segment
      std::vector<StreamingShardSampler> resumed;
      for (std::uint64_t r = 0; r < w; ++r) {
        resumed.emplace_back(sizes, World(r, w), workers, options);
        resumed.back().load_state(SamplerState::from_text(st.to_text()));
      }
      INFO("trial " << trial << " W " << w << " workers " << workers << " stop " << stop << " state " << st.to_text());
      for (std::uint64_t r = 0; r < w; ++r) {
        const auto& o = original[static_cast<std::size_t>(r)];
        const auto& s = resumed[static_cast<std::size_t>(r)];
        for (std::uint64_t wk = 0; wk < workers; ++wk) {
          REQUIRE(s.worker_size(wk) == o.worker_size(wk) - stop);
          for (std::uint64_t i = 0; i < s.worker_size(wk); ++i) REQUIRE(s.sample(wk, i) == o.sample(wk, stop + i));
        }
      }
      if (stop == first_stop) st = resumed.front().state(second_stop - first_stop);
    }
  }
}

TEST_CASE("a stop inside blocks records the documented ranges, round-trips and is rejected by other layouts",
          "[shards][resume]") {
  ShardSamplerOptions o;
  o.run_length = 2;
  o.max_open_shards = 2;
  o.canonical_streams = 4;
  // 220 samples, 4 consumers, blocks of 4: consumer c reads blocks c, c + 4, ... of the
  // order, so 3 samples each leave [0, 3) done and 3 of each of blocks 1..3 ahead.
  StreamingShardSampler s({100, 50, 0, 70}, World(1, 2), 2, o);
  s.set_epoch(4);
  const SamplerState st = s.state(3);
  CHECK(st.consumed == 3);
  CHECK(st.ahead == std::vector<distsampler::PositionRange>{{4, 7}, {8, 11}, {12, 15}});
  CHECK(st.consumed_total() == 12);
  CHECK(st.to_text().rfind("distsampler-state v3 sampler=shard dataset_size=220 seed=0 shuffle=true tail=pad "
                           "engine=shard-v2%20shuffle%20",
                           0) == 0);
  CHECK(st.to_text().find(" epoch=4 consumed=3 ahead=4-7,8-11,12-15 checksum=0x") != std::string::npos);
  // At a block boundary of every consumer the state is a plain prefix (no ranges).
  const SamplerState at8 = s.state(8);
  CHECK(at8.consumed == 32);
  CHECK(at8.ahead.empty());
  CHECK(at8.to_bytes().size() == 80 + 5 + at8.engine.size());
  // Per worker: workers 0 (consumers 0, 1) read 5, workers 1 (consumers 2, 3) read 2:
  // blocks 0 and 1 whole, 2 and 3 two each, and one of blocks 4 and 5.
  const SamplerState pw = s.state_per_worker({5, 2});
  CHECK(pw.consumed == 10);
  CHECK(pw.ahead == std::vector<distsampler::PositionRange>{{12, 14}, {16, 17}, {20, 21}});
  CHECK(s.state_per_consumer({5, 5, 2, 2}) == pw);
  // All done: everything consumed.
  CHECK(s.state(55).consumed == 220);
  CHECK(s.state(55).ahead.empty());

  const auto bytes = st.to_bytes();
  CHECK(bytes.size() == 80 + 5 + st.engine.size() + 16 * 3);
  StreamingShardSampler t({100, 50, 0, 70}, World(0, 3), 1, o);
  t.load_state(SamplerState::from_bytes(bytes.data(), bytes.size()));
  CHECK(t.epoch() == 4);
  CHECK(t.start() == 12);
  CHECK(t.remaining_ranges() ==
        std::vector<distsampler::PositionRange>{{3, 4}, {7, 8}, {11, 12}, {15, 220}});
  // The holes before the first untouched block (3, 7, 11 and 15, up to 16) are read
  // first, one per consumer of the 3; then blocks of 4 from position 15 of the segment.
  CHECK(t.consumer_position(0, 0) == 3);
  CHECK(t.consumer_position(1, 0) == 7);
  CHECK(t.consumer_position(2, 0) == 11);
  CHECK(t.consumer_position(0, 1) == 15);
  CHECK(t.consumer_position(0, 3) == 17);
  CHECK(t.consumer_position(1, 1) == 19);
  StreamingShardSampler other_layout({100, 50, 70, 0}, World(), 1, o);
  CHECK_THROWS_AS(other_layout.load_state(st), distsampler::state_error);
  auto o2 = o;
  o2.run_length = 3;
  StreamingShardSampler other_options({100, 50, 0, 70}, World(), 1, o2);
  CHECK_THROWS_AS(other_options.load_state(st), distsampler::state_error);
  auto o3 = o;
  o3.shuffle = false;
  StreamingShardSampler unshuffled({100, 50, 0, 70}, World(), 1, o3);
  CHECK_THROWS_AS(unshuffled.load_state(st), distsampler::state_error);
}

TEST_CASE("stopping points past a stream's end and bad loader arguments throw config_error", "[shards][resume][errors]") {
  ShardSamplerOptions o;
  o.run_length = 2;
  o.max_open_shards = 2;
  o.canonical_streams = 4;
  o.tail = Tail::uneven;
  // 221 samples over 4 consumers, uneven: consumer 0 has 56, the others 55.
  StreamingShardSampler s({100, 51, 0, 70}, World(1, 2), 2, o);
  CHECK_NOTHROW(s.state(56));
  CHECK_THROWS_WITH(s.state(57), "StreamingShardSampler::state: samples_done 57 exceeds the longest worker stream of "
                                 "this segment (56 samples)");
  CHECK_THROWS_WITH(s.state_per_worker({1}),
                    "StreamingShardSampler::state_per_worker: 1 entries (expected num_workers = 2)");
  CHECK_THROWS_WITH(s.state_per_worker({56, 0}),
                    "StreamingShardSampler::state_per_worker: worker 0 read 56 samples, past the end of rank 1's "
                    "stream of 55 (expected at most 55)");
  CHECK_THROWS_WITH(s.state_per_consumer({0, 0, 0}),
                    "StreamingShardSampler::state_per_consumer: 3 entries (expected consumers() = 4)");
  CHECK_THROWS_WITH(s.state_per_consumer({0, 56, 0, 0}),
                    "StreamingShardSampler::state_per_consumer: consumer 1 read 56 samples, past the end of its "
                    "stream of 55 (expected at most 55)");
  CHECK_THROWS_WITH(s.loader_worker_done(1, 0),
                    "StreamingShardSampler::loader_worker_done: batch_size is 0 (expected at least 1)");
  // Rank 1's workers are consumers 1 and 3, 55 samples each: 6 batches of 10 each.
  CHECK(s.loader_worker_done(12, 10) == std::vector<std::uint64_t>{55, 55});
  CHECK(s.loader_worker_done(3, 10) == std::vector<std::uint64_t>{20, 10});
  CHECK_THROWS_WITH(s.loader_worker_done(13, 10),
                    "StreamingShardSampler::loader_worker_done: batches 13 exceeds the 12 batches of this rank's "
                    "workers at batch_size 10");
  CHECK_THROWS_WITH(s.state_after_batches(1, 0),
                    "StreamingShardSampler::state_after_batches: batch_size is 0 (expected at least 1)");
  // Rank 0 (consumers 0 and 2: 56 and 55) has 12 batches of 5 ... 56 / 5 -> 12, 55 / 5 -> 11.
  CHECK_NOTHROW(s.state_after_batches(23, 5));
  CHECK_THROWS_WITH(s.state_after_batches(24, 5),
                    "StreamingShardSampler::state_after_batches: batches 24 exceeds the 23 batches of the largest "
                    "rank at batch_size 5");
  CHECK(s.state_after_batches(23, 5).consumed == 221);
}

TEST_CASE("totals up to 2^64 - 1 are accepted and larger ones rejected", "[shards]") {
  const std::uint64_t max = UINT64_MAX;
  StreamingShardSampler big({max - 5, 5}, World(3, 4), 2, {});
  CHECK(big.dataset_size() == max);
  CHECK(big.worker_size(1) == max / 8 + 1);
  const auto x = big.sample(1, big.worker_size(1) - 1);
  CHECK(x.index == (x.shard == 0 ? x.offset : max - 5 + x.offset));
  const auto y = big.sample(0, 123456789);
  CHECK(y.offset < (y.shard == 0 ? max - 5 : 5));
  // A stop inside blocks near 2^64: 8 consumers, blocks of 64, 3 samples each.
  const SamplerState st = big.state(3);
  CHECK(st.consumed == 3);
  REQUIRE(st.ahead.size() == 7);
  CHECK(st.ahead.back() == distsampler::PositionRange{7 * 64, 7 * 64 + 3});
  CHECK(SamplerState::from_bytes(st.to_bytes()) == st);
  StreamingShardSampler resumed({max - 5, 5}, World(0, 3), 1, {});
  resumed.load_state(SamplerState::from_text(st.to_text()));
  CHECK(resumed.start() == 24);
  CHECK(resumed.consumer_position(0, 0) == 3);
  CHECK(resumed.worker_size(0) == (max - 24) / 3 + ((max - 24) % 3 != 0 ? 1 : 0));
  const std::uint64_t last = resumed.worker_size(0) - 1;
  CHECK(resumed.sample(0, last).index < max);
  const SamplerState end = resumed.state(resumed.worker_size(0));
  CHECK(end.consumed == max);
  CHECK(end.ahead.empty());
  CHECK_THROWS_WITH(StreamingShardSampler({max, 1}, World(), 1, {}),
                    "StreamingShardSampler: total samples overflow 64 bits at shard 1 (size 1 after "
                    "18446744073709551615; expected a sum <= 18446744073709551615)");
}

TEST_CASE("bad configuration throws config_error naming the parameter", "[shards][errors]") {
  const std::vector<std::uint64_t> sizes{3, 4};
  auto with = [](auto change) {
    ShardSamplerOptions o;
    change(o);
    return o;
  };
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), 0, {}),
                    "StreamingShardSampler: num_workers is 0 (expected at least 1)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(1, 2), UINT64_MAX, {}),
                    "StreamingShardSampler: world_size 2 * num_workers 18446744073709551615 overflows 64 bits "
                    "(expected a product <= 18446744073709551615)");
  {
    World w;
    w.rank = 2;
    w.world_size = 2;
    CHECK_THROWS_WITH(StreamingShardSampler(sizes, w, 1, {}),
                      "StreamingShardSampler: rank 2 is out of range for world_size 2 (expected 0..1)");
  }
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), 1, with([](auto& o) { o.tail = static_cast<Tail>(7); })),
                    "StreamingShardSampler: tail 7 is not a Tail (expected pad, drop or uneven)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), 1, with([](auto& o) { o.canonical_streams = 0; })),
                    "StreamingShardSampler: canonical_streams is 0 (expected at least 1)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), 1, with([](auto& o) { o.max_open_shards = 0; })),
                    "StreamingShardSampler: max_open_shards is 0 (expected at least 1)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), 1, with([](auto& o) { o.run_length = 0; })),
                    "StreamingShardSampler: run_length is 0 (expected at least 1)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), 1, with([](auto& o) { o.shuffle_window = 0; })),
                    "StreamingShardSampler: shuffle_window is 0 (expected at least 1)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), 1, with([](auto& o) { o.max_open_shards = 65; })),
                    "StreamingShardSampler: max_open_shards 65 exceeds canonical_streams 64 (expected "
                    "max_open_shards <= canonical_streams)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), 1, with([](auto& o) { o.run_length = UINT64_MAX; })),
                    "StreamingShardSampler: max_open_shards 8 * run_length 18446744073709551615 overflows 64 bits "
                    "(expected a block size <= 18446744073709551615)");
  StreamingShardSampler s(sizes, World(), 2, {});
  CHECK_THROWS_WITH(s.worker_size(2), "StreamingShardSampler: worker 2 is out of range for num_workers 2 (expected 0..1)");
  CHECK_THROWS_AS(s.sample(0, 100), std::out_of_range);
  CHECK_THROWS_WITH(s.sample(0, 4), "StreamingShardSampler::sample: position 4 is out of range for worker_size 4");
  ShardSample out[4];
  CHECK_NOTHROW(s.fill(1, 1, 3, out));
  CHECK_THROWS_WITH(s.fill(1, 2, 3, out),
                    "StreamingShardSampler::fill: slots [2, 2 + 3) are out of range for worker_size 4");
  CHECK_THROWS_WITH(s.fill(2, 0, 0, out),
                    "StreamingShardSampler: worker 2 is out of range for num_workers 2 (expected 0..1)");
  CHECK_THROWS_AS(distsampler::StreamingShardSampler(sizes, World(), 0, {}), distsampler::config_error);
}

TEST_CASE("an empty dataset and empty shards give empty, valid streams", "[shards]") {
  for (const Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
    ShardSamplerOptions o;
    o.tail = tail;
    const auto ranks = make_ranks({0, 0, 0}, 3, 2, o, 0);
    for (const auto& s : ranks) CHECK(s.size() == 0);
    check_segment(ranks);
    CHECK(ranks[0].state(0).consumed == 0);
    StreamingShardSampler none({}, World(), 1, o);
    CHECK(none.size() == 0);
    CHECK(none.read_plan(0).empty());
  }
}

TEST_CASE("A state of other or reordered shard sizes is refused naming the shard sizes", "[shards][resume][errors]") {
  const StreamingShardSampler saver({100, 50, 70}, World(0, 2), 1);
  const SamplerState st = saver.state(3);
  StreamingShardSampler reordered({50, 100, 70}, World(0, 2), 1);
  CHECK_THROWS_WITH(reordered.load_state(st),
                    Catch::Matchers::StartsWith("StreamingShardSampler::load_state: shard sizes differ (state "
                                                "layout "));
  StreamingShardSampler larger({100, 50, 71}, World(0, 2), 1);
  CHECK_THROWS_WITH(larger.load_state(st),
                    Catch::Matchers::StartsWith("StreamingShardSampler::load_state: dataset_size differs (state 220, "
                                                "sampler 221); shard sizes differ (state layout "));
  StreamingShardSampler same({100, 50, 70}, World(1, 3), 1);
  CHECK_NOTHROW(same.load_state(st));
}

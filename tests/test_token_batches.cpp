// Tests of TokenBatchSampler and plan_window: budgets, equal steps, coverage, determinism, elastic resume, errors.
// SPDX-License-Identifier: MIT
#include <distsampler/tokens/token_batch_sampler.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace ds = distsampler;

namespace {

// Lengths from a seeded mixture: mostly short, a long tail, some ties.
std::vector<std::uint32_t> random_lengths(std::uint64_t n, std::uint64_t seed, std::uint64_t max_len) {
  ds::detail::SplitMix64 rng(seed);
  std::vector<std::uint32_t> out(n);
  for (auto& v : out) {
    const std::uint64_t r = rng();
    const std::uint64_t cap = (r & 7) == 0 ? max_len : std::max<std::uint64_t>(1, max_len / 8);
    v = static_cast<std::uint32_t>(1 + (r >> 8) % cap);
  }
  return out;
}

// The cost of a set of lengths under the options, computed here from the documented formulas.
std::uint64_t expected_cost(const ds::TokenBatchOptions& o, const std::vector<std::uint64_t>& lens) {
  std::uint64_t sum = 0, longest = 0;
  for (const std::uint64_t d : lens) {
    longest = std::max(longest, d);
    sum += o.cost == ds::TokenCost::quadratic ? d + d * d / o.quadratic_q : d;
  }
  return o.cost == ds::TokenCost::padded ? longest * lens.size() : sum;
}

// Every micro-batch of an epoch: [step][k * W + rank], read through each step's window.
std::vector<std::vector<ds::TokenMicroBatch>> read_all(const ds::TokenBatchSampler& s) {
  std::vector<std::vector<ds::TokenMicroBatch>> out;
  std::uint64_t step = 0;
  while (step < s.num_steps()) {
    const ds::TokenWindow w = s.window(step);
    for (; step < w.end_step(); ++step) {
      std::vector<ds::TokenMicroBatch> row;
      for (std::uint64_t k = 0; k < s.accumulation_steps(); ++k) {
        for (std::uint64_t r = 0; r < s.world_size(); ++r) row.push_back(w.micro_batch(step, k, r));
      }
      out.push_back(std::move(row));
    }
  }
  return out;
}

ds::TokenBatchOptions random_options(ds::detail::SplitMix64& rng, std::uint64_t max_len) {
  ds::TokenBatchOptions o;
  const auto cost = static_cast<ds::TokenCost>(rng() % 3);
  o.with_cost(cost, 1 + rng() % 64)
      .with_max_tokens(max_len / 2 + rng() % (4 * max_len))
      .with_window(1 + rng() % 300)
      .with_accumulation_steps(1 + rng() % 3)
      .with_seed(rng())
      .with_longest_first(rng() % 2 == 0)
      .with_oversize(rng() % 2 == 0 ? ds::Oversize::own_batch : ds::Oversize::skip);
  if (rng() % 3 == 0) o.with_max_samples(1 + rng() % 9);
  if (rng() % 3 == 0) o.with_batch_multiple(1 + rng() % 4);
  if (rng() % 5 == 0) o.with_shuffle(false);
  return o;
}

}  // namespace

TEST_CASE("Token batches: equal micro-batches per rank per step, budget kept, every sample once, deterministic",
          "[tokens][property]") {
  ds::detail::SplitMix64 rng(20261201);
  std::uint64_t merges = 0, splits = 0, all_empties = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const std::uint64_t n = rng() % 900, max_len = 4 + rng() % 200, world = 1 + rng() % 5;
    const std::vector<std::uint32_t> lengths = random_lengths(n, rng(), max_len);
    const ds::TokenBatchOptions o = random_options(rng, max_len);
    CAPTURE(trial, n, world, o.max_tokens, o.window, o.accumulation_steps, static_cast<int>(o.cost));
    const ds::TokenBatchSampler s(n, lengths, ds::World(0, world), o);
    const auto all = read_all(s);
    REQUIRE(all.size() == s.num_steps());

    std::vector<int> seen(n, 0);
    std::uint64_t empties = 0, tokens = 0;
    for (const auto& row : all) {
      REQUIRE(row.size() == world * o.accumulation_steps);
      for (const ds::TokenMicroBatch& b : row) {
        if (b.empty()) {
          ++empties;
          continue;
        }
        std::vector<std::uint64_t> lens;
        for (const std::uint64_t i : b.indices) {
          ++seen[i];
          lens.push_back(lengths[i]);
        }
        const std::uint64_t longest = *std::max_element(lens.begin(), lens.end());
        CHECK(b.padded == longest * lens.size());
        std::uint64_t sum = 0;
        for (const std::uint64_t d : lens) sum += d;
        CHECK(b.tokens == sum);
        tokens += sum;
        if (b.oversize) {
          CHECK(lens.size() == 1);
          CHECK(expected_cost(o, lens) > o.max_tokens);
        } else {
          CHECK(expected_cost(o, lens) <= o.max_tokens);
          if (o.max_samples != 0) CHECK(lens.size() <= o.max_samples);
        }
      }
    }
    std::uint64_t skipped = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      const bool over = expected_cost(o, {lengths[i]}) > o.max_tokens;
      if (over && o.oversize == ds::Oversize::skip) {
        REQUIRE(seen[i] == 0);
        ++skipped;
      } else {
        REQUIRE(seen[i] == 1);
      }
    }
    CHECK(s.stats().skipped_samples == skipped);
    CHECK(s.stats().empty_micro_batches == empties);
    CHECK(s.stats().tokens == tokens);
    CHECK(s.stats().micro_batches == s.num_steps() * world * o.accumulation_steps);
    merges += s.stats().merges;
    splits += s.stats().splits;
    all_empties += empties;

    // Every rank's own sampler has the same step count and reads what the window deals it.
    const ds::TokenBatchSampler last(n, lengths, ds::World(world - 1, world), o);
    REQUIRE(last.num_steps() == s.num_steps());
    if (s.num_steps() > 0) {
      const std::uint64_t step = rng() % s.num_steps(), k = rng() % o.accumulation_steps;
      CHECK(last.micro_batch(step, k).indices == all[step][k * world + world - 1].indices);
      CHECK(s.micro_batch(step, k).indices == all[step][k * world].indices);
    }
    // Deterministic: a second sampler reads the same; another epoch reads another order.
    const auto again = read_all(ds::TokenBatchSampler(n, lengths, ds::World(0, world), o));
    REQUIRE(again.size() == all.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      for (std::size_t j = 0; j < all[i].size(); ++j) REQUIRE(again[i][j].indices == all[i][j].indices);
    }
  }
  // The trials reach every balancing path.
  CHECK(merges > 0);
  CHECK(splits > 0);
  CHECK(all_empties > 0);
}

TEST_CASE("Token batches resume exactly once on another world size and accumulation", "[tokens][resume]") {
  ds::detail::SplitMix64 rng(77);
  for (int trial = 0; trial < 30; ++trial) {
    const std::uint64_t n = 1 + rng() % 700, max_len = 4 + rng() % 100;
    const std::vector<std::uint32_t> lengths = random_lengths(n, rng(), max_len);
    ds::TokenBatchOptions o = random_options(rng, max_len);
    o.with_oversize(ds::Oversize::own_batch);
    const std::uint64_t w1 = 1 + rng() % 4, w2 = 1 + rng() % 4, k2 = 1 + rng() % 3;
    CAPTURE(trial, n, w1, w2, k2, o.window, o.accumulation_steps);
    ds::TokenBatchSampler first(n, lengths, ds::World(0, w1), o);
    first.set_epoch(3);
    const auto before = read_all(first);
    const std::uint64_t stop = before.empty() ? 0 : rng() % (before.size() + 1);
    const std::uint64_t k_done = stop < before.size() ? rng() % o.accumulation_steps : 0;
    const std::string saved = first.state(stop, k_done).to_text();

    std::vector<int> seen(n, 0);
    for (std::uint64_t s = 0; s < stop || (s == stop && k_done > 0); ++s) {
      const std::uint64_t rounds = s < stop ? o.accumulation_steps : k_done;
      for (std::uint64_t i = 0; i < rounds * w1; ++i) {
        for (const std::uint64_t x : before[s][i].indices) ++seen[x];
      }
    }
    ds::TokenBatchOptions o2 = o;
    o2.with_accumulation_steps(k2);
    const ds::TokenBatchSampler second(n, lengths, ds::World(0, w2), o2, ds::SamplerState::from_text(saved));
    CHECK(second.epoch() == 3);
    for (const auto& row : read_all(second)) {
      for (const auto& b : row) {
        for (const std::uint64_t x : b.indices) ++seen[x];
      }
    }
    for (std::uint64_t i = 0; i < n; ++i) REQUIRE(seen[i] == 1);

    // Resumed again from inside the resumed run, on a third shape: still every sample once.
    const auto after = read_all(second);
    const std::uint64_t stop2 = after.empty() ? 0 : rng() % (after.size() + 1);
    std::fill(seen.begin(), seen.end(), 0);
    for (std::uint64_t s = 0; s < stop; ++s) {
      for (const auto& b : before[s]) {
        for (const std::uint64_t x : b.indices) ++seen[x];
      }
    }
    for (std::uint64_t i = 0; i < k_done * w1; ++i) {
      for (const std::uint64_t x : before[stop][i].indices) ++seen[x];
    }
    for (std::uint64_t s = 0; s < stop2; ++s) {
      for (const auto& b : after[s]) {
        for (const std::uint64_t x : b.indices) ++seen[x];
      }
    }
    const std::uint64_t w3 = 1 + rng() % 5;
    const ds::TokenBatchSampler third(n, lengths, ds::World(w3 - 1, w3), o, second.state(stop2));
    for (const auto& row : read_all(third)) {
      for (const auto& b : row) {
        for (const std::uint64_t x : b.indices) ++seen[x];
      }
    }
    for (std::uint64_t i = 0; i < n; ++i) REQUIRE(seen[i] == 1);

    // The same shape resumed at a window's start continues as the uninterrupted run.
    ds::TokenBatchSampler same(n, lengths, ds::World(0, w1), o);
    same.resume(first.state(0));
    CHECK(same.num_steps() == first.num_steps());
  }
}

TEST_CASE("Token batches: the window balances by splitting, then by empty markers", "[tokens]") {
  // Three samples fit one micro-batch; four ranks need four: two splits, one empty marker.
  const std::vector<std::uint32_t> lengths{5, 5, 5};
  const auto o = ds::TokenBatchOptions().with_max_tokens(100).with_seed(1);
  const ds::TokenBatchSampler s(3, lengths, ds::World(0, 4), o);
  CHECK(s.num_steps() == 1);
  CHECK(s.stats().splits == 2);
  CHECK(s.stats().empty_micro_batches == 1);
  const auto all = read_all(s);
  std::uint64_t sizes = 0, empty = 0;
  for (const auto& b : all[0]) {
    sizes += b.indices.size();
    empty += b.empty() ? 1U : 0U;
  }
  CHECK(sizes == 3);
  CHECK(empty == 1);

  // Five micro-batches of two for two ranks: the last two singles merge instead of splitting.
  const std::vector<std::uint32_t> pairs{10, 10, 10, 10, 10, 10, 10, 10, 3};
  const ds::TokenBatchSampler m(9, pairs, ds::World(0, 2), ds::TokenBatchOptions().with_max_tokens(20).with_window(9));
  CHECK(m.stats().micro_batches % 2 == 0);
  CHECK(m.stats().empty_micro_batches == 0);
}

TEST_CASE("Token batches: each round is dealt by cost, the costliest to the rank with the least so far", "[tokens]") {
  // Sorted 2 3 9 10 under a linear budget of 10: [2 3] [9] [10]; four slots (2 ranks x 2 rounds)
  // split [2 3]. Round 0 reads [2] [3]: 3 to rank 0 (ties: the lower rank), 2 to rank 1. Round 1
  // reads [9] [10]: 10 to rank 1, which has less so far; each rank then has 12 tokens.
  const std::uint32_t lengths[] = {10, 2, 9, 3};
  const auto o = ds::TokenBatchOptions()
                     .with_cost(ds::TokenCost::linear)
                     .with_max_tokens(10)
                     .with_shuffle(false)
                     .with_accumulation_steps(2);
  const ds::WindowPlan plan = ds::plan_window(lengths, 4, o, 0, 0, false, 0, 2);
  REQUIRE(plan.batches.size() == 4);
  CHECK(plan.splits == 1);
  std::vector<std::uint64_t> dealt;
  for (const std::uint32_t id : plan.deal) dealt.push_back(plan.batches[id].tokens);
  CHECK(dealt == std::vector<std::uint64_t>{3, 2, 9, 10});
}

TEST_CASE("Token batches: the longest sample is read in step 0 with longest_first", "[tokens]") {
  std::vector<std::uint32_t> lengths = random_lengths(2000, 5, 60);
  lengths[1234] = 500;
  const auto o = ds::TokenBatchOptions().with_max_tokens(600).with_window(100).with_longest_first(true);
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    ds::TokenBatchSampler s(2000, lengths, ds::World(0, 3), o);
    s.set_epoch(epoch);
    bool found = false;
    const auto all = read_all(s);
    for (const auto& b : all[0])
      found = found || std::count(b.indices.begin(), b.indices.end(), std::uint64_t{1234}) == 1;
    CHECK(found);
  }
}

TEST_CASE("Token batches: one window pads as a global sort and greedy cut, and small windows pad more", "[tokens]") {
  const std::vector<std::uint32_t> lengths = random_lengths(20000, 9, 512);
  // The global sort cut greedily under the padded budget, computed here: cuts[i] ends batch i.
  std::vector<std::uint64_t> sorted(lengths.begin(), lengths.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> cuts;
  std::uint64_t count = 0;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if ((count + 1) * sorted[i] > 4096) {
      cuts.push_back(i);
      count = 0;
    }
    ++count;
  }
  cuts.push_back(sorted.size());
  // The documented evening of the last two: the longest samples of the one before move into
  // the last while it fits and holds fewer tokens.
  const std::size_t b = cuts.size() >= 3 ? cuts[cuts.size() - 3] : 0;
  std::size_t& cut = cuts[cuts.size() - 2];
  std::uint64_t before = 0, after = 0;
  for (std::size_t i = b; i < cut; ++i) before += sorted[i];
  for (std::size_t i = cut; i < sorted.size(); ++i) after += sorted[i];
  while (cut - b > 1 && (sorted.size() - cut + 1) * sorted.back() <= 4096 &&
         after + sorted[cut - 1] <= before - sorted[cut - 1]) {
    after += sorted[cut - 1];
    before -= sorted[--cut];
  }
  std::uint64_t padded = 0;
  for (std::size_t i = 0; i < cuts.size(); ++i) padded += (cuts[i] - (i ? cuts[i - 1] : 0)) * sorted[cuts[i] - 1];
  const std::uint64_t batches = cuts.size();
  const auto base = ds::TokenBatchOptions().with_max_tokens(4096).with_seed(3);
  const ds::TokenBatchSampler whole(20000, lengths, ds::World(0, 1), base);
  CHECK(whole.stats().padded == padded);
  CHECK(whole.stats().micro_batches == batches);
  const ds::TokenBatchSampler small(20000, lengths, ds::World(0, 1), ds::TokenBatchOptions(base).with_window(32));
  CHECK(whole.stats().padding_efficiency() > 0.95);
  CHECK(whole.stats().padding_efficiency() > small.stats().padding_efficiency() + 0.05);
  const ds::TokenBatchSampler eight(20000, lengths, ds::World(0, 8), base);
  CHECK(eight.stats().empty_micro_batches == 0);
  CHECK(eight.stats().mean_step_ratio < 1.3);
  CHECK(eight.stats().mean_step_ratio >= 1.0);
}

TEST_CASE("Token batches: bad input throws config_error naming the sample or option", "[tokens][errors]") {
  const std::vector<std::uint32_t> lengths{3, 4, 5};
  const auto o = ds::TokenBatchOptions().with_max_tokens(10);
  const ds::World w(0, 2);
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, lengths, w, ds::TokenBatchOptions()),
                    "TokenBatchOptions: max_tokens is 0 (expected a token budget of at least 1; call with_max_tokens)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(4, lengths, w, o),
                    "TokenBatchSampler: lengths has 3 values but dataset_size is 4 (expected one length per sample)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, std::vector<std::uint32_t>{3, 0, 5}, w, o),
                    "TokenBatchSampler: sample 1 has length 0 (expected at least 1 token per sample)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, std::vector<std::uint32_t>{3, 4, 11}, w, o),
                    "TokenBatchSampler: sample 2 has length 11 costing 11, over max_tokens 10 (expected at most "
                    "max_tokens; or choose Oversize::own_batch or Oversize::skip)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, std::vector<std::uint32_t>{3, 4, 9}, w,
                                          ds::TokenBatchOptions(o).with_cost(ds::TokenCost::quadratic, 8)),
                    "TokenBatchSampler: sample 2 has length 9 costing 19, over max_tokens 10 (expected at most "
                    "max_tokens; or choose Oversize::own_batch or Oversize::skip)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, ds::LengthView(nullptr, 3), w, o),
                    "TokenBatchSampler: lengths has no data for dataset_size 3 (expected a pointer to the lengths)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, lengths, w, ds::TokenBatchOptions(o).with_window(0)),
                    "TokenBatchOptions: window 0 is out of range (expected 1..4294967295)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, lengths, w, ds::TokenBatchOptions(o).with_accumulation_steps(0)),
                    "TokenBatchOptions: accumulation_steps is 0 (expected at least 1)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, lengths, w, ds::TokenBatchOptions(o).with_batch_multiple(0)),
                    "TokenBatchOptions: batch_multiple is 0 (expected at least 1)");
  CHECK_THROWS_WITH(
      ds::TokenBatchSampler(3, lengths, w, ds::TokenBatchOptions(o).with_cost(ds::TokenCost::quadratic, 0)),
      "TokenBatchOptions: quadratic_q is 0 (expected at least 1 for the cost d + d*d/q)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, lengths, w, ds::TokenBatchOptions(o).with_tail(ds::Tail::drop)),
                    "TokenBatchOptions: tail drop is not supported (expected uneven: every sample once, empty "
                    "micro-batches flagged)");
  CHECK_THROWS_AS(ds::TokenBatchSampler(3, lengths, w, ds::TokenBatchOptions()), ds::config_error);
  // G = W x K wrapping around 2^64 (to 0: a division by zero; to 4: reads past the plan) is refused.
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, lengths, ds::World(0, 2),
                                          ds::TokenBatchOptions(o).with_accumulation_steps(std::uint64_t{1} << 63)),
                    "TokenBatchSampler: world_size 2 x accumulation_steps 9223372036854775808 overflows 64 bits");
  CHECK_THROWS_WITH(
      ds::TokenBatchSampler(3, lengths, ds::World(3, 4),
                            ds::TokenBatchOptions(o).with_accumulation_steps((std::uint64_t{1} << 62) + 1)),
      "TokenBatchSampler: world_size 4 x accumulation_steps 4611686018427387905 overflows 64 bits");
  CHECK_THROWS_WITH(ds::plan_window(lengths.data(), 3, ds::TokenBatchOptions(o).with_accumulation_steps(UINT64_MAX),
                                    0, 0, false, 0, 2),
                    "plan_window: world_size 2 x accumulation_steps 18446744073709551615 overflows 64 bits");
  // A G every window must plan (empties included) is bounded before anything is allocated.
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, lengths, ds::World(0, 2),
                                          ds::TokenBatchOptions(o).with_accumulation_steps(std::uint64_t{1} << 24)),
                    "TokenBatchSampler: world_size 2 x accumulation_steps 16777216 = 33554432 micro-batches per step "
                    "exceeds max_group 1048576 (expected at most that many: every window plans at least one step of "
                    "them)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, lengths, ds::World(0, std::uint64_t{1} << 27), o),
                    "TokenBatchSampler: world_size 134217728 x accumulation_steps 1 = 134217728 micro-batches per "
                    "step exceeds max_group 1048576 (expected at most that many: every window plans at least one "
                    "step of them)");
  {
    // At the bound: one step of 2^20 micro-batches, three of them real.
    const ds::TokenBatchSampler edge(3, lengths, ds::World(0, 1024),
                                     ds::TokenBatchOptions(o).with_accumulation_steps(1024));
    CHECK(edge.num_steps() == 1);
    CHECK(edge.stats().micro_batches == ds::TokenBatchSampler::max_group);
  }

  const ds::TokenBatchSampler s(3, lengths, w, o);
  CHECK_THROWS_WITH(s.state(s.num_steps() + 1),
                    "TokenBatchSampler::state: steps_done " + std::to_string(s.num_steps() + 1) +
                        " and micro_batches_done 0 are out of range (expected steps_done <= " +
                        std::to_string(s.num_steps()) + ", micro_batches_done < 1 and 0 at the end)");
  CHECK_THROWS_WITH(s.micro_batch(s.num_steps(), 0),
                    "TokenBatchSampler::window: step " + std::to_string(s.num_steps()) +
                        " is out of range for num_steps " + std::to_string(s.num_steps()) + " (expected 0.." +
                        std::to_string(s.num_steps() - 1) + ")");
  CHECK_THROWS_AS(s.micro_batch(s.num_steps(), 0), std::out_of_range);
  CHECK_THROWS_WITH(s.micro_batch(0, 1),
                    "TokenBatchSampler::micro_batch: k 1 is out of range for accumulation_steps 1 (expected 0..0)");
  const ds::TokenWindow window = s.window(0);
  CHECK_THROWS_WITH(window.micro_batch(0, 0, 2),
                    "TokenWindow::micro_batch: step 0, k 0 or rank 2 is out of range (expected steps 0.." +
                        std::to_string(window.end_step()) + " exclusive, k < 1, rank < 2)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, lengths, w, ds::TokenBatchOptions(o).with_cost(ds::TokenCost{7})),
                    "TokenBatchOptions: cost 7 is not a TokenCost (expected padded, linear or quadratic)");
  CHECK_THROWS_WITH(ds::TokenBatchSampler(3, lengths, w, ds::TokenBatchOptions(o).with_oversize(ds::Oversize{5})),
                    "TokenBatchOptions: oversize 5 is not an Oversize (expected error, own_batch or skip)");
  ds::TokenBatchSampler last_epoch(3, lengths, w, o);
  last_epoch.set_epoch(UINT64_MAX);
  CHECK_THROWS_WITH(last_epoch.next_epoch(),
                    "TokenBatchSampler: epoch 18446744073709551615 cannot advance (expected a lower epoch)");
  CHECK(last_epoch.epoch() == UINT64_MAX);

  // A state of other lengths (or budget) is refused, naming the layout.
  const ds::SamplerState saved = s.state(0);
  ds::TokenBatchSampler other(3, std::vector<std::uint32_t>{3, 4, 6}, w, o);
  try {
    other.resume(saved);
    FAIL("resume accepted a state of other lengths");
  } catch (const ds::state_error& e) {
    CHECK_THAT(e.what(), Catch::Matchers::StartsWith("TokenBatchSampler: token lengths or budget options differ"));
  }
  ds::TokenBatchSampler budget(3, lengths, w, ds::TokenBatchOptions(o).with_max_tokens(11));
  CHECK_THROWS_AS(budget.resume(saved), ds::state_error);
}

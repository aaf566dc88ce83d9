// distsampler tests: MixtureSampler proportions, prefix bound, per-source epochs, schedules, elastic resume, errors.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <distsampler/mixture/mixture_sampler.hpp>

using distsampler::config_error;
using distsampler::MixtureEnd;
using distsampler::MixtureIndex;
using distsampler::MixtureOptions;
using distsampler::MixtureSampler;
using distsampler::SamplerState;
using distsampler::state_error;
using distsampler::Tail;
using distsampler::WeightChange;
using distsampler::World;

namespace {

// The test's own random configurations (std::mt19937_64 is fine for test inputs).
struct Config {
  std::vector<std::uint64_t> sizes;
  std::vector<double> weights;
  std::uint64_t m = 1, world = 1, accum = 1;
  std::vector<WeightChange> schedule;
};

std::vector<double> random_weights(std::mt19937_64& rng, std::size_t k) {
  std::vector<double> w(k);
  for (double& x : w) {
    // Log-uniform over three decades, some exact zeros (but never all).
    x = std::exp(-7.0 * static_cast<double>(rng() % 1000) / 1000.0);
    if (k > 1 && rng() % 8 == 0) x = 0;
  }
  if (std::all_of(w.begin(), w.end(), [](double x) { return x == 0; })) w[0] = 1;
  return w;
}

Config random_config(std::mt19937_64& rng, std::size_t max_k) {
  Config c;
  const std::size_t k = 1 + static_cast<std::size_t>(rng() % max_k);
  for (std::size_t i = 0; i < k; ++i) c.sizes.push_back(1 + rng() % 300);
  c.weights = random_weights(rng, k);
  c.m = 1 + rng() % 5;
  c.world = 1 + rng() % 4;
  c.accum = 1 + rng() % 3;
  return c;
}

std::vector<double> normalised(const std::vector<double>& w) {
  double sum = 0;
  for (const double x : w) sum += x;
  std::vector<double> out;
  for (const double x : w) out.push_back(x / sum);
  return out;
}

MixtureOptions options_of(const Config& c, std::uint64_t seed) {
  return MixtureOptions().with_micro_batch_size(c.m).with_accumulation_steps(c.accum).with_seed(seed).with_schedule(
      c.schedule);
}

// The ideal count of source i in [0, p) under the (possibly scheduled) weights: sum of
// segment lengths times that segment's normalised weight.
double ideal(const Config& c, std::uint64_t g, std::size_t i, std::uint64_t p) {
  std::vector<std::pair<std::uint64_t, std::vector<double>>> seg{{0, normalised(c.weights)}};
  for (const WeightChange& ch : c.schedule) seg.emplace_back(ch.step * g, normalised(ch.weights));
  double total = 0;
  for (std::size_t j = 0; j < seg.size() && seg[j].first < p; ++j) {
    const std::uint64_t end = j + 1 < seg.size() ? std::min(p, seg[j + 1].first) : p;
    total += static_cast<double>(end - seg[j].first) * seg[j].second[i];
  }
  return total;
}

// Every position of the epoch read through each rank's micro-batches, in position order.
std::vector<MixtureIndex> read_all(const Config& c, const MixtureOptions& opts) {
  std::vector<MixtureSampler> ranks;
  for (std::uint64_t r = 0; r < c.world; ++r) ranks.emplace_back(c.sizes, c.weights, World(r, c.world), opts);
  std::vector<MixtureIndex> out;
  for (std::uint64_t s = 0; s < ranks[0].num_steps(); ++s) {
    for (std::uint64_t k = 0; k < c.accum; ++k) {
      for (const MixtureSampler& rank : ranks) {
        const auto mb = rank.micro_batch(s, k);
        out.insert(out.end(), mb.begin(), mb.end());
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("mixture: per-block counts are floor or ceil of G w_i, the prefix error stays within 2", "[mixture]") {
  std::mt19937_64 rng(20261201);
  double worst = 0;
  for (int trial = 0; trial < 40; ++trial) {
    Config c = random_config(rng, trial % 4 == 0 ? 64 : 12);
    MixtureSampler s(c.sizes, c.weights, World(0, 1),
                     options_of(c, rng()).with_end(MixtureEnd::samples, 3000 + rng() % 2000));
    const std::uint64_t g = s.global_batch_size();
    const std::vector<double> w = normalised(c.weights);
    std::vector<std::uint64_t> count(c.sizes.size(), 0), in_block(c.sizes.size(), 0);
    std::uint64_t bad_ordinals = 0, bad_blocks = 0;
    for (std::uint64_t p = 0; p < s.dataset_size(); ++p) {
      const auto slot = s.slot(p);
      if (slot.ordinal != count[slot.source]) ++bad_ordinals;  // ordinals enumerate each source's samples
      ++count[slot.source];
      ++in_block[slot.source];
      for (std::size_t i = 0; i < w.size(); ++i) {
        worst = std::max(worst, std::fabs(static_cast<double>(count[i]) - static_cast<double>(p + 1) * w[i]));
      }
      if ((p + 1) % g == 0) {
        for (std::size_t i = 0; i < w.size(); ++i) {
          const double share = static_cast<double>(g) * w[i];
          const auto got = static_cast<double>(in_block[i]);
          if (got < std::floor(share - 1e-9) || got > std::ceil(share + 1e-9)) ++bad_blocks;
          in_block[i] = 0;
        }
      }
    }
    CHECK(bad_ordinals == 0);
    CHECK(bad_blocks == 0);
    for (std::size_t i = 0; i < w.size(); ++i) CHECK(s.source_count(i, s.dataset_size()) == count[i]);
  }
  INFO("worst prefix error " << worst);
  CHECK(worst <= 2.0);
  CHECK(worst > 0.5);  // the measurement sees real deviations
}

TEST_CASE("mixture: slots of a source move from block to block", "[mixture]") {
  MixtureSampler s({1000, 1000, 1000}, {0.5, 0.3, 0.2}, World(0, 1),
                   MixtureOptions().with_micro_batch_size(20).with_seed(7).with_end(MixtureEnd::steps, 50));
  std::set<std::vector<std::uint64_t>> patterns;
  for (std::uint64_t b = 0; b < 50; ++b) {
    std::vector<std::uint64_t> pattern;
    for (std::uint64_t e = 0; e < 20; ++e) pattern.push_back(s.slot(b * 20 + e).source);
    patterns.insert(pattern);
  }
  // The arrangement is a low-discrepancy line with a per-block phase: a few patterns, none fixed.
  CHECK(patterns.size() >= 4);
  MixtureSampler plain({1000, 1000, 1000}, {0.5, 0.3, 0.2}, World(0, 1),
                       MixtureOptions().with_micro_batch_size(20).with_shuffle(false).with_end(MixtureEnd::steps, 5));
  CHECK(plain.at(0) == MixtureIndex{plain.slot(0).source, 0});
}

TEST_CASE("mixture: ranks split each global batch disjointly and every source pass is read once", "[mixture]") {
  std::mt19937_64 rng(77);
  for (int trial = 0; trial < 12; ++trial) {
    Config c = random_config(rng, 6);
    const std::uint64_t seed = rng();
    const MixtureOptions opts = options_of(c, seed).with_end(MixtureEnd::all_seen);
    MixtureSampler whole(c.sizes, c.weights, World(0, c.world), opts);
    const std::vector<MixtureIndex> read = read_all(c, opts);
    REQUIRE(read.size() == whole.num_steps() * whole.global_batch_size());
    for (std::uint64_t s = 0; s < whole.num_steps(); ++s) {
      const auto gb = whole.global_batch(s);
      CHECK(std::equal(gb.begin(), gb.end(), read.begin() + static_cast<std::ptrdiff_t>(s * gb.size())));
    }
    // Per source: consecutive runs of n_i samples are permutations of the source.
    std::map<std::uint64_t, std::vector<std::uint64_t>> per_source;
    for (const MixtureIndex& x : read) per_source[x.source].push_back(x.index);
    for (const auto& [src, idx] : per_source) {
      const std::uint64_t n = c.sizes[src];
      for (std::size_t begin = 0; begin < idx.size(); begin += n) {
        const std::size_t end = std::min(idx.size(), begin + static_cast<std::size_t>(n));
        std::set<std::uint64_t> seen(idx.begin() + static_cast<std::ptrdiff_t>(begin),
                                     idx.begin() + static_cast<std::ptrdiff_t>(end));
        CHECK(seen.size() == end - begin);
        CHECK(*seen.rbegin() < n);
      }
    }
  }
}

TEST_CASE("mixture: epoch ends and per-source epochs", "[mixture]") {
  const std::vector<std::uint64_t> sizes{90, 40, 7};
  const std::vector<double> w{0.5, 0.3, 0.2};
  auto opts = MixtureOptions().with_micro_batch_size(1).with_seed(3).with_tail(Tail::uneven);
  MixtureSampler first(sizes, w, World(0, 1), opts.with_end(MixtureEnd::first_exhausted));
  // Source 2 (7 samples at 0.2) runs out first, near position 35.
  CHECK(first.source_count(2, first.dataset_size()) == 7);
  CHECK(first.source_count(2, first.dataset_size() - 1) == 6);
  CHECK(first.dataset_size() >= 33);
  CHECK(first.dataset_size() <= 37);
  MixtureSampler all(sizes, w, World(0, 1), opts.with_end(MixtureEnd::all_seen));
  CHECK(all.source_count(0, all.dataset_size()) == 90);
  CHECK(all.source_count(0, all.dataset_size() - 1) == 89);
  const auto progress = all.source_progress(all.dataset_size());
  CHECK(progress[0].epoch == 1);
  CHECK(progress[0].cursor == 0);
  CHECK(progress[2].epoch == all.source_count(2, all.dataset_size()) / 7);
  // A new source pass has a new order; a new mixture epoch restarts every source.
  std::vector<std::uint64_t> pass0, pass1;
  for (std::uint64_t o = 0; o < 7; ++o) {
    pass0.push_back(all.source_index(2, o));
    pass1.push_back(all.source_index(2, 7 + o));
  }
  CHECK(pass0 != pass1);
  MixtureSampler next = all;
  next.set_epoch(1);
  CHECK(next.source_index(2, 0) != all.source_index(2, 0));
  MixtureSampler steps(sizes, w, World(0, 1), opts.with_end(MixtureEnd::steps, 11).with_micro_batch_size(3));
  CHECK(steps.dataset_size() == 33);
  CHECK(steps.num_steps() == 11);
}

TEST_CASE("mixture: workers and the padded tail follow the batch sampler's parts", "[mixture]") {
  MixtureSampler s({40, 25}, {0.6, 0.4}, World(1, 2),
                   MixtureOptions().with_micro_batch_size(3).with_accumulation_steps(2).with_tail(Tail::pad).with_end(
                       MixtureEnd::samples, 50));
  // 50 positions, G = 12: 4 full steps and a padded fifth, 10 micro-batches per rank.
  REQUIRE(s.num_steps() == 5);
  CHECK(s.worker_micro_batch_count(3, 0) == 4);
  CHECK(s.worker_micro_batch_count(3, 2) == 3);
  const auto mine = s.worker_schedule(3, 1);
  REQUIRE(mine.size() == 3);
  CHECK(mine[1] == distsampler::MicroBatchId{2, 0});  // number 4 = step 2, micro-batch 0
  // Step 4 holds positions 48, 49 then wraps to 0, 1, ...: rank 1's slots are 3..5 and 9..11.
  CHECK(s.is_padding(4, 0, 0));
  CHECK(s.micro_batch(4, 0)[0] == s.at(1));  // slot 3 wraps to position 3 - 2 = 1
  MixtureSampler rank0({40, 25}, {0.6, 0.4}, World(0, 2), s.options());
  CHECK_FALSE(rank0.is_padding(4, 0, 1));
  CHECK(rank0.is_padding(4, 0, 2));
  CHECK(rank0.micro_batch(4, 0)[1] == rank0.at(49));
}

TEST_CASE("mixture: with replacement draws stay in range and vary by epoch", "[mixture]") {
  MixtureSampler s({5, 1000}, {0.6, 0.4}, World(0, 1),
                   MixtureOptions().with_micro_batch_size(10).with_replacement(true).with_end(MixtureEnd::steps, 30));
  std::map<std::uint64_t, int> small;
  for (std::uint64_t p = 0; p < s.dataset_size(); ++p) {
    const MixtureIndex x = s.at(p);
    CHECK(x.index < s.source_sizes()[x.source]);
    if (x.source == 0) ++small[x.index];
  }
  CHECK(small.size() == 5);
  // 180 draws from 5 samples: with replacement, counts are not all 36.
  CHECK(std::any_of(small.begin(), small.end(), [](const auto& kv) { return kv.second != 36; }));
  CHECK(s.key().engine == "with-replacement");
}

TEST_CASE("mixture: weight changes lose and repeat nothing of a source pass", "[mixture]") {
  std::mt19937_64 rng(4242);
  double worst = 0;
  for (int trial = 0; trial < 16; ++trial) {
    Config c = random_config(rng, 8);
    std::uint64_t step = 0;
    for (int j = 0; j < 3; ++j) {
      step += 1 + rng() % 20;
      c.schedule.push_back(WeightChange{step, random_weights(rng, c.sizes.size())});
    }
    const MixtureOptions opts = options_of(c, rng()).with_end(MixtureEnd::steps, step + 20);
    MixtureSampler s(c.sizes, c.weights, World(0, 1),
                     MixtureOptions(opts).with_micro_batch_size(c.m * c.world * c.accum).with_accumulation_steps(1));
    const std::uint64_t g = s.global_batch_size();
    std::vector<std::vector<std::uint64_t>> idx(c.sizes.size());
    for (std::uint64_t p = 0; p < s.dataset_size(); ++p) {
      const MixtureIndex x = s.at(p);
      idx[x.source].push_back(x.index);
      for (std::size_t i = 0; i < c.sizes.size(); ++i) {
        worst = std::max(worst, std::fabs(static_cast<double>(idx[i].size()) - ideal(c, g, i, p + 1)));
      }
    }
    for (std::size_t i = 0; i < idx.size(); ++i) {
      for (std::size_t b = 0; b < idx[i].size(); b += c.sizes[i]) {
        const std::size_t e = std::min(idx[i].size(), b + static_cast<std::size_t>(c.sizes[i]));
        std::set<std::uint64_t> seen(idx[i].begin() + static_cast<std::ptrdiff_t>(b),
                                     idx[i].begin() + static_cast<std::ptrdiff_t>(e));
        CHECK(seen.size() == e - b);
      }
    }
  }
  // Each segment's roundings continue from the error carried into it (docs/MIXTURES.md).
  INFO("worst prefix error with schedules " << worst);
  CHECK(worst <= 2.0);
}

TEST_CASE("mixture: elastic resume continues exactly once on another world and accumulation", "[mixture]") {
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 10; ++trial) {
    Config c = random_config(rng, 6);
    c.schedule.push_back(WeightChange{3 + rng() % 5, random_weights(rng, c.sizes.size())});
    const std::uint64_t g = c.m * c.world * c.accum;
    const MixtureOptions opts = options_of(c, rng()).with_end(MixtureEnd::first_exhausted);
    MixtureSampler a(c.sizes, c.weights, World(0, c.world), opts);
    if (a.num_steps() < 2) continue;
    const std::uint64_t done = 1 + rng() % (a.num_steps() - 1), rounds = rng() % c.accum;
    const SamplerState saved = SamplerState::from_text(a.state(done, rounds).to_text());
    // Another shape with the same global batch: G ranks x 1, micro-batch 1.
    std::vector<MixtureIndex> after;
    std::uint64_t resumed_steps = 0;
    MixtureOptions other = opts;
    other.with_micro_batch_size(1).with_accumulation_steps(1);
    for (std::uint64_t r = 0; r < g; ++r) {
      MixtureSampler b(c.sizes, c.weights, World(r, g), other, saved);
      CHECK(b.start() == done * g + rounds * c.m * c.world);
      resumed_steps = b.num_steps();
      for (std::uint64_t s = 0; s < b.num_steps(); ++s) {
        const auto mb = b.micro_batch(s, 0);
        for (const auto& x : mb) after.push_back(x);
      }
    }
    // The union equals the uninterrupted stream from the saved position on.
    std::multiset<std::pair<std::uint64_t, std::uint64_t>> got, want;
    for (const auto& x : after) got.emplace(x.source, x.index);
    // Tail::drop counts whole steps from the resumed position.
    CHECK(resumed_steps == (a.dataset_size() - saved.consumed) / g);
    for (std::uint64_t p = saved.consumed; p < saved.consumed + resumed_steps * g; ++p) {
      const MixtureIndex x = a.at(p);
      want.emplace(x.source, x.index);
    }
    CHECK(got == want);
    // Another global batch (2G on one rank) keeps the order when it keeps the mixing block.
    MixtureSampler twice(
        c.sizes, c.weights, World(0, 1),
        MixtureOptions(opts).with_micro_batch_size(2 * g).with_accumulation_steps(1).with_mixing_block(g), saved);
    for (std::uint64_t s = 0; s < twice.num_steps(); ++s) {
      const auto mb = twice.micro_batch(s, 0);
      for (std::size_t e = 0; e < mb.size(); ++e) CHECK(mb[e] == a.at(saved.consumed + s * 2 * g + e));
    }
    MixtureSampler other_block(c.sizes, c.weights, World(0, 1), MixtureOptions(opts).with_micro_batch_size(2 * g));
    CHECK_THROWS_WITH(other_block.resume(saved), Catch::Contains("mixture settings differ"));
  }
}

TEST_CASE("mixture: bad configuration and state throw naming the parameter", "[mixture][errors]") {
  const World one(0, 1);
  const auto o = MixtureOptions().with_micro_batch_size(2);
  CHECK_THROWS_WITH(MixtureSampler({}, {}, one, o),
                    "MixtureSampler: source_sizes is empty (expected at least one source)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0}, one, o),
                    "MixtureSampler: weights has 1 values for 2 sources (expected one weight per source)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, -0.5}, one, o),
                    "MixtureSampler: weights[1] is -0.500000 (expected a finite weight >= 0)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {std::nan(""), 1.0}, one, o),
                    "MixtureSampler: weights[0] is nan (expected a finite weight >= 0)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {0.0, 0.0}, one, o),
                    "MixtureSampler: weights are all 0 or sum past the largest double (expected a positive, finite "
                    "sum)");
  CHECK_THROWS_WITH(MixtureSampler({3, 0}, {1.0, 0.5}, one, o),
                    "MixtureSampler: weights[1] is 0.500000 but source 1 is empty (expected weight 0 for an empty "
                    "source, or a non-empty source)");
  CHECK_NOTHROW(MixtureSampler({3, 0}, {1.0, 0.0}, one, o));
  CHECK_THROWS_WITH(MixtureSampler({UINT64_MAX, 1}, {1.0, 1.0}, one, o),
                    "MixtureSampler: source_sizes overflow 64 bits at source 1 (expected sizes summing to at most "
                    "18446744073709551615)");
  auto sched = [&](std::vector<WeightChange> s) { return MixtureOptions(o).with_schedule(std::move(s)); };
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, sched({{5, {1.0, 1.0}}, {5, {1.0, 2.0}}})),
                    "MixtureSampler: schedule[1] (step 5) does not follow the previous step 5 (expected strictly "
                    "increasing steps from 1; the weights argument holds step 0)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, sched({{0, {1.0, 1.0}}})),
                    "MixtureSampler: schedule[0] (step 0) is not after step 0 (expected strictly increasing "
                    "steps from 1; the weights argument holds step 0)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, sched({{2, {1.0, -1.0}}})),
                    "MixtureSampler: schedule[0] (step 2) weights[1] is -1.000000 (expected a finite weight >= "
                    "0)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, sched({{2, {1.0}}})),
                    "MixtureSampler: schedule[0] (step 2) weights has 1 values for 2 sources (expected one "
                    "weight per source)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, MixtureOptions()),
                    "MixtureSampler: micro_batch_size is 0 (expected at least 1; set it with "
                    "MixtureOptions().with_micro_batch_size(m))");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, MixtureOptions(o).with_end(MixtureEnd::samples)),
                    "MixtureSampler: end_count is 0 (expected at least 1 sample; set it with with_end(end, count))");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, MixtureOptions(o).with_global_batch_size(5)),
                    "MixtureSampler: global_batch_size 5 is not a multiple of micro_batch_size 2 x world_size 1 "
                    "(expected a positive multiple of 2)");
  CHECK_THROWS_WITH(
      MixtureSampler({3, 4}, {1.0, 1.0}, one, MixtureOptions(o).with_global_batch_size(4).with_accumulation_steps(3)),
      "MixtureSampler: accumulation_steps 3 disagrees with global_batch_size 4 (expected 2 = "
      "global_batch_size / (micro_batch_size x world_size); set only one of them)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, sched({{2, {1.0, 0.0}}}).with_end(MixtureEnd::all_seen)),
                    "MixtureSampler: source 1 never finishes its first pass (its weight drops to 0 before it does; "
                    "expected MixtureEnd::first_exhausted, samples or steps, or a positive final weight)");

  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, MixtureOptions(o).with_mixing_block(UINT64_C(1) << 33)),
                    "MixtureSampler: mixing block 8589934592 is out of range (expected 1..4294967296)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, sched({{UINT64_C(1) << 63, {1.0, 1.0}}})),
                    "MixtureSampler: schedule[0] step 9223372036854775808 x mixing block 2 overflows 64 bits");
  CHECK_THROWS_WITH(
      MixtureSampler({3, 4}, {1.0, 1.0}, one, MixtureOptions(o).with_end(MixtureEnd::steps, UINT64_C(1) << 63)),
      "MixtureSampler: end_count 9223372036854775808 x mixing block 2 overflows 64 bits");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, MixtureOptions(o).with_end(static_cast<MixtureEnd>(9))),
                    "MixtureSampler: end 9 is not a MixtureEnd (expected first_exhausted, all_seen, samples or steps)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, 1.0}, one, MixtureOptions(o).with_tail(static_cast<Tail>(7))),
                    "MixtureSampler: tail 7 is not a Tail (expected pad, drop or uneven)");
  CHECK_THROWS_WITH(MixtureSampler({3, 4}, {1.0, std::numeric_limits<double>::infinity()}, one, o),
                    "MixtureSampler: weights[1] is inf (expected a finite weight >= 0)");
  MixtureSampler two({3, 4}, {1.0, 1.0}, one, o);
  CHECK_THROWS_WITH(two.source_count(2, 0),
                    "MixtureSampler: source 2 is out of range for num_sources 2 (expected 0..1)");
  const auto o50 = MixtureOptions(o).with_end(MixtureEnd::samples, 50);
  MixtureSampler s({30, 40}, {1.0, 1.0}, one, o50);
  const SamplerState st = s.state(3);
  CHECK_THROWS_WITH(MixtureSampler({30, 40}, {1.0, 2.0}, one, o50, st),
                    Catch::Matches("MixtureSampler: mixture settings differ \\(state layout 0x[0-9a-f]{16}, sampler "
                                   "layout 0x[0-9a-f]{16}\\)"));
  CHECK_THROWS_WITH(MixtureSampler({30, 40}, {1.0, 1.0}, one, MixtureOptions(o50).with_seed(9), st),
                    "MixtureSampler: seed differs (state 0, sampler 9)");
  SamplerState other = st;
  other.sampler = "batch";
  CHECK_THROWS_WITH(s.resume(other), Catch::Contains("MixtureSampler: sampler family differs (state batch, sampler "
                                                     "mixture)"));
  MixtureSampler before = s;
  CHECK_THROWS_AS(s.resume(other), state_error);
  CHECK(s.start() == before.start());
  CHECK_THROWS_WITH(s.micro_batch(25, 0),
                    "MixtureSampler::micro_batch: step 25 is out of range for num_steps 25 (expected 0..24)");
  CHECK_THROWS_AS(MixtureSampler({3, 4}, {1.0, 1.0}, one, MixtureOptions(o).with_end(MixtureEnd::samples, 0)),
                  config_error);
}

// distsampler tests: DistributedBatchSampler layout, elastic determinism, tails, worker split, epochs and errors.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <distsampler/batch/batch_sampler.hpp>

using distsampler::BatchSamplerOptions;
using distsampler::config_error;
using distsampler::DistributedBatchSampler;
using distsampler::EpochMode;
using distsampler::FeistelPermutation;
using distsampler::MicroBatchId;
using distsampler::Tail;
using distsampler::TorchRandperm;
using distsampler::World;

namespace {

using Vec = std::vector<std::uint64_t>;

// Every rank's indices of one step, sorted: the step's global batch as a set.
template <class P>
std::vector<Vec> step_sets(std::uint64_t n, std::uint64_t m, std::uint64_t w, std::uint64_t k,
                           BatchSamplerOptions options, std::uint64_t epoch) {
  std::vector<Vec> steps;
  for (std::uint64_t r = 0; r < w; ++r) {
    DistributedBatchSampler<P> s(n, World(r, w),
                                 BatchSamplerOptions(options).with_micro_batch_size(m).with_accumulation_steps(k));
    s.set_epoch(epoch);
    if (r == 0) steps.resize(s.num_steps());
    REQUIRE(s.num_steps() == steps.size());
    for (std::uint64_t step = 0; step < s.num_steps(); ++step) {
      for (std::uint64_t mb = 0; mb < k; ++mb) {
        const Vec b = s.micro_batch(step, mb);
        steps[step].insert(steps[step].end(), b.begin(), b.end());
      }
    }
  }
  for (auto& v : steps) std::sort(v.begin(), v.end());
  return steps;
}

}  // namespace

TEST_CASE("The layout follows the documented formula", "[batch]") {
  BatchSamplerOptions o;
  o.shuffle = false;
  auto mb = [&](Tail tail, std::uint64_t rank, std::uint64_t step, std::uint64_t k) {
    o.tail = tail;
    DistributedBatchSampler<> s(20, World(rank, 2),
                                BatchSamplerOptions(o).with_micro_batch_size(2).with_accumulation_steps(2));
    return s.micro_batch(step, k);
  };
  SECTION("drop: 2 full steps of G = 8") {
    o.tail = Tail::drop;
    CHECK(DistributedBatchSampler<>(20, World(0, 2),
                                    BatchSamplerOptions(o).with_micro_batch_size(2).with_accumulation_steps(2))
              .num_steps() == 2);
    CHECK(mb(Tail::drop, 0, 0, 0) == Vec{0, 1});
    CHECK(mb(Tail::drop, 1, 0, 0) == Vec{2, 3});
    CHECK(mb(Tail::drop, 0, 0, 1) == Vec{4, 5});
    CHECK(mb(Tail::drop, 1, 0, 1) == Vec{6, 7});
    CHECK(mb(Tail::drop, 1, 1, 1) == Vec{14, 15});
  }
  SECTION("pad: a third step padded from the start of the order, flagged") {
    o.tail = Tail::pad;
    DistributedBatchSampler<> s(20, World(1, 2),
                                BatchSamplerOptions(o).with_micro_batch_size(2).with_accumulation_steps(2));
    CHECK(s.num_steps() == 3);
    CHECK(mb(Tail::pad, 0, 2, 0) == Vec{16, 17});
    CHECK(mb(Tail::pad, 1, 2, 0) == Vec{18, 19});
    CHECK(mb(Tail::pad, 0, 2, 1) == Vec{0, 1});
    CHECK(mb(Tail::pad, 1, 2, 1) == Vec{2, 3});
    CHECK_FALSE(s.is_padding(2, 0, 1));
    CHECK(s.is_padding(2, 1, 0));
    CHECK(s.position(2, 1, 1) == 3);
  }
  SECTION("uneven: the remainder spread over every micro-batch slot") {
    o.tail = Tail::uneven;
    DistributedBatchSampler<> s(20, World(0, 2),
                                BatchSamplerOptions(o).with_micro_batch_size(2).with_accumulation_steps(2));
    CHECK(s.num_steps() == 3);
    CHECK(mb(Tail::uneven, 0, 2, 0) == Vec{16});
    CHECK(mb(Tail::uneven, 1, 2, 0) == Vec{17});
    CHECK(mb(Tail::uneven, 0, 2, 1) == Vec{18});
    CHECK(mb(Tail::uneven, 1, 2, 1) == Vec{19});
    CHECK(s.micro_batch_length(2, 1) == 1);
    CHECK(s.micro_batch_length(1, 1) == 2);
  }
}

TEMPLATE_TEST_CASE("Elastic determinism: 8x1, 4x2, 2x4 and 1x8 read identical global batches", "[batch][elastic]",
                   FeistelPermutation, TorchRandperm) {
  const std::uint64_t n = GENERATE(as<std::uint64_t>{}, 77, 1000, 1003);
  const std::uint64_t m = GENERATE(as<std::uint64_t>{}, 1, 3);
  const Tail tail = GENERATE(Tail::drop, Tail::pad, Tail::uneven);
  BatchSamplerOptions o;
  o.seed = 1234;
  o.tail = tail;
  CAPTURE(n, m, distsampler::to_string(tail));
  const auto reference = step_sets<TestType>(n, m, 8, 1, o, 5);
  REQUIRE(!reference.empty());
  for (const auto& wk : {std::pair<std::uint64_t, std::uint64_t>{4, 2}, {2, 4}, {1, 8}}) {
    CAPTURE(wk.first, wk.second);
    CHECK(step_sets<TestType>(n, m, wk.first, wk.second, o, 5) == reference);
  }
  // global_batch lists the step in position order whatever the factorisation.
  DistributedBatchSampler<TestType> a(n, World(3, 8), BatchSamplerOptions(o).with_micro_batch_size(m));
  DistributedBatchSampler<TestType> b(n, World(0, 2),
                                      BatchSamplerOptions(o).with_micro_batch_size(m).with_accumulation_steps(4));
  a.set_epoch(5);
  b.set_epoch(5);
  for (std::uint64_t step = 0; step < a.num_steps(); ++step) CHECK(a.global_batch(step) == b.global_batch(step));
  // A different epoch gives different batches (shuffled).
  CHECK(step_sets<TestType>(n, m, 2, 4, o, 6) != reference);
}

TEMPLATE_TEST_CASE("Every tail keeps its promise over small sizes and shapes", "[batch][coverage]", FeistelPermutation,
                   TorchRandperm) {
  for (std::uint64_t n = 1; n <= 40; ++n) {
    for (std::uint64_t w = 1; w <= 3; ++w) {
      for (std::uint64_t k = 1; k <= 3; ++k) {
        for (std::uint64_t m = 1; m <= 3; ++m) {
          for (const Tail tail : {Tail::drop, Tail::pad, Tail::uneven}) {
            BatchSamplerOptions o;
            o.seed = n * 31 + w;
            o.tail = tail;
            std::vector<int> seen(n, 0);
            std::uint64_t padding = 0, steps = 0, lo = UINT64_MAX, hi = 0;
            const std::uint64_t g = m * w * k;
            for (std::uint64_t r = 0; r < w; ++r) {
              DistributedBatchSampler<TestType> s(
                  n, World(r, w), BatchSamplerOptions(o).with_micro_batch_size(m).with_accumulation_steps(k));
              if (r == 0) steps = s.num_steps();
              REQUIRE(s.num_steps() == steps);
              for (std::uint64_t step = 0; step < s.num_steps(); ++step) {
                for (std::uint64_t mb = 0; mb < k; ++mb) {
                  const Vec b = s.micro_batch(step, mb);
                  if (step + 1 == s.num_steps()) {
                    lo = std::min<std::uint64_t>(lo, b.size());
                    hi = std::max<std::uint64_t>(hi, b.size());
                  }
                  for (std::uint64_t e = 0; e < b.size(); ++e) {
                    REQUIRE(b[e] < n);
                    if (s.is_padding(step, mb, e)) {
                      ++padding;
                    } else {
                      ++seen[b[e]];
                    }
                  }
                }
              }
            }
            CAPTURE(n, w, k, m, distsampler::to_string(tail));
            const auto once = static_cast<std::uint64_t>(std::count(seen.begin(), seen.end(), 1));
            CHECK(std::count_if(seen.begin(), seen.end(), [](int c) { return c > 1; }) == 0);
            switch (tail) {
              case Tail::drop:
                CHECK(steps == n / g);
                CHECK(once == n / g * g);
                CHECK(padding == 0);
                break;
              case Tail::pad:
                CHECK(steps == (n + g - 1) / g);
                CHECK(once == n);
                CHECK(padding == steps * g - n);
                break;
              case Tail::uneven:
                CHECK(steps == (n + g - 1) / g);
                CHECK(once == n);
                CHECK(padding == 0);
                if (steps != 0) CHECK(hi - lo <= 1);
                break;
            }
          }
        }
      }
    }
  }
}

TEST_CASE("Workers get the rank's micro-batches round-robin, equal per slot on every rank", "[batch][workers]") {
  const std::uint64_t n = 1000, m = 4, w = 3, k = 2;
  BatchSamplerOptions o;
  o.tail = Tail::pad;
  for (std::uint64_t workers = 1; workers <= 5; ++workers) {
    std::vector<std::uint64_t> slot_counts;
    for (std::uint64_t r = 0; r < w; ++r) {
      DistributedBatchSampler<> s(n, World(r, w),
                                  BatchSamplerOptions(o).with_micro_batch_size(m).with_accumulation_steps(k));
      std::map<std::pair<std::uint64_t, std::uint64_t>, int> seen;
      for (std::uint64_t wk = 0; wk < workers; ++wk) {
        const auto schedule = s.worker_schedule(workers, wk);
        REQUIRE(schedule.size() == s.worker_micro_batch_count(workers, wk));
        if (r == 0) slot_counts.push_back(schedule.size());
        CHECK(schedule.size() == slot_counts[wk]);
        for (std::uint64_t i = 0; i < schedule.size(); ++i) {
          CHECK(schedule[i] == s.worker_micro_batch(workers, wk, i));
          CHECK(schedule[i].step * k + schedule[i].micro_batch == wk + i * workers);
          ++seen[{schedule[i].step, schedule[i].micro_batch}];
        }
      }
      CHECK(seen.size() == s.micro_batch_count());
      for (const auto& entry : seen) CHECK(entry.second == 1);
    }
    const auto lo = *std::min_element(slot_counts.begin(), slot_counts.end());
    const auto hi = *std::max_element(slot_counts.begin(), slot_counts.end());
    CHECK(hi - lo <= 1);
  }
}

TEST_CASE("fill_micro_batch, position and iteration agree with micro_batch", "[batch]") {
  BatchSamplerOptions o;
  o.seed = 9;
  o.tail = Tail::uneven;
  DistributedBatchSampler<> s(103, World(1, 4),
                              BatchSamplerOptions(o).with_micro_batch_size(5).with_accumulation_steps(3));
  std::vector<std::uint64_t> buffer(5);
  std::uint64_t steps = 0;
  for (const auto step : s) {
    CHECK(step.step() == steps);
    CHECK(step.micro_batches() == 3);
    for (std::uint64_t k = 0; k < 3; ++k) {
      const Vec b = step.micro_batch(k);
      const std::uint64_t len = s.fill_micro_batch(step.step(), k, buffer.data());
      CHECK(Vec(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(len)) == b);
      for (std::uint64_t e = 0; e < len; ++e) {
        CHECK(FeistelPermutation(103, 9, 0)(s.position(step.step(), k, e)) == b[e]);
        CHECK_FALSE(step.is_padding(k, e));
      }
    }
    ++steps;
  }
  CHECK(steps == s.num_steps());
  CHECK(steps == 2);  // 103 = 1 x 60 + 43
}

TEST_CASE("Auto epoch advance: each new pass reads the next epoch", "[batch][epoch]") {
  BatchSamplerOptions o;
  o.seed = 3;
  o.epoch_mode = EpochMode::auto_advance;
  DistributedBatchSampler<> s(64, World(0, 2),
                              BatchSamplerOptions(o).with_micro_batch_size(2).with_accumulation_steps(2));
  auto first_batch = [](DistributedBatchSampler<>& sampler) {
    Vec out;
    for (const auto step : sampler) {
      if (out.empty()) out = step.micro_batch(0);
    }
    return out;
  };
  DistributedBatchSampler<> reference(
      64, World(0, 2), BatchSamplerOptions().with_seed(3).with_micro_batch_size(2).with_accumulation_steps(2));
  CHECK(first_batch(s) == reference.micro_batch(0, 0));
  CHECK(s.epoch() == 0);
  CHECK(first_batch(s) != reference.micro_batch(0, 0));
  CHECK(s.epoch() == 1);
  reference.set_epoch(1);
  const auto& const_view = s;
  CHECK(std::distance(const_view.begin(), const_view.end()) == 8);  // const begin() never advances
  CHECK(s.epoch() == 1);
  CHECK((*const_view.begin()).micro_batch(0) == reference.micro_batch(0, 0));
  s.set_epoch(7);
  (void)first_batch(s);
  CHECK(s.epoch() == 7);
  (void)first_batch(s);
  CHECK(s.epoch() == 8);

  DistributedBatchSampler<> manual(
      64, World(0, 2), BatchSamplerOptions().with_seed(3).with_micro_batch_size(2).with_accumulation_steps(2));
  (void)first_batch(manual);
  (void)first_batch(manual);
  CHECK(manual.epoch() == 0);
  manual.next_epoch();
  CHECK(manual.epoch() == 1);
  manual.set_epoch(UINT64_MAX);
  CHECK_THROWS_WITH(manual.next_epoch(),
                    "DistributedBatchSampler: epoch 18446744073709551615 cannot advance "
                    "(expected an epoch below 18446744073709551615)");
}

TEST_CASE("Dataset sizes near 2^64 neither overflow nor materialise", "[batch][large]") {
  const std::uint64_t n = UINT64_MAX;
  BatchSamplerOptions o;
  o.tail = Tail::pad;
  DistributedBatchSampler<> s(n, World(7, 8),
                              BatchSamplerOptions(o).with_micro_batch_size(4).with_accumulation_steps(2));
  CHECK(s.global_batch_size() == 64);
  CHECK(s.num_steps() == n / 64 + 1);
  const std::uint64_t last = s.num_steps() - 1;
  // The last step holds the final 63 positions, then padding from position 0.
  CHECK_FALSE(s.is_padding(last, 0, 3));
  CHECK(s.is_padding(last, 1, 3));
  CHECK(s.position(last, 1, 3) == (1 * 8 + 7) * 4 + 3 - 63);
  o.tail = Tail::drop;
  DistributedBatchSampler<> d(n, World(7, 8),
                              BatchSamplerOptions(o).with_micro_batch_size(4).with_accumulation_steps(2));
  CHECK(d.num_steps() == n / 64);
  CHECK(d.position(d.num_steps() - 1, 1, 3) == (n / 64 - 1) * 64 + 63);
  CHECK(d.micro_batch(d.num_steps() - 1, 1).size() == 4);
  CHECK(d.micro_batch_count() == n / 64 * 2);

  const std::uint64_t half = (std::uint64_t{1} << 63) + 1;
  o.tail = Tail::pad;
  DistributedBatchSampler<> big(n, World(0, 1),
                                BatchSamplerOptions(o).with_micro_batch_size(1).with_accumulation_steps(half));
  CHECK(big.num_steps() == 2);
  CHECK_THROWS_WITH(big.micro_batch_count(),
                    "DistributedBatchSampler: num_steps 2 x accumulation_steps 9223372036854775809 overflows 64 bits");
  CHECK_THROWS_WITH(big.worker_micro_batch_count(2, 0),
                    "DistributedBatchSampler: num_steps 2 x accumulation_steps 9223372036854775809 overflows 64 bits");
}

TEST_CASE("Bad configuration throws config_error with the exact message", "[batch][errors]") {
  const auto micro = [](std::uint64_t m) { return BatchSamplerOptions().with_micro_batch_size(m); };
  CHECK_THROWS_WITH(DistributedBatchSampler<>(10, World(0, 1), BatchSamplerOptions()),
                    "DistributedBatchSampler: micro_batch_size is 0 (expected at least 1; set it with "
                    "BatchSamplerOptions().with_micro_batch_size(m))");
  CHECK_THROWS_WITH(DistributedBatchSampler<>(10, World(0, 1), micro(2).with_accumulation_steps(0)),
                    "DistributedBatchSampler: accumulation_steps is 0 (expected at least 1)");
  World bad;
  bad.rank = 4;
  bad.world_size = 4;
  CHECK_THROWS_WITH(DistributedBatchSampler<>(10, bad, micro(2)),
                    "DistributedBatchSampler: rank 4 is out of range for world_size 4 (expected 0..3)");
  CHECK_THROWS_WITH(
      DistributedBatchSampler<>(10, World(0, 4), micro(std::uint64_t{1} << 33).with_accumulation_steps(1u << 30)),
      "DistributedBatchSampler: micro_batch_size 8589934592 x world_size 4 x "
      "accumulation_steps 1073741824 overflows 64 bits");
  CHECK_THROWS_WITH(DistributedBatchSampler<>(10, World(0, 4), micro(std::uint64_t{1} << 63).with_global_batch_size(8)),
                    "DistributedBatchSampler: micro_batch_size 9223372036854775808 x world_size 4 overflows 64 bits");
  CHECK_THROWS_WITH(DistributedBatchSampler<>(10, World(0, 4), micro(std::uint64_t{1} << 63)),
                    "DistributedBatchSampler: micro_batch_size 9223372036854775808 x world_size 4 overflows 64 bits");
  CHECK_THROWS_WITH(DistributedBatchSampler<>(10, World(0, 4), micro(8).with_global_batch_size(100)),
                    "DistributedBatchSampler: global_batch_size 100 is not a multiple of micro_batch_size 8 x "
                    "world_size 4 (expected a positive multiple of 32)");
  CHECK_THROWS_WITH(
      DistributedBatchSampler<>(10, World(0, 4), micro(8).with_global_batch_size(64).with_accumulation_steps(3)),
      "DistributedBatchSampler: accumulation_steps 3 disagrees with global_batch_size 64 (expected 2 = "
      "global_batch_size / (micro_batch_size x world_size); set only one of them)");
  CHECK_THROWS_WITH(DistributedBatchSampler<>(10, World(0, 4), BatchSamplerOptions().with_global_batch_size(8)),
                    "DistributedBatchSampler: micro_batch_size is 0 (expected at least 1; set it with "
                    "BatchSamplerOptions().with_micro_batch_size(m))");
  BatchSamplerOptions o = micro(2);
  o.tail = static_cast<Tail>(9);
  CHECK_THROWS_WITH(DistributedBatchSampler<>(10, World(0, 1), o),
                    "DistributedBatchSampler: tail 9 is not a Tail (expected pad, drop or uneven)");
  o.tail = Tail::drop;
  o.epoch_mode = static_cast<EpochMode>(5);
  CHECK_THROWS_WITH(DistributedBatchSampler<>(10, World(0, 1), o),
                    "DistributedBatchSampler: epoch_mode 5 is not an EpochMode (expected manual or auto_advance)");

  // global_batch_size resolves accumulation_steps; an agreeing accumulation_steps is fine.
  const DistributedBatchSampler<> s(100, World(1, 4), micro(2).with_global_batch_size(16));
  CHECK(s.accumulation_steps() == 2);
  CHECK(s.options().accumulation_steps == 2);
  CHECK(s.options().global_batch_size == 16);
  CHECK(s.num_steps() == 6);
  CHECK(DistributedBatchSampler<>(100, World(1, 4), micro(2).with_global_batch_size(16).with_accumulation_steps(2))
            .options() == s.options());
  const DistributedBatchSampler<> by_steps(100, World(1, 4), micro(2).with_accumulation_steps(3));
  CHECK(by_steps.options().global_batch_size == 24);
  CHECK(by_steps.global_batch_size() == 24);
  CHECK_THROWS_WITH(s.micro_batch(6, 0),
                    "DistributedBatchSampler::micro_batch: step 6 is out of range for num_steps 6");
  CHECK_THROWS_WITH(s.micro_batch(0, 2),
                    "DistributedBatchSampler::micro_batch: micro-batch 2 is out of range for accumulation_steps 2");
  CHECK_THROWS_WITH(s.is_padding(0, 0, 2),
                    "DistributedBatchSampler: element 2 is out of range for micro-batch length 2");
  CHECK_THROWS_WITH(s.worker_schedule(0, 0), "DistributedBatchSampler: num_workers is 0 (expected at least 1)");
  CHECK_THROWS_WITH(s.worker_schedule(4, 4),
                    "DistributedBatchSampler: worker 4 is out of range for num_workers 4 (expected 0..3)");
  CHECK_THROWS_WITH(s.worker_micro_batch(4, 3, 3),
                    "DistributedBatchSampler: i 3 is out of range for worker 3's count 3 (expected 0..2)");
  CHECK_THROWS_WITH(s.state(7), "DistributedBatchSampler::state: steps_done 7 exceeds num_steps 6 (expected 0..6)");
  CHECK_THROWS_WITH(s.state(1, 2),
                    "DistributedBatchSampler::state: micro_batches_done 2 is out of range (expected 0..1)");
  CHECK_THROWS_WITH(s.state(6, 1),
                    "DistributedBatchSampler::state: micro_batches_done 1 is out of range (expected 0..0)");
}

TEST_CASE("An empty dataset has no steps", "[batch]") {
  BatchSamplerOptions o;
  o.tail = Tail::pad;
  DistributedBatchSampler<> s(0, World(0, 2),
                              BatchSamplerOptions(o).with_micro_batch_size(2).with_accumulation_steps(2));
  CHECK(s.num_steps() == 0);
  CHECK(s.begin() == s.end());
  CHECK(s.worker_micro_batch_count(2, 1) == 0);
  CHECK(s.state(0).consumed == 0);
}

TEST_CASE("Micro-batches equal the engine's index at each documented position, padding wrap included",
          "[batch]") {
  for (const Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
    for (const std::uint64_t n : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{103}, std::uint64_t{1000}}) {
      for (std::uint64_t r = 0; r < 3; ++r) {
        CAPTURE(to_string(tail), n, r);
        const auto o = BatchSamplerOptions().with_micro_batch_size(7).with_accumulation_steps(2).with_seed(5).with_tail(
            tail);
        DistributedBatchSampler<> feistel(n, World(r, 3), o);
        DistributedBatchSampler<TorchRandperm> torch(n, World(r, 3), o);
        feistel.set_epoch(2);
        torch.set_epoch(2);
        const FeistelPermutation f(n, 5, 2);
        const TorchRandperm t(n, 5, 2);
        for (std::uint64_t s = 0; s < feistel.num_steps(); ++s) {
          for (std::uint64_t k = 0; k < 2; ++k) {
            const Vec fb = feistel.micro_batch(s, k), tb = torch.micro_batch(s, k);
            REQUIRE(fb.size() == feistel.micro_batch_length(s, k));
            for (std::uint64_t e = 0; e < fb.size(); ++e) {
              CHECK(fb[e] == f(feistel.position(s, k, e)));
              CHECK(tb[e] == t(torch.position(s, k, e)));
            }
          }
        }
      }
    }
  }
}

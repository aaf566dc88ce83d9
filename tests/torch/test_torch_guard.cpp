// distsampler tests: the c10d guard with ranks as threads over a HashStore: verdicts, fields, timeouts, environment.
// SPDX-License-Identifier: MIT
#define CATCH_CONFIG_PREFIX_ALL
#include <catch2/catch.hpp>

#include <distsampler/torch_guard.hpp>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ds = distsampler;
namespace guard = distsampler::torch_guard;

namespace {

// What rank r's call returned, or the message it threw.
struct Outcome {
  std::string message;
  bool threw = false;
  bool ok = false;
};

// Runs `call(rank, store)` on `world` threads sharing one HashStore.
std::vector<Outcome> run_ranks(std::uint64_t world,
                               const std::function<guard::GuardReport(std::uint64_t, c10d::Store&)>& call,
                               c10d::Store& store) {
  std::vector<Outcome> out(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (std::uint64_t r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      Outcome& o = out[static_cast<std::size_t>(r)];
      try {
        const auto report = call(r, store);
        o.message = report.message;
        o.ok = report.ok;
      } catch (const ds::config_error& e) {
        o.message = e.what();
        o.threw = true;
      } catch (const std::exception& e) {
        o.message = std::string("unexpected: ") + e.what();
        o.threw = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// Every sampler of these tests is built here.
ds::DistributedSampler<> plain(std::uint64_t n, ds::World world, std::uint64_t seed, ds::Tail tail) {
  return ds::DistributedSampler<>(n, world, ds::SamplerOptions().with_seed(seed).with_tail(tail));
}

ds::StreamingShardSampler shards(ds::World world, std::uint64_t workers) {
  ds::ShardSamplerOptions o;
  o.seed = 3;
  o.tail = ds::Tail::drop;
  o.canonical_streams = 8;
  o.max_open_shards = 2;
  o.run_length = 4;
  return ds::StreamingShardSampler({97, 0, 45, 130}, world, ds::ShardSamplerOptions(o).with_num_workers(workers));
}

}  // namespace

CATCH_TEST_CASE("The guard passes correct shares on every rank and leaves no keys behind", "[torch-guard]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::seconds(20));
  for (const ds::Tail tail : {ds::Tail::pad, ds::Tail::drop, ds::Tail::uneven}) {
    const auto out = run_ranks(
        3,
        [&](std::uint64_t r, c10d::Store& s) {
          return guard::check_epoch(plain(101, ds::World(r, 3), 7, tail), s, ds::World(r, 3));
        },
        *store);
    for (const auto& o : out) {
      CATCH_CHECK(o.ok);
      CATCH_CHECK(o.message.rfind("ok: disjoint and covering over 3 ranks (", 0) == 0);
    }
  }
  // Only the per-rank call counters remain.
  CATCH_CHECK(store->getNumKeys() == 3);
}

CATCH_TEST_CASE("The guard covers resumed segments of every sampler", "[torch-guard]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::seconds(20));
  // A shard state with ranges ahead of its prefix, from 2 ranks x 2 workers, checked on 3 x 1.
  const ds::SamplerState state = shards(ds::World(0, 2), 2).state(ds::WorkerProgress({9, 30}));
  CATCH_CHECK_FALSE(state.ahead.empty());
  auto out = run_ranks(
      3,
      [&](std::uint64_t r, c10d::Store& s) {
        auto sampler = shards(ds::World(r, 3), 1);
        sampler.resume(state);
        return guard::check_epoch(sampler, s, ds::World(r, 3));
      },
      *store);
  for (const auto& o : out) CATCH_CHECK(o.message == out[0].message);
  // 272 samples, 2 x 9 + 2 x 30 consumed, 194 left over 3 consumers under drop: 2 dropped.
  CATCH_CHECK(out[0].message == "ok: disjoint and covering over 3 ranks (192 reads of 192 expected, 0 padding)");
  ds::BatchSamplerOptions bo;
  bo.seed = 4;
  const ds::SamplerState batch_state =
      ds::DistributedBatchSampler<>(500, ds::World(0, 2),
                                    ds::BatchSamplerOptions(bo).with_micro_batch_size(3).with_accumulation_steps(2))
          .state(3, 1);
  auto store4 = c10::make_intrusive<c10d::HashStore>();  // every rank calls equally often on one store
  store4->setTimeout(std::chrono::seconds(20));
  out = run_ranks(
      4,
      [&](std::uint64_t r, c10d::Store& s) {
        ds::DistributedBatchSampler<> b(500, ds::World(r, 4), ds::BatchSamplerOptions(bo).with_micro_batch_size(3));
        b.resume(batch_state);
        ds::TorchBatchSampler<> adapter(b);
        return guard::check_epoch(adapter, s, ds::World(r, 4));
      },
      *store4);
  // 42 consumed; 458 left in steps of 12 under drop: 38 steps, 2 dropped.
  CATCH_CHECK(out[0].message == "ok: disjoint and covering over 4 ranks (456 reads of 456 expected, 0 padding)");
}

CATCH_TEST_CASE("The guard names the rank and the field that differ, on every rank", "[torch-guard][errors]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::seconds(20));
  const std::string who = "distsampler::torch_guard::check_epoch: ";
  struct Case {
    std::function<ds::DistributedSampler<>(std::uint64_t)> make;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](std::uint64_t r) { return plain(100, ds::World(r, 4), r == 2 ? 43 : 42, ds::Tail::pad); },
       "rank 2 has seed 43, rank 0 has 42 (expected the same on every rank)"},
      {[](std::uint64_t r) { return plain(r == 1 ? 99 : 100, ds::World(r, 4), 42, ds::Tail::pad); },
       "rank 1 has dataset_size 99, rank 0 has 100 (expected the same on every rank)"},
      {[](std::uint64_t r) { return plain(100, ds::World(r, 4), 42, r == 3 ? ds::Tail::drop : ds::Tail::pad); },
       "rank 3 has tail drop, rank 0 has pad (expected the same on every rank)"},
      {[](std::uint64_t r) {
         auto s = plain(100, ds::World(r, 4), 42, ds::Tail::pad);
         s.set_epoch(r == 1 ? 1 : 0);
         return s;
       },
       "rank 1 has epoch 1, rank 0 has 0 (expected the same on every rank)"},
      {[](std::uint64_t r) {
         auto s = plain(100, ds::World(r, 4), 42, ds::Tail::pad);
         if (r != 0) s.resume(s.state(5));
         return s;
       },
       "rank 1 has consumed 20, rank 0 has 0 (expected the same on every rank)"},
      {[](std::uint64_t r) { return plain(100, ds::World(r == 2 ? 0 : r, 4), 42, ds::Tail::pad); },
       "rank 2 of 4 built its sampler as rank 0 of 4 (expected its own rank 2 of 4)"},
  };
  for (const Case& c : cases) {
    const auto out = run_ranks(
        4, [&](std::uint64_t r, c10d::Store& s) { return guard::check_epoch(c.make(r), s, ds::World(r, 4)); }, *store);
    for (const auto& o : out) {
      CATCH_CHECK(o.threw);
      CATCH_CHECK(o.message == who + c.message);
    }
  }
  // A sampler family of its own is named too.
  const auto out = run_ranks(
      2,
      [&](std::uint64_t r, c10d::Store& s) {
        if (r == 0) return guard::check_epoch(plain(100, ds::World(0, 2), 1, ds::Tail::drop), s, ds::World(0, 2));
        return guard::check_epoch(shards(ds::World(1, 2), 1), s, ds::World(1, 2));
      },
      *store);
  CATCH_CHECK(out[1].message ==
              who + "rank 1 has sampler shard, rank 0 has distributed (expected the same on every rank)");

  // The token sampler: named, its budget compared through the layout hash, and a whole epoch checked.
  const std::vector<std::uint32_t> lengths = {5, 9, 2, 7, 7, 1, 8, 3, 6, 4, 9, 2, 5};
  auto tokens = [&](std::uint64_t r, std::uint64_t budget) {
    return ds::TokenBatchSampler(lengths.size(), lengths, ds::World(r, 2),
                                 ds::TokenBatchOptions().with_max_tokens(budget).with_window(5).with_seed(2));
  };
  const auto named = run_ranks(
      2,
      [&](std::uint64_t r, c10d::Store& s) {
        if (r == 0) return guard::check_epoch(plain(13, ds::World(0, 2), 2, ds::Tail::uneven), s, ds::World(0, 2));
        return guard::check_epoch(tokens(1, 20), s, ds::World(1, 2));
      },
      *store);
  CATCH_CHECK(named[1].message ==
              who + "rank 1 has sampler tokens, rank 0 has distributed (expected the same on every rank)");
  const auto budget = run_ranks(
      2,
      [&](std::uint64_t r, c10d::Store& s) {
        return guard::check_epoch(tokens(r, r == 1 ? 21 : 20), s, ds::World(r, 2));
      },
      *store);
  CATCH_CHECK(budget[0].message == who + "rank 1 has layout " + ds::detail::hex64(tokens(1, 21).layout_hash()) +
                                       ", rank 0 has " + ds::detail::hex64(tokens(0, 20).layout_hash()) +
                                       " (expected the same on every rank)");
  const auto epoch = run_ranks(
      2, [&](std::uint64_t r, c10d::Store& s) { return guard::check_epoch(tokens(r, 20), s, ds::World(r, 2)); },
      *store);
  for (const auto& o : epoch) {
    CATCH_CHECK(o.message == "ok: disjoint and covering over 2 ranks (13 reads of 13 expected, 0 padding)");
  }
}

// A family of its own, as a new family's folder declares it: key(), the position accessors and its
// segment_sums, found by argument-dependent lookup; no library file names it.
namespace packing {

struct PackSampler {
  std::uint64_t n = 0;
  ds::World world;
  std::string_view family = "packing";

  [[nodiscard]] ds::StateKey key() const noexcept {
    ds::StateKey k;
    k.sampler = family;
    k.dataset_size = n;
    return k;
  }
  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return n; }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return 0; }
  [[nodiscard]] std::uint64_t start() const noexcept { return 0; }
  [[nodiscard]] std::uint64_t rank() const noexcept { return world.rank; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return world.world_size; }
};

ds::ReadSums segment_sums(const PackSampler& s, const ds::World&) {
  ds::ReadSums sums;
  for (std::uint64_t p = s.world.rank; p < s.n; p += s.world.world_size) sums.read(p);
  return sums;
}

}  // namespace packing

CATCH_TEST_CASE("The guard names each rank's family, whichever two families meet", "[torch-guard][errors]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::seconds(20));
  const std::string who = "distsampler::torch_guard::check_epoch: ";
  const std::vector<std::uint32_t> lengths = {5, 9, 2, 7, 7, 1, 8, 3, 6, 4, 9, 2, 5};
  auto tokens = [&](std::uint64_t r) {
    return ds::TokenBatchSampler(lengths.size(), lengths, ds::World(r, 2),
                                 ds::TokenBatchOptions().with_max_tokens(20).with_window(5).with_seed(2));
  };
  // A family of its own against the token family, both ways round.
  auto out = run_ranks(
      2,
      [&](std::uint64_t r, c10d::Store& s) {
        if (r == 0) return guard::check_epoch(tokens(0), s, ds::World(0, 2));
        return guard::check_epoch(packing::PackSampler{13, ds::World(1, 2)}, s, ds::World(1, 2));
      },
      *store);
  for (const auto& o : out) {
    CATCH_CHECK(o.threw);
    CATCH_CHECK(o.message == who + "rank 1 has sampler packing, rank 0 has tokens (expected the same on every rank)");
  }
  out = run_ranks(
      2,
      [&](std::uint64_t r, c10d::Store& s) {
        if (r == 1) return guard::check_epoch(tokens(1), s, ds::World(1, 2));
        return guard::check_epoch(packing::PackSampler{13, ds::World(0, 2)}, s, ds::World(0, 2));
      },
      *store);
  for (const auto& o : out) {
    CATCH_CHECK(o.message == who + "rank 1 has sampler tokens, rank 0 has packing (expected the same on every rank)");
  }
  // A name that does not pack into the family word (a digit, 17 characters) travels in the record.
  out = run_ranks(
      2,
      [&](std::uint64_t r, c10d::Store& s) {
        if (r == 0) return guard::check_epoch(tokens(0), s, ds::World(0, 2));
        return guard::check_epoch(packing::PackSampler{13, ds::World(1, 2), "packed-streams-v2"}, s, ds::World(1, 2));
      },
      *store);
  for (const auto& o : out) {
    CATCH_CHECK(o.message ==
                who + "rank 1 has sampler packed-streams-v2, rank 0 has tokens (expected the same on every rank)");
  }
  // A batch sampler against a shard sampler read through its libtorch adapter.
  out = run_ranks(
      2,
      [&](std::uint64_t r, c10d::Store& s) {
        if (r == 0) {
          return guard::check_epoch(
              ds::DistributedBatchSampler<>(272, ds::World(0, 2), ds::BatchSamplerOptions().with_micro_batch_size(4)),
              s, ds::World(0, 2));
        }
        return guard::check_epoch(ds::TorchShardSampler(shards(ds::World(1, 2), 1)), s, ds::World(1, 2));
      },
      *store);
  for (const auto& o : out) {
    CATCH_CHECK(o.message == who + "rank 1 has sampler shard, rank 0 has batch (expected the same on every rank)");
  }
  // The family of its own passes the guard when every rank runs it (a store every rank has called equally often).
  auto store3 = c10::make_intrusive<c10d::HashStore>();
  store3->setTimeout(std::chrono::seconds(20));
  out = run_ranks(
      3,
      [&](std::uint64_t r, c10d::Store& s) {
        return guard::check_epoch(packing::PackSampler{20, ds::World(r, 3)}, s, ds::World(r, 3));
      },
      *store3);
  for (const auto& o : out) {
    CATCH_CHECK(o.message == "ok: disjoint and covering over 3 ranks (20 reads of 20 expected, 0 padding)");
  }
}

CATCH_TEST_CASE("The guard's sums catch overlap and missing samples", "[torch-guard]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::seconds(20));
  // Two ranks over 10 samples: rank 0 reads 0..4; rank 1 reads what each case says.
  const std::vector<std::pair<std::vector<std::uint64_t>, std::string>> cases = {
      {{5, 6, 7, 8, 9}, "ok: disjoint and covering over 2 ranks (10 reads of 10 expected, 0 padding)"},
      {{4, 5, 6, 7, 8, 9}, "overlap: 1 extra reads (11 reads of 10 expected, 0 padding)"},
      {{5, 6, 7, 8}, "missing: 1 samples not read (9 reads of 10 expected, 0 padding)"},
      {{4, 6, 7, 8, 9},
       "overlap and missing samples: the right number of reads but not of the right indices (10 reads "
       "of 10 expected, 0 padding)"},
  };
  for (const auto& c : cases) {
    const auto out = run_ranks(
        2,
        [&](std::uint64_t r, c10d::Store& s) {
          guard::ReadSums sums;
          if (r == 0) {
            for (std::uint64_t i = 0; i < 5; ++i) sums.read(i);
          } else {
            for (std::uint64_t i : c.first) sums.read(i);
          }
          guard::GuardKey key;
          key.fields[1] = 10;
          key.fields[12] = 2;
          key.rank = r;
          return guard::check_reads(s, ds::World(r, 2), key, sums);
        },
        *store);
    CATCH_CHECK(out[0].message == c.second);
    CATCH_CHECK(out[1].message == c.second);
  }
}

CATCH_TEST_CASE("A rank that never calls the guard makes the others fail loudly, not hang", "[torch-guard][errors]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(std::chrono::milliseconds(200));  // the default: the store's timeout
  CATCH_CHECK_THROWS_WITH(guard::check_epoch(plain(10, ds::World(0, 2), 1, ds::Tail::pad), *store, ds::World(0, 2)),
                          "distsampler::torch_guard::check_epoch: rank 1 did not arrive within 0.2 s (expected all 2 "
                          "ranks to call the guard, equally often, on one store)");
  // Three ranks, rank 2 absent, an explicit timeout: both live ranks fail alike, naming it.
  auto store3 = c10::make_intrusive<c10d::HashStore>();
  store3->setTimeout(std::chrono::seconds(20));
  const auto out = run_ranks(
      2,
      [&](std::uint64_t r, c10d::Store& s) {
        return guard::check_epoch(plain(10, ds::World(r, 3), 1, ds::Tail::pad), s, ds::World(r, 3),
                                  std::chrono::milliseconds(1500));
      },
      *store3);
  const std::string expected =
      "distsampler::torch_guard::check_epoch: rank 2 did not arrive within 1.5 s (expected all 3 ranks to call the "
      "guard, equally often, on one store)";
  for (const auto& o : out) {
    CATCH_CHECK(o.threw);
    CATCH_CHECK(o.message == expected);
  }
  // It arrives late: it fails with the decision already taken, at once.
  const auto start = std::chrono::steady_clock::now();
  CATCH_CHECK_THROWS_WITH(guard::check_epoch(plain(10, ds::World(2, 3), 1, ds::Tail::pad), *store3, ds::World(2, 3),
                                             std::chrono::seconds(10)),
                          expected);
  CATCH_CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

CATCH_TEST_CASE("The guard refuses a negative timeout", "[torch-guard][errors]") {
  auto store = c10::make_intrusive<c10d::HashStore>();
  CATCH_CHECK_THROWS_WITH(guard::check_epoch(plain(10, ds::World(0, 1), 1, ds::Tail::pad), *store, ds::World(0, 1),
                                             std::chrono::milliseconds(-5)),
                          "distsampler::torch_guard::check_epoch: timeout -5 ms is negative (expected a positive "
                          "duration, or zero for the store's timeout)");
}

CATCH_TEST_CASE("store_from_env names the variable that is missing or malformed", "[torch-guard][errors]") {
  ::setenv("RANK", "0", 1);
  ::setenv("WORLD_SIZE", "1", 1);
  ::unsetenv("MASTER_ADDR");
  ::unsetenv("MASTER_PORT");
  const std::string who = "distsampler::torch_guard::store_from_env: ";
  CATCH_CHECK_THROWS_WITH(guard::store_from_env(), who +
                                                       "MASTER_ADDR is not set (expected the host of rank 0, as "
                                                       "torchrun sets it)");
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  CATCH_CHECK_THROWS_WITH(guard::store_from_env(),
                          who + "MASTER_PORT is not set (expected a TCP port, as torchrun sets it)");
  ::setenv("MASTER_PORT", "29x", 1);
  CATCH_CHECK_THROWS_WITH(guard::store_from_env(),
                          who + "MASTER_PORT \"29x\" is not a decimal integer (expected only digits 0-9)");
  ::setenv("MASTER_PORT", "70000", 1);
  CATCH_CHECK_THROWS_WITH(guard::store_from_env(), who + "MASTER_PORT 70000 is not a TCP port (expected 1..65535)");
  for (const char* name : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) ::unsetenv(name);
}

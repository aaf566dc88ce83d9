// distsampler tests: under mpirun, every rank's indices gathered at rank 0 form a partition; the guard catches broken
// ones. SPDX-License-Identifier: MIT
#include <distsampler/mpi.hpp>
#include <distsampler/packing/guard.hpp>

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gather.hpp"

namespace ds = distsampler;

namespace {

int passed = 0, failed = 0, me = 0;

void expect(bool condition, const std::string& what) {
  if (me != 0) return;
  if (condition) {
    ++passed;
  } else {
    ++failed;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

// Gathers every rank's (index, padding) at rank 0 and checks them with PartitionChecker.
template <class Sampler>
ds::PartitionReport gather_and_check(const Sampler& s, std::uint64_t world_size) {
  std::vector<std::uint64_t> mine;
  for (std::uint64_t i = 0; i < s.size(); ++i) {
    mine.push_back(s[i]);
    mine.push_back(s.is_padding(i) ? 1 : 0);
  }
  const auto g = distsampler_tests::gather_at_root(mine);
  ds::PartitionChecker checker(s.dataset_size(), world_size, s.options().tail);
  if (me == 0) {
    for (std::size_t r = 0; r < g.counts.size(); ++r) {
      for (int k = 0; k < g.counts[r]; k += 2) {
        const auto at = static_cast<std::size_t>(g.offsets[r] + k);
        checker.add(r, g.values[at], g.values[at + 1] != 0);
      }
    }
  }
  return checker.finish();
}

template <class Permutation>
void check_engine(const char* engine, bool shuffle, const ds::World& world) {
  for (std::uint64_t n : {0u, 1u, 7u, 1000u, 4099u}) {
    for (ds::Tail tail : {ds::Tail::pad, ds::Tail::drop, ds::Tail::uneven}) {
      ds::DistributedSampler<Permutation> s(n, world,
                                            ds::SamplerOptions().with_shuffle(shuffle).with_seed(17).with_tail(tail));
      s.set_epoch(n % 3);
      ds::mpi::check_consistent(s);
      const auto report = gather_and_check(s, world.world_size);
      const std::string what = std::string(engine) + " N=" + std::to_string(n) +
                               " tail=" + std::string(ds::to_string(tail)) + ": " + report.summary();
      expect(report.ok(), what);
      const auto guard = ds::mpi::guard_epoch(s);
      expect(guard.ok, what + " guard: " + guard.message);
    }
  }
}

// StreamingShardSampler with 2 workers per rank: every (rank, worker) stream gathered at rank 0.
void check_shards(const ds::World& world) {
  const std::vector<std::uint64_t> shards = {1000, 3, 0, 250, 7, 77, 4096, 1};
  for (ds::Tail tail : {ds::Tail::pad, ds::Tail::drop, ds::Tail::uneven}) {
    ds::ShardSamplerOptions options;
    options.seed = 9;
    options.tail = tail;
    ds::StreamingShardSampler s(shards, world, options.with_num_workers(2));
    s.set_epoch(1);
    std::vector<std::uint64_t> mine;  // (consumer, index, padding) triples
    for (std::uint64_t w = 0; w < 2; ++w) {
      for (const auto& sample : s.stream(w)) {
        mine.insert(mine.end(), {s.consumer(w), sample.index, sample.is_padding ? 1u : 0u});
      }
    }
    const auto all = distsampler_tests::gather_at_root(mine).values;
    if (me != 0) continue;
    ds::PartitionChecker checker(s.dataset_size(), s.consumers(), tail);
    for (std::size_t at = 0; at + 2 < all.size(); at += 3) checker.add(all[at], all[at + 1], all[at + 2] != 0);
    const auto report = checker.finish();
    expect(report.ok(), "shards tail=" + std::string(ds::to_string(tail)) + ": " + report.summary());
  }
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ds::config_error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const ds::World world = ds::mpi::world_from();
  me = static_cast<int>(world.rank);
  const std::uint64_t w = world.world_size;

  // World from the communicator agrees with the launcher's environment.
  const ds::World env = ds::World::from_env();
  expect(env.rank == world.rank && env.world_size == w, "World::from_env agrees with MPI");
  expect(world.local_world_size == w && world.local_rank == world.rank, "one node: local == global");

  check_engine<ds::FeistelPermutation>("feistel", true, world);
  check_engine<ds::TorchRandperm>("torch", true, world);
  check_engine<ds::FeistelPermutation>("none", false, world);
  check_shards(world);

  const std::uint64_t n = 1000;
  // Broken: every rank seeds its own shuffle (42 + rank).
  {
    ds::DistributedSampler<> s(n, world, ds::SamplerOptions().with_seed(42 + world.rank));
    const auto guard = ds::mpi::guard_epoch(s);
    if (w > 1) {
      expect(!guard.ok, "guard catches per-rank seeds: " + guard.message);
      const std::string e = error_of([&] { ds::mpi::check_consistent(s); });
      expect(e == "distsampler::mpi::check_consistent: rank 1 has seed 43 but rank 0 has 42 (expected the same on "
                  "every rank)",
             "check_consistent names the seed: " + e);
    }
  }
  // Broken: LOCAL_RANK used as rank (two nodes of w/2 ranks each, simulated).
  if (w >= 2) {
    const std::uint64_t half = (w + 1) / 2;
    ds::DistributedSampler<> s(n, ds::World(world.rank % half, w), ds::SamplerOptions().with_seed(42));
    const auto guard = ds::mpi::guard_epoch(s);
    expect(!guard.ok && guard.message.rfind("overlap", 0) == 0, "guard catches LOCAL_RANK as rank: " + guard.message);
    const std::string e = error_of([&] { ds::mpi::check_consistent(s); });
    expect(e.find("built its sampler as rank") != std::string::npos, "check_consistent catches LOCAL_RANK: " + e);
  }
  // Broken: a missing rank (the job believes in one more process than was launched).
  {
    ds::DistributedSampler<> s(n, ds::World(world.rank, w + 1),
                               ds::SamplerOptions().with_seed(42).with_tail(ds::Tail::uneven));
    const auto guard = ds::mpi::guard_epoch(s);
    expect(!guard.ok && guard.message.rfind("missing:", 0) == 0, "guard catches a missing rank: " + guard.message);
  }

  // Packed sequences: every document started once over the ranks, also after a resume; a per-rank seed is caught.
  {
    std::vector<std::uint32_t> lengths(3000);
    for (std::size_t i = 0; i < lengths.size(); ++i) lengths[i] = static_cast<std::uint32_t>((i * 7919) % 700);
    for (const ds::PackMode mode : {ds::PackMode::concat, ds::PackMode::best_fit}) {
      const auto o = ds::PackOptions().with_seq_len(512).with_micro_batch_size(2).with_mode(mode).with_window(256, 32);
      const ds::PackedSequenceSampler s(lengths.size(), lengths, world, ds::PackOptions(o).with_seed(3));
      const auto guard = ds::mpi::guard_epoch(s);
      expect(guard.ok, std::string("packing guard ok: ") + guard.message);
      const ds::PackedSequenceSampler resumed(lengths.size(), lengths, world, ds::PackOptions(o).with_seed(3),
                                              s.state(s.num_steps() / 2));
      const auto again = ds::mpi::guard_epoch(resumed);
      expect(again.ok, std::string("packing guard after resume ok: ") + again.message);
      const ds::PackedSequenceSampler bad(lengths.size(), lengths, world, ds::PackOptions(o).with_seed(3 + world.rank));
      const auto broken = ds::mpi::guard_epoch(bad);
      if (w > 1) expect(!broken.ok, "packing guard catches per-rank seeds: " + broken.message);
    }
  }

  if (me == 0)
    std::printf("mpi partition on %llu ranks: %d passed, %d failed\n", static_cast<unsigned long long>(w), passed,
                failed);
  int status = failed == 0 ? 0 : 1;
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}

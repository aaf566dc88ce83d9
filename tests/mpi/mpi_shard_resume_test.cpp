// distsampler tests: under mpirun, shard streams stopped at different counts on every rank and worker resume exactly
// once on another -np. SPDX-License-Identifier: MIT
#include <distsampler/mpi.hpp>

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gather.hpp"

namespace ds = distsampler;

namespace {

// Uneven shards, an empty one among them; blocks of 6 so the stops fall inside blocks.
std::vector<std::uint64_t> layout() {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = 0; s < 40; ++s) sizes.push_back(s == 7 ? 0 : 20 + (s * 37) % 90);
  return sizes;
}

ds::ShardSamplerOptions options() {
  ds::ShardSamplerOptions o;
  o.seed = 11;
  o.canonical_streams = 12;
  o.max_open_shards = 3;
  o.run_length = 2;
  o.shuffle_window = 5;
  return o;
}

// Reads samples [0, count) of worker w; returns the indices (padding excluded).
void read(const ds::StreamingShardSampler& s, std::uint64_t w, std::uint64_t count, std::vector<std::uint64_t>& out) {
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto x = s.sample(w, i);
    if (!x.is_padding) out.push_back(x.index);
  }
}

}  // namespace

// usage: mpi_shard_resume_test stop WORKERS SALT DIR    (every worker stops at its own count;
//                                                       writes DIR/read.txt and DIR/state.txt)
//        mpi_shard_resume_test resume WORKERS DIR       (reads the rest, checks exactly once)
//        mpi_shard_resume_test errors WORKERS           (mpi::shard_state's errors reach every rank)
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const ds::World world = ds::mpi::world_from();
  const int size = static_cast<int>(world.world_size);
  const std::string mode = argc > 1 ? argv[1] : "";
  const std::uint64_t workers = argc > 2 ? std::stoull(argv[2]) : 1;
  int status = 0;
  ds::StreamingShardSampler sampler(layout(), world, options().with_num_workers(workers));
  sampler.set_epoch(2);
  std::vector<std::uint64_t> mine;
  if (mode == "stop" && argc == 5) {
    const std::uint64_t salt = std::stoull(argv[3]);
    const std::string dir = argv[4];
    // Ranks out of step: each worker's count is its own function of (salt, rank, worker).
    std::vector<std::uint64_t> done;
    for (std::uint64_t w = 0; w < workers; ++w) {
      const std::uint64_t size_w = sampler.worker_size(w);
      done.push_back(ds::detail::mix64(salt * 1000 + world.rank * 10 + w) % (size_w + 1));
      read(sampler, w, done.back(), mine);
    }
    const ds::SamplerState state = ds::mpi::shard_state(sampler, done);
    // The whole epoch's partition, proven across ranks with O(1) communication.
    const ds::mpi::GuardReport guard = ds::mpi::guard_shard_epoch(sampler);
    // Under Tail::drop the guard accounts for the dropped remainder, fresh and resumed.
    ds::ShardSamplerOptions drop_options = options();
    drop_options.tail = ds::Tail::drop;
    ds::StreamingShardSampler dropping(layout(), world, drop_options.with_num_workers(workers));
    dropping.set_epoch(2);
    const ds::mpi::GuardReport drop_fresh = ds::mpi::guard_shard_epoch(dropping);
    std::vector<std::uint64_t> drop_done;
    for (std::uint64_t w = 0; w < workers; ++w) drop_done.push_back(std::min(done[w], dropping.worker_size(w)));
    dropping.resume(ds::mpi::shard_state(dropping, drop_done));
    const ds::mpi::GuardReport drop_resumed = ds::mpi::guard_shard_epoch(dropping);
    if (!guard.ok || !drop_fresh.ok || !drop_resumed.ok) status = 1;
    const auto all = distsampler_tests::gather_at_root(mine).values;
    if (world.rank == 0) {
      std::ofstream(dir + "/state.txt") << state.to_text() << "\n";
      std::ofstream out(dir + "/read.txt");
      for (std::uint64_t index : all) out << index << "\n";
      std::printf(
          "stopped on %d ranks x %llu workers: %zu samples read, state %s\nepoch guard: %s\n"
          "drop guard, fresh: %s\ndrop guard, resumed: %s\n",
          size, static_cast<unsigned long long>(workers), all.size(), state.to_text().c_str(), guard.message.c_str(),
          drop_fresh.message.c_str(), drop_resumed.message.c_str());
    }
  } else if (mode == "resume" && argc == 4) {
    const std::string dir = argv[3];
    std::string line;
    std::getline(std::ifstream(dir + "/state.txt"), line);
    sampler.resume(ds::SamplerState::from_text(line));
    for (std::uint64_t w = 0; w < workers; ++w) read(sampler, w, sampler.worker_size(w), mine);
    // The resumed segment plus what the state marks consumed cover the epoch exactly once.
    const ds::mpi::GuardReport guard = ds::mpi::guard_shard_epoch(sampler);
    const auto all = distsampler_tests::gather_at_root(mine).values;
    if (world.rank == 0) {
      std::vector<unsigned> count(static_cast<std::size_t>(sampler.dataset_size()));
      std::ifstream in(dir + "/read.txt");
      std::uint64_t index = 0, before = 0;
      while (in >> index) ++count[static_cast<std::size_t>(index)], ++before;
      for (std::uint64_t i : all) ++count[static_cast<std::size_t>(i)];
      std::uint64_t twice = 0, never = 0;
      for (unsigned c : count) twice += c > 1 ? 1 : 0, never += c == 0 ? 1 : 0;
      const bool ok = twice == 0 && never == 0 && guard.ok;
      std::printf(
          "resumed on %d ranks x %llu workers: %llu + %zu reads of %llu, %llu read twice, %llu never\n"
          "segment guard: %s\nmpi shard resume: %d passed, %d failed\n",
          size, static_cast<unsigned long long>(workers), static_cast<unsigned long long>(before), all.size(),
          static_cast<unsigned long long>(sampler.dataset_size()), static_cast<unsigned long long>(twice),
          static_cast<unsigned long long>(never), guard.message.c_str(), ok ? 1 : 0, ok ? 0 : 1);
      status = ok ? 0 : 1;
    }
  } else if (mode == "errors" && argc == 3) {
    // Every rank must see the same error from shard_state, so none is left in a collective.
    auto error_of = [&](const ds::StreamingShardSampler& s, std::size_t counts) {
      try {
        (void)ds::mpi::shard_state(s, std::vector<std::uint64_t>(counts, 0));
      } catch (const ds::config_error& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    const bool one = size == 1;
    const std::string prefix = "distsampler::mpi::shard_state: ";
    const std::string w = std::to_string(workers), w1 = std::to_string(workers + 1), n = std::to_string(size);
    // Rank 1 passes one count too many.
    const std::string counts = error_of(sampler, workers + (world.rank == 1 ? 1 : 0));
    // Rank 1 has one worker more than rank 0.
    const ds::StreamingShardSampler more(layout(), world,
                                         options().with_num_workers(workers + (world.rank == 1 ? 1 : 0)));
    const std::string more_workers = error_of(more, workers + (world.rank == 1 ? 1 : 0));
    // Rank 1 built its sampler as rank 0 (LOCAL_RANK used as rank, say).
    const ds::StreamingShardSampler wrong(layout(), ds::World(world.rank == 1 ? 0 : world.rank, world.world_size),
                                          options().with_num_workers(workers));
    const std::string wrong_rank = error_of(wrong, workers);
    // The guard catches the same mistake at run time.
    const std::string guard = ds::mpi::guard_shard_epoch(wrong).message;
    const int ok =
        counts == (one ? "no error" : prefix + "rank 1 passed " + w1 + " counts (expected num_workers = " + w + ")") &&
                more_workers == (one ? "no error"
                                     : prefix + "rank 1 has num_workers " + w1 + " but rank 0 has " + w +
                                           " (expected the same on every rank)") &&
                wrong_rank == (one ? "no error"
                                   : prefix + "MPI rank 1 of " + n + " built its sampler as rank 0 of " + n +
                                         " (expected its own MPI rank and size)") &&
                guard.rfind(one ? "ok: disjoint and covering" : "overlap and missing samples", 0) == 0
            ? 1
            : 0;
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (world.rank == 0) {
      std::printf("rank 0 saw:\n  %s\n  %s\n  %s\n  guard: %s\nmpi shard errors: %d passed, %d failed\n",
                  counts.c_str(), more_workers.c_str(), wrong_rank.c_str(), guard.c_str(), all_ok, 1 - all_ok);
    }
    status = all_ok ? 0 : 1;
  } else {
    if (world.rank == 0)
      std::fprintf(stderr, "usage: mpi_shard_resume_test stop WORKERS SALT DIR | resume WORKERS DIR\n");
    status = 2;
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}

// distsampler tests: the MPI mesh guard on 8 ranks, one correct and one broken run per failure it must catch.
// SPDX-License-Identifier: MIT
#include <distsampler/mpi.hpp>

#include "../mesh_test_samplers.hpp"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <regex>
#include <string>
#include <vector>

namespace ds = distsampler;

using namespace mesh_test;  // plain, batches, Claimed, claimed and n

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank_int = 0, size_int = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_int);
  MPI_Comm_size(MPI_COMM_WORLD, &size_int);
  const auto g = static_cast<std::uint64_t>(rank_int), w = static_cast<std::uint64_t>(size_int);
  if (argc != 2) {
    if (g == 0) std::fprintf(stderr, "usage: mpi_mesh_test MESH   (e.g. dp=4,tp=2; under mpirun -np 8)\n");
    MPI_Finalize();
    return 2;
  }
  const std::string spec = argv[1];
  const ds::Mesh mesh = ds::Mesh::parse(spec);
  const ds::World data = ds::World::from_mesh(g, w, mesh);
  const std::string who = "distsampler::mpi::guard_mesh_epoch: ";
  const std::string head = "mesh " + spec + " \\(data dims dp\\): ";
  const std::string dw = std::to_string(mesh.data_world_size());
  int passed = 0, failed = 0;
  // Runs `guard` on every rank; rank 0 checks its outcome ("ok: ...", or "error: " and the
  // message) against the regular expression `expected`.
  auto run = [&](const char* name, const std::function<ds::GuardReport()>& guard, const std::string& expected) {
    std::string outcome;
    try {
      const ds::GuardReport report = guard();
      outcome = report.message;
    } catch (const ds::config_error& e) {
      outcome = std::string("error: ") + e.what();
    }
    if (g != 0) return;
    const bool ok = std::regex_match(outcome, std::regex(expected));
    std::printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name, outcome.c_str());
    if (!ok) std::printf("     expected /%s/\n", expected.c_str());
    ++(ok ? passed : failed);
  };
  const std::string ok_text = head + "ok: disjoint and covering over " + dw + " ranks \\(1003 reads of 1003 expected, ";
  run(
      "distributed", [&] { return ds::mpi::guard_mesh_epoch(plain(data, 42), mesh); }, ok_text + "1 padding\\)");
  run(
      "batch", [&] { return ds::mpi::guard_mesh_epoch(batches(data, 5), mesh); },
      head + "ok: disjoint and covering over " + dw + " ranks .*");
  run(
      "shard",
      [&] {
        return ds::mpi::guard_mesh_epoch(
            ds::StreamingShardSampler({400, 3, 250, 350}, data,
                                      ds::ShardSamplerOptions().with_seed(42).with_num_workers(2)),
            mesh);
      },
      head + "ok: disjoint and covering over " + dw + " ranks \\(1003 reads of 1003 expected, .*");
  std::vector<std::uint32_t> lengths;
  for (std::uint64_t i = 0; i < n; ++i) lengths.push_back(static_cast<std::uint32_t>(1 + i * 7 % 50));
  run(
      "tokens",
      [&] {
        return ds::mpi::guard_mesh_epoch(
            ds::TokenBatchSampler(n, lengths, data, ds::TokenBatchOptions().with_seed(42).with_max_tokens(128)), mesh);
      },
      ok_text + "0 padding\\)");
  // Rank 5 seeded differently: its tp group (4,5 in both meshes) catches it.
  run(
      "seed", [&] { return ds::mpi::guard_mesh_epoch(plain(data, g == 5 ? 43 : 42), mesh); },
      "error: " + who +
          "tp group of ranks 4,5: rank 5 reads other samples \\(seed 43, rank 4 has 42; expected the same samples on "
          "every rank of the group\\)");
  if (mesh.find("pp") < mesh.ndim()) {
    // Pipeline stage 1 seeded differently: every tp group agrees, the pp groups do not.
    run(
        "pp seed", [&] { return ds::mpi::guard_mesh_epoch(plain(data, g >= 4 ? 43 : 42), mesh); },
        "error: " + who +
            "pp group of ranks 0,4: rank 4 reads other samples \\(seed 43, rank 0 has 42; expected the same samples "
            "on every rank of the group\\)");
  }
  // The global rank used as the sampler's rank.
  run(
      "global rank", [&] { return ds::mpi::guard_mesh_epoch(plain(ds::World(g, w), 42), mesh); },
      "error: " + who + "rank 0 \\(.*\\) built its sampler as rank 0 of 8 \\(expected data rank 0 of " + dw +
          " of mesh " + spec + ", data dims dp\\)");
  // Rank 3 with another micro-batch size: its tp group (2,3 in both meshes) names the field.
  run(
      "micro_batch_size", [&] { return ds::mpi::guard_mesh_epoch(batches(data, g == 3 ? 4 : 5), mesh); },
      "error: " + who +
          "tp group of ranks 2,3: rank 3 reads other samples \\(micro_batch_size 4, rank 2 has 5; expected the same "
          "samples on every rank of the group\\)");
  // Rank 3 built its sampler for data rank 0 but names its own: the same key, other reads.
  run(
      "reads", [&] { return ds::mpi::guard_mesh_epoch(claimed(data, g == 3, 0), mesh); },
      "error: " + who +
          "tp group of ranks 2,3: rank 3 reads other samples \\(the same key, but its reads differ from rank 2's: .*");
  // Every rank of data rank 1 seeded differently: the groups agree, the data ranks do not.
  run(
      "data seed", [&] { return ds::mpi::guard_mesh_epoch(plain(data, data.rank == 1 ? 43 : 42), mesh); },
      "error: " + who +
          "data rank 1 \\(rank 2\\) has seed 43, rank 0 has 42 \\(expected the same on every rank of mesh " + spec +
          "\\)");
  // Every rank of data rank 1 reads data rank 0's share under its own name: only the sums can tell.
  run(
      "overlap", [&] { return ds::mpi::guard_mesh_epoch(claimed(data, data.rank == 1, 0), mesh); },
      head + (dw == "4" ? "overlap and missing samples: the right number of reads but not of the right indices "
                          "\\(1003 reads of 1003 expected, 1 padding\\)"
                        : "overlap: 1 extra reads \\(1004 reads of 1003 expected, 0 padding\\)"));
  run(
      "mesh size", [&] { return ds::mpi::guard_mesh_epoch(plain(ds::World(0, 3), 42), ds::Mesh::parse("dp=3")); },
      "error: " + who + "mesh dp=3 has 3 ranks but the communicator has 8 \\(expected the product of the dims\\)");
  if (g == 0) std::printf("mpi mesh %s: %d passed, %d failed\n", spec.c_str(), passed, failed);
  MPI_Finalize();
  return failed == 0 ? 0 : 1;
}

// distsampler test program: one global rank of an 8-rank mesh job running the c10d mesh guard, correct and broken.
// SPDX-License-Identifier: MIT
#include <distsampler/torch_guard.hpp>

#include "../mesh_test_samplers.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <regex>
#include <string>

namespace ds = distsampler;
namespace guard = distsampler::torch_guard;

using namespace mesh_test;  // plain, batches, Claimed, claimed and n

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: torch_mesh_rank MESH   (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)\n");
    return 2;
  }
  const std::string spec = argv[1];
  const ds::World process = ds::World::from_env();
  const ds::Mesh mesh = ds::Mesh::parse(spec);
  const ds::World data = ds::World::from_mesh(process, mesh);
  const std::uint64_t g = process.rank;
  const std::string who = "distsampler::torch_guard::check_mesh_epoch: ";
  const std::string head = "mesh " + spec + " \\(data dims dp\\): ";
  const std::string dw = std::to_string(mesh.data_world_size());
  int passed = 0, failed = 0;
  try {
    auto store = guard::store_from_env(std::chrono::seconds(60));
    // Every rank runs every case (each one collective) and checks its own outcome.
    auto run = [&](const char* name, const std::function<ds::GuardReport()>& check, const std::string& expected) {
      std::string outcome;
      try {
        outcome = check().message;
      } catch (const ds::config_error& e) {
        outcome = std::string("error: ") + e.what();
      }
      const bool ok = std::regex_match(outcome, std::regex(expected));
      std::printf("rank %llu: %s %s: %s\n", static_cast<unsigned long long>(g), ok ? "PASS" : "FAIL", name,
                  outcome.c_str());
      ++(ok ? passed : failed);
    };
    run(
        "distributed", [&] { return guard::check_mesh_epoch(plain(data, 42), *store, process, mesh); },
        head + "ok: disjoint and covering over " + dw + " ranks \\(1003 reads of 1003 expected, 1 padding\\)");
    run(
        "batch", [&] { return guard::check_mesh_epoch(batches(data, 5), *store, process, mesh); },
        head + "ok: disjoint and covering over " + dw + " ranks .*");
    run(
        "adapter",
        [&] {
          const ds::TorchSampler<> adapter(n, data, ds::SamplerOptions().with_seed(42).with_tail(ds::Tail::drop));
          return guard::check_mesh_epoch(adapter, *store, process, mesh);
        },
        head + "ok: disjoint and covering over " + dw + " ranks .*");
    run(
        "seed", [&] { return guard::check_mesh_epoch(plain(data, g == 5 ? 43 : 42), *store, process, mesh); },
        "error: " + who +
            "tp group of ranks 4,5: rank 5 reads other samples \\(seed 43, rank 4 has 42; expected the same samples "
            "on every rank of the group\\)");
    if (mesh.find("pp") < mesh.ndim()) {
      run(
          "pp seed", [&] { return guard::check_mesh_epoch(plain(data, g >= 4 ? 43 : 42), *store, process, mesh); },
          "error: " + who +
              "pp group of ranks 0,4: rank 4 reads other samples \\(seed 43, rank 0 has 42; expected the same "
              "samples on every rank of the group\\)");
    }
    run(
        "global rank", [&] { return guard::check_mesh_epoch(plain(process, 42), *store, process, mesh); },
        "error: " + who + "rank 0 \\(.*\\) built its sampler as rank 0 of 8 \\(expected data rank 0 of " + dw +
            " of mesh " + spec + ", data dims dp\\)");
    run(
        "micro_batch_size",
        [&] { return guard::check_mesh_epoch(batches(data, g == 3 ? 4 : 5), *store, process, mesh); },
        "error: " + who +
            "tp group of ranks 2,3: rank 3 reads other samples \\(micro_batch_size 4, rank 2 has 5; expected the "
            "same samples on every rank of the group\\)");
    // Rank 3 built its sampler for data rank 0 but names its own: the same key, other reads.
    run(
        "reads", [&] { return guard::check_mesh_epoch(claimed(data, g == 3, 0), *store, process, mesh); },
        "error: " + who +
            "tp group of ranks 2,3: rank 3 reads other samples \\(the same key, but its reads differ from rank "
            "2's: .*");
    // Every rank of data rank 1 built for data rank 0, each claiming its own rank and key:
    // the groups agree, only the data ranks' sums show the overlap.
    run(
        "overlap", [&] { return guard::check_mesh_epoch(claimed(data, data.rank == 1, 0), *store, process, mesh); },
        head + (dw == "4" ? "overlap and missing samples: the right number of reads but not of the right indices "
                            "\\(1003 reads of 1003 expected, 1 padding\\)"
                          : "overlap: 1 extra reads \\(1004 reads of 1003 expected, 0 padding\\)"));
    run(
        "data seed",
        [&] { return guard::check_mesh_epoch(plain(data, data.rank == 1 ? 43 : 42), *store, process, mesh); },
        "error: " + who + "data rank 1 \\(rank 2\\) has seed 43, rank 0 has 42 \\(expected the same on every rank " +
            "of mesh " + spec + "\\)");
    run(
        "mesh size",
        [&] { return guard::check_mesh_epoch(plain(ds::World(0, 3), 42), *store, process, ds::Mesh::parse("dp=3")); },
        "error: " + who + "mesh dp=3 has 3 ranks but world_size is 8 \\(expected the product of the dims\\)");
    // The plain guard still meets the others after mesh guards on the same store.
    run(
        "plain guard after", [&] { return guard::check_epoch(plain(process, 42), *store, process); },
        "ok: disjoint and covering over 8 ranks .*");
  } catch (const std::exception& e) {
    std::printf("rank %llu: other error: %s\n", static_cast<unsigned long long>(g), e.what());
    return 1;
  }
  std::printf("rank %llu: torch mesh %s: %d passed, %d failed\n", static_cast<unsigned long long>(g), spec.c_str(),
              passed, failed);
  return failed == 0 ? 0 : 1;
}

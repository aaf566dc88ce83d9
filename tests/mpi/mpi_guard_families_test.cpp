// distsampler tests: the MPI guards over all eight families under mpirun: each passes when built alike, and a rank
// seeded apart is named. SPDX-License-Identifier: MIT
#include <distsampler/mpi.hpp>

#include "../guard_families.hpp"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace ds = distsampler;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank_int = 0, size_int = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_int);
  MPI_Comm_size(MPI_COMM_WORLD, &size_int);
  const auto g = static_cast<std::uint64_t>(rank_int), w = static_cast<std::uint64_t>(size_int);
  const ds::World world(g, w);
  const ds::Mesh flat = ds::Mesh::parse("dp=" + std::to_string(w));
  const std::uint64_t odd = w > 2 ? 2 : w - 1;  // the rank built with seed 43
  int failed = 0, passed = 0;
  // Every rank checks its own outcome of `guard` ("ok: ..." or "error: " and the message).
  auto expect = [&](const std::string& name, const std::function<std::string()>& guard, const std::string& want,
                    bool prefix) {
    std::string outcome;
    try {
      outcome = guard();
    } catch (const ds::config_error& e) {
      outcome = std::string("error: ") + e.what();
    }
    const bool ok = prefix ? outcome.rfind(want, 0) == 0 : outcome == want;
    if (!ok || g == 0)
      std::printf("rank %llu: %s %s: %s\n", static_cast<unsigned long long>(g), ok ? "PASS" : "FAIL", name.c_str(),
                  outcome.c_str());
    ++(ok ? passed : failed);
  };
  const std::string covered = "ok: disjoint and covering over " + std::to_string(w) + " ranks";
  guard_families::for_each_family(world, 42, [&](const char* family, auto&& s) {
    expect(
        std::string(family) + " guard_epoch", [&] { return ds::mpi::guard_epoch(s).message; }, covered, true);
    expect(
        std::string(family) + " guard_mesh_epoch", [&] { return ds::mpi::guard_mesh_epoch(s, flat).message; },
        "mesh " + flat.to_string() + " (data dims dp): " + covered, true);
  });
  if (w > 1) {
    guard_families::for_each_family(world, g == odd ? 43 : 42, [&](const char* family, auto&& s) {
      expect(
          std::string(family) + " seeded apart", [&] { return ds::mpi::guard_mesh_epoch(s, flat).message; },
          "error: distsampler::mpi::guard_mesh_epoch: data rank " + std::to_string(odd) + " (rank " +
              std::to_string(odd) + ") has seed 43, rank 0 has 42 (expected the same on every rank of mesh " +
              flat.to_string() + ")",
          false);
    });
  }
  int total_failed = 0, total_passed = 0;
  MPI_Allreduce(&failed, &total_failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&passed, &total_passed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g == 0)
    std::printf("mpi guard families on %llu ranks: %d passed, %d failed\n", static_cast<unsigned long long>(w),
                total_passed, total_failed);
  MPI_Finalize();
  return total_failed == 0 ? 0 : 1;
}

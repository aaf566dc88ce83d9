// distsampler tests: every family's guard points (guard.hpp): disjoint and covering reads, a rank seeded apart caught.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/distsampler.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "guard_families.hpp"

namespace ds = distsampler;

namespace {

// The records of `world_size` data ranks (Mesh dp=world_size), rank `odd` built with seed 43, the
// others with 42, for the family named `family`; and each rank's segment_sums.
struct GuardFamilyRun {
  std::vector<std::vector<std::uint64_t>> records;
  std::vector<ds::ReadSums> sums;
  std::uint64_t slots = 0;
};

GuardFamilyRun guard_family_run(const std::string& family, std::uint64_t world_size, std::uint64_t odd) {
  GuardFamilyRun run;
  for (std::uint64_t r = 0; r < world_size; ++r) {
    guard_families::for_each_family(ds::World(r, world_size), r == odd ? 43 : 42, [&](const char* name, auto&& s) {
      if (family != name) return;
      CHECK(std::string(s.key().sampler) == family);
      run.records.push_back(ds::mesh_record_of(s));
      run.sums.push_back(segment_sums(s, ds::World(r, world_size)));
      run.slots = ds::guard_slots_of(s);
    });
  }
  return run;
}

std::string guard_family_error(const GuardFamilyRun& run, std::uint64_t world_size) {
  try {
    (void)ds::check_mesh_records("guard", ds::Mesh::parse("dp=" + std::to_string(world_size)), run.slots, run.records,
                                 ds::mesh_key_format);
  } catch (const ds::config_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("Every family's guard points prove its ranks disjoint and covering, and name a rank seeded apart",
          "[guard][families]") {
  const std::vector<std::string> families = {"distributed", "batch", "shard",    "tokens",
                                             "mixture",     "pack",  "weighted", "stream"};
  for (const std::uint64_t w : {1u, 3u, 4u}) {
    for (const std::string& family : families) {
      CAPTURE(family, w);
      const GuardFamilyRun ok = guard_family_run(family, w, w);  // no rank seeded apart
      REQUIRE(ok.records.size() == w);
      const ds::GuardReport report = ds::check_overlap(ok.sums, ok.slots);
      CHECK(report.ok);
      CHECK(report.message.rfind("ok: disjoint and covering over " + std::to_string(w) + " ranks", 0) == 0);
      const ds::GuardReport mesh = ds::check_mesh_records("guard", ds::Mesh::parse("dp=" + std::to_string(w)), ok.slots,
                                                          ok.records, ds::mesh_key_format);
      CHECK(mesh.ok);
      if (w == 1) continue;
      const GuardFamilyRun odd = guard_family_run(family, w, 1);
      CHECK(guard_family_error(odd, w) ==
            "guard: data rank 1 (rank 1) has seed 43, rank 0 has 42 (expected the same "
            "on every rank of mesh dp=" +
                std::to_string(w) + ")");
    }
  }
}

TEST_CASE("The guard points of weighted, mixture and streams count what their ranks split", "[guard][families]") {
  const ds::WeightedSampler weighted(guard_families::weights(), ds::World(0, 2),
                                     ds::WeightedSamplerOptions().with_seed(42).with_num_samples(777));
  CHECK(ds::guard_slots_of(weighted) == 777);  // the draw positions, not the 50 weights
  CHECK(weighted.dataset_size() == 50);
  const ds::MixtureSampler mixture({300, 200, 100}, {0.5, 0.3, 0.2}, ds::World(0, 2),
                                   ds::MixtureOptions().with_seed(42).with_micro_batch_size(4));
  CHECK(ds::guard_slots_of(mixture) == mixture.dataset_size());  // the epoch's positions
  CHECK(ds::guard_shape_of(mixture).layout == mixture.key().layout);
  const ds::StreamSampler stream(7, {}, ds::World(0, 2), 2, ds::StreamOptions{42, 1});
  CHECK(ds::guard_slots_of(stream) == 7 * stream.plan().parts());  // the pieces of a pass
  CHECK(ds::guard_shape_of(stream).num_workers == 2);
  CHECK(ds::guard_shape_of(stream).layout !=
        ds::guard_shape_of(ds::StreamSampler(7, {}, ds::World(0, 2), 2, ds::StreamOptions{42, 2})).layout);
  // Other weights, another num_samples or replacement: another guard layout (the key's seed is the same).
  const auto layout = [](const std::vector<double>& w, ds::WeightedSamplerOptions o) {
    return ds::guard_shape_of(ds::WeightedSampler(w, ds::World(0, 2), o.with_seed(42))).layout;
  };
  const std::vector<double> w = guard_families::weights();
  std::vector<double> other = w;
  other[3] += 1;
  const ds::WeightedSamplerOptions base = ds::WeightedSamplerOptions().with_num_samples(777);
  CHECK(layout(w, base) == layout(w, base));
  CHECK(layout(other, base) != layout(w, base));
  CHECK(layout(w, ds::WeightedSamplerOptions(base).with_num_samples(778)) != layout(w, base));
  CHECK(layout(w, ds::WeightedSamplerOptions(base).with_num_samples(40).with_replacement(false)) !=
        layout(w, ds::WeightedSamplerOptions(base).with_num_samples(40)));
  // A resumed weighted segment: what was drawn before it is skipped, so the cover still holds.
  const ds::SamplerState state =
      ds::WeightedSampler(w, ds::World(0, 3), ds::WeightedSamplerOptions(base).with_seed(42)).state(100);
  std::vector<ds::ReadSums> sums;
  for (std::uint64_t r = 0; r < 2; ++r) {
    ds::WeightedSampler s(w, ds::World(r, 2), ds::WeightedSamplerOptions(base).with_seed(42));
    s.resume(state);
    sums.push_back(segment_sums(s, ds::World(r, 2)));
  }
  CHECK(ds::check_overlap(sums, 777).ok);
}

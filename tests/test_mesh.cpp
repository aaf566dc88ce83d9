// distsampler tests: Mesh, World::from_mesh, and every sampler family reading by data rank over random meshes.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/distsampler.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ds = distsampler;
using ds::config_error;
using ds::Mesh;
using ds::MeshDim;
using ds::World;

namespace {

using MeshReads = std::vector<std::uint64_t>;

std::string mesh_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const config_error& e) {
    return e.what();
  }
  return "<no error>";
}

// A random mesh of 1..4 dims (names from a pool, sizes 1..3, at most 24 ranks); data dims
// by name when one of them is a dp name, else a random non-empty subset named explicitly.
struct MeshCase {
  std::vector<MeshDim> dims;
  std::vector<std::string> data;  // explicit, in mesh order; empty: by name
  std::vector<bool> is_data;
};

MeshCase random_mesh_case(ds::detail::SplitMix64& rng) {
  std::vector<std::string> pool{"pp", "dp", "dp_replicate", "dp_shard", "ep", "cp", "tp"};
  for (std::size_t i = pool.size(); i > 1; --i) std::swap(pool[i - 1], pool[rng() % i]);
  MeshCase c;
  const std::size_t ndim = 1 + rng() % 4;
  std::uint64_t product = 1;
  for (std::size_t i = 0; i < ndim; ++i) {
    std::uint64_t size = 1 + rng() % 3;
    while (product * size > 24) --size;
    product *= size;
    c.dims.push_back(MeshDim{pool[i], size});
  }
  bool by_name = false;
  for (const MeshDim& d : c.dims)
    by_name = by_name || d.name == "dp" || d.name == "dp_replicate" || d.name == "dp_shard";
  c.is_data.assign(ndim, false);
  if (by_name && rng() % 4 != 0) {
    for (std::size_t i = 0; i < ndim; ++i) {
      const std::string& n = c.dims[i].name;
      c.is_data[i] = n == "dp" || n == "dp_replicate" || n == "dp_shard";
    }
  } else {
    const std::size_t forced = rng() % ndim;
    for (std::size_t i = 0; i < ndim; ++i) {
      c.is_data[i] = i == forced || rng() % 2 == 0;
      if (c.is_data[i]) c.data.push_back(c.dims[i].name);
    }
  }
  return c;
}

// The independent layout: coordinates by counting (the last dim ticks fastest, carries
// move outward), and data ranks by numbering the data coordinates in the order counting
// first meets them.
struct MeshLayout {
  std::vector<std::vector<std::uint64_t>> coords;  // per global rank
  std::vector<std::uint64_t> data_rank;            // per global rank
  std::vector<std::uint64_t> representative;       // the rank with its data coords, others 0
  std::uint64_t data_world = 0;
};

MeshLayout count_mesh_layout(const MeshCase& c) {
  MeshLayout out;
  std::vector<std::uint64_t> odometer(c.dims.size(), 0);
  std::map<std::vector<std::uint64_t>, std::uint64_t> data_numbers;
  std::map<std::vector<std::uint64_t>, std::uint64_t> by_coords;
  bool done = false;
  while (!done) {
    out.coords.push_back(odometer);
    by_coords[odometer] = out.coords.size() - 1;
    std::vector<std::uint64_t> data_coords;
    for (std::size_t i = 0; i < c.dims.size(); ++i) {
      if (c.is_data[i]) data_coords.push_back(odometer[i]);
    }
    const auto found = data_numbers.find(data_coords);
    if (found == data_numbers.end()) {
      const std::uint64_t next = data_numbers.size();
      data_numbers[data_coords] = next;
      out.data_rank.push_back(next);
    } else {
      out.data_rank.push_back(found->second);
    }
    std::size_t i = c.dims.size();
    while (true) {
      if (i == 0) {
        done = true;
        break;
      }
      --i;
      if (++odometer[i] < c.dims[i].size) break;
      odometer[i] = 0;
    }
  }
  for (const auto& at : out.coords) {
    std::vector<std::uint64_t> rep = at;
    for (std::size_t i = 0; i < c.dims.size(); ++i) {
      if (!c.is_data[i]) rep[i] = 0;
    }
    out.representative.push_back(by_coords.at(rep));
  }
  out.data_world = data_numbers.size();
  return out;
}

// Every global rank builds its sampler from World::from_mesh; `read(world)` returns what
// that rank reads (padding left out) in a canonical order. Ranks of one model-parallel
// group read the same, and `cover(per data rank)` checks the data ranks' reads together.
void check_family_over_meshes(const char* family, const std::function<MeshReads(const World&)>& read,
                              const std::function<void(const std::vector<MeshReads>&)>& cover) {
  ds::detail::SplitMix64 rng(20261201);
  for (int trial = 0; trial < 25; ++trial) {
    const MeshCase c = random_mesh_case(rng);
    const Mesh mesh(c.dims, c.data);
    const MeshLayout layout = count_mesh_layout(c);
    const auto w = static_cast<std::uint64_t>(layout.coords.size());
    CAPTURE(family, trial, mesh.to_string(), mesh.data_dims_string());
    std::vector<MeshReads> reads;
    for (std::uint64_t g = 0; g < w; ++g) {
      const World world = World::from_mesh(g, w, mesh);
      REQUIRE(world.rank == layout.data_rank[g]);
      REQUIRE(world.world_size == layout.data_world);
      reads.push_back(read(world));
    }
    std::vector<MeshReads> per_data(static_cast<std::size_t>(layout.data_world));
    for (std::uint64_t g = 0; g < w; ++g) {
      CAPTURE(g);
      CHECK(reads[g] == reads[layout.representative[g]]);
      if (layout.representative[g] == g) per_data[layout.data_rank[g]] = reads[g];
    }
    cover(per_data);
  }
}

// The data ranks' reads are [0, n), each index exactly once.
std::function<void(const std::vector<MeshReads>&)> exact_cover(std::uint64_t n) {
  return [n](const std::vector<MeshReads>& per_data) {
    std::vector<int> seen(static_cast<std::size_t>(n), 0);
    for (const MeshReads& r : per_data) {
      for (const std::uint64_t i : r) {
        REQUIRE(i < n);
        ++seen[static_cast<std::size_t>(i)];
      }
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(n));
  };
}

}  // namespace

TEST_CASE("Mesh: coordinates and data ranks are row-major over random meshes, checked by counting",
          "[mesh][property]") {
  ds::detail::SplitMix64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const MeshCase c = random_mesh_case(rng);
    const Mesh mesh(c.dims, c.data);
    const MeshLayout layout = count_mesh_layout(c);
    const auto w = static_cast<std::uint64_t>(layout.coords.size());
    CAPTURE(mesh.to_string(), mesh.data_dims_string());
    REQUIRE(mesh.size() == w);
    REQUIRE(mesh.data_world_size() == layout.data_world);
    for (std::size_t i = 0; i < c.dims.size(); ++i) CHECK(mesh.is_data_dim(i) == c.is_data[i]);
    for (std::uint64_t g = 0; g < w; ++g) {
      CHECK(mesh.coordinates(g) == layout.coords[g]);
      CHECK(mesh.global_rank(layout.coords[g]) == g);
      CHECK(mesh.data_rank(g) == layout.data_rank[g]);
      const World world = World::from_mesh(g, w, mesh);
      CHECK(world == World(layout.data_rank[g], layout.data_world));
      for (std::size_t d = 0; d < c.dims.size(); ++d) {
        const std::vector<std::uint64_t> group = mesh.group(g, d);
        REQUIRE(group.size() == c.dims[d].size);
        for (std::uint64_t k = 0; k < group.size(); ++k) {
          std::vector<std::uint64_t> expected = layout.coords[g];
          expected[d] = k;
          CHECK(layout.coords[group[k]] == expected);
        }
      }
    }
  }
}

TEST_CASE("Mesh: Megatron's and torch's usual meshes give the data world of their dp dims", "[mesh]") {
  // Megatron tp-cp-ep-dp-pp with tp 2, cp 1, ep 1, dp 2, pp 2: tp varies fastest.
  const Mesh megatron = Mesh::parse("pp=2,dp=2,ep=1,cp=1,tp=2");
  CHECK(megatron.data_world_size() == 2);
  CHECK(megatron.coordinates(5) == std::vector<std::uint64_t>{1, 0, 0, 0, 1});
  CHECK(World::from_mesh(5, 8, megatron) == World(0, 2));
  CHECK(World::from_mesh(6, 8, megatron) == World(1, 2));
  // HSDP + TP: data rank over dp_replicate and dp_shard.
  const Mesh hsdp({{"dp_replicate", 2}, {"dp_shard", 2}, {"tp", 2}});
  CHECK(hsdp.data_dims_string() == "dp_replicate,dp_shard");
  CHECK(World::from_mesh(7, 8, hsdp) == World(3, 4));
  CHECK(World::from_mesh(4, 8, hsdp) == World(2, 4));
  // Expert parallelism read as data: named explicitly.
  const Mesh ep = Mesh::parse("pp=2,dp=2,ep=2,tp=2", "dp,ep");
  CHECK(ep.data_world_size() == 4);
  CHECK(World::from_mesh(13, 16, ep) == World(2, 4));  // pp 1, dp 1, ep 0, tp 1
  CHECK(Mesh::parse("dp=4,tp=2").to_string() == "dp=4,tp=2");
  CHECK(Mesh::parse("dp=4,tp=2") == Mesh({{"dp", 4}, {"tp", 2}}));
  CHECK(Mesh::parse("dp=4,tp=2") != Mesh({{"dp", 4}, {"tp", 2}}, {"dp", "tp"}));
  CHECK(Mesh::parse("dp=4,tp=2").find("tp") == 1);
  CHECK(Mesh::parse("dp=4,tp=2").find("pp") == 2);
}

TEST_CASE("Mesh: bad meshes and bad data dims throw config_error naming the mesh", "[mesh][errors]") {
  CHECK(mesh_error([] { (void)World::from_mesh(0, 6, Mesh::parse("pp=2,dp=2,tp=2")); }) ==
        "World::from_mesh: mesh pp=2,dp=2,tp=2 has 8 ranks but world_size is 6 (expected the product of the dims)");
  CHECK(mesh_error([] { (void)World::from_mesh(8, 8, Mesh::parse("pp=2,dp=2,tp=2")); }) ==
        "World::from_mesh: rank 8 is out of range for world_size 8 (expected 0..7)");
  CHECK(mesh_error([] { (void)Mesh::parse("pp=2,dp=0,tp=2"); }) ==
        "Mesh: mesh pp=2,dp=0,tp=2 has dim dp of size 0 (expected at least 1)");
  CHECK(mesh_error([] { (void)Mesh::parse("dp=2,tp=2,dp=2"); }) ==
        "Mesh: mesh dp=2,tp=2,dp=2 has dim dp twice (expected each name once)");
  CHECK(mesh_error([] { (void)Mesh::parse("pp=2,tp=4"); }) ==
        "Mesh: mesh pp=2,tp=4 has no data dim (expected a dim named dp, dp_replicate or dp_shard, or the data "
        "dims named explicitly)");
  CHECK(mesh_error([] { (void)Mesh::parse("pp=2,dp=2,tp=2", "dp,ep"); }) ==
        "Mesh: data dim \"ep\" is not a dim of mesh pp=2,dp=2,tp=2 (expected one of pp,dp,tp)");
  CHECK(mesh_error([] { (void)Mesh::parse("pp=2,dp=2,tp=2", "dp,dp"); }) ==
        "Mesh: data dims dp,dp name dp twice (expected each data dim once)");
  CHECK(mesh_error([] { (void)Mesh::parse("pp=2,dp=2,ep=2", "ep,dp"); }) ==
        "Mesh: data dims ep,dp are not in the order of mesh pp=2,dp=2,ep=2 (expected dp,ep, outermost first)");
  CHECK(mesh_error([] { (void)Mesh::parse(""); }) ==
        "Mesh::parse: mesh \"\" has entry \"\" without a size (expected NAME=SIZE,...)");
  CHECK(mesh_error([] { (void)Mesh::parse("dp=2,tp"); }) ==
        "Mesh::parse: mesh \"dp=2,tp\" has entry \"tp\" without a size (expected NAME=SIZE,...)");
  CHECK(mesh_error([] { (void)Mesh::parse("dp=2,tp=-1"); }) ==
        "Mesh::parse: mesh \"dp=2,tp=-1\" has size \"-1\" for dim \"tp\", which has a sign (expected an unsigned "
        "decimal integer)");
  CHECK(mesh_error([] { (void)Mesh::parse("dp=2,t p=2"); }) ==
        "Mesh: mesh dp=2,t p=2 has dim name \"t p\" (expected a non-empty name of letters, digits and _)");
  CHECK(mesh_error([] { (void)Mesh::parse("dp=2,=2"); }) ==
        "Mesh: mesh dp=2,=2 has dim name \"\" (expected a non-empty name of letters, digits and _)");
  CHECK(mesh_error([] { (void)Mesh(std::vector<MeshDim>{}); }) ==
        "Mesh: the mesh has no dims (expected at least one NAME=SIZE)");
  CHECK(mesh_error([] { (void)Mesh::parse("dp=4294967296,tp=4294967296"); }) ==
        "Mesh: mesh dp=4294967296,tp=4294967296 has more than 18446744073709551615 ranks (expected a product of the "
        "sizes that fits in 64 bits)");
  CHECK(mesh_error([] { (void)Mesh::parse("dp=4,tp=2").coordinates(8); }) ==
        "Mesh::coordinates: rank 8 is out of range for mesh dp=4,tp=2 of size 8 (expected 0..7)");
  CHECK(mesh_error([] { (void)Mesh::parse("dp=4,tp=2").global_rank({1}); }) ==
        "Mesh::global_rank: 1 coordinates for mesh dp=4,tp=2 (expected 2)");
  CHECK(mesh_error([] {
          (void)Mesh::parse("dp=4,tp=2").global_rank({1, 2});
        }) == "Mesh::global_rank: coordinate 2 is out of range for tp 2 (expected 0..1)");
  CHECK_THROWS_AS(Mesh::parse("dp=0"), std::invalid_argument);
}

TEST_CASE("World::from_mesh_env reads the global rank from the launcher, and locality counts the node's data ranks",
          "[mesh][env]") {
  std::map<std::string, std::string> env{
      {"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}};
  auto lookup = [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  // 2 nodes of 4: dp=4,tp=2 puts data ranks 0,1 on node 0 and 2,3 on node 1.
  CHECK(World::from_mesh_env(Mesh::parse("dp=4,tp=2"), lookup) == World(2, 4, 0, 2));
  // tp=4 fills a node: one data rank per node.
  CHECK(World::from_mesh_env(Mesh::parse("dp=2,tp=4"), lookup) == World(1, 2, 0, 1));
  // dp innermost: each node holds all data ranks... of a different pp stage: 0..3 on both.
  CHECK(World::from_mesh_env(Mesh::parse("pp=2,dp=4"), lookup) == World(1, 4, 1, 4));
  CHECK(World::from_mesh_env(Mesh::parse("dp=2,tp=2,dp_shard=2"), lookup) == World(3, 4, 1, 2));
  // 3 nodes of 4 over dp=4,tp=3: node 1 holds data ranks 1 and 2, not an aligned block,
  // so locality is unknown.
  env["WORLD_SIZE"] = "12";
  CHECK(World::from_mesh_env(Mesh::parse("dp=4,tp=3"), lookup) == World(1, 4, 0, 1));
  CHECK(World::from_mesh(World(5, 8), Mesh::parse("dp=4,tp=2")) == World(2, 4, 0, 1));
  // Over 2^20 ranks the node walk is skipped: locality unknown.
  CHECK(World::from_mesh(World(5, 2097152, 1, 4), Mesh::parse("dp=524288,tp=4")) == World(1, 524288, 0, 1));
  CHECK(World::from_mesh(World(5, 1048576, 1, 4), Mesh::parse("dp=262144,tp=4")) == World(1, 262144, 0, 1));
  CHECK(World::from_mesh(World(5, 1048576, 5, 8), Mesh::parse("dp=262144,tp=4")) == World(1, 262144, 1, 2));
  env["WORLD_SIZE"] = "6";
  CHECK(mesh_error([&] { (void)World::from_mesh_env(Mesh::parse("dp=4,tp=2"), lookup); }) ==
        "World::from_mesh: mesh dp=4,tp=2 has 8 ranks but world_size is 6 (expected the product of the dims)");
}

TEST_CASE("Mesh: DistributedSampler reads by data rank, the same inside model-parallel groups", "[mesh][property]") {
  const std::uint64_t n = 101;
  const auto options = ds::SamplerOptions().with_seed(11).with_tail(ds::Tail::uneven);
  check_family_over_meshes(
      "distributed", [&](const World& w) { return ds::DistributedSampler<>(n, w, options).indices(); }, exact_cover(n));
}

TEST_CASE("Mesh: DistributedBatchSampler reads by data rank, the same inside model-parallel groups",
          "[mesh][property]") {
  const std::uint64_t n = 97;
  const auto options = ds::BatchSamplerOptions().with_seed(5).with_micro_batch_size(3).with_tail(ds::Tail::pad);
  check_family_over_meshes(
      "batch",
      [&](const World& w) {
        const ds::DistributedBatchSampler<> s(n, w, options);
        MeshReads out;
        for (std::uint64_t step = 0; step < s.num_steps(); ++step) {
          for (std::uint64_t k = 0; k < s.micro_batches_per_step(); ++k) {
            const auto mb = s.micro_batch(step, k);
            for (std::uint64_t e = 0; e < mb.size(); ++e) {
              if (!s.is_padding(step, k, e)) out.push_back(mb[e]);
            }
          }
        }
        return out;
      },
      exact_cover(n));
}

TEST_CASE("Mesh: StreamingShardSampler reads by data rank, the same inside model-parallel groups", "[mesh][property]") {
  const std::vector<std::uint64_t> shards{13, 7, 20, 1, 9, 30};
  const auto options = ds::ShardSamplerOptions().with_seed(3).with_num_workers(2);
  check_family_over_meshes(
      "shard",
      [&](const World& w) {
        const ds::StreamingShardSampler s(shards, w, options);
        MeshReads out;
        for (std::uint64_t k = 0; k < s.num_workers(); ++k) {
          s.for_each(k, [&](const ds::ShardSample& x) {
            if (!x.is_padding) out.push_back(x.index);
          });
        }
        return out;
      },
      exact_cover(80));
}

TEST_CASE("Mesh: TokenBatchSampler reads by data rank, the same inside model-parallel groups", "[mesh][property]") {
  const std::uint64_t n = 120;
  std::vector<std::uint32_t> lengths;
  for (std::uint64_t i = 0; i < n; ++i) lengths.push_back(static_cast<std::uint32_t>(1 + (i * 37) % 29));
  const auto options = ds::TokenBatchOptions().with_seed(9).with_max_tokens(64).with_window(40);
  check_family_over_meshes(
      "tokens",
      [&](const World& w) {
        const ds::TokenBatchSampler s(n, lengths, w, options);
        MeshReads out;
        for (std::uint64_t step = 0; step < s.num_steps(); ++step) {
          for (std::uint64_t k = 0; k < s.accumulation_steps(); ++k) {
            const ds::TokenMicroBatch mb = s.micro_batch(step, k);
            out.insert(out.end(), mb.indices.begin(), mb.indices.end());
          }
        }
        return out;
      },
      exact_cover(n));
}

TEST_CASE("Mesh: MixtureSampler reads by data rank, and data ranks split each global batch", "[mesh][property]") {
  const std::vector<std::uint64_t> sizes{40, 25, 60};
  const std::vector<double> weights{0.5, 0.2, 0.3};
  const auto options = ds::MixtureOptions().with_seed(21).with_micro_batch_size(2).with_end(ds::MixtureEnd::all_seen);
  auto encode = [](const ds::MixtureIndex& x) { return x.source << 32 | x.index; };
  std::uint64_t data_world = 0;
  check_family_over_meshes(
      "mixture",
      [&](const World& w) {
        data_world = w.world_size;
        const ds::MixtureSampler s(sizes, weights, w, options);
        MeshReads out;
        for (std::uint64_t step = 0; step < s.num_steps(); ++step) {
          for (std::uint64_t k = 0; k < s.micro_batches_per_step(); ++k) {
            for (const ds::MixtureIndex& x : s.micro_batch(step, k)) out.push_back(step << 48 | encode(x));
          }
        }
        return out;
      },
      [&](const std::vector<MeshReads>& per_data) {
        // Per step, the data ranks' micro-batches together are the step's global batch.
        const ds::MixtureSampler whole(sizes, weights, World(0, data_world), options);
        MeshReads together, expected;
        for (const MeshReads& r : per_data) together.insert(together.end(), r.begin(), r.end());
        for (std::uint64_t step = 0; step < whole.num_steps(); ++step) {
          for (const ds::MixtureIndex& x : whole.global_batch(step)) expected.push_back(step << 48 | encode(x));
        }
        std::sort(together.begin(), together.end());
        std::sort(expected.begin(), expected.end());
        CHECK(together == expected);
      });
}

TEST_CASE("Mesh: WeightedSampler reads by data rank, and data ranks split the epoch's draws", "[mesh][property]") {
  const std::vector<double> weights{1, 2, 0, 4, 8, 3};
  const auto options = ds::WeightedSamplerOptions().with_seed(2).with_num_samples(60).with_tail(ds::Tail::drop);
  std::uint64_t data_world = 0;
  check_family_over_meshes(
      "weighted",
      [&](const World& w) {
        data_world = w.world_size;
        return ds::WeightedSampler(weights, w, options).indices();
      },
      [&](const std::vector<MeshReads>& per_data) {
        // Rank d of DW reads draws d, d + DW, ... of the single-process epoch.
        const MeshReads all = ds::WeightedSampler(weights, World(0, 1), options).indices();
        for (std::uint64_t d = 0; d < per_data.size(); ++d) {
          for (std::uint64_t i = 0; i < per_data[d].size(); ++i) CHECK(per_data[d][i] == all[i * data_world + d]);
        }
        CHECK(per_data[0].size() * data_world == 60 - 60 % data_world);
      });
}

namespace {

// A two-field key for check_mesh_records: seed and epoch.
constexpr const char* mesh_test_key_names[] = {"seed", "epoch"};
std::string mesh_test_show(std::size_t, std::uint64_t v) { return std::to_string(v); }
const ds::MeshKeyFormat mesh_test_format{mesh_test_key_names, 2, &mesh_test_show};

// Every global rank's record for a DistributedSampler over `mesh`, rank `odd` (if any)
// built with seed 43 instead of 42, or with `world_of` for its World.
std::vector<std::vector<std::uint64_t>> mesh_test_records(const Mesh& mesh, std::uint64_t n,
                                                          const std::function<std::uint64_t(std::uint64_t)>& seed_of,
                                                          const std::function<World(std::uint64_t)>& world_of) {
  std::vector<std::vector<std::uint64_t>> out;
  for (std::uint64_t g = 0; g < mesh.size(); ++g) {
    const World w = world_of(g);
    const ds::DistributedSampler<> s(n, w, ds::SamplerOptions().with_seed(seed_of(g)));
    out.push_back(ds::mesh_record({seed_of(g), s.epoch()}, w, ds::segment_sums(s, w)));
  }
  return out;
}

std::string mesh_check_error(const Mesh& mesh, const std::vector<std::vector<std::uint64_t>>& records) {
  return mesh_error([&] { (void)ds::check_mesh_records("guard", mesh, 50, records, mesh_test_format); });
}

}  // namespace

TEST_CASE("check_mesh_records: groups read the same and data ranks cover, and each broken case names the group",
          "[mesh][guard]") {
  const auto seed42 = [](std::uint64_t) -> std::uint64_t { return 42; };
  for (const char* spec : {"dp=4,tp=2", "pp=2,dp=2,tp=2"}) {
    const Mesh mesh = Mesh::parse(spec);
    const auto by_mesh = [&](std::uint64_t g) { return World::from_mesh(g, mesh.size(), mesh); };
    const ds::GuardReport ok =
        ds::check_mesh_records("guard", mesh, 50, mesh_test_records(mesh, 50, seed42, by_mesh), mesh_test_format);
    CHECK(ok.ok);
    CHECK_NOTHROW(ds::check_mesh_groups("guard", mesh, mesh_test_records(mesh, 50, seed42, by_mesh), mesh_test_format));
    CHECK(ok.message == std::string("mesh ") + spec + " (data dims dp): ok: disjoint and covering over " +
                            std::to_string(mesh.data_world_size()) + " ranks (50 reads of 50 expected, " +
                            (mesh.data_world_size() == 4 ? "2" : "0") + " padding)");
  }
  const Mesh dp_tp = Mesh::parse("dp=4,tp=2");
  const auto dp_tp_world = [&](std::uint64_t g) { return World::from_mesh(g, 8, dp_tp); };
  CHECK(mesh_check_error(
            dp_tp, mesh_test_records(
                       dp_tp, 50, [](std::uint64_t g) -> std::uint64_t { return g == 5 ? 43 : 42; }, dp_tp_world)) ==
        "guard: tp group of ranks 4,5: rank 5 reads other samples (seed 43, rank 4 has 42; expected the same samples "
        "on every rank of the group)");
  // The global rank used as the sampler's rank.
  CHECK(mesh_check_error(dp_tp, mesh_test_records(dp_tp, 50, seed42, [](std::uint64_t g) { return World(g, 8); })) ==
        "guard: rank 0 (dp 0 tp 0) built its sampler as rank 0 of 8 (expected data rank 0 of 4 of mesh dp=4,tp=2, "
        "data dims dp)");
  // A whole tp group (data rank 2) seeded differently: the groups agree, the data ranks do not.
  CHECK(mesh_check_error(dp_tp, mesh_test_records(
                                    dp_tp, 50, [](std::uint64_t g) -> std::uint64_t { return g / 2 == 2 ? 43 : 42; },
                                    dp_tp_world)) ==
        "guard: data rank 2 (rank 4) has seed 43, rank 0 has 42 (expected the same on every rank of mesh dp=4,tp=2)");
  // Same key, other reads: rank 3 missed a sample.
  auto missed = mesh_test_records(dp_tp, 50, seed42, dp_tp_world);
  missed[3][2 + 2 + 2] -= 1;  // one read fewer (sums words start after magic, count, 2 fields, rank, world)
  CHECK(mesh_check_error(dp_tp, missed) ==
        "guard: tp group of ranks 2,3: rank 3 reads other samples (the same key, but its reads differ from rank 2's: "
        "12 reads, rank 2 has 13; expected the same samples on every rank of the group)");
  // A pp group: every rank of pp stage 1 seeded differently.
  const Mesh three = Mesh::parse("pp=2,dp=2,tp=2");
  CHECK(mesh_check_error(three, mesh_test_records(
                                    three, 50, [](std::uint64_t g) -> std::uint64_t { return g >= 4 ? 43 : 42; },
                                    [&](std::uint64_t g) { return World::from_mesh(g, 8, three); })) ==
        "guard: pp group of ranks 0,4: rank 4 reads other samples (seed 43, rank 0 has 42; expected the same samples "
        "on every rank of the group)");
  // Data ranks overlap: data rank 1's group reads what data rank 0 reads (claiming its own rank).
  auto overlap = mesh_test_records(dp_tp, 50, seed42, dp_tp_world);
  for (const std::size_t g : {std::size_t{2}, std::size_t{3}}) {
    overlap[g] = mesh_test_records(dp_tp, 50, seed42, dp_tp_world)[0];
    overlap[g][2 + 2] = 1;  // its claimed rank
  }
  const ds::GuardReport bad = ds::check_mesh_records("guard", dp_tp, 50, overlap, mesh_test_format);
  CHECK_FALSE(bad.ok);
  CHECK(bad.message ==
        "mesh dp=4,tp=2 (data dims dp): overlap and missing samples: the right number of reads but not of the right "
        "indices (50 reads of 50 expected, 2 padding)");
  CHECK(mesh_check_error(dp_tp, std::vector<std::vector<std::uint64_t>>(6)) ==
        "guard: mesh dp=4,tp=2 has 8 ranks but 6 records were given (expected one per rank)");
  auto short_record = mesh_test_records(dp_tp, 50, seed42, dp_tp_world);
  short_record[7].pop_back();
  CHECK(mesh_check_error(dp_tp, short_record) ==
        "guard: rank 7 sent a record of 12 words (expected 13 from this guard with a key of 2 fields)");
}

TEST_CASE("Mesh: PackedSequenceSampler reads the same pieces inside model-parallel groups, every token once",
          "[mesh][property]") {
  const std::uint64_t n = 150;
  std::vector<std::uint32_t> lengths;
  for (std::uint64_t i = 0; i < n; ++i)
    lengths.push_back(static_cast<std::uint32_t>(i % 13 == 0 ? 0 : 1 + i * 29 % 47));
  std::uint64_t tokens = 0;
  for (const std::uint32_t l : lengths) tokens += l;
  // A piece (document, first token, length) as one word; a sequence ends with a marker.
  auto encode = [](const ds::PackPiece& p) { return p.document << 40 | p.offset << 20 | p.length; };
  const std::uint64_t end_of_sequence = UINT64_MAX;
  auto pieces_of = [&](const ds::PackOptions& options) {
    return [&, options](const World& w) {
      const ds::PackedSequenceSampler s(n, lengths, w, options);
      MeshReads out;
      ds::PackWindow cache;
      for (std::uint64_t step = 0; step < s.num_steps(); ++step) {
        for (std::uint64_t k = 0; k < s.micro_batches_in_step(step); ++k) {
          const ds::PackMicroBatch mb = s.micro_batch(step, k, cache);
          for (std::uint64_t i = 0; i < mb.sequences(); ++i) {
            for (std::uint64_t p = mb.sequence_begin[i]; p < mb.sequence_begin[i + 1]; ++p) {
              out.push_back(encode(mb.pieces[static_cast<std::size_t>(p)]));
            }
            out.push_back(end_of_sequence);
          }
        }
      }
      return out;
    };
  };
  // Every token of every document once across the data ranks (best_fit reads them all),
  // or at most once (concat drops the epoch's last partial step).
  auto token_cover = [&](bool every) {
    return [&, every](const std::vector<MeshReads>& per_data) {
      std::vector<std::vector<int>> seen(static_cast<std::size_t>(n));
      for (std::uint64_t d = 0; d < n; ++d) seen[d].assign(lengths[d], 0);
      std::uint64_t read = 0;
      for (const MeshReads& r : per_data) {
        for (const std::uint64_t word : r) {
          if (word == end_of_sequence) continue;
          const std::uint64_t doc = word >> 40, offset = word >> 20 & 0xfffff, length = word & 0xfffff;
          REQUIRE(doc < n);
          REQUIRE(offset + length <= lengths[doc]);
          for (std::uint64_t t = offset; t < offset + length; ++t) ++seen[doc][t];
          read += length;
        }
      }
      for (std::uint64_t d = 0; d < n; ++d) {
        CAPTURE(d);
        CHECK(std::count_if(seen[d].begin(), seen[d].end(), [](int c) { return c > 1; }) == 0);
      }
      if (every) {
        CHECK(read == tokens);
      } else {
        CHECK(read > 0);
      }
    };
  };
  SECTION("best_fit") {
    const auto options =
        ds::PackOptions().with_seq_len(64).with_micro_batch_size(2).with_mode(ds::PackMode::best_fit).with_seed(8);
    check_family_over_meshes("pack best_fit", pieces_of(options), token_cover(true));
  }
  SECTION("concat") {
    const auto options = ds::PackOptions().with_seq_len(32).with_micro_batch_size(1).with_window(40).with_seed(8);
    check_family_over_meshes("pack concat", pieces_of(options), token_cover(false));
  }
}

namespace {

// Shard record counts unknown to the sampler (some empty), and a keep rule on global record numbers.
struct MeshStreamData {
  std::vector<std::uint64_t> sizes{17, 0, 30, 5, 22, 9, 0, 40, 13, 26, 1, 18};
  std::vector<std::uint64_t> offsets;
  MeshStreamData() {
    std::uint64_t at = 0;
    for (const std::uint64_t s : sizes) {
      offsets.push_back(at);
      at += s;
    }
  }
  [[nodiscard]] bool kept(std::uint64_t global) const { return global % 5 != 2; }
  [[nodiscard]] std::optional<std::uint64_t> read(const ds::StreamRead& r) const {
    if (r.record >= sizes[static_cast<std::size_t>(r.shard)]) return std::nullopt;
    return kept(offsets[static_cast<std::size_t>(r.shard)] + r.record) ? 1 : 0;
  }
};

}  // namespace

TEST_CASE("Mesh: StreamSampler reads the same kept samples inside model-parallel groups, each once per pass",
          "[mesh][property]") {
  const MeshStreamData data;
  const std::uint64_t workers = 2, micro_batch = 2;
  std::set<std::uint64_t> kept;
  for (std::size_t s = 0; s < data.sizes.size(); ++s) {
    for (std::uint64_t r = 0; r < data.sizes[s]; ++r) {
      if (data.kept(data.offsets[s] + r)) kept.insert(data.offsets[s] + r);
    }
  }
  // Each rank's emissions as (pass, global record) words, worker by worker, then each worker's pass at its end.
  const std::uint64_t pass_marker = std::uint64_t{1} << 63;
  auto read = [&](const World& w) {
    ds::StreamSampler s(data.sizes.size(), {}, 17, w, workers);
    MeshReads out;
    auto reader = [&](const ds::StreamRead& r) { return data.read(r); };
    for (std::uint64_t k = 0; k < workers; ++k) {
      // At least 6 micro-batches, and on until the worker left pass 1 (the same on every rank of a group).
      for (std::uint64_t j = 0; j < 6 || s.progress(k).pass < 2; ++j) {
        REQUIRE(j < 1000);
        const std::vector<ds::StreamEmit> batch = s.next(k, micro_batch, reader);
        REQUIRE(batch.size() == micro_batch);
        for (const ds::StreamEmit& e : batch) {
          REQUIRE(e.end == e.begin + 1);
          out.push_back(e.pass << 32 | (data.offsets[static_cast<std::size_t>(e.shard)] + e.record));
        }
      }
      out.push_back(pass_marker | s.progress(k).pass);
    }
    return out;
  };
  check_family_over_meshes("streams", read, [&](const std::vector<MeshReads>& per_data) {
    std::map<std::uint64_t, std::multiset<std::uint64_t>> by_pass;
    std::uint64_t left_by_all = UINT64_MAX;  // the first pass some consumer has not left
    for (const MeshReads& r : per_data) {
      for (const std::uint64_t word : r) {
        if (word & pass_marker) {
          left_by_all = std::min(left_by_all, word & ~pass_marker);
        } else {
          REQUIRE(kept.count(word & 0xffffffffu) == 1);
          by_pass[word >> 32].insert(word & 0xffffffffu);
        }
      }
    }
    REQUIRE(left_by_all >= 2);  // every consumer of the data world finished passes 0 and 1
    for (const auto& [pass, read_in_pass] : by_pass) {
      CAPTURE(pass, left_by_all);
      CHECK(std::set<std::uint64_t>(read_in_pass.begin(), read_in_pass.end()).size() == read_in_pass.size());
      if (pass < left_by_all) CHECK(std::set<std::uint64_t>(read_in_pass.begin(), read_in_pass.end()) == kept);
    }
  });
}

namespace {

// check_mesh_groups over dp=2,tp=2 with mesh_key_format: `record(world, odd)` is a global
// rank's mesh_record_of, odd for rank 1 (tp 1 of data rank 0) alone.
std::string mesh_key_error(const std::function<std::vector<std::uint64_t>(const World&, bool)>& record) {
  const Mesh mesh = Mesh::parse("dp=2,tp=2");
  std::vector<std::vector<std::uint64_t>> records;
  for (std::uint64_t g = 0; g < mesh.size(); ++g) records.push_back(record(World::from_mesh(g, 4, mesh), g == 1));
  return mesh_error([&] { (void)ds::check_mesh_groups("guard", mesh, records, ds::mesh_key_format); });
}

std::string mesh_key_message(const std::string& difference) {
  return "guard: tp group of ranks 0,1: rank 1 reads other samples (" + difference +
         "; expected the same samples on every rank of the group)";
}

}  // namespace

TEST_CASE("mesh_key_of: every field that changes what a rank reads is compared inside groups, and named",
          "[mesh][guard]") {
  const std::uint64_t n = 90;
  const auto batch = ds::BatchSamplerOptions().with_seed(4).with_micro_batch_size(5);
  std::vector<std::uint32_t> lengths;
  for (std::uint64_t i = 0; i < n; ++i) lengths.push_back(static_cast<std::uint32_t>(1 + i * 11 % 30));
  const auto pack = ds::PackOptions().with_seq_len(64).with_micro_batch_size(2).with_window(60).with_seed(4);
  const auto same = [&](const World& w, bool) {
    return ds::mesh_record_of(ds::DistributedBatchSampler<>(n, w, batch));
  };
  CHECK(mesh_key_error(same) == "<no error>");
  CHECK(mesh_key_error([&](const World& w, bool odd) {
          return odd ? ds::mesh_record_of(ds::DistributedSampler<>(n, w, ds::SamplerOptions().with_seed(4)))
                     : ds::mesh_record_of(ds::DistributedBatchSampler<>(n, w, batch));
        }) == mesh_key_message("sampler distributed, rank 0 has batch"));
  CHECK(mesh_key_error([&](const World& w, bool odd) {
          return ds::mesh_record_of(ds::DistributedBatchSampler<>(n + (odd ? 1 : 0), w, batch));
        }) == mesh_key_message("dataset_size 91, rank 0 has 90"));
  CHECK(mesh_key_error([&](const World& w, bool odd) {
          ds::DistributedBatchSampler<> s(n, w, batch);
          if (odd) s.set_epoch(3);
          return ds::mesh_record_of(s);
        }) == mesh_key_message("epoch 3, rank 0 has 0"));
  CHECK(mesh_key_error([&](const World& w, bool odd) {
          return ds::mesh_record_of(
              ds::DistributedBatchSampler<>(n, w, odd ? ds::BatchSamplerOptions(batch).with_shuffle(false) : batch));
        }) == mesh_key_message("shuffle false, rank 0 has true"));
  CHECK(mesh_key_error([&](const World& w, bool odd) {
          return ds::mesh_record_of(ds::DistributedSampler<>(
              n, w, ds::SamplerOptions().with_seed(4).with_tail(odd ? ds::Tail::drop : ds::Tail::pad)));
        }) == mesh_key_message("tail drop, rank 0 has pad"));
  // The order's engine: torch's randperm on one rank, the Feistel permutation on the others.
  CHECK_THAT(mesh_key_error([&](const World& w, bool odd) {
               const auto o = ds::SamplerOptions().with_seed(4);
               return odd ? ds::mesh_record_of(ds::DistributedSampler<ds::TorchRandperm>(n, w, o))
                          : ds::mesh_record_of(ds::DistributedSampler<>(n, w, o));
             }),
             Catch::Matchers::Matches(
                 "guard: tp group of ranks 0,1: rank 1 reads other samples \\(engine 0x[0-9a-f]{16}, rank 0 has "
                 "0x[0-9a-f]{16}; expected the same samples on every rank of the group\\)"));
  // A rank resumed from another checkpoint (3 samples per rank consumed: 6 of the epoch).
  CHECK(mesh_key_error([&](const World& w, bool odd) {
          ds::DistributedSampler<> s(n, w, ds::SamplerOptions().with_seed(4));
          if (odd) s.resume(s.state(3));
          return ds::mesh_record_of(s);
        }) == mesh_key_message("consumed 6, rank 0 has 0"));
  CHECK(mesh_key_error([&](const World& w, bool odd) {
          return ds::mesh_record_of(
              ds::DistributedBatchSampler<>(n, w, ds::BatchSamplerOptions(batch).with_micro_batch_size(odd ? 4 : 5)));
        }) == mesh_key_message("micro_batch_size 4, rank 0 has 5"));
  CHECK(mesh_key_error([&](const World& w, bool odd) {
          return ds::mesh_record_of(
              ds::DistributedBatchSampler<>(n, w, ds::BatchSamplerOptions(batch).with_accumulation_steps(odd ? 2 : 1)));
        }) == mesh_key_message("accumulation_steps 2, rank 0 has 1"));
  CHECK(mesh_key_error([&](const World& w, bool odd) {
          return ds::mesh_record_of(ds::StreamingShardSampler(
              {30, 20, 40}, w, ds::ShardSamplerOptions().with_seed(4).with_num_workers(odd ? 3 : 2)));
        }) == mesh_key_message("num_workers 3, rank 0 has 2"));
  // The family's layout: the token budget, and packing's seq_len, window and mode.
  const auto layout_message = Catch::Matchers::Matches(
      "guard: tp group of ranks 0,1: rank 1 reads other samples \\(layout 0x[0-9a-f]{16}, rank 0 has "
      "0x[0-9a-f]{16}; expected the same samples on every rank of the group\\)");
  CHECK_THAT(mesh_key_error([&](const World& w, bool odd) {
               return ds::mesh_record_of(ds::TokenBatchSampler(
                   n, lengths, w, ds::TokenBatchOptions().with_seed(4).with_max_tokens(odd ? 48 : 64)));
             }),
             layout_message);
  CHECK_THAT(mesh_key_error([&](const World& w, bool odd) {
               return ds::mesh_record_of(
                   ds::PackedSequenceSampler(n, lengths, w, ds::PackOptions(pack).with_seq_len(odd ? 32 : 64)));
             }),
             layout_message);
  CHECK_THAT(mesh_key_error([&](const World& w, bool odd) {
               return ds::mesh_record_of(
                   ds::PackedSequenceSampler(n, lengths, w, ds::PackOptions(pack).with_window(odd ? 30 : 60)));
             }),
             layout_message);
  // best_fit packs without concat's dropped tail: the key's tail says so before its layout.
  CHECK(mesh_key_error([&](const World& w, bool odd) {
          return ds::mesh_record_of(ds::PackedSequenceSampler(
              n, lengths, w, ds::PackOptions(pack).with_mode(odd ? ds::PackMode::best_fit : ds::PackMode::concat)));
        }) == mesh_key_message("tail uneven, rank 0 has drop"));
  CHECK(mesh_key_error([&](const World& w, bool odd) {
          return ds::mesh_record_of(
              ds::PackedSequenceSampler(n, lengths, w, ds::PackOptions(pack).with_micro_batch_size(odd ? 1 : 2)));
        }) == mesh_key_message("micro_batch_size 1, rank 0 has 2"));
}

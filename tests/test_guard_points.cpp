// distsampler tests: the guards' customisation points: every sampler's key(), family words, guard_shape, ADL plug-in.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/distsampler.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ds = distsampler;

namespace {

ds::ShardSamplerOptions shard_options() {
  ds::ShardSamplerOptions o;
  o.seed = 5;
  o.canonical_streams = 8;
  o.max_open_shards = 2;
  o.run_length = 4;
  return o;
}

const std::vector<std::uint64_t> shard_sizes = {40, 0, 13, 70, 9};

}  // namespace

TEST_CASE("The shard sampler's key() is the key its states carry, the same for every epoch and world",
          "[guard][shards]") {
  ds::StreamingShardSampler s(shard_sizes, ds::World(0, 2), shard_options().with_num_workers(2));
  const ds::StateKey k = s.key();
  CHECK(k.sampler == "shard");
  CHECK(k.dataset_size == 132);
  CHECK(k.seed == 5);
  CHECK(k.tail == ds::Tail::pad);
  CHECK(k.engine == s.engine_name());
  CHECK(k.layout == s.catalog().layout_hash());
  CHECK(k.layout_name == "shard sizes");
  CHECK(k.accepts_ahead);

  const ds::SamplerState state = s.state(7);
  CHECK(state.sampler == "shard");
  CHECK(state.engine == std::string(k.order_engine()));
  CHECK(state.engine_version == k.order_engine_version());
  CHECK(state.layout == k.layout);
  CHECK(state.fingerprint == k.fingerprint());
  CHECK_NOTHROW(state.validate(k));

  // Neither the epoch nor the world nor the worker count is part of the key (elastic resume).
  s.set_epoch(4);
  CHECK(s.key().fingerprint() == k.fingerprint());
  const ds::StreamingShardSampler other_world(shard_sizes, ds::World(2, 3), shard_options().with_num_workers(1));
  CHECK(other_world.key().fingerprint() == k.fingerprint());
  // Another seed or other shard sizes are.
  CHECK(ds::StreamingShardSampler(shard_sizes, ds::World(0, 2), shard_options().with_seed(6)).key().fingerprint() !=
        k.fingerprint());
  CHECK(ds::StreamingShardSampler({40, 13, 70, 9}, ds::World(0, 2), shard_options()).key().fingerprint() !=
        k.fingerprint());
}

TEST_CASE("The shard sampler's key() stays valid while a copy of the sampler lives", "[guard][shards]") {
  std::optional<ds::StreamingShardSampler> original(std::in_place, shard_sizes, ds::World(0, 1), shard_options());
  const std::string engine = original->engine_name();
  const ds::StreamingShardSampler copy = *original;
  const ds::StateKey k = copy.key();
  original.reset();
  CHECK(k.engine == engine);
  CHECK(k.legacy_engine == copy.key().legacy_engine);
  CHECK(k.fingerprint() == copy.state(0).fingerprint);
}

TEST_CASE("Unpackable family names get a hashed word with the top bit set and are shown by number", "[guard]") {
  for (const std::string name : {"Packing", "streams2", "abcdefghijklm"}) {
    INFO(name);
    const std::uint64_t code = ds::guard_family_code(name);
    CHECK(code >> 63 == 1);
    CHECK(code == ds::guard_family_code(std::string(name)));
    CHECK(ds::guard_family_name(code) == "custom " + std::to_string(code));
  }
  CHECK(ds::guard_family_code("Packing") != ds::guard_family_code("packing"));
  CHECK(ds::guard_family_name(ds::guard_family_code("packing")) == "packing");
  // Twelve characters are packed, all the alphabet's kinds included.
  CHECK(ds::guard_family_name(ds::guard_family_code("a_b-c.d e/fz")) == "a_b-c.d e/fz");
  static_assert(ds::guard_family_code("shard") != ds::guard_family_code("shards"), "usable in constant expressions");
}

TEST_CASE("guard_shape_of gives a family's guard_shape, or zeros and the key's layout", "[guard]") {
  const ds::GuardShape plain = ds::guard_shape_of(ds::DistributedSampler<>(50, ds::World(1, 2)));
  CHECK(plain.micro_batch_size == 0);
  CHECK(plain.accumulation_steps == 0);
  CHECK(plain.num_workers == 0);
  CHECK(plain.layout == 0);

  const ds::DistributedBatchSampler<> batches(
      100, ds::World(0, 2), ds::BatchSamplerOptions().with_micro_batch_size(3).with_accumulation_steps(2));
  const ds::GuardShape b = ds::guard_shape_of(batches);
  CHECK(b.micro_batch_size == 3);
  CHECK(b.accumulation_steps == 2);
  CHECK(b.num_workers == 0);

  ds::StreamingShardSampler fresh(shard_sizes, ds::World(0, 2), shard_options().with_num_workers(3));
  const ds::GuardShape f = ds::guard_shape_of(fresh);
  CHECK(f.num_workers == 3);
  CHECK(f.micro_batch_size == 0);
  // What a resumed state had consumed is part of the layout, so ranks resumed from other states differ.
  ds::StreamingShardSampler resumed = fresh;
  resumed.resume(fresh.state(ds::WorkerProgress({5, 0, 9})));
  CHECK_FALSE(resumed.consumed_before().ranges.empty());
  CHECK(ds::guard_shape_of(resumed).layout != f.layout);
  CHECK(ds::guard_shape_of(resumed).num_workers == 3);

  const std::vector<std::uint32_t> lengths = {5, 9, 2, 7, 7, 1, 8, 3, 6, 4, 9, 2, 5};
  const ds::TokenBatchSampler tokens(
      lengths.size(), lengths, ds::World(0, 2),
      ds::TokenBatchOptions().with_max_tokens(20).with_window(5).with_accumulation_steps(3));
  const ds::GuardShape t = ds::guard_shape_of(tokens);
  CHECK(t.accumulation_steps == 3);
  CHECK(t.layout == tokens.layout_hash());
  CHECK(t.layout == tokens.key().layout);
  CHECK(t.micro_batch_size == 0);
}

// A family of its own, declared in its own namespace as a new family's folder would: the guards
// find its segment_sums and guard_shape by argument-dependent lookup, and no library file names it.
namespace packing {

// Rank r of W reads positions r, r + W, ... of [0, n), in reverse order within the epoch.
struct PackSampler {
  std::uint64_t n = 0;
  ds::World world;
  std::uint64_t pack_size = 1;

  [[nodiscard]] ds::StateKey key() const noexcept {
    ds::StateKey k;
    k.sampler = "packing";
    k.dataset_size = n;
    k.layout = 0x1234;
    return k;
  }
};

ds::ReadSums segment_sums(const PackSampler& s, const ds::World&) {
  ds::ReadSums sums;
  for (std::uint64_t p = s.world.rank; p < s.n; p += s.world.world_size) sums.read(s.n - 1 - p);
  return sums;
}

ds::GuardShape guard_shape(const PackSampler& s) {
  ds::GuardShape shape;
  shape.micro_batch_size = s.pack_size;
  shape.layout = s.key().layout;
  return shape;
}

// A family without a guard_shape: zeros and its key's layout.
struct BareSampler {
  [[nodiscard]] ds::StateKey key() const noexcept {
    ds::StateKey k;
    k.sampler = "bare";
    k.layout = 0x99;
    return k;
  }
};

}  // namespace packing

namespace {

// What a guard does for any sampler: unqualified segment_sums, guard_shape_of.
template <class Sampler>
ds::ReadSums generic_sums(const Sampler& s, const ds::World& w) {
  return segment_sums(s, w);
}

}  // namespace

TEST_CASE("A family plugs into the guards from its own namespace through argument-dependent lookup", "[guard]") {
  std::vector<ds::ReadSums> ranks;
  for (std::uint64_t r = 0; r < 3; ++r)
    ranks.push_back(generic_sums(packing::PackSampler{10, ds::World(r, 3), 4}, ds::World(r, 3)));
  CHECK(ds::check_overlap(ranks, 10).message ==
        "ok: disjoint and covering over 3 ranks (10 reads of 10 expected, 0 padding)");
  ranks[1] = generic_sums(packing::PackSampler{10, ds::World(0, 3), 4}, ds::World(1, 3));  // rank 1 built as rank 0
  // Rank 1 built as rank 0 reads rank 0's 4 indices: 4 + 4 + 3 reads.
  CHECK(ds::check_overlap(ranks, 10).message == "overlap: 1 extra reads (11 reads of 10 expected, 0 padding)");

  const ds::GuardShape own = ds::guard_shape_of(packing::PackSampler{10, ds::World(0, 1), 4});
  CHECK(own.micro_batch_size == 4);
  CHECK(own.layout == 0x1234);
  const ds::GuardShape bare = ds::guard_shape_of(packing::BareSampler{});
  CHECK(bare.micro_batch_size == 0);
  CHECK(bare.accumulation_steps == 0);
  CHECK(bare.num_workers == 0);
  CHECK(bare.layout == 0x99);
}

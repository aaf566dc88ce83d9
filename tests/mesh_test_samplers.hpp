// distsampler tests: the samplers both 8-rank mesh guard programs (MPI and c10d) run, correct and lying.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TESTS_MESH_TEST_SAMPLERS_HPP
#define DISTSAMPLER_TESTS_MESH_TEST_SAMPLERS_HPP

#include <cstdint>

#include <distsampler/batch/guard.hpp>
#include <distsampler/distributed/guard.hpp>
#include <distsampler/overlap_check.hpp>

namespace mesh_test {
namespace ds = distsampler;

inline constexpr std::uint64_t n = 1003;

inline ds::DistributedSampler<> plain(const ds::World& world, std::uint64_t seed) {
  return ds::DistributedSampler<>(n, world, ds::SamplerOptions().with_seed(seed));
}

inline ds::DistributedBatchSampler<> batches(const ds::World& world, std::uint64_t micro_batch) {
  return ds::DistributedBatchSampler<>(
      n, world, ds::BatchSamplerOptions().with_seed(42).with_micro_batch_size(micro_batch).with_accumulation_steps(2));
}

// A DistributedSampler built for `source` that names itself rank `claimed` of its world:
// what a rank reads that passed another data rank to its sampler but reports the right one.
struct Claimed {
  ds::DistributedSampler<> inner;
  ds::World source;
  std::uint64_t claimed = 0;
  [[nodiscard]] ds::StateKey key() const noexcept { return inner.key(); }
  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return inner.dataset_size(); }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return inner.epoch(); }
  [[nodiscard]] std::uint64_t start() const noexcept { return inner.start(); }
  [[nodiscard]] std::uint64_t rank() const noexcept { return claimed; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return source.world_size; }
};

// Claimed's reads: its inner sampler's, over the World it was built for (found by argument-dependent lookup).
inline ds::ReadSums segment_sums(const Claimed& s, const ds::World&) { return ds::segment_sums(s.inner, s.source); }

// Data rank `data` (its sampler built for data rank `source_rank` when `lies`) under its own name.
inline Claimed claimed(const ds::World& data, bool lies, std::uint64_t source_rank) {
  const ds::World source = lies ? ds::World(source_rank, data.world_size) : data;
  return Claimed{plain(source, 42), source, data.rank};
}

}  // namespace mesh_test

#endif  // DISTSAMPLER_TESTS_MESH_TEST_SAMPLERS_HPP

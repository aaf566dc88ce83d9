// distsampler tests: one sampler of each of the eight families, as every guard transport's family tests build it.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TESTS_GUARD_FAMILIES_HPP
#define DISTSAMPLER_TESTS_GUARD_FAMILIES_HPP

#include <cstdint>
#include <vector>

#include <distsampler/batch/guard.hpp>
#include <distsampler/distributed/guard.hpp>
#include <distsampler/mixture/guard.hpp>
#include <distsampler/packing/guard.hpp>
#include <distsampler/shards/guard.hpp>
#include <distsampler/streams/guard.hpp>
#include <distsampler/tokens/guard.hpp>
#include <distsampler/weighted/guard.hpp>

namespace guard_families {
namespace ds = distsampler;

inline constexpr std::uint64_t documents = 1003;

// Token counts of `documents` documents (3..200 tokens), the same on every rank; the token and
// packing samplers view them, so they live as long as the program.
inline const std::vector<std::uint32_t>& lengths() {
  static const std::vector<std::uint32_t> values = [] {
    std::vector<std::uint32_t> out;
    for (std::uint64_t i = 0; i < documents; ++i)
      out.push_back(static_cast<std::uint32_t>(3 + ds::detail::splitmix64(i) % 198));
    return out;
  }();
  return values;
}

inline std::vector<double> weights() {
  std::vector<double> out;
  for (std::uint64_t i = 0; i < 50; ++i) out.push_back(static_cast<double>(1 + i % 7));
  return out;
}

// Calls visit(name, sampler) for one sampler of each family, built for `world` with `seed`:
// name is the family's key().sampler.
template <class Visit>
void for_each_family(const ds::World& world, std::uint64_t seed, Visit&& visit) {
  visit("distributed", ds::DistributedSampler<>(documents, world, ds::SamplerOptions().with_seed(seed)));
  visit("batch", ds::DistributedBatchSampler<>(
                     documents, world,
                     ds::BatchSamplerOptions().with_seed(seed).with_micro_batch_size(5).with_accumulation_steps(2)));
  visit("shard", ds::StreamingShardSampler({400, 3, 250, 350}, world,
                                           ds::ShardSamplerOptions().with_seed(seed).with_num_workers(2)));
  visit("tokens", ds::TokenBatchSampler(documents, lengths(), world,
                                        ds::TokenBatchOptions().with_seed(seed).with_max_tokens(512)));
  visit("mixture",
        ds::MixtureSampler(
            {300, 200, 100}, {0.5, 0.3, 0.2}, world,
            ds::MixtureOptions().with_seed(seed).with_micro_batch_size(4).with_accumulation_steps(2).with_end(
                ds::MixtureEnd::samples, 480)));
  visit("pack", ds::PackedSequenceSampler(
                    documents, lengths(), world,
                    ds::PackOptions().with_seed(seed).with_seq_len(128).with_micro_batch_size(2).with_window(256, 16)));
  visit("weighted",
        ds::WeightedSampler(weights(), world, ds::WeightedSamplerOptions().with_seed(seed).with_num_samples(777)));
  visit("stream", ds::StreamSampler(7, {}, world, 2, ds::StreamOptions{seed, 1}));
}

}  // namespace guard_families

#endif  // DISTSAMPLER_TESTS_GUARD_FAMILIES_HPP

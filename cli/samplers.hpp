// The `distsampler` command's calls into the library, all in one place: samplers built from validated flags.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_EXAMPLES_CLI_SAMPLERS_HPP
#define DISTSAMPLER_EXAMPLES_CLI_SAMPLERS_HPP

#include <distsampler/distsampler.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"

namespace cli {

enum class Engine { feistel, torch, none };

/// The flags that define one epoch's order (indices, check, batches, state), already validated.
struct OrderFlags {
  std::uint64_t size = 0;
  std::uint64_t world_size = 1;
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  Engine engine = Engine::feistel;
  distsampler::Tail tail = distsampler::Tail::pad;
  distsampler::TorchGeneration generation = distsampler::TorchGeneration::current;
};

/// The batch shape of batches and state, already validated.
struct BatchFlags {
  std::uint64_t micro_batch = 1;
  std::uint64_t accum = 1;
};

/// The shards command's sampler flags, already validated.
struct ShardFlags {
  std::vector<std::uint64_t> sizes;
  std::uint64_t world_size = 1;
  std::uint64_t workers = 1;
  std::uint64_t epoch = 0;
  distsampler::ShardSamplerOptions options;
};

/// The tokens command's flags, already validated.
struct TokenFlags {
  std::vector<std::uint32_t> lengths;
  std::uint64_t world_size = 1;
  std::uint64_t epoch = 0;
  distsampler::TokenBatchOptions options;
};

/// The mix command's flags, already parsed.
struct MixFlags {
  std::vector<std::uint64_t> sources;
  std::vector<double> weights;
  std::vector<distsampler::WeightChange> schedule;
  std::uint64_t world_size = 1;
  std::uint64_t micro_batch = 1;
  std::uint64_t accum = 1;
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
};

/// `message` without the library's leading "Who::member: ", so what remains can follow a flag name.
[[nodiscard]] inline std::string without_who(std::string_view message) {
  std::size_t i = 0;
  while (i < message.size() && (std::isalnum(static_cast<unsigned char>(message[i])) != 0 || message[i] == '_' ||
                                message[i] == ':' || message[i] == '<' || message[i] == '>')) {
    ++i;
  }
  if (i > 0 && i + 1 < message.size() && message[i - 1] == ':' && message[i] == ' ')
    return std::string(message.substr(i + 1));
  return std::string(message);
}

/// Runs `call` and rephrases the library's config_error and state_error as a UsageError about `flags`,
/// the flags whose values reached the library.
template <class Call>
decltype(auto) library(std::string_view flags, Call&& call) {
  try {
    return call();
  } catch (const distsampler::config_error& e) {
    throw UsageError(std::string(flags) + ": " + without_who(e.what()));
  } catch (const distsampler::state_error& e) {
    throw UsageError(std::string(flags) + ": " + without_who(e.what()));
  }
}

/// Parses a state line given to `flag`.
[[nodiscard]] inline distsampler::SamplerState parse_state(std::string_view flag, std::string_view text) {
  return library(flag, [&] { return distsampler::SamplerState::from_text(text); });
}

/// Calls f(sampler) with rank `rank`'s DistributedSampler of the engine `order` names, seeded with `seed`.
template <class F>
void with_sampler(const OrderFlags& order, std::uint64_t rank, std::uint64_t seed, F&& f) {
  namespace ds = distsampler;
  constexpr std::string_view flags = "--size/--world/--shuffle";
  ds::SamplerOptions options;
  options.shuffle = order.engine != Engine::none;
  options.seed = seed;
  options.tail = order.tail;
  if (order.engine == Engine::torch) {
    auto s = library(flags, [&] {
      ds::DistributedSampler<ds::TorchRandperm> made(order.size, ds::World(rank, order.world_size), options,
                                                     {order.generation});
      made.set_epoch(order.epoch);
      return made;
    });
    f(s);
  } else {
    auto s = library(flags, [&] {
      ds::DistributedSampler<> made(order.size, ds::World(rank, order.world_size), options);
      made.set_epoch(order.epoch);
      return made;
    });
    f(s);
  }
}

/// Calls f(sampler) with rank `rank`'s DistributedBatchSampler, resumed from `resume` when given.
template <class F>
void with_batch_sampler(const OrderFlags& order, const BatchFlags& batch, std::uint64_t rank,
                        const std::optional<distsampler::SamplerState>& resume, F&& f) {
  namespace ds = distsampler;
  constexpr std::string_view flags = "--size/--world/--micro-batch/--accum";
  ds::BatchSamplerOptions options;
  options.shuffle = order.engine != Engine::none;
  options.seed = order.seed;
  options.tail = order.tail;
  options.epoch_mode = ds::EpochMode::manual;
  options.micro_batch_size = batch.micro_batch;
  options.accumulation_steps = batch.accum;
  auto prepare = [&](auto& s) {
    library(flags, [&] { s.set_epoch(order.epoch); });
    if (resume) library("--resume", [&] { s.resume(*resume); });
    f(s);
  };
  if (order.engine == Engine::torch) {
    auto s = library(flags, [&] {
      return ds::DistributedBatchSampler<ds::TorchRandperm>(order.size, ds::World(rank, order.world_size), options,
                                                            {order.generation});
    });
    prepare(s);
  } else {
    auto s = library(
        flags, [&] { return ds::DistributedBatchSampler<>(order.size, ds::World(rank, order.world_size), options); });
    prepare(s);
  }
}

/// The state after `steps` steps of `sampler`.
template <class BatchSampler>
[[nodiscard]] distsampler::SamplerState batch_state(const BatchSampler& sampler, std::uint64_t steps) {
  return library("--step", [&] { return sampler.state(steps); });
}

/// Rank `rank`'s StreamingShardSampler at the flags' epoch.
[[nodiscard]] inline distsampler::StreamingShardSampler make_shard_sampler(const ShardFlags& shard,
                                                                           std::uint64_t rank) {
  namespace ds = distsampler;
  return library("--shard-sizes/--world/--workers", [&] {
    ds::StreamingShardSampler made(shard.sizes, ds::World(rank, shard.world_size),
                                   ds::ShardSamplerOptions(shard.options).with_num_workers(shard.workers));
    made.set_epoch(shard.epoch);
    return made;
  });
}

/// Rank `rank`'s TokenBatchSampler at the flags' epoch.
[[nodiscard]] inline distsampler::TokenBatchSampler make_token_sampler(const TokenFlags& t, std::uint64_t rank) {
  namespace ds = distsampler;
  return library("--lengths/--max-tokens/--world/--accum/--window", [&] {
    ds::TokenBatchSampler made(t.lengths.size(), t.lengths, ds::World(rank, t.world_size), t.options);
    if (t.epoch != 0) made.set_epoch(t.epoch);
    return made;
  });
}

/// Rank `rank`'s MixtureSampler at the flags' epoch.
[[nodiscard]] inline distsampler::MixtureSampler make_mixture(const MixFlags& mix, std::uint64_t rank) {
  namespace ds = distsampler;
  return library("--sources/--weights/--schedule", [&] {
    ds::MixtureSampler made(mix.sources, mix.weights, ds::World(rank, mix.world_size),
                            ds::MixtureOptions()
                                .with_micro_batch_size(mix.micro_batch)
                                .with_accumulation_steps(mix.accum)
                                .with_seed(mix.seed)
                                .with_schedule(mix.schedule));
    made.set_epoch(mix.epoch);
    return made;
  });
}

/// The largest |count_i(k) - ideal_i(k)| over prefixes k of [0, positions) of `s`'s epoch, per source, with
/// ideal_i the schedule's weights (as the sampler rounded them) integrated over the prefix. O(positions x K).
[[nodiscard]] inline std::vector<double> mixture_prefix_error(const distsampler::MixtureSampler& s,
                                                              std::uint64_t positions) {
  const distsampler::MixtureSchedule& sched = s.schedule();
  const std::size_t k = s.num_sources();
  std::vector<double> worst(k, 0), ideal(k, 0);
  std::vector<std::uint64_t> count(k, 0);
  std::size_t segment = 0;
  for (std::uint64_t p = 0; p < positions; ++p) {
    while (segment + 1 < sched.num_segments() && sched.segment_begin(segment + 1) <= p) ++segment;
    ++count[s.slot(p).source];
    for (std::size_t i = 0; i < k; ++i) {
      ideal[i] += static_cast<double>(sched.units(segment, i)) /
                  static_cast<double>(distsampler::MixtureSchedule::weight_units);
      const double e = static_cast<double>(count[i]) - ideal[i];
      worst[i] = std::max(worst[i], e < 0 ? -e : e);
    }
  }
  return worst;
}

}  // namespace cli

#endif  // DISTSAMPLER_EXAMPLES_CLI_SAMPLERS_HPP

// The batch family's commands: `batches` prints micro-batches per step, `state` the state after some steps.
// SPDX-License-Identifier: MIT
#include <distsampler/batch/batch_sampler.hpp>
#include <distsampler/feistel.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "common.hpp"
#include "samplers.hpp"

namespace cli {
namespace {

namespace ds = distsampler;

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

int run_batches(const Invocation& in) {
  const OrderFlags o = order_flags(in, ds::Tail::drop);
  const BatchFlags b = batch_flags(in, o.world_size);
  const auto rank = rank_flag(in, o.world_size);
  const auto steps = in.number("--steps");
  const auto resume = resume_flag(in);
  if (!rank) {
    if (o.world_size > limits::ranks) {
      too_large(fmt::format("--world {}", o.world_size), "batches without --rank", limits::ranks,
                "it builds every rank's sampler", "; pass --rank R");
    }
    check_torch_work(in, o, "; pass --rank R");
  }
  const std::uint64_t first = rank.value_or(0), last = rank ? first + 1 : o.world_size;
  Output out;
  for (std::uint64_t r = first; r < last; ++r) {
    with_batch_sampler(o, b, r, resume, [&](const auto& s) {
      const std::uint64_t n = std::min(steps.value_or(UINT64_MAX), s.num_steps());
      if (r == first) {
        const std::uint64_t printed = saturating_mul(saturating_mul(n, b.micro_batch * b.accum), last - first);
        if (printed > limits::printed) {
          throw UsageError(
              fmt::format("{} steps of --micro-batch {} x --accum {} on {} would print {} indices, more "
                          "than the {} printed at once; pass a smaller --steps S{}",
                          n, b.micro_batch, b.accum, rank ? "one rank" : "every rank",
                          printed == UINT64_MAX ? "2^64-1 or more" : std::to_string(printed), limits::printed,
                          rank ? "" : " or --rank R"));
        }
        fmt::format_to(std::back_inserter(out.buffer()),
                       "global batch {} = micro-batch {} x world_size {} x accumulation {}; {} steps from position {} "
                       "of epoch {}",
                       s.global_batch_size(), s.micro_batch_size(), o.world_size, s.accumulation_steps(), s.num_steps(),
                       s.start(), s.epoch());
        out.end_line();
      }
      print_steps(out, s, n, r, [&](std::string& line, std::uint64_t step, std::uint64_t k, std::size_t e, auto i) {
        fmt::format_to(std::back_inserter(line), "{}{}", i, s.is_padding(step, k, e) ? "*" : "");
      });
    });
  }
  out.flush();
  return 0;
}

int run_state(const Invocation& in) {
  const OrderFlags o = order_flags(in, ds::Tail::drop);
  const BatchFlags b = batch_flags(in, o.world_size);
  const std::uint64_t step = in.required_number("--step");
  const auto resume = resume_flag(in);
  with_batch_sampler(o, b, 0, resume, [&](const auto& s) {
    if (step > s.num_steps()) {
      throw UsageError(fmt::format("--step {} is past the end of the epoch ({} steps{}; expected 0..{})", step,
                                   s.num_steps(), resume ? " left after --resume" : "", s.num_steps()));
    }
    fmt::print("{}\n", batch_state(s, step).to_text());
  });
  return 0;
}

}  // namespace

/// The batch family's commands, registered in commands.cpp.
std::vector<CommandSpec> batch_commands() {
  const std::string torch = torch_limit_text();
  return {{"batches",
           "distsampler batches --size N --world W --micro-batch B --accum K [--rank R] [flags]",
           "print micro-batches per step, optionally resumed from a state",
           "print each step's micro-batches of rank R (of every rank without --rank); --resume continues from a\n"
           "state line printed by `state`, on any world size",
           {"--size", "--world", "--micro-batch", "--accum"},
           {"--rank", "--steps", "--resume", "--seed", "--epoch", "--shuffle", "--tail", "--torch-generation"},
           fmt::format("limits: at most {} indices printed (see --steps, --rank); without --rank, --world at most {};\n"
                       "{}. Tail defaults to drop.\n",
                       limits::printed, limits::ranks, torch),
           run_batches},
          {"state",
           "distsampler state --size N --world W --micro-batch B --accum K --step S [flags]",
           "print the resumable state after some steps",
           "print the one-line state after S steps of every rank (resumable on any world size)",
           {"--size", "--world", "--micro-batch", "--accum", "--step"},
           {"--resume", "--seed", "--epoch", "--shuffle", "--tail", "--torch-generation"},
           fmt::format("limits: {}. Tail defaults to drop.\n", torch),
           run_state}};
}

}  // namespace cli

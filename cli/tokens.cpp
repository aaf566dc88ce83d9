// The token family's command: `tokens` prints micro-batches under a token budget and the epoch's summary.
// SPDX-License-Identifier: MIT
#include <distsampler/tokens/token_batch_sampler.hpp>

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

/// The tokens command's flags, already validated.
struct TokenFlags {
  std::vector<std::uint32_t> lengths;
  std::uint64_t world_size = 1;
  std::uint64_t epoch = 0;
  distsampler::TokenBatchOptions options;
};

/// Rank `rank`'s TokenBatchSampler at the flags' epoch.
[[nodiscard]] inline distsampler::TokenBatchSampler make_token_sampler(const TokenFlags& t, std::uint64_t rank) {
  namespace ds = distsampler;
  return library("--lengths/--max-tokens/--world/--accum/--sort-window", [&] {
    ds::TokenBatchSampler made(t.lengths.size(), t.lengths, ds::World(rank, t.world_size), t.options);
    if (t.epoch != 0) made.set_epoch(t.epoch);
    return made;
  });
}

int run_tokens(const Invocation& in) {
  TokenFlags t;
  t.lengths = parse_lengths("--lengths", in.text("--lengths"));
  t.world_size = at_least_one(in, "--world");
  t.options.with_max_tokens(in.required_number("--max-tokens"));
  if (in.has("--accum")) t.options.with_accumulation_steps(at_least_one(in, "--accum"));
  if (in.has("--sort-window")) t.options.with_window(at_least_one(in, "--sort-window"));
  if (in.has("--seed")) t.options.with_seed(parse_seed("--seed", in.text("--seed")));
  t.epoch = in.number("--epoch").value_or(0);
  const auto rank = rank_flag(in, t.world_size);
  if (t.world_size > limits::ranks) {
    too_large(fmt::format("--world {}", t.world_size), "tokens", limits::ranks, "every rank's micro-batches are dealt");
  }
  const std::uint64_t accum = t.options.accumulation_steps;
  if (!ds::detail::mul_fits(t.world_size, accum)) {
    throw UsageError(fmt::format("--world {} x --accum {} overflows 64 bits (expected a product of at most {})",
                                 t.world_size, accum, ds::TokenBatchSampler::max_group));
  }
  if (t.world_size * accum > ds::TokenBatchSampler::max_group) {
    too_large(fmt::format("--world {} x --accum {} = {}", t.world_size, accum, t.world_size * accum), "tokens",
              ds::TokenBatchSampler::max_group, "every window plans at least one step of that many micro-batches");
  }
  const ds::TokenBatchSampler s = make_token_sampler(t, rank.value_or(0));
  const std::uint64_t steps = std::min(in.number("--steps").value_or(UINT64_MAX), s.num_steps());
  const std::uint64_t first = rank.value_or(0), last = rank ? first + 1 : t.world_size;
  Output out;
  for (std::uint64_t step = 0; step < steps;) {
    const ds::TokenWindow w = s.window(step);
    for (; step < std::min(steps, w.end_step()); ++step) {
      for (std::uint64_t r = first; r < last; ++r) {
        for (std::uint64_t k = 0; k < s.accumulation_steps(); ++k) {
          const ds::TokenMicroBatch b = w.micro_batch(step, k, r);
          auto& line = out.buffer();
          fmt::format_to(std::back_inserter(line), "step {} rank {}: [", step, r);
          for (std::size_t e = 0; e < b.indices.size(); ++e) {
            fmt::format_to(std::back_inserter(line), "{}{}", e ? " " : "", b.indices[e]);
          }
          fmt::format_to(std::back_inserter(line), "] tokens={} padded={}{}", b.tokens, b.padded,
                         b.oversize ? " oversize" : "");
          out.end_line();
        }
      }
    }
  }
  const ds::TokenEpochStats& st = s.stats();
  fmt::format_to(std::back_inserter(out.buffer()),
                 "summary: {} steps x world_size {} x accumulation {}; {} micro-batches, {} empty; {} splits, {} "
                 "merges; epoch {}",
                 st.steps, t.world_size, s.accumulation_steps(), st.micro_batches, st.empty_micro_batches, st.splits,
                 st.merges, s.epoch());
  out.end_line();
  fmt::format_to(std::back_inserter(out.buffer()), "padding efficiency {:.4f} (real {} / padded {} tokens)",
                 st.padding_efficiency(), st.tokens, st.padded);
  out.end_line();
  fmt::format_to(std::back_inserter(out.buffer()),
                 "step balance: most / fewest real tokens of a rank in a step, mean {:.3f}, max {:.3f} ({} steps "
                 "with an empty rank)",
                 st.mean_step_ratio, st.max_step_ratio, st.steps_with_empty_rank);
  out.end_line();
  out.flush();
  return 0;
}

}  // namespace

/// The token family's commands, registered in commands.cpp.
std::vector<CommandSpec> token_commands() {
  return {
      {"tokens",
       "distsampler tokens --lengths FILE|LIST --max-tokens T --world W [--accum K] [--sort-window M] [--rank R] [flags]",
       "print micro-batches under a token budget, equal per rank per step",
       "print each step's micro-batches under the token budget, one line each: step S rank R: [indices]\n"
       "tokens=real padded=count x longest ([] is an empty micro-batch), of rank R only with --rank; then a\n"
       "summary of the epoch over every rank: steps, empty micro-batches, padding efficiency, step balance",
       {"--lengths", "--max-tokens", "--world"},
       {"--accum", "--sort-window", "--rank", "--steps", "--seed", "--epoch"},
       fmt::format("limits: --lengths at most {} entries; a --lengths file at most {} bytes, {} bytes per line;\n"
                   "--world x --accum at most {} micro-batches per step.\n",
                   limits::lengths, limits::file_bytes, limits::line_bytes, distsampler::TokenBatchSampler::max_group),
       run_tokens}};
}

}  // namespace cli

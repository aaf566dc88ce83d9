// The shard family's command: `shards` prints each consumer's read plan and checks the epoch.
// SPDX-License-Identifier: MIT
#include <distsampler/shards/streaming_shard_sampler.hpp>
#include <distsampler/verify.hpp>

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

/// The shards command's sampler flags, already validated.
struct ShardFlags {
  std::vector<std::uint64_t> sizes;
  std::uint64_t world_size = 1;
  std::uint64_t workers = 1;
  std::uint64_t epoch = 0;
  distsampler::ShardSamplerOptions options;
};

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

ShardFlags shard_flags(const Invocation& in) {
  ShardFlags f;
  f.sizes = parse_shard_sizes("--shard-sizes", in.text("--shard-sizes"));
  f.world_size = at_least_one(in, "--world");
  f.workers = at_least_one(in, "--workers");
  if (saturating_mul(f.world_size, f.workers) > limits::ranks) {
    too_large(fmt::format("--world {} x --workers {}", f.world_size, f.workers), "shards", limits::ranks,
              "shards builds every consumer's stream");
  }
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < f.sizes.size(); ++s) {
    if (f.sizes[s] > UINT64_MAX - total) {
      throw UsageError(
          fmt::format("--shard-sizes add up to more than 2^64-1 samples (at entry {}, size {})", s + 1, f.sizes[s]));
    }
    total += f.sizes[s];
  }
  if (total > limits::checked_indices) {
    too_large(fmt::format("--shard-sizes's total of {} samples", total), "shards", limits::checked_indices,
              "shards reads every sample of the epoch and keeps one byte per sample");
  }
  if (saturating_mul(f.world_size, f.sizes.size()) > limits::shard_work) {
    too_large(fmt::format("--world {} x {} shards in --shard-sizes", f.world_size, f.sizes.size()), "shards",
              limits::shard_work, "each rank's sampler lays out every shard");
  }
  // The preset first: the flags below override its values.
  if (in.has("--preset")) {
    f.options = parse_choice("--preset", in.text("--preset"), {"sequential", "mixed"}) == 0
                    ? ds::ShardSamplerOptions::sequential()
                    : ds::ShardSamplerOptions::mixed();
  }
  if (in.has("--seed")) f.options.seed = parse_seed("--seed", in.text("--seed"));
  f.epoch = in.number("--epoch").value_or(0);
  f.options.tail = tail_flag(in, f.options.tail);
  if (const auto m = in.number("--max-open-shards")) {
    if (*m == 0 || *m > f.options.canonical_streams) {
      throw UsageError(
          fmt::format("--max-open-shards {} is out of range (expected 1..{})", *m, f.options.canonical_streams));
    }
    f.options.max_open_shards = *m;
  }
  if (in.has("--run-length")) f.options.run_length = at_least_one(in, "--run-length");
  if (in.has("--run-window")) f.options.shuffle_window = at_least_one(in, "--run-window");
  if (!ds::detail::mul_fits(f.options.max_open_shards, f.options.run_length)) {
    throw UsageError(
        fmt::format("--max-open-shards {} x --run-length {} overflows 64 bits (expected a block below "
                    "2^64 samples)",
                    f.options.max_open_shards, f.options.run_length));
  }
  return f;
}

int run_shards(const Invocation& in) {
  const ShardFlags f = shard_flags(in);
  const auto only_rank = rank_flag(in, f.world_size);
  const std::uint64_t shown_ranges = in.number("--ranges").value_or(8);
  const bool by_shard = in.has("--shard-schedule");
  std::optional<ds::PartitionChecker> checker;
  Output out;
  for (std::uint64_t r = 0; r < f.world_size; ++r) {
    const ds::StreamingShardSampler sampler = make_shard_sampler(f, r);
    if (!checker) {
      checker.emplace(sampler.dataset_size(), f.world_size * f.workers, f.options.tail);
      fmt::format_to(std::back_inserter(out.buffer()),
                     "{} shards, {} samples; world_size {} x {} workers; seed {} epoch {} tail {}; at most {} shard runs "
                     "open per consumer",
                     f.sizes.size(), sampler.dataset_size(), f.world_size, f.workers, f.options.seed, f.epoch,
                     ds::to_string(f.options.tail), sampler.max_open_shards());
      out.end_line();
    }
    for (std::uint64_t w = 0; w < f.workers; ++w) {
      for (const auto& sample : sampler.stream(w)) checker->add(sampler.consumer(w), sample.index, sample.is_padding);
      if (only_rank && *only_rank != r) continue;
      auto& text = out.buffer();
      if (by_shard) {
        const auto schedule = sampler.shard_schedule(w);
        fmt::format_to(std::back_inserter(text), "rank {} worker {}: {} samples from {} shards:", r, w,
                       sampler.worker_size(w), schedule.size());
        for (std::size_t k = 0; k < schedule.size() && k < shown_ranges; ++k) {
          fmt::format_to(std::back_inserter(text), " {}@{}-{}:{}", schedule[k].shard, schedule[k].first_slot,
                         schedule[k].last_slot, schedule[k].samples);
        }
        if (schedule.size() > shown_ranges) fmt::format_to(std::back_inserter(text), " ...");
        out.end_line();
        continue;
      }
      const auto plan = sampler.read_plan(w);
      fmt::format_to(std::back_inserter(text), "rank {} worker {}: {} samples:", r, w, sampler.worker_size(w));
      for (std::size_t k = 0; k < plan.size() && k < shown_ranges; ++k) {
        fmt::format_to(std::back_inserter(text), " {}[{},{})", plan[k].shard, plan[k].begin, plan[k].end);
      }
      if (plan.size() > shown_ranges) fmt::format_to(std::back_inserter(text), " ... ({} ranges)", plan.size());
      out.end_line();
    }
  }
  const auto report = checker->finish();
  fmt::format_to(std::back_inserter(out.buffer()), "{}\n{}",
                 by_shard ? "(shard@first-last:records: the first and last slot reading the shard, records read)"
                          : "(ranges are shard[begin,end) of offsets)",
                 report.summary());
  out.end_line();
  out.flush();
  return report.ok() ? 0 : 1;
}

}  // namespace

/// The shard family's commands, registered in commands.cpp.
std::vector<CommandSpec> shard_commands() {
  return {{"shards",
           "distsampler shards --shard-sizes FILE|LIST --world W --workers K [--rank R] [flags]",
           "print each (rank, worker)'s shard read plan and check the epoch",
           "print each consumer's (rank, worker) read plan, the shard ranges shard[begin,end) it reads in order\n"
           "(with --shard-schedule its shards in first-read order instead; of rank R only with --rank); then check\n"
           "the whole epoch and print a verdict; exit 1 when a promise fails",
           {"--shard-sizes", "--world", "--workers"},
           {"--rank", "--seed", "--epoch", "--tail", "--preset", "--max-open-shards", "--run-length", "--run-window",
            "--ranges",
            "--shard-schedule"},
           fmt::format(
               "limits: at most {} samples in all, {} shards, {} consumers (--world x --workers) and {} for --world x\n"
               "shards; a --shard-sizes file at most {} bytes, {} bytes per line.\n",
               limits::checked_indices, limits::shards, limits::ranks, limits::shard_work, limits::file_bytes,
               limits::line_bytes),
           run_shards}};
}

}  // namespace cli

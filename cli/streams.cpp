// The streams family's command: `stream` simulates consumers reading shards of unknown size with a read-time filter.
// SPDX-License-Identifier: MIT
#include <distsampler/streams/stream_sampler.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "common.hpp"
#include "samplers.hpp"

namespace cli {
namespace {

namespace ds = distsampler;

/// Records the simulation may read in all (each costs a mix and a few comparisons).
constexpr std::uint64_t stream_reads = std::uint64_t{1} << 28;

/// The played shard files: record counts the sampler learns only by reading, and the --keep rule.
struct PlayedShards {
  std::vector<std::uint64_t> sizes;
  std::vector<std::uint64_t> offsets;
  double keep_threshold = 9007199254740992.0;  // P x 2^53
  bool keep_all = true;
  std::uint64_t reads = 0;

  [[nodiscard]] bool kept(std::uint64_t global) const {
    // The SplitMix64 finaliser of the global index; its top 53 bits are exact as a double.
    return keep_all || static_cast<double>(ds::detail::mix64(global) >> 11) < keep_threshold;
  }
  std::optional<std::uint64_t> read(const ds::StreamRead& r) {
    if (++reads > stream_reads) {
      too_large("the records read", "stream", stream_reads, "the simulation reads every record it skips",
                "; a larger --keep or fewer --steps");
    }
    if (r.record >= sizes[static_cast<std::size_t>(r.shard)]) return std::nullopt;
    return kept(offsets[static_cast<std::size_t>(r.shard)] + r.record) ? 1 : 0;
  }
};

double keep_flag(const Invocation& in) {
  const std::vector<double> p = parse_weights("--keep", in.text("--keep"), "");
  if (p.size() != 1 || p[0] > 1.0) {
    throw UsageError(fmt::format("--keep {} is not one probability (expected a decimal from 0 to 1, such as 0.25)",
                                 shown(in.text("--keep"))));
  }
  return p[0];
}

/// --share K|all: the consumers every shard is cut among (StreamOptions::share), at most `consumers`.
std::uint64_t share_flag(const Invocation& in, std::uint64_t consumers) {
  if (!in.has("--share")) return 1;
  const std::string text(in.text("--share"));
  if (text == "all") return ds::StreamOptions::share_all;
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  const auto k = digits ? in.number("--share") : std::nullopt;
  if (!k || *k == 0 || *k > consumers) {
    throw UsageError(fmt::format("--share {} is not a consumer count or all (expected 1..{}, --world x --workers, "
                                 "or all)",
                                 shown(text), consumers));
  }
  return *k;
}

int run_stream(const Invocation& in) {
  PlayedShards played;
  played.sizes = parse_shard_sizes("--shard-sizes", in.text("--shard-sizes"));
  std::uint64_t at = 0;
  for (const std::uint64_t s : played.sizes) {
    played.offsets.push_back(at);
    if (s > UINT64_MAX - at) throw UsageError("--shard-sizes add up to more than 2^64 - 1 records");
    at += s;
  }
  std::vector<std::uint64_t> hints;
  if (in.has("--byte-sizes")) {
    hints = parse_shard_sizes("--byte-sizes", in.text("--byte-sizes"));
    if (hints.size() != played.sizes.size()) {
      throw UsageError(
          fmt::format("--byte-sizes has {} entries for {} shards of --shard-sizes (expected one per shard)",
                      hints.size(), played.sizes.size()));
    }
  }
  if (in.has("--keep")) {
    const double p = keep_flag(in);
    played.keep_all = false;
    played.keep_threshold = p * 9007199254740992.0;
  }
  const std::uint64_t world = at_least_one(in, "--world"), workers = at_least_one(in, "--workers");
  const std::uint64_t micro_batch = at_least_one(in, "--micro-batch"), steps = in.required_number("--steps");
  const std::uint64_t seed = in.has("--seed") ? parse_seed("--seed", in.text("--seed")) : 0;
  const auto rank = rank_flag(in, world);
  if (saturating_mul(world, workers) > limits::ranks) {
    too_large(fmt::format("--world {} x --workers {}", world, workers), "stream", limits::ranks,
              "every consumer is simulated");
  }
  if (saturating_mul(saturating_mul(steps, rank ? 1 : world), micro_batch) > limits::printed) {
    too_large(fmt::format("--steps {} x --micro-batch {}{}", steps, micro_batch,
                          rank ? std::string() : fmt::format(" x --world {}", world)),
              "stream", limits::printed, "every entry is printed");
  }
  std::optional<ds::StreamJobState> resumed;
  if (in.has("--resume")) {
    resumed = library("--resume", [&] { return ds::StreamJobState::from_text(in.text("--resume")); });
  }
  const std::uint64_t first = resumed ? resumed->step : 0;
  if (steps > UINT64_MAX - first) throw UsageError("--steps after the --resume step overflows 64 bits");
  std::uint64_t end = first + steps;
  const auto state_after = in.number("--state-after");
  if (state_after) {
    if (*state_after < first || *state_after > end) {
      throw UsageError(
          fmt::format("--state-after {} is outside the steps simulated (expected {}..{})", *state_after, first, end));
    }
    end = *state_after;
  }

  const std::uint64_t consumers = world * workers;
  const std::uint64_t share = share_flag(in, consumers);
  auto plan = library("--shard-sizes/--byte-sizes/--world/--workers/--share", [&] {
    return std::make_shared<ds::StreamPlan>(played.sizes.size(), hints, consumers, ds::StreamOptions{seed, share});
  });
  std::vector<ds::StreamProgress> start(static_cast<std::size_t>(consumers));
  if (resumed) start = library("--resume", [&] { return ds::resume_stream(*plan, *resumed); });
  // Without a state to print, only the shown rank's consumers need to run.
  const std::uint64_t lo = rank && !state_after ? *rank : 0, hi = rank && !state_after ? *rank + 1 : world;
  std::vector<ds::StreamCursor> cursors;
  for (std::uint64_t c = 0; c < consumers; ++c) cursors.emplace_back(plan, c, start[static_cast<std::size_t>(c)]);
  auto read = [&](const ds::StreamRead& r) { return played.read(r); };
  Output out;
  for (std::uint64_t t = first; t < end; ++t) {
    for (std::uint64_t r = lo; r < hi; ++r) {
      ds::StreamCursor& cur = cursors[static_cast<std::size_t>(r * workers + t % workers)];
      const std::vector<ds::StreamEmit> batch =
          library("--shard-sizes/--keep", [&] { return cur.next(micro_batch, read); });
      if (rank && r != *rank) continue;
      auto& line = out.buffer();
      fmt::format_to(std::back_inserter(line), "step {} rank {}: [", t, r);
      for (std::size_t e = 0; e < batch.size(); ++e) {
        fmt::format_to(std::back_inserter(line), "{}{}:{}", e ? " " : "", batch[e].pass,
                       played.offsets[static_cast<std::size_t>(batch[e].shard)] + batch[e].record);
      }
      line += ']';
      out.end_line();
    }
  }
  if (state_after) {
    std::vector<ds::StreamProgress> progress;
    for (const ds::StreamCursor& c : cursors) progress.push_back(c.progress());
    fmt::format_to(std::back_inserter(out.buffer()), "state: {}",
                   ds::assemble_stream_state(*plan, progress, end).to_text());
    out.end_line();
  }
  out.flush();
  return 0;
}

}  // namespace

/// The streams family's commands, registered in commands.cpp.
std::vector<CommandSpec> stream_commands() {
  return {{"stream",
           "distsampler stream --shard-sizes FILE|LIST --world W --workers K --micro-batch B --steps S [--byte-sizes "
           "FILE|LIST] [--keep P] [--seed S] [--share K|all] [--rank R] [--state-after S] [--resume STATE]",
           "simulate read-time streams: shards of unknown size, a filter, B kept samples per micro-batch",
           "simulate W x K consumers reading passes over shards whose record counts each learns only by reading;\n"
           "--keep P keeps global index i iff (splitmix64 finaliser of i) >> 11 < P x 2^53; --share K|all cuts every\n"
           "shard by stride among K (or all) consumers, which keeps them within a pass of each other. One line per rank per\n"
           "step: step S rank R: [pass:index ...], exactly B entries, from worker S mod K; --state-after S prints\n"
           "the steps before S, then state: LINE; --resume LINE continues at its step on any --world and --workers",
           {"--shard-sizes", "--world", "--workers", "--micro-batch", "--steps"},
           {"--byte-sizes", "--keep", "--seed", "--share", "--rank", "--state-after", "--resume"},
           fmt::format("limits: --shard-sizes at most {} entries; --world x --workers at most {}; entries printed at "
                       "most {}; records read at most {}.\n",
                       limits::shards, limits::ranks, limits::printed, stream_reads),
           run_stream}};
}

}  // namespace cli

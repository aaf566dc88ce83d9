// The mixture family's command: `mix` prints a weighted mixture's micro-batches or order and its prefix error.
// SPDX-License-Identifier: MIT
#include <distsampler/mixture/mixture_sampler.hpp>

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
  distsampler::MixtureEnd end = distsampler::MixtureEnd::first_exhausted;
  std::uint64_t end_count = 0;
};

/// Rank `rank`'s MixtureSampler at the flags' epoch.
[[nodiscard]] inline distsampler::MixtureSampler make_mixture(const MixFlags& mix, std::uint64_t rank) {
  namespace ds = distsampler;
  try {
    return library("--sources/--weights/--schedule/--end", [&] {
      ds::MixtureSampler made(mix.sources, mix.weights, ds::World(rank, mix.world_size),
                              ds::MixtureOptions()
                                  .with_micro_batch_size(mix.micro_batch)
                                  .with_accumulation_steps(mix.accum)
                                  .with_seed(mix.seed)
                                  .with_schedule(mix.schedule)
                                  .with_end(mix.end, mix.end_count));
      made.set_epoch(mix.epoch);
      return made;
    });
  } catch (const UsageError& e) {
    // The library names its ends as the enum does; the command line spells them as --end values.
    std::string message = e.what();
    for (std::size_t at; (at = message.find("MixtureEnd::")) != std::string::npos;) message.replace(at, 12, "--end ");
    throw UsageError(message);
  }
}

/// The largest |count_i(k) - ideal_i(k)| over prefixes k of [0, positions) of `s`'s epoch, per source, with
/// ideal_i the schedule's weights (as the sampler rounded them) integrated over the prefix. O(positions x K).
[[nodiscard]] inline std::vector<double> mixture_prefix_error(const distsampler::MixtureSampler& s,
                                                              std::uint64_t positions) {
  const distsampler::MixtureSchedule& sched = s.schedule();
  const std::size_t k = s.num_sources();
  // Counts as doubles (exact: positions are at most 2^24), in one vector with the others: a vector of
  // integers beside them made GCC 12 at -O3 warn falsely (-Wfree-nonheap-object) in a Release build.
  std::vector<double> worst_ideal_count(3 * k, 0);
  double* const worst = worst_ideal_count.data();
  double* const ideal = worst + k;
  double* const count = ideal + k;
  std::size_t segment = 0;
  for (std::uint64_t p = 0; p < positions; ++p) {
    while (segment + 1 < sched.num_segments() && sched.segment_begin(segment + 1) <= p) ++segment;
    ++count[s.slot(p).source];
    for (std::size_t i = 0; i < k; ++i) {
      ideal[i] += static_cast<double>(sched.units(segment, i)) /
                  static_cast<double>(distsampler::MixtureSchedule::weight_units);
      const double e = count[i] - ideal[i];
      worst[i] = std::max(worst[i], e < 0 ? -e : e);
    }
  }
  return std::vector<double>(worst, worst + k);
}

std::vector<ds::WeightChange> schedule_flag(const Invocation& in) {
  std::vector<ds::WeightChange> out;
  if (!in.has("--schedule")) return out;
  const std::string_view spec = in.text("--schedule");
  std::size_t at = 0;
  for (;;) {
    const std::size_t semi = std::min(spec.find(';', at), spec.size());
    const std::string_view entry = spec.substr(at, semi - at);
    const std::size_t colon = entry.find(':');
    const std::string which = fmt::format("entry {} ", out.size() + 1);
    if (colon == std::string_view::npos) {
      throw UsageError(
          fmt::format("--schedule {}{} is not STEP:W1,W2,.. (expected e.g. 100:0.5,0.5)", which, shown(entry)));
    }
    ds::WeightChange change;
    change.step = parse_number("--schedule " + which + "step", entry.substr(0, colon));
    change.weights = parse_weights("--schedule", entry.substr(colon + 1), which);
    out.push_back(std::move(change));
    if (semi == spec.size()) return out;
    at = semi + 1;
  }
}

// --end and --end-count: where the epoch ends; a count only for the ends that take one.
void end_flags(const Invocation& in, MixFlags& f) {
  static const ds::MixtureEnd ends[] = {ds::MixtureEnd::first_exhausted, ds::MixtureEnd::all_seen,
                                        ds::MixtureEnd::samples, ds::MixtureEnd::steps};
  const char* names[] = {"first_exhausted", "all_seen", "samples", "steps"};
  std::size_t which = 0;
  if (in.has("--end")) which = parse_choice("--end", in.text("--end"), {names[0], names[1], names[2], names[3]});
  f.end = ends[which];
  const bool counted = f.end == ds::MixtureEnd::samples || f.end == ds::MixtureEnd::steps;
  if (counted && !in.has("--end-count")) {
    throw UsageError(fmt::format("--end {} needs --end-count N (expected the number of {} in the epoch, at least 1)",
                                 names[which], names[which]));
  }
  if (!counted && in.has("--end-count")) {
    throw UsageError(
        fmt::format("--end-count is given but --end is {} (expected --end samples or steps, or no "
                    "--end-count: that end has no count)",
                    names[which]));
  }
  if (counted) f.end_count = at_least_one(in, "--end-count");
}

int run_mix(const Invocation& in) {
  MixFlags f;
  f.sources = parse_count_list("--sources", in.text("--sources"));
  f.weights = parse_weights("--weights", in.text("--weights"));
  f.schedule = schedule_flag(in);
  end_flags(in, f);
  f.world_size = at_least_one(in, "--world");
  const BatchFlags b = batch_flags(in, f.world_size);
  f.micro_batch = b.micro_batch;
  f.accum = b.accum;
  if (in.has("--seed")) f.seed = parse_seed("--seed", in.text("--seed"));
  f.epoch = in.number("--epoch").value_or(0);
  const auto rank = rank_flag(in, f.world_size);
  const auto steps = in.number("--steps");
  if (!rank && f.world_size > limits::ranks) {
    too_large(fmt::format("--world {}", f.world_size), "mix without --rank", limits::ranks,
              "it builds every rank's sampler", "; pass --rank R");
  }
  const ds::MixtureSampler first = make_mixture(f, rank.value_or(0));
  const std::uint64_t g = first.global_batch_size();
  const std::uint64_t n = std::min(steps.value_or(UINT64_MAX), first.num_steps());
  const bool order = in.has("--order");
  const std::uint64_t positions = order && !steps ? first.dataset_size() : saturating_mul(n, g);
  const std::uint64_t printed = order ? positions : saturating_mul(positions / (rank ? f.world_size : 1), 1);
  if (printed > limits::printed) {
    throw UsageError(
        fmt::format("{} would print {} samples, more than the {} printed at once; pass a smaller --steps S",
                    order ? "--order" : "mix", printed == UINT64_MAX ? "2^64-1 or more" : std::to_string(printed),
                    limits::printed));
  }
  Output out;
  fmt::format_to(std::back_inserter(out.buffer()),
                 "global batch {} = micro-batch {} x world_size {} x accumulation {}; {} steps of epoch {} "
                 "({} positions)",
                 g, f.micro_batch, f.world_size, f.accum, first.num_steps(), first.epoch(), first.dataset_size());
  out.end_line();
  if (order) {
    for (std::uint64_t p = 0; p < positions; ++p) {
      const ds::MixtureIndex x = first.at(p);
      fmt::format_to(std::back_inserter(out.buffer()), "{} {}", x.source, x.index);
      out.end_line();
    }
  } else {
    const std::uint64_t lo = rank.value_or(0), hi = rank ? lo + 1 : f.world_size;
    for (std::uint64_t r = lo; r < hi; ++r) {
      const ds::MixtureSampler s = r == first.rank() ? first : make_mixture(f, r);
      print_steps(out, s, n, r, [](std::string& line, std::uint64_t, std::uint64_t, std::size_t, auto x) {
        fmt::format_to(std::back_inserter(line), "{}:{}", x.source, x.index);
      });
    }
  }
  // The prefix error walks the global order: bounded, as what is printed is, however large a step is.
  const std::uint64_t walked = std::min(positions, limits::prefix_positions);
  const std::vector<double> worst = mixture_prefix_error(first, walked);
  auto& line = out.buffer();
  if (walked == positions) {
    fmt::format_to(std::back_inserter(line), "max prefix error over {} positions:", positions);
  } else {
    fmt::format_to(std::back_inserter(line), "max prefix error over the first {} of {} positions:", walked, positions);
  }
  for (std::size_t i = 0; i < worst.size(); ++i) {
    fmt::format_to(std::back_inserter(line), "{} source {} {:.3f}", i ? "," : "", i, worst[i]);
  }
  out.end_line();
  out.flush();
  return 0;
}

}  // namespace

/// The mixture family's commands, registered in commands.cpp.
std::vector<CommandSpec> mixture_commands() {
  return {
      {"mix",
       "distsampler mix --sources LIST --weights LIST --world W --micro-batch B --accum K [--rank R] [flags]",
       "print a weighted mixture's micro-batches or order and its prefix error",
       "print each step's micro-batches of rank R (of every rank without --rank) as source:index pairs, or with\n"
       "--order the epoch's global order as `source index` lines; then the largest prefix error |count_i(k) - k w_i|\n"
       "of each source over the positions printed. The epoch ends where --end says: when the first source runs\n"
       "out (the default), when the last one does, or after --end-count samples or steps.",
       {"--sources", "--weights", "--world", "--micro-batch", "--accum"},
       {"--rank", "--steps", "--seed", "--epoch", "--schedule", "--end", "--end-count", "--order"},
       fmt::format("limits: at most {} sources and {} samples printed (see --steps, --rank); the prefix error over\n"
                   "at most the first {} positions.\n",
                   limits::shards, limits::printed, limits::prefix_positions),
       run_mix}};
}

}  // namespace cli

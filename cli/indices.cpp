// The distributed family's commands: `indices` prints one rank's indices, `check` checks every rank's share.
// SPDX-License-Identifier: MIT
#include <distsampler/distributed/distributed_sampler.hpp>
#include <distsampler/feistel.hpp>
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

int run_indices(const Invocation& in) {
  const OrderFlags o = order_flags(in, ds::Tail::pad);
  const std::uint64_t rank = *rank_flag(in, o.world_size);
  const auto count = in.number("--count");
  with_sampler(o, rank, o.seed, [&](const auto& s) {
    if (!count && s.size() > limits::printed) {
      throw UsageError(
          fmt::format("--size {} gives rank {} {} indices, more than the {} printed without --count; "
                      "pass --count K to print the first K",
                      o.size, rank, s.size(), limits::printed));
    }
    const std::uint64_t n = count ? std::min(*count, s.size()) : s.size();
    Output out;
    for (std::uint64_t i = 0; i < n; ++i) {
      fmt::format_to(std::back_inserter(out.buffer()), "{}", s.get(i));
      out.end_line();
    }
    out.flush();
  });
  return 0;
}

int run_check(const Invocation& in) {
  const OrderFlags o = order_flags(in, ds::Tail::pad);
  if (o.size > limits::checked_indices) {
    too_large(fmt::format("--size {}", o.size), "check", limits::checked_indices,
              "check reads every index of the epoch and keeps one byte per index",
              "; `indices --count K` prints part of a larger epoch");
  }
  if (o.world_size > limits::ranks) {
    too_large(fmt::format("--world {}", o.world_size), "check", limits::ranks, "check builds every rank's sampler");
  }
  check_torch_work(in, o, "");
  const bool per_rank_seed = in.has("--per-rank-seed");
  // Allocated before anything is printed: running out of memory leaves no partial table.
  ds::PartitionChecker checker(o.size, o.world_size, o.tail);
  fmt::print("dataset_size {}  world_size {}  shuffle {}  seed {}  epoch {}  tail {}{}\n", o.size, o.world_size,
             in.has("--shuffle") ? in.text("--shuffle") : "feistel", o.seed, o.epoch, ds::to_string(o.tail),
             per_rank_seed ? "  (per-rank seeds)" : "");
  fmt::print("{:>6}  {:>10}  {:>7}  first indices\n", "rank", "count", "padding");
  for (std::uint64_t r = 0; r < o.world_size; ++r) {
    // With per-rank seeds every process believes it is rank r of W over its own shuffle.
    with_sampler(o, r, per_rank_seed ? o.seed + r : o.seed, [&](const auto& s) {
      std::uint64_t padding = 0;
      std::string first;
      for (std::uint64_t i = 0; i < s.size(); ++i) {
        const bool pad = s.is_padding(i);
        padding += pad ? 1 : 0;
        checker.add(r, s.get(i), pad);
        if (i < 8) fmt::format_to(std::back_inserter(first), "{}{}{}", i ? " " : "", s.get(i), pad ? "*" : "");
      }
      if (s.size() > 8) first += " ...";
      if (r < 64 || r + 1 == o.world_size) fmt::print("{:>6}  {:>10}  {:>7}  {}\n", r, s.size(), padding, first);
      if (r == 64 && o.world_size > 65) fmt::print("{:>6}\n", "...");
    });
  }
  const auto report = checker.finish();
  fmt::print("(* = padding)\n{}\n", report.summary());
  return report.ok() ? 0 : 1;
}

}  // namespace

/// The distributed family's commands, registered in commands.cpp.
std::vector<CommandSpec> distributed_commands() {
  const std::string torch = torch_limit_text();
  return {{"indices",
           "distsampler indices --size N --world W --rank R [--count K] [order flags]",
           "print one rank's indices of an epoch",
           "print rank R's indices of the epoch, one per line",
           {"--size", "--world", "--rank"},
           {"--count", "--seed", "--epoch", "--shuffle", "--tail", "--torch-generation"},
           fmt::format("limits: without --count, at most {} indices; {}.\n", limits::printed, torch),
           run_indices},
          {"check",
           "distsampler check --size N --world W [--per-rank-seed] [order flags]",
           "check that every rank's share is disjoint, covering and balanced",
           "build every rank's sampler, print a per-rank table (count, padding, first indices, * = padding) and a\n"
           "verdict; exit 1 when a promise (disjoint, covering, balanced) fails",
           {"--size", "--world"},
           {"--per-rank-seed", "--seed", "--epoch", "--shuffle", "--tail", "--torch-generation"},
           fmt::format("limits: --size at most {}, --world at most {};\n{} and (--size + {}) x --world at most {}.\n",
                       limits::checked_indices, limits::ranks, torch, limits::torch_rank_cost, limits::torch_work),
           run_check}};
}

}  // namespace cli

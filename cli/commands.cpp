// The `distsampler` commands: validate every flag and bound every cost, then print indices, plans, batches or states.
// SPDX-License-Identifier: MIT
#include <distsampler/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli.hpp"
#include "samplers.hpp"

namespace cli {
namespace {

namespace ds = distsampler;

// Buffered standard output that fails loudly (a full disk, a closed pipe) instead of dropping lines; what is
// not flushed when a command fails is dropped.
class Output {
 public:
  std::string& buffer() { return buffer_; }
  void end_line() {
    buffer_ += '\n';
    if (buffer_.size() >= (1u << 16)) flush();
  }
  void flush() {
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), stdout) != buffer_.size()) {
      throw UsageError(fmt::format("cannot write to standard output: {}", std::strerror(errno)));
    }
    buffer_.clear();
  }

 private:
  std::string buffer_;
};

[[noreturn]] void too_large(std::string_view what, std::string_view command, std::uint64_t limit, std::string_view why,
                            std::string_view hint = {}) {
  throw UsageError(fmt::format("{} is too large for {} (at most {}: {}){}", what, command, limit, why, hint));
}

std::uint64_t at_least_one(const Invocation& in, std::string_view flag) {
  const std::uint64_t v = in.required_number(flag);
  if (v == 0) throw UsageError(fmt::format("{} 0 is too small (expected at least 1)", flag));
  return v;
}

std::optional<std::uint64_t> rank_flag(const Invocation& in, std::uint64_t world_size) {
  const auto rank = in.number("--rank");
  if (rank && *rank >= world_size) {
    std::string message = ds::detail::out_of_range_message("", "--rank", *rank, "--world", world_size);
    throw UsageError(message.substr(2));  // the library's phrasing without its "Who: "
  }
  return rank;
}

ds::Tail tail_flag(const Invocation& in, ds::Tail fallback) {
  if (!in.has("--tail")) return fallback;
  static const ds::Tail tails[] = {ds::Tail::pad, ds::Tail::drop, ds::Tail::uneven};
  return tails[parse_choice("--tail", in.text("--tail"), {"pad", "drop", "uneven"})];
}

OrderFlags order_flags(const Invocation& in, ds::Tail default_tail) {
  OrderFlags o;
  o.size = in.required_number("--size");
  o.world_size = at_least_one(in, "--world");
  if (in.has("--seed")) o.seed = parse_seed("--seed", in.text("--seed"));
  o.epoch = in.number("--epoch").value_or(0);
  o.tail = tail_flag(in, default_tail);
  if (in.has("--shuffle")) {
    static const Engine engines[] = {Engine::feistel, Engine::torch, Engine::none};
    o.engine = engines[parse_choice("--shuffle", in.text("--shuffle"), {"feistel", "torch", "none"})];
  }
  if (in.has("--torch-generation")) {
    if (o.engine != Engine::torch) throw UsageError("--torch-generation applies only with --shuffle torch");
    o.generation = parse_choice("--torch-generation", in.text("--torch-generation"), {"v1", "v2.7"}) == 0
                       ? ds::TorchGeneration::v1
                       : ds::TorchGeneration::v2_7;
  }
  if (o.engine == Engine::torch && o.size > limits::torch_size) {
    too_large(fmt::format("--size {} with --shuffle torch", o.size), in.command->name, limits::torch_size,
              "torch's permutation is kept whole, 4 bytes per index", "; --shuffle feistel needs O(1) memory");
  }
  return o;
}

// --shuffle torch over every rank builds torch's permutation once per rank.
void check_torch_work(const Invocation& in, const OrderFlags& o, std::string_view hint) {
  // o.size <= limits::torch_size here, so the sum cannot overflow.
  if (o.engine == Engine::torch &&
      saturating_mul(o.size + limits::torch_rank_cost, o.world_size) > limits::torch_work) {
    too_large(fmt::format("(--size {} + {}) x --world {} with --shuffle torch", o.size, limits::torch_rank_cost,
                          o.world_size),
              in.command->name, limits::torch_work, "torch's permutation is built and seeded once per rank", hint);
  }
}

BatchFlags batch_flags(const Invocation& in, std::uint64_t world_size) {
  BatchFlags b;
  b.micro_batch = at_least_one(in, "--micro-batch");
  b.accum = at_least_one(in, "--accum");
  if (b.micro_batch > UINT64_MAX / world_size || b.accum > UINT64_MAX / (b.micro_batch * world_size)) {
    throw UsageError(
        fmt::format("--micro-batch {} x --world {} x --accum {} overflows 64 bits (expected a global "
                    "batch below 2^64)",
                    b.micro_batch, world_size, b.accum));
  }
  return b;
}

std::optional<ds::SamplerState> resume_flag(const Invocation& in) {
  if (!in.has("--resume")) return std::nullopt;
  ds::SamplerState state = parse_state("--resume", in.text("--resume"));
  const auto epoch = in.number("--epoch");
  if (epoch && *epoch != state.epoch) {
    throw UsageError(
        fmt::format("--epoch {} differs from epoch {} recorded in --resume (omit --epoch: a resumed run "
                    "continues the saved epoch)",
                    *epoch, state.epoch));
  }
  return state;
}

// One line per step in [0, n) of rank r: "step S rank R: [..] [..]", a bracket per micro-batch,
// each element written by put(line, step, k, e, element), separated by spaces.
template <class Sampler, class Put>
void print_steps(Output& out, const Sampler& s, std::uint64_t n, std::uint64_t r, Put put) {
  for (std::uint64_t step = 0; step < n; ++step) {
    auto& line = out.buffer();
    fmt::format_to(std::back_inserter(line), "step {} rank {}:", step, r);
    for (std::uint64_t k = 0; k < s.micro_batches_per_step(); ++k) {
      line += " [";
      const auto batch = s.micro_batch(step, k);
      for (std::size_t e = 0; e < batch.size(); ++e) {
        if (e != 0) line += ' ';
        put(line, step, k, e, batch[e]);
      }
      line += "]";
    }
    out.end_line();
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
  if (in.has("--window")) f.options.shuffle_window = at_least_one(in, "--window");
  if (f.options.run_length > UINT64_MAX / f.options.max_open_shards) {
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
                     "{} shards, {} samples; world_size {} x {} workers; seed {} epoch {} tail {}; at most {} shards "
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

int run_tokens(const Invocation& in) {
  TokenFlags t;
  t.lengths = parse_lengths("--lengths", in.text("--lengths"));
  t.world_size = at_least_one(in, "--world");
  t.options.with_max_tokens(in.required_number("--max-tokens"));
  if (in.has("--accum")) t.options.with_accumulation_steps(at_least_one(in, "--accum"));
  if (in.has("--window")) t.options.with_window(at_least_one(in, "--window"));
  if (in.has("--seed")) t.options.with_seed(parse_seed("--seed", in.text("--seed")));
  t.epoch = in.number("--epoch").value_or(0);
  const auto rank = rank_flag(in, t.world_size);
  if (t.world_size > limits::ranks) {
    too_large(fmt::format("--world {}", t.world_size), "tokens", limits::ranks, "every rank's micro-batches are dealt");
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

int run_mix(const Invocation& in) {
  MixFlags f;
  f.sources = parse_count_list("--sources", in.text("--sources"));
  f.weights = parse_weights("--weights", in.text("--weights"));
  f.schedule = schedule_flag(in);
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
  const std::vector<double> worst = mixture_prefix_error(first, positions);
  auto& line = out.buffer();
  fmt::format_to(std::back_inserter(line), "max prefix error over {} positions:", positions);
  for (std::size_t i = 0; i < worst.size(); ++i) {
    fmt::format_to(std::back_inserter(line), "{} source {} {:.3f}", i ? "," : "", i, worst[i]);
  }
  out.end_line();
  out.flush();
  return 0;
}

}  // namespace

int run_command(const Invocation& given) {
  if (given.command->name == "mesh") return run_mesh(given);
  const Invocation invocation = with_data_world(given);
  const std::string_view name = invocation.command->name;
  if (name == "indices") return run_indices(invocation);
  if (name == "check") return run_check(invocation);
  if (name == "shards") return run_shards(invocation);
  if (name == "batches") return run_batches(invocation);
  if (name == "tokens") return run_tokens(invocation);
  if (name == "mix") return run_mix(invocation);
  return run_state(invocation);
}

}  // namespace cli

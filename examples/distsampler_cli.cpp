// The `distsampler` command: prints a rank's indices or checks a whole partition, for inspection and scripting.
// SPDX-License-Identifier: MIT
#include <distsampler/distsampler.hpp>
#include <distsampler/fmt.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds = distsampler;

namespace {

constexpr const char* usage_text = R"(usage:
  distsampler indices --size N --world W --rank R [options] [--count K]
      print rank R's indices for the epoch, one per line (the first K only with --count)
  distsampler check --size N --world W [options] [--per-rank-seed]
      build every rank's sampler, print a per-rank table and a verdict;
      exit 1 when a promise (disjoint, covering, balanced) fails
options:
  --seed S                 shared seed (default 0; negative values are taken mod 2^64, as torch does)
  --epoch E                epoch (default 0)
  --shuffle feistel|torch|none   feistel: O(1)-memory default; torch: torch.randperm's exact order
  --tail pad|drop|uneven   pad = torch default, drop = torch drop_last, uneven = each index once
  --torch-generation v1|v2.7     torch's large-n randperm (default v2.7 = current torch)
  --per-rank-seed          (check) seed each rank with seed + rank, the classic bug, to see it fail
  distsampler shards --shard-sizes FILE|LIST --world W --workers K [--rank R] [--seed S] [--epoch E]
                     [--tail pad|drop|uneven] [--max-open-shards M] [--run-length L] [--window W]
                     [--ranges K]
      print each consumer's (rank, worker) read plan: the shard ranges it reads, in order
      (the first K, default 8); then check the whole epoch and print a verdict. M shards are
      read interleaved (default 8), in runs of L records (default 8), each lane's runs
      shuffled within windows of W runs (default 16; 1 = in order)
      LIST is comma-separated sample counts; FILE has one count per line
  distsampler batches --size N --world W --micro-batch B --accum K [--rank R] [--resume STATE]
                      [--steps S] [--seed S] [--epoch E] [--shuffle ...] [--tail ...]
      print each step's micro-batches of rank R (of every rank without --rank), the first S steps
      (default all); --resume continues from a state line printed by `state`. Tail defaults to drop
  distsampler state --size N --world W --micro-batch B --accum K --step S [options]
      print the one-line state after S steps (resumable on any world size)
exit status: 0 ok, 1 a promise failed, 2 bad usage or configuration
)";

struct UsageError {
  std::string message;
};

struct Args {
  std::string command;
  std::map<std::string, std::string> values;
  bool per_rank_seed = false;
};

std::uint64_t parse_u64(const std::string& flag, const std::string& text) {
  if (text.empty()) throw UsageError{fmt::format("{} needs a value (expected a decimal integer)", flag)};
  std::uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') throw UsageError{fmt::format("{} \"{}\" is not a decimal integer", flag, text)};
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) throw UsageError{fmt::format("{} \"{}\" overflows 64 bits", flag, text)};
    v = v * 10 + d;
  }
  return v;
}

// torch accepts seeds in [-2^63, 2^64) and takes them mod 2^64.
std::uint64_t parse_seed(const std::string& text) {
  if (!text.empty() && text[0] == '-') {
    const std::uint64_t magnitude = parse_u64("--seed", text.substr(1));
    if (magnitude > (std::uint64_t{1} << 63)) {
      throw UsageError{fmt::format("--seed \"{}\" is below -2^63 (torch's range is -2^63 .. 2^64-1)", text)};
    }
    return 0 - magnitude;
  }
  return parse_u64("--seed", text);
}

Args parse(int argc, char** argv) {
  if (argc < 2) throw UsageError{"missing command (expected indices, check, shards, batches or state)"};
  Args args;
  args.command = argv[1];
  const std::vector<std::string> commands = {"indices", "check", "shards", "batches", "state"};
  if (std::find(commands.begin(), commands.end(), args.command) == commands.end()) {
    throw UsageError{fmt::format("unknown command \"{}\" (expected indices, check, shards, batches or state)", args.command)};
  }
  static const std::vector<std::string> with_value = {"--size",    "--world", "--rank",  "--seed",
                                                      "--epoch",   "--shuffle", "--tail", "--count",
                                                      "--torch-generation", "--shard-sizes", "--workers",
                                                      "--max-open-shards", "--run-length", "--window", "--ranges",
                                                      "--micro-batch", "--accum",
                                                      "--resume", "--steps", "--step"};
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--per-rank-seed" && args.command == "check") {
      args.per_rank_seed = true;
      continue;
    }
    bool known = false;
    for (const auto& f : with_value) known = known || f == flag;
    if (!known) throw UsageError{fmt::format("unknown flag \"{}\" for {}", flag, args.command)};
    if (i + 1 >= argc) throw UsageError{fmt::format("{} needs a value", flag)};
    if (args.values.count(flag)) throw UsageError{fmt::format("{} given twice", flag)};
    args.values[flag] = argv[++i];
  }
  return args;
}

std::optional<std::string> get(const Args& args, const std::string& flag) {
  auto it = args.values.find(flag);
  if (it == args.values.end()) return std::nullopt;
  return it->second;
}

std::string require(const Args& args, const std::string& flag) {
  auto v = get(args, flag);
  if (!v) throw UsageError{fmt::format("{} is required for {}", flag, args.command)};
  return *v;
}

struct Config {
  std::uint64_t size = 0, world_size = 1, epoch = 0;
  ds::SamplerOptions options;
  std::string engine = "feistel";
  ds::TorchGeneration generation = ds::TorchGeneration::current;
};

Config config_of(const Args& args) {
  Config c;
  c.size = parse_u64("--size", require(args, "--size"));
  c.world_size = parse_u64("--world", require(args, "--world"));
  if (auto s = get(args, "--seed")) c.options.seed = parse_seed(*s);
  if (auto e = get(args, "--epoch")) c.epoch = parse_u64("--epoch", *e);
  if (auto t = get(args, "--tail")) {
    if (*t != "pad" && *t != "drop" && *t != "uneven") {
      throw UsageError{fmt::format("--tail \"{}\" is unknown (expected pad, drop or uneven)", *t)};
    }
    c.options.tail = ds::parse_tail(*t);
  }
  if (auto s = get(args, "--shuffle")) {
    if (*s != "feistel" && *s != "torch" && *s != "none") {
      throw UsageError{fmt::format("--shuffle \"{}\" is unknown (expected feistel, torch or none)", *s)};
    }
    c.engine = *s;
  }
  c.options.shuffle = c.engine != "none";
  if (auto g = get(args, "--torch-generation")) {
    if (*g == "v1") {
      c.generation = ds::TorchGeneration::v1;
    } else if (*g != "v2.7") {
      throw UsageError{fmt::format("--torch-generation \"{}\" is unknown (expected v1 or v2.7)", *g)};
    }
  }
  return c;
}

// Calls f(sampler) with the sampler type the engine names.
template <class F>
void with_sampler(const Config& c, const ds::World& world, const ds::SamplerOptions& options, F&& f) {
  if (c.engine == "torch") {
    ds::DistributedSampler<ds::TorchRandperm> s(c.size, world, options, {c.generation});
    s.set_epoch(c.epoch);
    f(s);
  } else {
    ds::DistributedSampler<> s(c.size, world, options);
    s.set_epoch(c.epoch);
    f(s);
  }
}

int run_indices(const Args& args) {
  const Config c = config_of(args);
  const std::uint64_t rank = parse_u64("--rank", require(args, "--rank"));
  std::optional<std::uint64_t> count;
  if (auto k = get(args, "--count")) count = parse_u64("--count", *k);
  with_sampler(c, ds::World(rank, c.world_size), c.options, [&](const auto& s) {
    const std::uint64_t n = count ? std::min(*count, s.size()) : s.size();
    std::string out;
    for (std::uint64_t i = 0; i < n; ++i) {
      fmt::format_to(std::back_inserter(out), "{}\n", s.get(i));
      if (out.size() > (1u << 16)) {
        std::fwrite(out.data(), 1, out.size(), stdout);
        out.clear();
      }
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
  });
  return 0;
}

int run_check(const Args& args) {
  const Config c = config_of(args);
  if (get(args, "--rank")) throw UsageError{"--rank is not used by check (it checks every rank)"};
  if (get(args, "--count")) throw UsageError{"--count is not used by check"};
  fmt::print("dataset_size {}  world_size {}  shuffle {}  seed {}  epoch {}  tail {}{}\n", c.size, c.world_size,
             c.engine, c.options.seed, c.epoch, c.options.tail, args.per_rank_seed ? "  (per-rank seeds)" : "");
  fmt::print("{:>6}  {:>10}  {:>7}  first indices\n", "rank", "count", "padding");
  ds::PartitionChecker checker(c.size, c.world_size, c.options.tail);
  for (std::uint64_t r = 0; r < c.world_size; ++r) {
    ds::SamplerOptions options = c.options;
    if (args.per_rank_seed) options.seed += r;
    // With per-rank seeds every process believes it is rank r of W over its own shuffle.
    with_sampler(c, ds::World(r, c.world_size), options, [&](const auto& s) {
      std::uint64_t padding = 0;
      std::string first;
      for (std::uint64_t i = 0; i < s.size(); ++i) {
        const bool pad = s.is_padding(i);
        padding += pad ? 1 : 0;
        checker.add(r, s.get(i), pad);
        if (i < 8) fmt::format_to(std::back_inserter(first), "{}{}{}", i ? " " : "", s.get(i), pad ? "*" : "");
      }
      if (s.size() > 8) first += " ...";
      if (r < 64 || r + 1 == c.world_size) fmt::print("{:>6}  {:>10}  {:>7}  {}\n", r, s.size(), padding, first);
      if (r == 64 && c.world_size > 65) fmt::print("{:>6}\n", "...");
    });
  }
  const auto report = checker.finish();
  fmt::print("(* = padding)\n{}\n", report.summary());
  return report.ok() ? 0 : 1;
}

std::vector<std::uint64_t> parse_shard_sizes(const std::string& spec) {
  std::string text = spec;
  if (spec.find_first_not_of("0123456789,") != std::string::npos) {
    std::ifstream in(spec);
    if (!in) throw UsageError{fmt::format("--shard-sizes \"{}\" is neither a comma-separated list nor a readable file", spec)};
    text.clear();
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) text += (text.empty() ? "" : ",") + line;
    }
  }
  std::vector<std::uint64_t> sizes;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    sizes.push_back(parse_u64("--shard-sizes", text.substr(at, comma - at)));
    at = comma + 1;
  }
  return sizes;
}

int run_shards(const Args& args) {
  for (const char* flag : {"--size", "--shuffle", "--count", "--torch-generation"}) {
    if (get(args, flag)) throw UsageError{fmt::format("{} is not used by shards", flag)};
  }
  const auto sizes = parse_shard_sizes(require(args, "--shard-sizes"));
  const std::uint64_t world_size = parse_u64("--world", require(args, "--world"));
  const std::uint64_t workers = parse_u64("--workers", require(args, "--workers"));
  ds::ShardSamplerOptions options;
  if (auto s = get(args, "--seed")) options.seed = parse_seed(*s);
  if (auto t = get(args, "--tail")) {
    if (*t != "pad" && *t != "drop" && *t != "uneven") {
      throw UsageError{fmt::format("--tail \"{}\" is unknown (expected pad, drop or uneven)", *t)};
    }
    options.tail = ds::parse_tail(*t);
  }
  if (auto m = get(args, "--max-open-shards")) options.max_open_shards = parse_u64("--max-open-shards", *m);
  if (auto l = get(args, "--run-length")) options.run_length = parse_u64("--run-length", *l);
  if (auto w = get(args, "--window")) options.shuffle_window = parse_u64("--window", *w);
  const std::uint64_t epoch = get(args, "--epoch") ? parse_u64("--epoch", *get(args, "--epoch")) : 0;
  const std::uint64_t shown = get(args, "--ranges") ? parse_u64("--ranges", *get(args, "--ranges")) : 8;
  std::optional<std::uint64_t> only_rank;
  if (auto r = get(args, "--rank")) only_rank = parse_u64("--rank", *r);

  std::optional<ds::PartitionChecker> checker;
  for (std::uint64_t r = 0; r < world_size; ++r) {
    ds::StreamingShardSampler sampler(sizes, ds::World(r, world_size),
                                      ds::ShardSamplerOptions(options).with_num_workers(workers));
    sampler.set_epoch(epoch);
    if (!checker) {
      checker.emplace(sampler.dataset_size(), world_size * workers, options.tail);
      fmt::print("{} shards, {} samples; world_size {} x {} workers; seed {} epoch {} tail {}; at most {} shards "
                 "open per consumer\n",
                 sizes.size(), sampler.dataset_size(), world_size, workers, options.seed, epoch, options.tail,
                 sampler.max_open_shards());
    }
    for (std::uint64_t w = 0; w < workers; ++w) {
      for (const auto& sample : sampler.stream(w)) checker->add(sampler.consumer(w), sample.index, sample.is_padding);
      if (only_rank && *only_rank != r) continue;
      const auto plan = sampler.read_plan(w);
      std::string text;
      for (std::size_t k = 0; k < plan.size() && k < shown; ++k) {
        fmt::format_to(std::back_inserter(text), "{}{}[{},{})", k ? " " : "", plan[k].shard, plan[k].begin, plan[k].end);
      }
      if (plan.size() > shown) text += fmt::format(" ... ({} ranges)", plan.size());
      fmt::print("rank {} worker {}: {} samples: {}\n", r, w, sampler.worker_size(w), text);
    }
  }
  const auto report = checker->finish();
  fmt::print("(ranges are shard[begin,end) of offsets)\n{}\n", report.summary());
  return report.ok() ? 0 : 1;
}

// Calls f(batch sampler) for the engine and options the flags name.
template <class F>
void with_batch_sampler(const Args& args, const ds::World& world, F&& f) {
  Config c = config_of(args);
  if (!get(args, "--tail")) c.options.tail = ds::Tail::drop;  // the batch sampler's default
  const std::uint64_t micro = parse_u64("--micro-batch", require(args, "--micro-batch"));
  const std::uint64_t accum = parse_u64("--accum", require(args, "--accum"));
  const ds::BatchSamplerOptions options{c.options.shuffle, c.options.seed, c.options.tail, ds::EpochMode::manual};
  auto prepare = [&](auto& s) {
    s.set_epoch(c.epoch);
    if (auto text = get(args, "--resume")) s.resume(ds::SamplerState::from_text(*text));
    f(s);
  };
  if (c.engine == "torch") {
    ds::DistributedBatchSampler<ds::TorchRandperm> s(c.size, micro, world, accum, options, {c.generation});
    prepare(s);
  } else {
    ds::DistributedBatchSampler<> s(c.size, micro, world, accum, options);
    prepare(s);
  }
}

int run_batches(const Args& args) {
  const std::uint64_t world_size = parse_u64("--world", require(args, "--world"));
  std::optional<std::uint64_t> steps;
  if (auto v = get(args, "--steps")) steps = parse_u64("--steps", *v);
  std::uint64_t first = 0, last = world_size;
  if (auto r = get(args, "--rank")) {
    first = parse_u64("--rank", *r);
    last = first + 1;
  }
  for (std::uint64_t r = first; r < last; ++r) {
    with_batch_sampler(args, ds::World(r, world_size), [&](const auto& s) {
      if (r == first) {
        fmt::print("global batch {} = micro-batch {} x world_size {} x accumulation {}; {} steps from position {} of "
                   "epoch {}\n",
                   s.global_batch_size(), s.micro_batch_size(), world_size, s.accumulation_steps(), s.num_steps(),
                   s.start(), s.epoch());
      }
      const std::uint64_t n = steps ? std::min(*steps, s.num_steps()) : s.num_steps();
      for (std::uint64_t step = 0; step < n; ++step) {
        std::string line = fmt::format("step {} rank {}:", step, r);
        for (std::uint64_t k = 0; k < s.micro_batches_per_step(); ++k) {
          line += " [";
          const auto batch = s.micro_batch(step, k);
          for (std::size_t e = 0; e < batch.size(); ++e) {
            line += fmt::format("{}{}{}", e ? " " : "", batch[e], s.is_padding(step, k, e) ? "*" : "");
          }
          line += "]";
        }
        fmt::print("{}\n", line);
      }
    });
  }
  return 0;
}

int run_state(const Args& args) {
  const std::uint64_t world_size = parse_u64("--world", require(args, "--world"));
  const std::uint64_t step = parse_u64("--step", require(args, "--step"));
  with_batch_sampler(args, ds::World(0, world_size), [&](const auto& s) { fmt::print("{}\n", s.state(step).to_text()); });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse(argc, argv);
    if (args.command == "shards") return run_shards(args);
    if (args.command == "batches") return run_batches(args);
    if (args.command == "state") return run_state(args);
    return args.command == "indices" ? run_indices(args) : run_check(args);
  } catch (const UsageError& e) {
    fmt::print(stderr, "distsampler: {}\n{}", e.message, usage_text);
    return 2;
  } catch (const ds::config_error& e) {
    fmt::print(stderr, "distsampler: {}\n", e.what());
    return 2;
  } catch (const ds::state_error& e) {
    fmt::print(stderr, "distsampler: {}\n", e.what());
    return 2;
  }
}

// The `distsampler` command's flag table, argument parser, help text and strict value parsers.
// SPDX-License-Identifier: MIT
#include "cli.hpp"

#include <distsampler/detail/decimal.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace cli {
namespace {

const std::vector<FlagSpec>& flags() {
  static const std::vector<FlagSpec> table = {
      {"--size", "N", "dataset size: the number of samples (indices 0..N-1)"},
      {"--world", "W", "world size: the number of ranks (processes), at least 1"},
      {"--rank", "R", "the rank, 0..W-1 (batches and shards: print only this rank)"},
      {"--seed", "S", "shared seed (default 0; negative values are taken mod 2^64, as torch does)"},
      {"--epoch", "E", "epoch (default 0)"},
      {"--shuffle", "feistel|torch|none",
       "feistel: O(1)-memory default; torch: torch.randperm's exact order (4 bytes per index); none: in order"},
      {"--tail", "pad|drop|uneven", "pad (torch's default), drop (drop_last) or uneven (each index once); default pad"},
      {"--torch-generation", "v1|v2.7", "with --shuffle torch: torch's large-n randperm (default v2.7 = current)"},
      {"--count", "K", "print only the first K indices"},
      {"--per-rank-seed", "", "seed rank r with seed + r, the classic bug, to see the check fail"},
      {"--shard-sizes", "FILE|LIST", "sample counts of the shards: comma-separated, or a file with one per line"},
      {"--workers", "K", "data-loader workers per rank, at least 1"},
      {"--preset", "sequential|mixed",
       "shards: mixed (the default: 512 lanes, 64 open, runs of 1, windows of 16) or sequential (1 lane,\n"
       "                               1 open, runs of 1024, no window, shards from offset 0: increasing offsets);\n"
       "                               the flags below override its values"},
      {"--max-open-shards", "M",
       "shards a consumer reads interleaved (default 64; at most 512, or 1 with --preset sequential)"},
      {"--run-length", "L", "records read in a row from one shard (default 1)"},
      {"--run-window", "W", "shards: each lane's runs are shuffled within windows of W runs (default 16; 1 = in order)"},
      {"--sort-window", "M", "tokens: samples sorted by length together (default 1048576)"},
      {"--document-window", "D", "pack: documents shuffled and packed together (default 65536)"},
      {"--window", "W",
       "the 0.2 spelling of --run-window (shards), --sort-window (tokens) and --document-window (pack):\n"
       "                               accepted with a warning until 0.4"},
      {"--ranges", "K", "shard ranges (or schedule entries) printed per consumer (default 8)"},
      {"--shard-schedule", "",
       "shards: print each consumer's shards in first-read order, as shard@first-last:records\n"
       "                               (first and last slot reading the shard, records read), instead of ranges"},
      {"--micro-batch", "B", "samples per micro-batch, at least 1"},
      {"--accum", "K", "gradient-accumulation micro-batches per step, at least 1"},
      {"--resume", "STATE", "continue from a state line printed by `state`"},
      {"--steps", "S", "print only the first S steps"},
      {"--step", "S", "steps done (0..the epoch's steps)"},
      {"--lengths", "FILE|LIST", "token counts of the samples: comma-separated, or a file with one per line"},
      {"--max-tokens", "T", "token budget per micro-batch: samples x longest length (padded tokens), at least 1"},
      {"--sources", "LIST", "sample counts of the mixture's sources, comma-separated"},
      {"--weights", "LIST", "the sources' weights, comma-separated decimals such as 0.5 (normalised to sum 1)"},
      {"--schedule", "STEP:W,W,..;..", "weight changes: from step STEP on the weights W,W,.. (entries separated by ;)"},
      {"--end", "first_exhausted|all_seen|samples|steps",
       "where a mixture epoch ends: the first source runs out (default), the last one does, or\n"
       "                               after N samples (positions) or steps (global batches), N from --end-count"},
      {"--end-count", "N", "with --end samples or steps: how many, at least 1"},
      {"--order", "", "print the epoch's global order as `source index` lines instead of micro-batches"},
      {"--seq-len", "L", "tokens per packed sequence, 1..8388607"},
      {"--mode", "concat|best-fit",
       "concat: one token stream cut into sequences of exactly L (default); best-fit: each window's\n"
       "                               documents packed whole by best-fit decreasing, every document once"},
      {"--chunk", "C", "consecutive documents kept together in the shuffle (default min(1024, --document-window))"},
      {"--no-split", "", "best-fit: refuse documents longer than --seq-len instead of splitting them"},
      {"--plan-limit", "N", "the most window records the epoch plan keeps (default 65536; changes no output)"},
      {"--global-batch", "G", "sequences per optimizer step over every rank (instead of --accum)"},
      {"--config", "FILE.json", "blend: the blend's JSON config (docs/BLENDING.md)"},
      {"--state-after", "S", "print the steps before S, then `state: LINE` (resumable with --resume), and exit"},
      {"--mesh", "NAME=SIZE,...",
       "parallel mesh, outermost dim first (row-major, as torch's DeviceMesh): --world and\n"
       "                               --rank are then global ranks, and a rank reads what its data rank reads"},
      {"--data-dims", "NAME,...",
       "with --mesh: the dims that split the data, in the mesh's order (default: those named dp,\n"
       "                               dp_replicate and dp_shard)"},
      {"--byte-sizes", "FILE|LIST", "byte sizes of the shards (hints for balance): comma-separated, or a file"},
      {"--keep", "P", "read-time filter: keep each record with probability P (a decimal from 0 to 1)"},
      {"--share", "K|all",
       "cut every shard by stride among K consumers, or all: each reads a part of every shard, so\n"
       "                               consumers stay within a pass of each other without byte hints (default 1)"},
  };
  return table;
}

constexpr std::string_view exit_status_text =
    "exit status: 0 ok, 1 a promise failed, 2 bad usage, input or configuration";

bool is_help(std::string_view arg) { return arg == "--help" || arg == "-h"; }

std::string join(const std::vector<std::string_view>& items, std::string_view separator, std::string_view last) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += i + 1 == items.size() ? last : separator;
    out += items[i];
  }
  return out;
}

std::vector<std::string_view> command_names() {
  std::vector<std::string_view> names;
  for (const auto& c : commands()) names.push_back(c.name);
  return names;
}

// The 0.2 spelling --window, per command: what it windows (0.3 names each window by what it holds).
std::string_view renamed_window(std::string_view command) {
  if (command == "shards") return "--run-window";
  if (command == "tokens") return "--sort-window";
  if (command == "pack") return "--document-window";
  return {};
}

bool takes(const CommandSpec& command, std::string_view flag) {
  if ((flag == "--mesh" || flag == "--data-dims") && takes_mesh_flags(command.name)) return true;
  return std::find(command.required.begin(), command.required.end(), flag) != command.required.end() ||
         std::find(command.optional.begin(), command.optional.end(), flag) != command.optional.end();
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The closest of `candidates` to `typed` when it looks like a typo, for "did you mean".
std::string_view closest(std::string_view typed, const std::vector<std::string_view>& candidates) {
  if (typed.size() > 64) return {};
  std::string_view best;
  std::size_t best_distance = 3;
  for (const auto c : candidates) {
    const std::size_t d = edit_distance(typed, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

[[noreturn]] void unknown_command(std::string_view name) {
  std::string message =
      fmt::format("unknown command {} (expected {})", shown(name), join(command_names(), ", ", " or "));
  const auto guess = closest(name, command_names());
  if (!guess.empty()) message += fmt::format("; did you mean {}?", guess);
  throw UsageError(message);
}

std::vector<std::string_view> flags_of(const CommandSpec& command) {
  std::vector<std::string_view> all = command.required;
  all.insert(all.end(), command.optional.begin(), command.optional.end());
  if (takes_mesh_flags(command.name)) all.insert(all.end(), {"--mesh", "--data-dims"});
  return all;
}

[[noreturn]] void unknown_flag(const CommandSpec& command, std::string_view typed) {
  std::string message = fmt::format("unknown flag {}", shown(typed));
  const auto guess = closest(typed, flags_of(command));
  if (!guess.empty()) message += fmt::format("; did you mean {}?", guess);
  throw UsageError(message + fmt::format(" ({} takes {})", command.name, join(flags_of(command), ", ", " and ")));
}

void parse_flags(const CommandSpec& command, const std::vector<std::string_view>& args, Invocation& out) {
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      if (!arg.empty() && arg[0] == '-') unknown_flag(command, arg);
      throw UsageError(fmt::format("unexpected argument {} (flags are --name VALUE or --name=VALUE)", shown(arg)));
    }
    const std::size_t equals = arg.find('=');
    const std::string_view name = arg.substr(0, equals);
    const FlagSpec* spec = find_flag(name);
    if (spec == nullptr) unknown_flag(command, name);
    // The 0.2 spelling --window is stored under the command's 0.3 name, with a warning.
    std::string_view stored = name;
    if (name == "--window") {
      stored = renamed_window(command.name);
      if (stored.empty()) {
        throw UsageError(fmt::format("--window is not used by {} (shards takes --run-window, tokens --sort-window, "
                                     "pack --document-window)",
                                     command.name));
      }
      out.warnings.push_back(fmt::format("--window is the 0.2 spelling of {} (accepted until 0.4): write {}", stored,
                                         stored));
    }
    if (out.has(stored)) {
      if ((name == "--window") != (out.window_spelled_old == stored)) {
        throw UsageError(fmt::format("--window and {} given both (give {} only)", stored, stored));
      }
      throw UsageError(fmt::format("{} given twice (give each flag at most once)", name));
    }
    if (name == "--window") out.window_spelled_old = std::string(stored);
    if (name != "--window" && !takes(command, name)) {
      throw UsageError(fmt::format("{} is not used by {} ({} takes {})", name, command.name, command.name,
                                   join(flags_of(command), ", ", " and ")));
    }
    if (out.has(stored)) throw UsageError(fmt::format("{} given twice (give each flag at most once)", name));
    std::string_view value;
    if (spec->metavar.empty()) {
      if (equals != std::string_view::npos)
        throw UsageError(fmt::format("{} takes no value (got {})", name, shown(arg)));
    } else if (equals != std::string_view::npos) {
      value = arg.substr(equals + 1);
    } else if (i + 1 == args.size()) {
      throw UsageError(fmt::format("{} needs a value ({})", name, spec->metavar));
    } else if (args[i + 1].substr(0, 2) == "--") {
      throw UsageError(fmt::format("{} needs a value ({}) before {}", name, spec->metavar, shown(args[i + 1])));
    } else {
      value = args[++i];
    }
    out.values.emplace(std::string(stored), std::string(value));
  }
  for (const auto flag : command.required) {
    if (!out.has(flag)) throw UsageError(fmt::format("{} is required for {}", flag, command.name));
  }
}

// The length of the well-formed UTF-8 sequence at s[i], or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  std::size_t n = 0;
  if (b >= 0xc2 && b <= 0xdf)
    n = 2;
  else if (b >= 0xe0 && b <= 0xef)
    n = 3;
  else if (b >= 0xf0 && b <= 0xf4)
    n = 4;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  // Overlong forms, surrogates and values above U+10FFFF.
  if ((b == 0xe0 && byte(i + 1) < 0xa0) || (b == 0xed && byte(i + 1) > 0x9f) || (b == 0xf0 && byte(i + 1) < 0x90) ||
      (b == 0xf4 && byte(i + 1) > 0x8f)) {
    return 0;
  }
  return n;
}

}  // namespace

const CommandSpec* find_command(std::string_view name) {
  for (const auto& c : commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const FlagSpec* find_flag(std::string_view name) {
  for (const auto& f : flags()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string_view Invocation::text(std::string_view flag) const {
  const auto it = values.find(flag);
  return it == values.end() ? std::string_view() : std::string_view(it->second);
}

std::optional<std::uint64_t> Invocation::number(std::string_view flag) const {
  if (!has(flag)) return std::nullopt;
  return parse_number(flag, text(flag));
}

std::uint64_t Invocation::required_number(std::string_view flag) const {
  if (!has(flag)) throw UsageError(fmt::format("{} is required for {}", flag, command->name));
  return parse_number(flag, text(flag));
}

Invocation parse_args(const std::vector<std::string_view>& args) {
  Invocation out;
  if (args.empty()) {
    throw UsageError(
        fmt::format("missing command (expected {}; --help lists them)", join(command_names(), ", ", " or ")));
  }
  const std::string_view first = args[0];
  if (is_help(first) || first == "help") {
    if (first == "help" && args.size() == 2) {
      out.command = find_command(args[1]);
      if (out.command == nullptr) unknown_command(args[1]);
    } else if (args.size() > 1) {
      throw UsageError(fmt::format("unexpected argument {} after {}", shown(args[1]), shown(first)));
    }
    out.help = true;
    return out;
  }
  if (!first.empty() && first[0] == '-') {
    throw UsageError(
        fmt::format("expected a command before {} (one of {})", shown(first), join(command_names(), ", ", " or ")));
  }
  out.command = find_command(first);
  if (out.command == nullptr) unknown_command(first);
  if (std::any_of(args.begin() + 1, args.end(), is_help)) {
    out.help = true;
    return out;
  }
  parse_flags(*out.command, args, out);
  return out;
}

void write_buffered(std::string& buffer, bool force) {
  if (buffer.size() < (1u << 16) && !force) return;
  if (std::fwrite(buffer.data(), 1, buffer.size(), stdout) != buffer.size()) {
    throw UsageError(fmt::format("cannot write to standard output: {}", std::strerror(errno)));
  }
  buffer.clear();
}

std::string program_help() {
  std::string out =
      "distsampler: print and check the per-rank index orders of distributed samplers\n\n"
      "usage:\n";
  for (const auto& c : commands()) out += fmt::format("  {}\n", c.synopsis);
  out += fmt::format("  {}\n", index_synopsis);
  out += "  distsampler COMMAND --help    the flags of one command\n\ncommands:\n";
  for (const auto& c : commands()) {
    out += fmt::format("  {:<8} {}\n", c.name, c.brief);
  }
  out += fmt::format("  {:<8} {}\n", "index", index_brief);
  out += fmt::format(
      "\norder flags: --seed S, --epoch E, --shuffle feistel|torch|none, --tail pad|drop|uneven,\n"
      "--torch-generation v1|v2.7\n{}\n",
      exit_status_text);
  return out;
}

std::string command_help(const CommandSpec& command) {
  std::string out = fmt::format("usage: {}\n\n{}\n\nflags:\n", command.synopsis, command.summary);
  for (const auto name : flags_of(command)) {
    const FlagSpec* f = find_flag(name);
    if (f == nullptr) {  // a command lists a flag the table does not describe: a bug of this program
      throw std::logic_error(fmt::format("{} takes {}, which has no entry in the flag table", command.name, name));
    }
    const bool required = std::find(command.required.begin(), command.required.end(), name) != command.required.end();
    const std::string head = f->metavar.empty() ? std::string(name) : fmt::format("{} {}", name, f->metavar);
    out += fmt::format("  {:<28} {}{}\n", head, required ? "(required) " : "", f->help);
  }
  out += fmt::format(
      "  {:<28} this help\n\n{}flags take their value as --name VALUE or --name=VALUE, each at most once.\n{}\n",
      "--help, -h", command.limits, exit_status_text);
  return out;
}

std::string usage_hint(const CommandSpec* command) {
  if (command == nullptr) return "usage: distsampler COMMAND [flags]   (distsampler --help lists the commands)";
  return fmt::format("usage: {}   (distsampler {} --help for every flag)", command->synopsis, command->name);
}

std::string shown(std::string_view text) {
  constexpr std::size_t most = 64;
  std::string out = "\"";
  std::size_t i = 0;
  for (; i < text.size() && i < most;) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_length(text, i);
      if (n != 0) {
        out += text.substr(i, n);
        i += n;
        continue;
      }
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
  if (i < text.size()) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

std::uint64_t parse_number(std::string_view flag, std::string_view text) {
  namespace detail = distsampler::detail;
  const detail::DecimalParse p = detail::parse_decimal(text);
  if (p.error != detail::DecimalError::ok) {
    throw UsageError(fmt::format("{} {} {}", flag, shown(text), detail::describe(p.error)));
  }
  return p.value;
}

std::uint64_t parse_seed(std::string_view flag, std::string_view text) {
  if (text.empty() || text[0] != '-') return parse_number(flag, text);
  namespace detail = distsampler::detail;
  const detail::DecimalParse p = detail::parse_decimal(text.substr(1));
  if (p.error != detail::DecimalError::ok) {
    const char* why = p.error == detail::DecimalError::overflow
                          ? "is below -2^63 (expected -2^63 .. 2^64-1, torch's range)"
                          : "is not a decimal integer (expected -2^63 .. 2^64-1)";
    throw UsageError(fmt::format("{} {} {}", flag, shown(text), why));
  }
  if (p.value > (std::uint64_t{1} << 63)) {
    throw UsageError(fmt::format("{} {} is below -2^63 (expected -2^63 .. 2^64-1, torch's range)", flag, shown(text)));
  }
  return 0 - p.value;
}

std::size_t parse_choice(std::string_view flag, std::string_view text, const std::vector<std::string_view>& choices) {
  const auto it = std::find(choices.begin(), choices.end(), text);
  if (it == choices.end()) {
    throw UsageError(fmt::format("{} {} is unknown (expected {})", flag, shown(text), join(choices, ", ", " or ")));
  }
  return static_cast<std::size_t>(it - choices.begin());
}

}  // namespace cli

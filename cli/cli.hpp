// The `distsampler` command's shared declarations: flag table, argument parser, value parsers, limits.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_EXAMPLES_CLI_HPP
#define DISTSAMPLER_EXAMPLES_CLI_HPP

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <distsampler/detail/checked.hpp>

namespace cli {

/// A bad command line, input file or flag combination: printed after "distsampler <command>: ", exit status 2.
/// The message names the flag as the user typed it.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What the command refuses because it would not fit in memory or finish in reasonable time. Each
/// limit bounds a cost the command pays before printing its first line.
namespace limits {
/// check and shards read every index of the epoch and keep one byte per index.
inline constexpr std::uint64_t checked_indices = std::uint64_t{1} << 27;
/// Ranks (or shard consumers) a command builds one by one: check, shards, batches without --rank.
inline constexpr std::uint64_t ranks = std::uint64_t{1} << 20;
/// Indices printed without an explicit --count (indices) or --steps/--rank (batches).
inline constexpr std::uint64_t printed = std::uint64_t{1} << 26;
/// --shuffle torch keeps torch's whole permutation (4 bytes per index) and draws it with MT19937.
inline constexpr std::uint64_t torch_size = std::uint64_t{1} << 26;
/// --shuffle torch over every rank builds the permutation once per rank: (size + torch_rank_cost) x ranks, where
/// torch_rank_cost stands for seeding the generator and allocating the table.
inline constexpr std::uint64_t torch_work = std::uint64_t{1} << 28;
inline constexpr std::uint64_t torch_rank_cost = 1024;
/// Positions of the global order mix walks for its prefix error (the first ones when a step is larger).
inline constexpr std::uint64_t prefix_positions = std::uint64_t{1} << 24;
/// Shard sizes read from a list or a file.
inline constexpr std::uint64_t shards = std::uint64_t{1} << 20;
/// Lengths read by tokens from a list or a file.
inline constexpr std::uint64_t lengths = std::uint64_t{1} << 22;
/// shards builds one sampler per rank, each O(shards): world x shards.
inline constexpr std::uint64_t shard_work = std::uint64_t{1} << 24;
/// A --shard-sizes file: bytes read, and bytes per line.
inline constexpr std::uint64_t file_bytes = std::uint64_t{32} << 20;
inline constexpr std::size_t line_bytes = 256;
}  // namespace limits

/// One flag: its name with the dashes, the placeholder of its value ("" for a switch), and its help.
struct FlagSpec {
  std::string_view name;
  std::string_view metavar;
  std::string_view help;
};

struct Invocation;

/// One command: the flags it takes (every other flag is rejected) and the ones it requires, what it
/// refuses up front (see limits; a line for its help) and the function that runs it (returns the exit
/// status: 0 ok, 1 a promise failed; throws UsageError). Each family's file (cli/<family>.cpp) makes its own.
struct CommandSpec {
  std::string_view name;
  std::string_view synopsis;
  std::string_view brief;
  std::string_view summary;
  std::vector<std::string_view> required;
  std::vector<std::string_view> optional;
  std::string limits;
  int (*run)(const Invocation&) = nullptr;
};

/// Every command, family by family: the registration table in commands.cpp.
[[nodiscard]] const std::vector<CommandSpec>& commands();
/// The command or flag of that name; null when there is none.
[[nodiscard]] const CommandSpec* find_command(std::string_view name);
[[nodiscard]] const FlagSpec* find_flag(std::string_view name);

/// A parsed command line: the command (null for the program's own --help) and its flags by name
/// (a switch maps to "").
struct Invocation {
  const CommandSpec* command = nullptr;
  bool help = false;
  std::map<std::string, std::string, std::less<>> values;
  /// What main prints on stderr before running the command (a 0.2 flag spelling, say).
  std::vector<std::string> warnings;
  /// The flag a 0.2 `--window` was stored under ("" when not given).
  std::string window_spelled_old;

  [[nodiscard]] bool has(std::string_view flag) const { return values.find(flag) != values.end(); }
  /// The flag's text; "" when absent.
  [[nodiscard]] std::string_view text(std::string_view flag) const;
  /// The flag as an unsigned decimal; throws UsageError naming it when malformed.
  [[nodiscard]] std::optional<std::uint64_t> number(std::string_view flag) const;
  /// As number(), for a flag the command requires (the parser has checked it is present).
  [[nodiscard]] std::uint64_t required_number(std::string_view flag) const;
};

/// Parses argv[1..]: a command, then flags as `--name VALUE` or `--name=VALUE`. Rejects unknown
/// flags, flags the command does not take, flags given twice, missing values and missing required
/// flags, with a UsageError naming the flag as typed. `--help` or `-h` anywhere asks for help.
/// Never reads files; O(total argument length).
[[nodiscard]] Invocation parse_args(const std::vector<std::string_view>& args);

[[nodiscard]] std::string program_help();
[[nodiscard]] std::string command_help(const CommandSpec& command);
/// One line for an error: the synopsis and where to find more.
[[nodiscard]] std::string usage_hint(const CommandSpec* command);

/// `text` in double quotes, safe for a terminal: control characters and bytes that are not
/// UTF-8 escaped as \xHH, and at most 64 bytes shown (then the total length).
[[nodiscard]] std::string shown(std::string_view text);

/// Strict unsigned decimal (detail::parse_decimal); the UsageError names `flag` and the value.
[[nodiscard]] std::uint64_t parse_number(std::string_view flag, std::string_view text);
/// A seed as torch takes it: [-2^63, 2^64), negative values taken mod 2^64.
[[nodiscard]] std::uint64_t parse_seed(std::string_view flag, std::string_view text);
/// The index of `text` in `choices`; the UsageError lists them.
[[nodiscard]] std::size_t parse_choice(std::string_view flag, std::string_view text,
                                       const std::vector<std::string_view>& choices);

/// --shard-sizes: a comma-separated list when `spec` is only digits and commas, else a file with
/// one count per line (blank lines skipped, surrounding spaces ignored). Errors name the flag,
/// and for a file its name and line; a file is refused past limits::file_bytes, a line past
/// limits::line_bytes or at a NUL byte, and either form past limits::shards entries.
[[nodiscard]] std::vector<std::uint64_t> parse_shard_sizes(std::string_view flag, std::string_view spec);
/// --lengths: as parse_shard_sizes, for per-sample token counts (each below 2^32), at most limits::lengths.
[[nodiscard]] std::vector<std::uint32_t> parse_lengths(std::string_view flag, std::string_view spec);
/// The list form only (never touches the file system).
[[nodiscard]] std::vector<std::uint64_t> parse_shard_list(std::string_view flag, std::string_view list);

/// --sources: a comma-separated list of sample counts (at most limits::shards); errors name the flag and entry.
[[nodiscard]] std::vector<std::uint64_t> parse_count_list(std::string_view flag, std::string_view list);
/// A comma-separated list of weights, each digits with an optional fraction ("0.25", "3"); errors name the
/// flag, the entry and its text. `what` prefixes the entry number (for --schedule's entries).
[[nodiscard]] std::vector<double> parse_weights(std::string_view flag, std::string_view list,
                                                std::string_view what = "");

/// a * b, or UINT64_MAX when it overflows.
[[nodiscard]] constexpr std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) noexcept {
  return distsampler::detail::mul_fits(a, b) ? a * b : UINT64_MAX;
}

/// Runs the parsed command through its CommandSpec::run; returns the exit status (0 ok, 1 a promise
/// failed). Throws UsageError.
int run_command(const Invocation& invocation);

/// mesh.cpp: whether `command` takes --mesh and --data-dims (its --world and --rank then global).
[[nodiscard]] bool takes_mesh_flags(std::string_view command);
/// The invocation as data rank D of DW reads it: with --mesh, --world W becomes DW and --rank R its
/// data rank D, and --mesh/--data-dims are removed; unchanged without them. Throws UsageError naming
/// --mesh, --data-dims or --rank for a bad mesh, a mesh whose product is not W, or R >= W.
[[nodiscard]] Invocation with_data_world(const Invocation& invocation);
/// `distsampler mesh`: one line per global rank, `rank R: data D/DW` and its coordinates.
int run_mesh(const Invocation& invocation);
/// `distsampler index FILES...` (argv[1..], "index" first): its own parser, as it takes file operands; prints its
/// errors itself and returns the exit status (0 ok, 2 bad usage or a bad file). Never throws.
/// `distsampler index`: its own argument parser (files, not the flag table); its usage line and brief are
/// listed by `distsampler --help` with the table's commands.
inline constexpr std::string_view index_synopsis =
    "distsampler index [--format jsonl|tar|megatron|npy|raw] [--dtype T --eos ID] [--cache-dir DIR] "
    "[--verify|--strict] [--threads N] FILES...";
inline constexpr std::string_view index_brief = "build (or with --verify check) the cached index of each shard file";
int run_index(const std::vector<std::string_view>& args);

/// Writes `buffer` to standard output and clears it once it holds 64 KiB or more, or always with `force`;
/// UsageError "cannot write to standard output: ..." when the write fails (a full disk, a closed pipe).
void write_buffered(std::string& buffer, bool force);

/// "with --shuffle torch, --size at most N": the limit every command of the torch engine shares.
[[nodiscard]] std::string torch_limit_text();

}  // namespace cli

#endif  // DISTSAMPLER_EXAMPLES_CLI_HPP

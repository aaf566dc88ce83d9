// The `distsampler pack` command: packed sequences per rank and step, states, and the epoch's packing summary.
// SPDX-License-Identifier: MIT
#include <distsampler/files/megatron.hpp>
#include <distsampler/packing/packed_sequence_sampler.hpp>

#include <fmt/format.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli.hpp"
#include "samplers.hpp"

namespace cli {
namespace {

namespace ds = distsampler;

// --lengths: a list, a file of one count per line, or a Megatron .idx file (told by its magic or
// its name; read by the files layer, which also checks the pointers against the .bin beside it).
std::vector<std::uint32_t> pack_lengths(std::string_view spec) {
  const bool named_idx = spec.size() > 4 && spec.substr(spec.size() - 4) == ".idx";
  bool idx = named_idx;
  struct stat info {};
  // Only a regular file is probed for the magic: a pipe (`<(seq 1 5000)`) can be read once,
  // and a probe through stdio would take its first 4 KiB from the lengths read after it.
  if (!idx && !spec.empty() && spec.find_first_not_of("0123456789,") != std::string_view::npos &&
      spec.find('\0') == std::string_view::npos && ::stat(std::string(spec).c_str(), &info) == 0 &&
      S_ISREG(info.st_mode)) {
    std::FILE* f = std::fopen(std::string(spec).c_str(), "rb");
    if (f != nullptr) {
      char head[9] = {};
      idx = std::fread(head, 1, sizeof head, f) == sizeof head && std::memcmp(head, "MMIDIDX\0\0", 9) == 0;
      std::fclose(f);
    }
  }
  if (!idx) return parse_lengths("--lengths", spec);
  if (!named_idx) {
    throw UsageError(fmt::format("--lengths {} is a Megatron index (it starts with the .idx magic) but its name does not "
                                 "end in .idx, so its .bin cannot be found beside it (expected NAME.idx next to "
                                 "NAME.bin)",
                                 std::string(spec)));
  }
  const ds::ShardIndex index = library("--lengths", [&] { return ds::index_megatron(std::string(spec)); });
  std::uint64_t itemsize = 1;
  for (std::uint64_t code = 1; code <= 8; ++code) {
    if (ds::megatron_dtype(code).name == index.dtype) itemsize = ds::megatron_dtype(code).itemsize;
  }
  std::vector<std::uint32_t> out(index.records.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint32_t>(index.records[i].size / itemsize);
  return out;
}

std::uint64_t positive(const Invocation& in, std::string_view flag, std::uint64_t fallback) {
  const std::uint64_t v = in.number(flag).value_or(fallback);
  if (v == 0) throw UsageError(fmt::format("{} 0 is too small (expected at least 1)", flag));
  return v;
}

int run_pack(const Invocation& in) {
  const std::vector<std::uint32_t> lengths = pack_lengths(in.text("--lengths"));
  const std::uint64_t world_size = positive(in, "--world", 1);
  ds::PackOptions o;
  o.with_seq_len(in.required_number("--seq-len")).with_micro_batch_size(positive(in, "--micro-batch", 1));
  if (in.has("--accum") && in.has("--global-batch")) {
    // Python's PackedSequenceSampler refuses both too: the global batch decides the accumulation.
    throw UsageError("--accum and --global-batch given together (expected one of them: --global-batch G sets the "
                     "accumulation to G / (--micro-batch x --world))");
  }
  o.with_accumulation_steps(positive(in, "--accum", 1));
  if (in.has("--global-batch")) o.with_global_batch_size(positive(in, "--global-batch", 1));
  if (in.has("--mode")) o.with_mode(parse_choice("--mode", in.text("--mode"), {"concat", "best-fit"}) == 0
                                        ? ds::PackMode::concat
                                        : ds::PackMode::best_fit);
  if (in.has("--document-window")) o.with_window(positive(in, "--document-window", 1));
  if (in.has("--chunk")) o.with_window(o.window, positive(in, "--chunk", 1));
  if (in.has("--no-split")) o.with_split_long(false);
  if (in.has("--plan-limit")) o.with_plan_limit(positive(in, "--plan-limit", 1));
  if (in.has("--seed")) o.with_seed(parse_seed("--seed", in.text("--seed")));
  if (world_size > limits::ranks) {
    throw UsageError(fmt::format("--world {} is too large for pack (at most {}: every rank's micro-batches are printed)",
                                 world_size, limits::ranks));
  }
  std::optional<std::uint64_t> rank;
  if (in.has("--rank")) {
    rank = in.number("--rank");
    if (*rank >= world_size) {
      throw UsageError(fmt::format("--rank {} is out of range for --world {} (expected 0..{})", *rank, world_size,
                                   world_size - 1));
    }
  }
  const ds::World world(rank.value_or(0), world_size);
  constexpr std::string_view flags = "--lengths/--seq-len/--world/--micro-batch/--accum/--document-window";
  std::optional<ds::PackedSequenceSampler> made;
  std::uint64_t offset = 0;  // global number of the first step printed
  if (in.has("--resume")) {
    const ds::SamplerState state = parse_state("--resume", in.text("--resume"));
    const auto epoch = in.number("--epoch");
    if (epoch && *epoch != state.epoch) {
      throw UsageError(fmt::format("--epoch {} differs from epoch {} recorded in --resume (omit --epoch: a resumed "
                                   "run continues the saved epoch)",
                                   *epoch, state.epoch));
    }
    library("--resume", [&] { made.emplace(lengths.size(), lengths, world, o, state); });
    offset = made->start() / made->global_batch_size();
  } else {
    library(flags, [&] { made.emplace(lengths.size(), lengths, world, o); });
    const std::uint64_t epoch = in.number("--epoch").value_or(0);
    if (epoch != 0) made->set_epoch(epoch);
  }
  const ds::PackedSequenceSampler& s = *made;
  std::uint64_t steps = std::min(in.number("--steps").value_or(UINT64_MAX), s.num_steps());
  std::optional<std::uint64_t> state_after;
  if (in.has("--state-after")) {
    const std::uint64_t at = in.required_number("--state-after");
    if (at < offset || at - offset > s.num_steps()) {
      throw UsageError(fmt::format("--state-after {} is out of range (expected {}..{}, the steps of this run)", at,
                                   offset, offset + s.num_steps()));
    }
    state_after = at - offset;
    steps = std::min(steps, at - offset);
  }
  const std::uint64_t first = rank.value_or(0), last = rank ? first + 1 : world_size;
  // Every printed sequence is one "[...]": bounded as batches bounds its indices.
  const std::uint64_t printed =
      saturating_mul(saturating_mul(steps, saturating_mul(s.micro_batch_size(), s.accumulation_steps())), last - first);
  if (printed > limits::printed) {
    throw UsageError(fmt::format("{} steps of --micro-batch {} x --accum {} on {} would print {} sequences, more than "
                                 "the {} printed at once; pass a smaller --steps S{}",
                                 steps, s.micro_batch_size(), s.accumulation_steps(), rank ? "one rank" : "every rank",
                                 printed == UINT64_MAX ? "2^64-1 or more" : std::to_string(printed), limits::printed,
                                 rank ? "" : " or --rank R"));
  }
  std::string line;
  ds::PackWindow cache;
  for (std::uint64_t step = 0; step < steps; ++step) {
    for (std::uint64_t r = first; r < last; ++r) {
      for (std::uint64_t k = 0; k < s.micro_batches_in_step(step); ++k) {
        const ds::PackMicroBatch b = s.micro_batch_of(step, k, r, cache);
        fmt::format_to(std::back_inserter(line), "step {} rank {}:", offset + step, r);
        for (std::uint64_t i = 0; i < b.sequences(); ++i) {
          line += " [";
          for (std::uint64_t p = b.sequence_begin[i]; p < b.sequence_begin[i + 1]; ++p) {
            const ds::PackPiece& piece = b.pieces[p];
            fmt::format_to(std::back_inserter(line), "{}{}:{}+{}", p == b.sequence_begin[i] ? "" : " ", piece.document,
                           piece.offset, piece.length);
          }
          line += ']';
        }
        line += '\n';
        write_buffered(line, false);
      }
    }
  }
  if (state_after) {
    fmt::format_to(std::back_inserter(line), "state: {}\n", s.state(*state_after).to_text());
    write_buffered(line, true);
    return 0;
  }
  const ds::PackEpochStats& st = s.stats();
  fmt::format_to(std::back_inserter(line),
                 "summary: mode {}, {} steps x world_size {} x accumulation {} x micro-batch {}; epoch {}\n",
                 ds::to_string(s.mode()), st.steps, world_size, s.accumulation_steps(), s.micro_batch_size(),
                 s.epoch());
  fmt::format_to(std::back_inserter(line),
                 "sequences: {} in the epoch, {} read; {} documents, {} of 0 tokens skipped, {} split\n",
                 st.sequences, st.read_sequences, st.documents, st.skipped_documents, st.split_documents);
  fmt::format_to(std::back_inserter(line),
                 "tokens: {} in the epoch, {} read, {} dropped, {} padded; padding efficiency {:.4f}; {} empty "
                 "sequences\n",
                 st.tokens, st.read_tokens, st.dropped_tokens, st.read_sequences * st.seq_len - st.read_tokens,
                 st.padding_efficiency(), st.empty_sequences);
  write_buffered(line, true);
  return 0;
}

}  // namespace

std::vector<CommandSpec> pack_commands() {
  return {{"pack",
           "distsampler pack --lengths FILE|LIST|INDEX.idx --seq-len L --world W [--micro-batch M] [--accum K] [flags]",
           "print packed sequences per rank and step, equal per rank per step",
           "print each step's micro-batches of packed sequences, one line each: step S rank R: [d:o+n ...] [...],\n"
           "a bracket group per sequence (M of them), each piece document:offset+length, [] an empty sequence;\n"
           "of rank R only with --rank. --lengths takes a list, a file of one count per line or a Megatron .idx\n"
           "file. --state-after S stops before step S and prints the state; --resume continues it on any world,\n"
           "numbering steps globally. Then a summary: sequences, tokens dropped or padded, padding efficiency,\n"
           "empty sequences. Documents of 0 tokens are skipped and counted. --plan-limit N keeps at most N window\n"
           "records in the epoch plan (it changes no output).",
           {"--lengths", "--seq-len", "--world"},
           {"--micro-batch", "--accum", "--global-batch", "--mode", "--document-window", "--chunk", "--no-split",
            "--plan-limit", "--rank", "--steps", "--seed", "--epoch", "--state-after", "--resume"},
           fmt::format("limits: --lengths at most {} entries from a list or file (an .idx file: any); --world at "
                       "most {};\nat most {} sequences printed (see --steps, --rank); --micro-batch at most {}; a best-fit "
                       "window at most {} pieces.\n",
                       limits::lengths, limits::ranks, limits::printed, ds::PackOptions::max_micro_batch_size,
                       ds::PackOptions::max_window_pieces),
           run_pack}};
}

}  // namespace cli

// The `distsampler` commands' shared helpers: checked output, the order and rank flags, the cost limits' refusals.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_CLI_COMMON_HPP
#define DISTSAMPLER_CLI_COMMON_HPP

#include <distsampler/error.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "cli.hpp"
#include "samplers.hpp"

namespace cli {

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

[[noreturn]] inline void too_large(std::string_view what, std::string_view command, std::uint64_t limit,
                                   std::string_view why, std::string_view hint = {}) {
  throw UsageError(fmt::format("{} is too large for {} (at most {}: {}){}", what, command, limit, why, hint));
}

inline std::uint64_t at_least_one(const Invocation& in, std::string_view flag) {
  const std::uint64_t v = in.required_number(flag);
  if (v == 0) throw UsageError(fmt::format("{} 0 is too small (expected at least 1)", flag));
  return v;
}

inline std::optional<std::uint64_t> rank_flag(const Invocation& in, std::uint64_t world_size) {
  const auto rank = in.number("--rank");
  if (rank && *rank >= world_size) {
    std::string message = distsampler::detail::out_of_range_message("", "--rank", *rank, "--world", world_size);
    throw UsageError(message.substr(2));  // the library's phrasing without its "Who: "
  }
  return rank;
}

inline distsampler::Tail tail_flag(const Invocation& in, distsampler::Tail fallback) {
  if (!in.has("--tail")) return fallback;
  static const distsampler::Tail tails[] = {distsampler::Tail::pad, distsampler::Tail::drop, distsampler::Tail::uneven};
  return tails[parse_choice("--tail", in.text("--tail"), {"pad", "drop", "uneven"})];
}

inline OrderFlags order_flags(const Invocation& in, distsampler::Tail default_tail) {
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
                       ? distsampler::TorchGeneration::v1
                       : distsampler::TorchGeneration::v2_7;
  }
  if (o.engine == Engine::torch && o.size > limits::torch_size) {
    too_large(fmt::format("--size {} with --shuffle torch", o.size), in.command->name, limits::torch_size,
              "torch's permutation is kept whole, 4 bytes per index", "; --shuffle feistel needs O(1) memory");
  }
  return o;
}

// --shuffle torch over every rank builds torch's permutation once per rank.
inline void check_torch_work(const Invocation& in, const OrderFlags& o, std::string_view hint) {
  // o.size <= limits::torch_size here, so the sum cannot overflow.
  if (o.engine == Engine::torch &&
      saturating_mul(o.size + limits::torch_rank_cost, o.world_size) > limits::torch_work) {
    too_large(fmt::format("(--size {} + {}) x --world {} with --shuffle torch", o.size, limits::torch_rank_cost,
                          o.world_size),
              in.command->name, limits::torch_work, "torch's permutation is built and seeded once per rank", hint);
  }
}

inline BatchFlags batch_flags(const Invocation& in, std::uint64_t world_size) {
  BatchFlags b;
  b.micro_batch = at_least_one(in, "--micro-batch");
  b.accum = at_least_one(in, "--accum");
  if (!distsampler::detail::mul_fits(b.micro_batch, world_size) ||
      !distsampler::detail::mul_fits(b.micro_batch * world_size, b.accum)) {
    throw UsageError(
        fmt::format("--micro-batch {} x --world {} x --accum {} overflows 64 bits (expected a global "
                    "batch below 2^64)",
                    b.micro_batch, world_size, b.accum));
  }
  return b;
}

inline std::optional<distsampler::SamplerState> resume_flag(const Invocation& in) {
  if (!in.has("--resume")) return std::nullopt;
  distsampler::SamplerState state = parse_state("--resume", in.text("--resume"));
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
    for (std::uint64_t k = 0; k < s.micro_batches_in_step(step); ++k) {
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

}  // namespace cli

#endif  // DISTSAMPLER_CLI_COMMON_HPP

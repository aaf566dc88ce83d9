// distsampler sequence packing: the packing modes, the document-lengths view and PackOptions.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PACKING_OPTIONS_HPP
#define DISTSAMPLER_PACKING_OPTIONS_HPP

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../lengths.hpp"
#include "../options.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// How documents become sequences of at most `seq_len` tokens.
///  - concat (pre-training): the epoch's document order is one token stream cut into
///    sequences of exactly seq_len tokens; documents cross sequence boundaries; the
///    epoch's last partial global batch (and the last partial sequence) is not read.
///  - best_fit (fine-tuning): each window of documents is packed whole into sequences by
///    best-fit decreasing; every document is read exactly once per epoch; the last step
///    has flagged empty sequences where the sequence count is not a multiple of G.
enum class PackMode : std::uint8_t { concat = 0, best_fit = 1 };

/// "concat" or "best-fit".
[[nodiscard]] constexpr std::string_view to_string(PackMode mode) noexcept {
  switch (mode) {
    case PackMode::concat:
      return "concat";
    case PackMode::best_fit:
      return "best-fit";
  }
  return "invalid";
}

/// Parses "concat" or "best-fit" (also "best_fit"); throws config_error naming `who` otherwise.
[[nodiscard]] inline PackMode parse_pack_mode(std::string_view text, std::string_view who = "mode") {
  if (text == "concat") return PackMode::concat;
  if (text == "best-fit" || text == "best_fit") return PackMode::best_fit;
  detail::throw_config_error(std::string(who) + " \"" + std::string(text) + "\" is unknown (expected concat or best-fit)");
}

/// PackedSequenceSampler's options, the same on every rank, set by name:
///
///     PackOptions().with_seq_len(4096).with_micro_batch_size(4).with_accumulation_steps(2)
///                  .with_mode(PackMode::best_fit).with_seed(7)
///
/// `seq_len` L (1..8388607) and `micro_batch_size` M (sequences per micro-batch) are
/// required. The global batch G = M x world_size x accumulation_steps comes from
/// `accumulation_steps` or `global_batch_size` (BatchShapeOptions). Documents are grouped
/// into chunks of `chunk` consecutive documents; the epoch shuffles the chunks, and
/// floor(window / chunk) chunks of the shuffled chunk order form a window, whose documents
/// are shuffled again and (best_fit) packed together; chunk <= window. `split_long` (best_fit): a document longer than L becomes pieces of
/// L tokens and a remainder; false refuses such documents (config_error). `tail` is not
/// used (the mode decides) and must stay Tail::drop.
struct PackOptions : OrderOptions<PackOptions>, BatchShapeOptions<PackOptions> {
  /// The largest seq_len (it is recorded in 23 bits of the state's layout).
  static constexpr std::uint64_t max_seq_len = (std::uint64_t{1} << 23) - 1;
  /// The most sequences of one micro-batch (2^20): a micro-batch lists each of them, so a
  /// larger one would allocate before a sequence is read.
  static constexpr std::uint64_t max_micro_batch_size = std::uint64_t{1} << 20;
  /// The most pieces (documents and their seq_len cuts) of one best-fit window (2^22): a
  /// window is packed in memory, about 100 bytes a piece. plan_epoch refuses more.
  static constexpr std::uint64_t max_window_pieces = std::uint64_t{1} << 22;

  std::uint64_t seq_len = 0;                      ///< L, tokens per sequence (required)
  PackMode mode = PackMode::concat;               ///< concat or best_fit
  std::uint64_t window = std::uint64_t{1} << 16;  ///< D, documents shuffled (and packed) together
  std::uint64_t chunk = 1024;                     ///< C, consecutive documents that stay together
  bool split_long = true;                         ///< best_fit: split documents longer than L
  /// The most window records an epoch plan keeps (16 bytes each): above plan_limit
  /// windows, every k-th window is recorded (k the least that fits), and finding a step
  /// walks up to k - 1 windows. It changes no order.
  std::uint64_t plan_limit = std::uint64_t{1} << 16;

  constexpr PackOptions() noexcept : OrderOptions(Tail::drop) {}  // user-provided: not an aggregate
  constexpr PackOptions& with_seq_len(std::uint64_t value) noexcept {
    seq_len = value;
    return *this;
  }
  constexpr PackOptions& with_mode(PackMode value) noexcept {
    mode = value;
    return *this;
  }
  /// D documents per window, C per chunk (default min(1024, D)): windows of floor(D / C) chunks.
  constexpr PackOptions& with_window(std::uint64_t value) noexcept {
    return with_window(value, value < 1024 ? value : 1024);
  }
  constexpr PackOptions& with_window(std::uint64_t value, std::uint64_t chunk_size) noexcept {
    window = value;
    chunk = chunk_size;
    return *this;
  }
  constexpr PackOptions& with_split_long(bool value) noexcept {
    split_long = value;
    return *this;
  }
  constexpr PackOptions& with_plan_limit(std::uint64_t value) noexcept {
    plan_limit = value;
    return *this;
  }

  /// Throws config_error, prefixed by `who`, naming the first option out of its range
  /// (the batch shape is checked by resolve_batch_shape).
  void validate(std::string_view who) const {
    const std::string w(who);
    if (seq_len == 0 || seq_len > max_seq_len) {
      detail::throw_config_error(w + ": seq_len " + std::to_string(seq_len) +
                                 " is out of range (expected 1.." + std::to_string(max_seq_len) +
                                 " tokens per sequence; call with_seq_len)");
    }
    if (micro_batch_size > max_micro_batch_size) {
      detail::throw_config_error(w + ": micro_batch_size " + std::to_string(micro_batch_size) +
                                 " is out of range (expected 1.." + std::to_string(max_micro_batch_size) +
                                 " sequences per micro-batch)");
    }
    if (mode != PackMode::concat && mode != PackMode::best_fit) {
      detail::throw_config_error(w + ": mode " + std::to_string(static_cast<int>(mode)) +
                                 " is not a PackMode (expected concat or best-fit)");
    }
    if (chunk == 0 || chunk > UINT32_MAX) {
      detail::throw_config_error(w + ": chunk " + std::to_string(chunk) + " is out of range (expected 1..4294967295)");
    }
    if (window < chunk || window > UINT32_MAX) {
      detail::throw_config_error(w + ": window " + std::to_string(window) + " is out of range (expected chunk " +
                                 std::to_string(chunk) + "..4294967295)");
    }
    if (plan_limit == 0) {
      detail::throw_config_error(w + ": plan_limit 0 is out of range (expected at least 1 window record)");
    }
    if (tail != Tail::drop) {
      detail::throw_config_error(w + ": tail " + std::string(to_string(tail)) +
                                 " is not used (expected drop: the mode decides what the epoch's end reads)");
    }
  }

  friend constexpr bool operator==(const PackOptions& a, const PackOptions& b) noexcept {
    return a.same_order_options(b) && a.same_batch_shape(b) && a.seq_len == b.seq_len && a.mode == b.mode &&
           a.window == b.window && a.chunk == b.chunk && a.split_long == b.split_long &&
           a.plan_limit == b.plan_limit;
  }
  friend constexpr bool operator!=(const PackOptions& a, const PackOptions& b) noexcept { return !(a == b); }
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PACKING_OPTIONS_HPP

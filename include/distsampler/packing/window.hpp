// distsampler sequence packing: pieces, micro-batches of packed sequences, epoch totals and one planned window.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PACKING_WINDOW_HPP
#define DISTSAMPLER_PACKING_WINDOW_HPP

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// One piece of a packed sequence: tokens [offset, offset + length) of `document`. A
/// loader slices them out of the token array, numbers positions from `offset` (or from 0,
/// as the model wants) and masks attention at piece boundaries.
struct PackPiece {
  std::uint64_t document = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;

  friend constexpr bool operator==(const PackPiece& a, const PackPiece& b) noexcept {
    return a.document == b.document && a.offset == b.offset && a.length == b.length;
  }
  friend constexpr bool operator!=(const PackPiece& a, const PackPiece& b) noexcept { return !(a == b); }
};

/// One micro-batch a rank reads: micro_batch_size sequences, sequence i being pieces
/// [sequence_begin[i], sequence_begin[i + 1]). An empty sequence (no piece) is the marker
/// a rank gets in the epoch's last step of best-fit packing when the sequences do not fill
/// it: run it with zero loss weight, or skip its forward pass but join the collectives.
struct PackMicroBatch {
  std::vector<PackPiece> pieces;
  std::vector<std::uint64_t> sequence_begin{0};

  /// Sequences in the micro-batch (empty ones included).
  [[nodiscard]] std::uint64_t sequences() const noexcept { return sequence_begin.size() - 1; }
  /// Tokens of sequence i (< sequences()). O(pieces of it).
  [[nodiscard]] std::uint64_t tokens(std::uint64_t i) const noexcept {
    std::uint64_t t = 0;
    for (std::uint64_t p = sequence_begin[static_cast<std::size_t>(i)];
         p < sequence_begin[static_cast<std::size_t>(i + 1)]; ++p)
      t += pieces[static_cast<std::size_t>(p)].length;
    return t;
  }
  /// True when sequence i (< sequences()) is an empty marker.
  [[nodiscard]] bool empty(std::uint64_t i) const noexcept {
    return sequence_begin[static_cast<std::size_t>(i)] == sequence_begin[static_cast<std::size_t>(i + 1)];
  }
  /// Empty markers in the micro-batch.
  [[nodiscard]] std::uint64_t empty_sequences() const noexcept {
    std::uint64_t n = 0;
    for (std::uint64_t i = 0; i < sequences(); ++i) n += empty(i) ? 1u : 0u;
    return n;
  }
};

/// An epoch's totals, the same on every rank. `documents`, `tokens`, `sequences`,
/// `skipped_documents` and `split_documents` describe the whole epoch; `steps`,
/// `read_sequences`, `read_tokens`, `dropped_tokens` and `empty_sequences` count from the
/// sampler's start (a resumed state's) on.
struct PackEpochStats {
  std::uint64_t documents = 0;          ///< N
  std::uint64_t tokens = 0;             ///< all tokens of the epoch's documents
  std::uint64_t sequences = 0;          ///< the epoch's sequence order (concat: floor(tokens / L))
  std::uint64_t steps = 0;              ///< optimizer steps from the start
  std::uint64_t read_sequences = 0;     ///< real sequences read from the start
  std::uint64_t read_tokens = 0;        ///< tokens in them
  std::uint64_t dropped_tokens = 0;     ///< concat: tokens after the start not read (the tail)
  std::uint64_t empty_sequences = 0;    ///< best-fit: empty markers in the last step, over every rank
  std::uint64_t skipped_documents = 0;  ///< documents of 0 tokens (read by no sequence)
  std::uint64_t split_documents = 0;    ///< best-fit: documents longer than L, split into pieces
  std::uint64_t seq_len = 0;            ///< L

  /// read_tokens / (read_sequences x L): 1 when no sequence is padded.
  [[nodiscard]] double padding_efficiency() const noexcept {
    const double slots = static_cast<double>(read_sequences) * static_cast<double>(seq_len);
    return slots == 0 ? 1.0 : static_cast<double>(read_tokens) / slots;
  }
};

/// One planned window of an epoch: its documents in the window's shuffled order (concat)
/// or its packed sequences (best-fit). The sampler fills it on demand; pass the same
/// PackWindow to successive calls so consecutive reads of one window plan it once (and a
/// plan that records every k-th window walks on from it). Holds no reference to the
/// sampler; a window planned for another epoch or sampler is recognised and planned again. Not thread-safe: one PackWindow per thread.
class PackWindow {
 public:
  /// The window's reading position in its epoch (UINT64_MAX while empty).
  [[nodiscard]] std::uint64_t visit() const noexcept { return visit_; }
  /// Documents of the window (concat: in its order).
  [[nodiscard]] const std::vector<std::uint64_t>& documents() const noexcept { return documents_; }
  /// Sequences the window holds (best-fit).
  [[nodiscard]] std::uint64_t sequences() const noexcept { return piece_begin_.empty() ? 0 : piece_begin_.size() - 1; }

 private:
  friend class PackedSequenceSampler;
  std::uint64_t visit_ = UINT64_MAX;
  std::uint64_t identity_ = 0;  // the sampler's lengths, options and seed
  std::uint64_t epoch_ = 0;
  std::uint64_t begin_ = 0;     // the window's first stream position: token (concat) or sequence (best-fit)
  std::uint64_t end_ = 0;       // its end
  std::vector<std::uint64_t> documents_;  // concat: in window order
  std::vector<std::uint64_t> prefix_;     // concat: tokens of the window before documents_[i] (size + 1)
  std::vector<PackPiece> pieces_;         // best-fit: pieces, sequence after sequence
  std::vector<std::uint64_t> piece_begin_;  // best-fit: sequence i is pieces_[piece_begin_[i], piece_begin_[i + 1])
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PACKING_WINDOW_HPP

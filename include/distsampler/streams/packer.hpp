// distsampler streams family: on-the-fly packing of documents tokenized at read time into sequences of L tokens.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STREAMS_PACKER_HPP
#define DISTSAMPLER_STREAMS_PACKER_HPP

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../version.hpp"
#include "cursor.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// One packed sequence: exactly sequence_length tokens, as the document segments that fill it
/// in order (StreamEmit: document = shard record, tokens [begin, end) of it).
using PackedSequence = std::vector<StreamEmit>;

/// Fills micro-batches of `sequences` sequences of `sequence_length` tokens each from the
/// documents one consumer reads, whose token counts are known only once read (tokenized in
/// the worker): documents are concatenated and cut at sequence boundaries, a document longer
/// than what is left continuing in the next sequence, the next micro-batch, and across a
/// saved state (its rest is the cursor's carry: a resume re-reads that one document and
/// continues it at the saved token). A document of 0 tokens is dropped (the read-time filter).
/// Throws config_error when sequences or sequence_length is 0, sequence_length is above
/// max_sequence_length or their product above max_tokens.
/// Deterministic; strong guarantee as StreamCursor::next.
class StreamPacker {
 public:
  /// The longest sequence (as PackOptions::max_seq_len of the packing family: 2^23 - 1 tokens).
  static constexpr std::uint64_t max_sequence_length = (std::uint64_t{1} << 23) - 1;
  /// The most tokens of one micro-batch (2^27): a micro-batch is filled before it is yielded.
  static constexpr std::uint64_t max_tokens = std::uint64_t{1} << 27;

  StreamPacker(std::uint64_t sequences, std::uint64_t sequence_length)
      : sequences_(sequences), length_(sequence_length) {
    if (sequences_ == 0 || length_ == 0 || length_ > max_sequence_length || sequences_ > max_tokens / length_) {
      detail::throw_config_error("StreamPacker: sequences " + std::to_string(sequences_) + " x sequence_length " +
                                 std::to_string(length_) + " (expected both at least 1, sequence_length at most " +
                                 std::to_string(max_sequence_length) + " and their product at most " +
                                 std::to_string(max_tokens) + " tokens per micro-batch)");
    }
  }

  [[nodiscard]] std::uint64_t sequences() const noexcept { return sequences_; }
  [[nodiscard]] std::uint64_t sequence_length() const noexcept { return length_; }

  /// The next micro-batch of `cursor`: `read(StreamRead)` returns std::nullopt past a shard's
  /// end, else the document's token count. O(documents read + sequences).
  template <class Read>
  [[nodiscard]] std::vector<PackedSequence> next(StreamCursor& cursor, Read&& read) const {
    const std::vector<StreamEmit> emits = cursor.next(sequences_ * length_, std::forward<Read>(read));
    std::vector<PackedSequence> out(static_cast<std::size_t>(sequences_));
    std::uint64_t filled = 0;
    for (StreamEmit e : emits) {
      while (e.begin < e.end) {
        const std::uint64_t in_seq = filled % length_;
        const std::uint64_t n = std::min(e.end - e.begin, length_ - in_seq);
        StreamEmit piece = e;
        piece.end = e.begin + n;
        out[static_cast<std::size_t>(filled / length_)].push_back(piece);
        e.begin += n;
        filled += n;
      }
    }
    return out;
  }

 private:
  std::uint64_t sequences_, length_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STREAMS_PACKER_HPP

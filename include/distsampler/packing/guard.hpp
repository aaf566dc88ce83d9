// distsampler sequence packing's guard customisation points: its overlap sums (segment_sums) and its GuardShape.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PACKING_GUARD_HPP
#define DISTSAMPLER_PACKING_GUARD_HPP

#include <cstdint>
#include <vector>

#include "../overlap_check.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "window.hpp"
#include "packed_sequence_sampler.hpp"  // the sampler (which never includes this header)

DISTSAMPLER_NAMESPACE_BEGIN

/// What `process` (this process's true rank and world size) contributes to the overlap
/// check of a PackedSequenceSampler's epoch or resumed segment, over its N documents: a
/// document is *read* by the rank whose sequence holds its first token (the piece at
/// offset 0), and every document the segment leaves unstarted (0 tokens, started in a
/// sequence before start(), or in concat's dropped tail) is skipped by one rank (every
/// W-th of them, by rank). Summed over the ranks (MPI's guard_epoch, the c10d guard,
/// check_overlap), the verdict says every document is started exactly once. Found by
/// argument-dependent lookup (overlap_check.hpp).
/// O(N) per rank (the windows of its sequences and of the unread ones are planned), O(D) memory.
[[nodiscard]] inline ReadSums segment_sums(const PackedSequenceSampler& s, const World& process) {
  ReadSums sums;
  const std::uint64_t w = process.world_size, mine = process.rank;
  std::uint64_t unread = 0;
  auto skip = [&](std::uint64_t document) {
    if (unread++ % w == mine) sums.skip(document);
  };
  PackWindow cache;
  for (std::uint64_t step = 0; step < s.num_steps(); ++step) {
    for (std::uint64_t k = 0; k < s.micro_batches_in_step(step); ++k) {
      const PackMicroBatch b = s.micro_batch(step, k, cache);
      for (const PackPiece& p : b.pieces) {
        if (p.offset == 0) sums.read(p.document);
      }
    }
  }
  // The sequences this segment does not read: before its start, and past its last step.
  const BatchLayout& layout = s.layout();
  const std::uint64_t read_end = layout.read_end();
  std::vector<PackPiece> pieces;
  auto unread_sequences = [&](std::uint64_t begin, std::uint64_t end) {
    for (std::uint64_t j = begin; j < end; ++j) {
      pieces.clear();
      s.append_sequence(j, cache, pieces);
      for (const PackPiece& p : pieces) {
        if (p.offset == 0) skip(p.document);
      }
    }
  };
  unread_sequences(0, layout.start());
  unread_sequences(read_end, layout.dataset_size());
  // Documents with no sequence at all: 0 tokens, or (concat) started in the last partial sequence.
  s.for_each_unsequenced(cache, skip);
  return sums;
}

/// The guards' shape of a PackedSequenceSampler: its micro-batch size and accumulation
/// steps, and as layout the key of the lengths, seq_len, mode and window options
/// (layout_hash(), the state key's layout). O(1).
[[nodiscard]] inline GuardShape guard_shape(const PackedSequenceSampler& s) noexcept {
  GuardShape shape;
  shape.micro_batch_size = s.micro_batch_size();
  shape.accumulation_steps = s.accumulation_steps();
  shape.layout = s.layout_hash();
  return shape;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PACKING_GUARD_HPP

// distsampler packing, internal: one epoch of a PackedSequenceSampler (its orders, records, layout, statistics).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PACKING_DETAIL_EPOCH_HPP
#define DISTSAMPLER_PACKING_DETAIL_EPOCH_HPP

#include <cstdint>

#include "../../batch_layout.hpp"
#include "../../epoch_order.hpp"
#include "../../feistel.hpp"
#include "../../version.hpp"
#include "../window.hpp"
#include "plan.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

// One planned epoch of a PackedSequenceSampler.
struct PackEpoch {
  std::uint64_t epoch = 0;
  EpochOrder<FeistelPermutation> chunks;  // the chunk order
  EpochRecords records;                   // where the recorded windows start
  BatchLayout layout;
  PackEpochStats stats;
};

// The counts every packing mode's statistics share; the read and dropped tokens are the mode's own.
inline void set_epoch_counts(PackEpochStats& s, std::uint64_t documents, std::uint64_t tokens,
                             std::uint64_t sequences, std::uint64_t steps, std::uint64_t skipped,
                             std::uint64_t split, std::uint64_t seq_len, std::uint64_t start) {
  s.documents = documents;
  s.tokens = tokens;
  s.sequences = sequences;
  s.steps = steps;
  s.skipped_documents = skipped;
  s.split_documents = split;
  s.seq_len = seq_len;
  s.read_sequences = sequences - start;
}

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PACKING_DETAIL_EPOCH_HPP

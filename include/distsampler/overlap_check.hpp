// distsampler overlap check: O(1)-communication proof that ranks read every index of an epoch exactly once.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_OVERLAP_CHECK_HPP
#define DISTSAMPLER_OVERLAP_CHECK_HPP

#include <array>
#include <cstddef>
#include <iterator>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "batch_sampler.hpp"
#include "detail/mix.hpp"
#include "distributed_sampler.hpp"
#include "error.hpp"
#include "options.hpp"
#include "state.hpp"
#include "shards/streaming_shard_sampler.hpp"
#include "tokens/token_batch_sampler.hpp"
#include "version.hpp"
#include "world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Order-independent sums over the indices one rank (or thread) read in an epoch: the
/// count and two 64-bit hash sums of the indices read, the count of padding slots, and the
/// count and hash sums of the indices skipped (left unread on purpose). Equal multisets
/// give equal sums; a duplicated, missing or swapped index changes both hash sums unless
/// two independent 64-bit hashes collide at once (probability about 2^-64 per check).
///
/// The sums are plain words added modulo 2^64, so sums of ranks are summed word by word by
/// any transport (an allreduce, records in a store) and `merge` is associative and
/// commutative. O(1) per index, no allocation, noexcept, deterministic on every platform.
/// Not thread-safe per object: give each thread its own and merge them.
class ReadSums {
 public:
  /// Words: reads, read sum a, read sum b, padding, skips, skip sum a, skip sum b.
  static constexpr std::size_t word_count = 7;
  using Words = std::array<std::uint64_t, word_count>;

  constexpr ReadSums() noexcept = default;
  /// Sums received from a transport, in the order of words().
  explicit constexpr ReadSums(const Words& words) noexcept : words_(words) {}

  /// One index this rank read.
  constexpr void read(std::uint64_t index) noexcept { add(0, index); }
  /// A flagged padding slot (a duplicate by design: counted, not hashed).
  constexpr void padding() noexcept { ++words_[3]; }
  /// An index the segment leaves unread on purpose (consumed before a resume, or dropped
  /// by the tail). Exactly one rank feeds each such index, so the job's sums cover all N.
  constexpr void skip(std::uint64_t index) noexcept { add(4, index); }
  /// Adds `other`'s counts and sums to these (associative and commutative).
  constexpr void merge(const ReadSums& other) noexcept {
    for (std::size_t i = 0; i < word_count; ++i) words_[i] += other.words_[i];
  }

  [[nodiscard]] constexpr std::uint64_t reads() const noexcept { return words_[0]; }
  [[nodiscard]] constexpr std::uint64_t padding_slots() const noexcept { return words_[3]; }
  [[nodiscard]] constexpr std::uint64_t skips() const noexcept { return words_[4]; }
  [[nodiscard]] constexpr const Words& words() const noexcept { return words_; }

  /// The first hash: the SplitMix64 output of the index (detail::splitmix64).
  [[nodiscard]] static constexpr std::uint64_t hash_a(std::uint64_t index) noexcept {
    return detail::splitmix64(index);
  }
  /// The second hash: MurmurHash3's 64-bit finaliser (fmix64) of the index XOR a fixed
  /// key. A bijection whose shifts and multipliers differ from SplitMix64's, so it is not
  /// a function of hash_a: a multiset change that cancels in one sum does not cancel in
  /// the other.
  [[nodiscard]] static constexpr std::uint64_t hash_b(std::uint64_t index) noexcept {
    std::uint64_t x = index ^ 0x5851f42d4c957f2du;
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdu;
    x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53u;
    return x ^ (x >> 33);
  }

  friend constexpr bool operator==(const ReadSums& a, const ReadSums& b) noexcept {
    for (std::size_t i = 0; i < word_count; ++i) {
      if (a.words_[i] != b.words_[i]) return false;
    }
    return true;
  }
  friend constexpr bool operator!=(const ReadSums& a, const ReadSums& b) noexcept { return !(a == b); }

 private:
  constexpr void add(std::size_t at, std::uint64_t index) noexcept {
    ++words_[at];
    words_[at + 1] += hash_a(index);
    words_[at + 2] += hash_b(index);
  }

  Words words_ = {};
};

/// What the overlap check found for one epoch or resumed segment (the same on every rank).
struct GuardReport {
  bool ok = false;
  std::uint64_t reads = 0;           ///< non-padding reads over all ranks
  std::uint64_t expected_reads = 0;  ///< dataset_size minus what the segment leaves unread on purpose
  std::uint64_t padding = 0;         ///< flagged padding slots over all ranks
  std::string message;               ///< "ok: ..." or what is wrong
};

/// One rank's words for the job-wide sum: its ReadSums words, then the hash sums a and b
/// of its 1/W block of [0, N) (the expected sums, computed in parallel by every rank).
inline constexpr std::size_t overlap_word_count = ReadSums::word_count + 2;
using OverlapWords = std::array<std::uint64_t, overlap_word_count>;

/// The sums of `process.rank` reading its 1/W block of [0, dataset_size) once (blocks
/// differ in size by at most 1; together they are [0, N)). O(N / W), deterministic.
[[nodiscard]] inline ReadSums block_sums(std::uint64_t dataset_size, const World& process) noexcept {
  const std::uint64_t n = dataset_size, w = process.world_size, r = process.rank;
  const std::uint64_t begin = n / w * r + (r < n % w ? r : n % w);
  const std::uint64_t end = begin + n / w + (r < n % w ? 1 : 0);
  ReadSums block;
  for (std::uint64_t index = begin; index < end; ++index) block.read(index);
  return block;
}

/// This rank's contribution to the check: `sums`, then its block's expected sums.
/// O(N / W); the transport adds these words over all ranks and calls overlap_verdict.
[[nodiscard]] inline OverlapWords overlap_words(const ReadSums& sums, std::uint64_t dataset_size,
                                                const World& process) noexcept {
  const ReadSums block = block_sums(dataset_size, process);
  OverlapWords out = {};
  for (std::size_t i = 0; i < ReadSums::word_count; ++i) out[i] = sums.words()[i];
  out[ReadSums::word_count] = block.words()[1];
  out[ReadSums::word_count + 1] = block.words()[2];
  return out;
}

/// The verdict from the words of all `world_size` ranks added together. ok when the read
/// count is N minus the skips and the hash sums of reads plus skips equal those of [0, N);
/// otherwise the message says "overlap: k extra reads", "missing: k samples not read", or
/// "overlap and missing samples" when the count is right but the indices are not. Every
/// message ends with "(R reads of E expected, P padding)". Deterministic, O(1).
[[nodiscard]] inline GuardReport overlap_verdict(const OverlapWords& total, std::uint64_t dataset_size,
                                                 std::uint64_t world_size) {
  const std::uint64_t n = dataset_size, skips = total[4];
  GuardReport report;
  report.reads = total[0];
  report.padding = total[3];
  report.expected_reads = n - (skips < n ? skips : n);
  const bool sums = total[1] + total[5] == total[7] && total[2] + total[6] == total[8];
  report.ok = sums && report.reads == report.expected_reads;
  const std::string counts = std::to_string(report.reads) + " reads of " + std::to_string(report.expected_reads) +
                             " expected, " + std::to_string(report.padding) + " padding";
  if (report.ok) {
    report.message = "ok: disjoint and covering over " + std::to_string(world_size) + " ranks (" + counts + ")";
  } else if (report.reads > report.expected_reads) {
    report.message =
        "overlap: " + std::to_string(report.reads - report.expected_reads) + " extra reads (" + counts + ")";
  } else if (report.reads < report.expected_reads) {
    report.message =
        "missing: " + std::to_string(report.expected_reads - report.reads) + " samples not read (" + counts + ")";
  } else {
    report.message =
        "overlap and missing samples: the right number of reads but not of the right indices (" + counts + ")";
  }
  return report;
}

/// The check without a transport: `per_rank[r]` is rank r's ReadSums, all in one process
/// (a unit test of a custom sampler, ranks simulated by threads). Adds what the ranks'
/// overlap_words would add and returns overlap_verdict. Throws config_error when
/// per_rank is empty. O(N + W).
[[nodiscard]] inline GuardReport check_overlap(const std::vector<ReadSums>& per_rank, std::uint64_t dataset_size) {
  if (per_rank.empty()) {
    detail::throw_config_error("check_overlap: per_rank is empty (expected one ReadSums per rank, at least one)");
  }
  const auto w = static_cast<std::uint64_t>(per_rank.size());
  OverlapWords total = {};
  for (std::uint64_t r = 0; r < w; ++r) {
    const OverlapWords words = overlap_words(per_rank[static_cast<std::size_t>(r)], dataset_size, World(r, w));
    for (std::size_t i = 0; i < overlap_word_count; ++i) total[i] += words[i];
  }
  return overlap_verdict(total, dataset_size, w);
}

namespace detail {

// The sampler families a guard record names by number (index = code; 0: none of them).
inline constexpr std::string_view guard_families[] = {"", "distributed", "batch", "shard", "tokens", "pack"};

}  // namespace detail

/// The number a guard record carries for a sampler family name (the samplers' `family`
/// constants: "distributed" 1, "batch" 2, "shard" 3, "tokens" 4, "pack" 5); 0 for any other. O(1).
[[nodiscard]] constexpr std::uint64_t guard_family_code(std::string_view family) noexcept {
  for (std::uint64_t i = 1; i < std::size(detail::guard_families); ++i) {
    if (detail::guard_families[i] == family) return i;
  }
  return 0;
}

/// The family name of a guard record's number: the inverse of guard_family_code, and
/// "custom N" for a number no library sampler uses.
[[nodiscard]] inline std::string guard_family_name(std::uint64_t code) {
  if (code != 0 && code < std::size(detail::guard_families)) return std::string(detail::guard_families[code]);
  return "custom " + std::to_string(code);
}

namespace detail {

// Position p of the epoch's order that a segment leaves unread is skipped by the process
// whose rank is p mod W: each exactly once, and the work is spread over the ranks.
template <class F>
void each_skipped_by(std::uint64_t begin, std::uint64_t end, const World& process, F&& f) {
  if (begin >= end) return;
  const std::uint64_t w = process.world_size, r = process.rank;
  for (std::uint64_t p = begin + (r + w - begin % w) % w; p < end && p >= begin; p += w) f(p);
}

// A segment that reads positions [start, start + covered) of an epoch of n: this
// process's share of the positions before and after it.
template <class IndexAt>
void skip_outside(ReadSums& sums, std::uint64_t n, std::uint64_t start, std::uint64_t covered, const World& process,
                  const IndexAt& index_at) {
  auto skip = [&](std::uint64_t p) { sums.skip(index_at(p)); };
  each_skipped_by(0, start, process, skip);
  each_skipped_by(start + covered, n, process, skip);
}

}  // namespace detail

/// What `process` (this process's true rank and world size) contributes for the current
/// epoch or resumed segment of a DistributedSampler: every slot it reads (padding
/// flagged), and its share of the positions the segment leaves unread (consumed before
/// start(), and the remainder Tail::drop leaves). Summed over all ranks with
/// overlap_words, the verdict covers all N samples. O(size() + N / W); deterministic.
template <class P>
[[nodiscard]] ReadSums segment_sums(const DistributedSampler<P>& s, const World& process) {
  ReadSums sums;
  for (std::uint64_t i = 0; i < s.size(); ++i) {
    if (s.partition().is_padding(i)) {
      sums.padding();
    } else {
      sums.read(s.get(i));
    }
  }
  const std::uint64_t n = s.dataset_size(), start = s.start(), remaining = n - start;
  const std::uint64_t covered = s.options().tail == Tail::drop ? remaining - remaining % s.world_size() : remaining;
  detail::skip_outside(sums, n, start, covered, process, [&](std::uint64_t p) { return s.index_at_position(p); });
  return sums;
}

/// As above for a DistributedBatchSampler: every micro-batch of every step this rank
/// reads, and its share of the positions before start() and past the last full global
/// batch under Tail::drop. O(num_steps x G / W + N / W); deterministic.
template <class P>
[[nodiscard]] ReadSums segment_sums(const DistributedBatchSampler<P>& s, const World& process) {
  ReadSums sums;
  const BatchLayout& layout = s.layout();
  const std::uint64_t r = s.rank();
  for (std::uint64_t step = 0; step < layout.num_steps(); ++step) {
    for (std::uint64_t k = 0; k < layout.accumulation_steps(); ++k) {
      for (std::uint64_t e = 0; e < layout.length(step, k, r); ++e) {
        if (layout.is_padding(step, k, r, e)) {
          sums.padding();
        } else {
          sums.read(s.index_at_position(layout.position(step, k, r, e)));
        }
      }
    }
  }
  const std::uint64_t n = s.dataset_size(), start = s.start(), remaining = n - start;
  const std::uint64_t g = s.global_batch_size();
  const std::uint64_t covered = s.options().tail == Tail::drop ? remaining - remaining % g : remaining;
  detail::skip_outside(sums, n, start, covered, process, [&](std::uint64_t p) { return s.index_at_position(p); });
  return sums;
}

/// As above for a StreamingShardSampler: every worker stream of this rank (padding
/// flagged), and its share of the positions outside remaining_ranges() (consumed before
/// the segment) and of the segment's last positions Tail::drop leaves (remaining mod
/// consumers()). O(size() + N / W); deterministic.
[[nodiscard]] inline ReadSums segment_sums(const StreamingShardSampler& s, const World& process) {
  ReadSums sums;
  for (std::uint64_t w = 0; w < s.num_workers(); ++w) {
    s.for_each(w, [&](const ShardSample& x) {
      if (x.is_padding) {
        sums.padding();
      } else {
        sums.read(x.index);
      }
    });
  }
  const auto ranges = s.remaining_ranges();
  auto skip = [&](std::uint64_t p) { sums.skip(s.at_global(p).index); };
  std::uint64_t p = 0, remaining = 0;
  for (const PositionRange& r : ranges) {
    detail::each_skipped_by(p, r.begin, process, skip);
    p = r.end;
    remaining += r.size();
  }
  detail::each_skipped_by(p, s.dataset_size(), process, skip);
  if (s.options().tail == Tail::drop) {
    std::uint64_t dropped = remaining % s.consumers();  // the segment's last positions
    for (auto r = ranges.rbegin(); r != ranges.rend() && dropped != 0; ++r) {
      const std::uint64_t take = r->size() < dropped ? r->size() : dropped;
      detail::each_skipped_by(r->end - take, r->end, process, skip);
      dropped -= take;
    }
  }
  return sums;
}

/// As above for a TokenBatchSampler: every sample of this rank's micro-batches in every
/// step (empty micro-batches read nothing), and its share (every W-th, by rank) of the
/// samples the segment leaves unread: skipped under Oversize::skip, and consumed before
/// start(). O(N log M) (every window is planned); deterministic.
[[nodiscard]] inline ReadSums segment_sums(const TokenBatchSampler& s, const World& process) {
  ReadSums sums;
  const std::uint64_t w = process.world_size, mine = process.rank;
  std::uint64_t unread = 0;
  auto skip = [&](std::uint64_t index) {
    if (unread++ % w == mine) sums.skip(index);
  };
  s.for_each_window([&](const TokenWindow& window) {
    for (std::uint64_t step = window.first_step(); step < window.end_step(); ++step) {
      for (std::uint64_t k = 0; k < s.accumulation_steps(); ++k) {
        for (const std::uint64_t index : window.micro_batch(step, k, s.rank()).indices) sums.read(index);
      }
    }
    const WindowPlan& plan = window.plan();
    for (std::uint64_t i = plan.planned; i < plan.samples.size(); ++i) skip(window.index_of(i));
  });
  s.for_each_consumed(skip);
  return sums;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_OVERLAP_CHECK_HPP

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

#include "detail/mix.hpp"
#include "error.hpp"
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

/// The word a guard record carries for a sampler family name (StateKey::sampler): no
/// table, so a new family registers nowhere. A name of 1 to 12 characters from a-z, '_',
/// '-', '.', ' ' and '/' (every library family: "distributed", "batch", "shard",
/// "tokens", "mixture", "weighted") is packed into the word 5 bits per character, first
/// character highest, so guard_family_name gives it back; any other non-empty name is a
/// 64-bit hash of it with the top bit set; the empty name is 0. Equal names give equal
/// words; distinct packable names give distinct words. O(length), constexpr.
[[nodiscard]] constexpr std::uint64_t guard_family_code(std::string_view family) noexcept {
  constexpr std::string_view alphabet = "abcdefghijklmnopqrstuvwxyz_-. /";
  if (family.empty()) return 0;
  std::uint64_t packed = 0;
  bool fits = family.size() <= 12;
  for (std::size_t i = 0; fits && i < family.size(); ++i) {
    const std::size_t c = alphabet.find(family[i]);
    fits = c != std::string_view::npos;
    if (fits) packed |= static_cast<std::uint64_t>(c + 1) << (55 - 5 * i);
  }
  if (fits) return packed;
  std::uint64_t h = 0xcbf29ce484222325u;  // FNV-1a, then mixed
  for (const char c : family) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3u;
  return detail::mix64(h) | (std::uint64_t{1} << 63);
}

/// The family name of a guard record's word: the inverse of guard_family_code for a
/// packed name, and "custom N" for any other word (a hashed name, 0, or a number set by
/// hand in a GuardKey). O(1).
[[nodiscard]] inline std::string guard_family_name(std::uint64_t code) {
  constexpr std::string_view alphabet = "abcdefghijklmnopqrstuvwxyz_-. /";
  std::string name;
  bool ended = false, valid = code >> 60 == 0;
  for (unsigned i = 0; valid && i < 12; ++i) {
    const auto c = static_cast<std::size_t>((code >> (55 - 5 * i)) & 31u);
    if (c == 0) {
      ended = true;
    } else if (ended) {
      valid = false;  // a character after the end: not a packed name
    } else {
      name += alphabet[c - 1];
    }
  }
  if (valid && !name.empty()) return name;
  return "custom " + std::to_string(code);
}

/// What ranks must agree on about a sampler beyond its key() (family, dataset size, seed,
/// shuffle, tail, engine): the shape of each rank's reads, compared field by field by the
/// guards. A family whose reads have such a shape declares
/// `GuardShape guard_shape(const ItsSampler&)` beside its sampler, in the sampler's
/// namespace, found by argument-dependent lookup (as fmt finds a formatter); without one,
/// guard_shape_of gives zeros and the key's layout.
struct GuardShape {
  std::uint64_t micro_batch_size = 0;    ///< samples per micro-batch (0: not batched by count)
  std::uint64_t accumulation_steps = 0;  ///< micro-batches per rank per step (0: no steps)
  std::uint64_t num_workers = 0;         ///< loader workers per rank that read streams of their own (0: none)
  std::uint64_t layout = 0;              ///< hash of whatever else defines the reads (default: key().layout)
};

namespace detail {

template <class Sampler>
auto guard_shape_of(const Sampler& s, int) -> decltype(guard_shape(s)) {
  return guard_shape(s);
}
template <class Sampler>
GuardShape guard_shape_of(const Sampler& s, long) {
  GuardShape shape;
  shape.layout = s.key().layout;
  return shape;
}

}  // namespace detail

/// The GuardShape of `sampler`: its family's guard_shape, or zeros and key().layout when
/// the family declares none. O(what guard_shape costs).
template <class Sampler>
[[nodiscard]] GuardShape guard_shape_of(const Sampler& sampler) {
  return detail::guard_shape_of(sampler, 0);
}

namespace detail {

template <class Sampler>
auto guard_slots_of(const Sampler& s, int) -> decltype(static_cast<std::uint64_t>(guard_slots(s))) {
  return guard_slots(s);
}
template <class Sampler>
std::uint64_t guard_slots_of(const Sampler& s, long) {
  return s.dataset_size();
}

}  // namespace detail

/// What the overlap sums of `sampler` cover: the verdict proves that the ranks' reads and
/// skips are the slots 0..slots-1, each once. A family whose sums count something else
/// than the dataset's indices (a weighted sampler's draw positions, which repeat indices;
/// the pieces of a stream pass) declares `std::uint64_t guard_slots(const ItsSampler&)`
/// beside its sampler, found by argument-dependent lookup; otherwise dataset_size(). The
/// guards size their verdict by it. O(what guard_slots costs).
template <class Sampler>
[[nodiscard]] std::uint64_t guard_slots_of(const Sampler& sampler) {
  return detail::guard_slots_of(sampler, 0);
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

// The sums of a step sampler over a BatchLayout (batch_layout.hpp: num_steps, micro_batches,
// length, is_padding, position, read_end): every element rank `r` reads in every micro-batch
// of every step, as the slot `slot_at(position)` (padding flagged), then this process's share
// of the positions before `start` and from read_end() to `n` (skip_outside).
template <class Layout, class SlotAt>
[[nodiscard]] ReadSums layout_sums(const Layout& layout, std::uint64_t r, std::uint64_t n, std::uint64_t start,
                                   const World& process, const SlotAt& slot_at) {
  ReadSums sums;
  for (std::uint64_t step = 0; step < layout.num_steps(); ++step) {
    for (std::uint64_t k = 0; k < layout.micro_batches(step); ++k) {
      for (std::uint64_t e = 0; e < layout.length(step, k, r); ++e) {
        if (layout.is_padding(step, k, r, e)) {
          sums.padding();
        } else {
          sums.read(slot_at(layout.position(step, k, r, e)));
        }
      }
    }
  }
  skip_outside(sums, n, start, layout.read_end() - start, process, slot_at);
  return sums;
}

}  // namespace detail

// Each sampler family declares beside itself (found by argument-dependent lookup):
//   ReadSums segment_sums(const Sampler& s, const World& process);
// what `process` contributes for s's current epoch or resumed segment: every slot it reads
// (padding flagged) and its share of the positions the segment leaves unread (each such
// index fed by exactly one rank, e.g. with detail::skip_outside), so the ranks' sums cover
// all N (or all guard_slots_of(s) slots). The guards (mpi.hpp, torch_guard.hpp) call it
// for any sampler; each family defines it in its <family>/guard.hpp, which includes the
// sampler (never the other way round).

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_OVERLAP_CHECK_HPP

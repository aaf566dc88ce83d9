// distsampler verify: checks that ranks' index lists are disjoint, covering and balanced, for users' unit tests.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_VERIFY_HPP
#define DISTSAMPLER_VERIFY_HPP

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "error.hpp"
#include "partition.hpp"
#include "version.hpp"
#include "world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// What `check_partition` found. `ok()` is true when every promise of the tail policy
/// holds; otherwise `failures` says which, in sentences, and the counters say how much.
///
/// Promises checked, for dataset size N and W ranks:
///  - in range: every index < N;
///  - disjoint: no index read twice, padding slots excepted;
///  - covering: no index missed (Tail::drop: exactly N mod W are missed);
///  - balanced: equal counts on every rank (Tail::uneven: counts differ by at most 1);
///  - padding: Tail::pad flags exactly (W - N mod W) mod W slots, other tails none.
struct PartitionReport {
  std::uint64_t dataset_size = 0;
  std::uint64_t world_size = 0;
  Tail tail = Tail::pad;
  std::vector<std::uint64_t> counts;              ///< slots per rank, padding included
  std::vector<std::uint64_t> padding;             ///< padding slots per rank
  std::uint64_t duplicates = 0;                   ///< extra reads of an index, padding excepted
  std::uint64_t missing = 0;                      ///< indices in [0, N) never read
  std::uint64_t out_of_range = 0;                 ///< indices >= N
  std::vector<std::uint64_t> duplicate_examples;  ///< up to 8 indices read twice
  std::vector<std::uint64_t> missing_examples;    ///< up to 8 indices never read
  std::vector<std::string> failures;              ///< one sentence per broken promise

  [[nodiscard]] bool ok() const noexcept { return failures.empty(); }
  [[nodiscard]] bool disjoint() const noexcept { return duplicates == 0; }
  [[nodiscard]] std::uint64_t min_count() const noexcept {
    return counts.empty() ? 0 : *std::min_element(counts.begin(), counts.end());
  }
  [[nodiscard]] std::uint64_t max_count() const noexcept {
    return counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  }
  [[nodiscard]] std::uint64_t padding_total() const noexcept {
    std::uint64_t total = 0;
    for (auto p : padding) total += p;
    return total;
  }

  /// One line: "ok: ..." or "FAILED: <failures joined by '; '>".
  [[nodiscard]] std::string summary() const {
    std::string head = "N=" + std::to_string(dataset_size) + " W=" + std::to_string(world_size) +
                       " tail=" + std::string(to_string(tail)) + " counts " + std::to_string(min_count()) + ".." +
                       std::to_string(max_count()) + " padding " + std::to_string(padding_total()) + " duplicates " +
                       std::to_string(duplicates) + " missing " + std::to_string(missing);
    if (ok()) return "ok: " + head;
    std::string out = "FAILED: " + head + ": ";
    for (std::size_t i = 0; i < failures.size(); ++i) out += (i ? "; " : "") + failures[i];
    return out;
  }
};

/// Accumulates the reads of every rank and produces a PartitionReport. Memory: one
/// byte per dataset index; time O(N + total reads). Use `check_partition` or
/// `check_samplers` unless the reads arrive piecewise (e.g. from files).
class PartitionChecker {
 public:
  /// Throws config_error when world_size is 0 or the tail is not a Tail.
  PartitionChecker(std::uint64_t dataset_size, std::uint64_t world_size, Tail tail)
      : seen_(checked_size(dataset_size)) {
    if (world_size == 0) detail::throw_config_error("PartitionChecker: world_size is 0 (expected at least 1)");
    (void)StridedPartition(dataset_size, 0, world_size, tail);  // validates the tail
    report_.dataset_size = dataset_size;
    report_.world_size = world_size;
    report_.tail = tail;
    report_.counts.assign(static_cast<std::size_t>(world_size), 0);
    report_.padding.assign(static_cast<std::size_t>(world_size), 0);
  }

  /// Records that `rank` read `index`; `is_padding` when the sampler flagged the slot.
  /// Throws config_error when rank >= world_size.
  void add(std::uint64_t rank, std::uint64_t index, bool is_padding = false) {
    if (rank >= report_.world_size) {
      detail::throw_out_of_range("PartitionChecker", "rank", rank, "world_size", report_.world_size);
    }
    const auto r = static_cast<std::size_t>(rank);
    ++report_.counts[r];
    if (index >= report_.dataset_size) {
      ++report_.out_of_range;
      return;
    }
    if (is_padding) {
      ++report_.padding[r];
      return;
    }
    auto& seen = seen_[static_cast<std::size_t>(index)];
    if (seen != 0) {
      ++report_.duplicates;
      if (report_.duplicate_examples.size() < 8) report_.duplicate_examples.push_back(index);
    }
    if (seen != 0xff) ++seen;
  }

  /// The report; the checker may not be used afterwards.
  [[nodiscard]] PartitionReport finish() {
    auto& r = report_;
    for (std::size_t i = 0; i < seen_.size(); ++i) {
      if (seen_[i] == 0) {
        ++r.missing;
        if (r.missing_examples.size() < 8) r.missing_examples.push_back(i);
      }
    }
    const std::uint64_t n = r.dataset_size, w = r.world_size;
    if (r.out_of_range != 0)
      r.failures.push_back(std::to_string(r.out_of_range) + " indices are >= dataset_size " + std::to_string(n));
    if (r.duplicates != 0) {
      r.failures.push_back("not disjoint: " + std::to_string(r.duplicates) + " extra reads (e.g. index " +
                           std::to_string(r.duplicate_examples.front()) + ")");
    }
    const std::uint64_t allowed_missing = r.tail == Tail::drop ? n % w : 0;
    if (r.missing != allowed_missing) {
      std::string what = "not covering: " + std::to_string(r.missing) + " indices never read (expected " +
                         std::to_string(allowed_missing) + ")";
      if (!r.missing_examples.empty()) what += ", e.g. index " + std::to_string(r.missing_examples.front());
      r.failures.push_back(what);
    }
    const std::uint64_t spread = r.max_count() - r.min_count();
    const std::uint64_t allowed_spread = r.tail == Tail::uneven ? 1 : 0;
    if (spread > allowed_spread) {
      r.failures.push_back("not balanced: rank counts range " + std::to_string(r.min_count()) + ".." +
                           std::to_string(r.max_count()) + " (expected a spread of at most " +
                           std::to_string(allowed_spread) + ")");
    }
    const std::uint64_t expected_padding = r.tail == Tail::pad && n % w != 0 ? w - n % w : 0;
    if (r.padding_total() != expected_padding) {
      r.failures.push_back("padding: " + std::to_string(r.padding_total()) + " slots flagged (expected " +
                           std::to_string(expected_padding) + ")");
    }
    return std::move(report_);
  }

 private:
  static std::size_t checked_size(std::uint64_t n) {
    if (n > SIZE_MAX / 2) {
      detail::throw_config_error("PartitionChecker: dataset_size " + std::to_string(n) +
                                 " is too large to check in memory (one byte per index)");
    }
    return static_cast<std::size_t>(n);
  }

  std::vector<unsigned char> seen_;
  PartitionReport report_;
};

/// Checks explicit per-rank index lists (`ranks[r]` = what rank r read), with optional
/// per-rank padding flags (`padding[r][i]` for `ranks[r][i]`; empty = none flagged).
///
/// In a Catch2 test:
///     auto report = distsampler::check_partition(n, ranks, distsampler::Tail::uneven);
///     INFO(report.summary());
///     CHECK(report.ok());
///
/// Throws config_error when `ranks` is empty or padding flags do not match the lists.
[[nodiscard]] inline PartitionReport check_partition(std::uint64_t dataset_size,
                                                     const std::vector<std::vector<std::uint64_t>>& ranks, Tail tail,
                                                     const std::vector<std::vector<bool>>& padding = {}) {
  if (ranks.empty()) detail::throw_config_error("check_partition: no ranks given (expected at least one list)");
  if (!padding.empty() && padding.size() != ranks.size()) {
    detail::throw_config_error("check_partition: padding has " + std::to_string(padding.size()) + " lists for " +
                               std::to_string(ranks.size()) + " ranks (expected one per rank, or none)");
  }
  PartitionChecker checker(dataset_size, ranks.size(), tail);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!padding.empty() && padding[r].size() != ranks[r].size()) {
      detail::throw_config_error("check_partition: rank " + std::to_string(r) + " has " +
                                 std::to_string(ranks[r].size()) + " indices but " + std::to_string(padding[r].size()) +
                                 " padding flags (expected equal)");
    }
    for (std::size_t i = 0; i < ranks[r].size(); ++i) {
      checker.add(r, ranks[r][i], !padding.empty() && padding[r][i]);
    }
  }
  return checker.finish();
}

/// Builds one sampler per rank with `make(World{rank, world_size})` and checks them
/// together. A sampler needs `size()`, `operator[](i)` and `is_padding(i)`, as the index
/// sampler (distributed family) has:
///     auto report = distsampler::check_samplers(n, 8, distsampler::Tail::pad, [&](distsampler::World w) {
///       Sampler s(n, w, options);  // the distributed family's
///       s.set_epoch(3);
///       return s;
///     });
template <class MakeSampler>
[[nodiscard]] PartitionReport check_samplers(std::uint64_t dataset_size, std::uint64_t world_size, Tail tail,
                                             MakeSampler&& make) {
  PartitionChecker checker(dataset_size, world_size, tail);
  for (std::uint64_t r = 0; r < world_size; ++r) {
    const auto sampler = make(World(r, world_size));
    for (std::uint64_t i = 0; i < sampler.size(); ++i) checker.add(r, sampler[i], sampler.is_padding(i));
  }
  return checker.finish();
}

/// Builds one sampler with a consumer interface (num_workers(), consumers(), consumer(w),
/// for_each(w, f) over samples with `index` and `is_padding`, as the shard family's) per
/// rank with `make(World{rank, world_size})` and checks every consumer (rank x worker) of
/// its segment together. The report's "ranks" are the consumers, numbered
/// worker * world_size + rank, so "balanced" means every worker stream of every rank has
/// the same count (Tail::uneven: within one), which is what keeps batch counts equal:
///     auto report = distsampler::check_shard_samplers(4, [&](distsampler::World w) {
///       Sampler s(shard_sizes, w, options.with_num_workers(2));  // the shard family's
///       s.set_epoch(3);
///       return s;
///     });
/// A `make` that ignores its World (every rank building rank 0) fails the report with
/// duplicates and missing samples. Throws config_error when world_size is 0 or a sampler's
/// world size, worker count, dataset size or tail differs from the first one's.
/// Memory: one byte per sample. Time: O(N + shards).
template <class MakeSampler>
[[nodiscard]] PartitionReport check_shard_samplers(std::uint64_t world_size, MakeSampler&& make) {
  const std::string who = "check_shard_samplers: ";
  if (world_size == 0) detail::throw_config_error(who + "world_size is 0 (expected at least 1)");
  using Sampler = decltype(make(World(0, world_size)));
  std::vector<Sampler> ranks;
  ranks.reserve(static_cast<std::size_t>(world_size));
  for (std::uint64_t r = 0; r < world_size; ++r) {
    ranks.push_back(make(World(r, world_size)));
    const Sampler& s = ranks.back();
    const Sampler& first = ranks.front();
    const auto differs = [&](const char* what, std::uint64_t got, std::uint64_t want) {
      detail::throw_config_error(who + "the sampler made for rank " + std::to_string(r) + " has " + what + " " +
                                 std::to_string(got) + " (expected " + std::to_string(want) + ")");
    };
    if (s.world().world_size != world_size) differs("world_size", s.world().world_size, world_size);
    if (s.num_workers() != first.num_workers()) differs("num_workers", s.num_workers(), first.num_workers());
    if (s.dataset_size() != first.dataset_size()) differs("dataset_size", s.dataset_size(), first.dataset_size());
    if (s.options().tail != first.options().tail) {
      detail::throw_config_error(who + "the sampler made for rank " + std::to_string(r) + " has tail " +
                                 std::string(to_string(s.options().tail)) + " (expected " +
                                 std::string(to_string(first.options().tail)) + ")");
    }
  }
  const Sampler& first = ranks.front();
  PartitionChecker checker(first.dataset_size(), first.consumers(), first.options().tail);
  for (const Sampler& s : ranks) {
    for (std::uint64_t w = 0; w < s.num_workers(); ++w) {
      const std::uint64_t consumer = s.consumer(w);
      s.for_each(w, [&](const auto& x) { checker.add(consumer, x.index, x.is_padding); });
    }
  }
  return checker.finish();
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_VERIFY_HPP

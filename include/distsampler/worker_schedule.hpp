// distsampler WorkerSchedule: a rank's micro-batches dealt round-robin to its loader workers, as torch does.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_WORKER_SCHEDULE_HPP
#define DISTSAMPLER_WORKER_SCHEDULE_HPP

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "detail/checked.hpp"
#include "error.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Names one micro-batch of a rank: `micro_batch` (0..accumulation_steps-1) of `step`.
struct MicroBatchId {
  std::uint64_t step = 0;
  std::uint64_t micro_batch = 0;
  friend constexpr bool operator==(const MicroBatchId& a, const MicroBatchId& b) noexcept {
    return a.step == b.step && a.micro_batch == b.micro_batch;
  }
  friend constexpr bool operator!=(const MicroBatchId& a, const MicroBatchId& b) noexcept { return !(a == b); }
};

/// A rank's num_steps x accumulation_steps micro-batches, less `lead` of step 0 (a resumed
/// step's rounds read before the resume point; see BatchLayout::lead), numbered j from 0
/// in step-major order: number j is micro-batch (j + lead) mod accumulation_steps - lead
/// (0 after step 0) of step (j + lead) / accumulation_steps. They are dealt to
/// `num_workers` workers
/// round-robin: worker w loads numbers w, w + num_workers, w + 2 * num_workers, ...
/// (torch DataLoader's dispatch order). Every rank with the same step count has the same
/// count per worker slot, and the counts of two workers differ by at most 1.
///
/// Pure integer math: O(1) per query, O(count) for list(). A value type; deterministic.
class WorkerSchedule {
 public:
  /// Throws config_error, prefixed by `who`, when num_workers or accumulation_steps is 0,
  /// num_steps x accumulation_steps overflows 64 bits, or lead >= accumulation_steps. `who`
  /// prefixes every error message and must view static storage (a string literal).
  WorkerSchedule(std::uint64_t num_steps, std::uint64_t accumulation_steps, std::uint64_t num_workers,
                 std::string_view who = "WorkerSchedule", std::uint64_t lead = 0)
      : k_(accumulation_steps), workers_(num_workers), lead_(lead), who_(who) {
    if (k_ == 0) detail::throw_config_error(std::string(who) + ": accumulation_steps is 0 (expected at least 1)");
    if (workers_ == 0) detail::throw_config_error(std::string(who) + ": num_workers is 0 (expected at least 1)");
    const std::uint64_t whole = detail::checked_mul(who, "num_steps", num_steps, "accumulation_steps", k_);
    if (lead_ >= k_) {
      detail::throw_config_error(std::string(who) + ": lead " + std::to_string(lead_) +
                                 " is out of range for accumulation_steps " + std::to_string(k_) +
                                 " (expected 0.." + std::to_string(k_ - 1) + ")");
    }
    total_ = num_steps == 0 ? 0 : whole - lead_;
  }

  /// Micro-batch number j (< total(); unchecked) as a step and its micro-batch.
  [[nodiscard]] MicroBatchId id(std::uint64_t j) const noexcept {
    const std::uint64_t at = j + lead_, step = at / k_;
    return MicroBatchId{step, at % k_ - (step == 0 ? lead_ : 0)};
  }

  /// Micro-batches of the rank: num_steps x accumulation_steps - lead (0 without steps).
  [[nodiscard]] std::uint64_t total() const noexcept { return total_; }
  [[nodiscard]] std::uint64_t num_workers() const noexcept { return workers_; }

  /// How many micro-batches `worker` loads. Throws config_error when worker >= num_workers.
  [[nodiscard]] std::uint64_t count(std::uint64_t worker) const {
    check_worker(worker);
    return worker < total_ ? (total_ - worker - 1) / workers_ + 1 : 0;
  }

  /// The i-th micro-batch `worker` loads: number worker + i * num_workers. Throws
  /// config_error for a bad worker, std::out_of_range when i >= count(worker).
  [[nodiscard]] MicroBatchId at(std::uint64_t worker, std::uint64_t i) const {
    const std::uint64_t n = count(worker);
    if (i >= n) {
      throw std::out_of_range(
          detail::out_of_range_message(who_, "i", i, "worker " + std::to_string(worker) + "'s count", n));
    }
    return id(worker + i * workers_);
  }

  /// Every micro-batch `worker` loads, in order. Throws as count(). O(count).
  [[nodiscard]] std::vector<MicroBatchId> list(std::uint64_t worker) const {
    const std::uint64_t n = count(worker);
    std::vector<MicroBatchId> out;
    out.reserve(static_cast<std::size_t>(n));
    for (std::uint64_t i = 0; i < n; ++i) out.push_back(id(worker + i * workers_));
    return out;
  }

 private:
  void check_worker(std::uint64_t worker) const {
    if (worker >= workers_) detail::throw_out_of_range(who_, "worker", worker, "num_workers", workers_);
  }
  std::uint64_t k_ = 1;
  std::uint64_t workers_ = 1;
  std::uint64_t lead_ = 0;
  std::uint64_t total_ = 0;
  std::string_view who_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_WORKER_SCHEDULE_HPP

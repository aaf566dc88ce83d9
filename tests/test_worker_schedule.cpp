// distsampler tests: WorkerSchedule, a rank's micro-batches dealt round-robin to its loader workers.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <distsampler/worker_schedule.hpp>

using distsampler::MicroBatchId;
using distsampler::WorkerSchedule;

TEST_CASE("WorkerSchedule deals step-major micro-batch numbers round-robin", "[workers][batch]") {
  // 3 steps x 2 micro-batches = numbers 0..5, over 4 workers.
  const WorkerSchedule s(3, 2, 4);
  CHECK(s.total() == 6);
  CHECK(s.num_workers() == 4);
  CHECK(s.count(0) == 2);
  CHECK(s.count(1) == 2);
  CHECK(s.count(2) == 1);
  CHECK(s.count(3) == 1);
  CHECK(s.list(0) == std::vector<MicroBatchId>{{0, 0}, {2, 0}});
  CHECK(s.list(1) == std::vector<MicroBatchId>{{0, 1}, {2, 1}});
  CHECK(s.list(2) == std::vector<MicroBatchId>{{1, 0}});
  CHECK(s.list(3) == std::vector<MicroBatchId>{{1, 1}});
  CHECK(s.at(1, 1) == MicroBatchId{2, 1});
  CHECK(s.at(3, 0) == MicroBatchId{1, 1});
  CHECK(WorkerSchedule(0, 3, 2).count(1) == 0);
  CHECK(WorkerSchedule(5, 1, 1).list(0).size() == 5);
}

TEST_CASE("WorkerSchedule: every micro-batch once, worker counts differ by at most 1", "[workers][batch][property]") {
  for (std::uint64_t steps = 0; steps <= 7; ++steps) {
    for (std::uint64_t k = 1; k <= 3; ++k) {
      for (std::uint64_t workers = 1; workers <= 5; ++workers) {
        const WorkerSchedule s(steps, k, workers);
        std::vector<int> seen(steps * k, 0);
        std::uint64_t lo = UINT64_MAX, hi = 0;
        for (std::uint64_t w = 0; w < workers; ++w) {
          const auto list = s.list(w);
          REQUIRE(list.size() == s.count(w));
          lo = std::min<std::uint64_t>(lo, list.size());
          hi = std::max<std::uint64_t>(hi, list.size());
          for (std::uint64_t i = 0; i < list.size(); ++i) {
            REQUIRE(list[i].micro_batch < k);
            CHECK(list[i] == s.at(w, i));
            ++seen.at(list[i].step * k + list[i].micro_batch);
          }
        }
        CAPTURE(steps, k, workers);
        CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
        CHECK(hi - lo <= 1);
      }
    }
  }
}

TEST_CASE("WorkerSchedule near 2^64 micro-batches", "[workers][batch][large]") {
  const WorkerSchedule s(UINT64_MAX / 2, 2, 3);  // 2^64 - 2 micro-batches
  CHECK(s.total() == 18446744073709551614u);
  CHECK(s.count(0) == 6148914691236517205u);
  CHECK(s.count(2) == 6148914691236517204u);
  CHECK(s.at(0, 6148914691236517204u) == MicroBatchId{9223372036854775806u, 0});
}

TEST_CASE("WorkerSchedule errors name the parameter", "[workers][batch][errors]") {
  CHECK_THROWS_AS(WorkerSchedule(1, 1, 0), distsampler::config_error);
  CHECK_THROWS_WITH(WorkerSchedule(1, 1, 0), "WorkerSchedule: num_workers is 0 (expected at least 1)");
  CHECK_THROWS_WITH(WorkerSchedule(1, 0, 1), "WorkerSchedule: accumulation_steps is 0 (expected at least 1)");
  CHECK_THROWS_WITH(WorkerSchedule(2, (std::uint64_t{1} << 63) + 1, 1, "Who"),
                    "Who: num_steps 2 x accumulation_steps 9223372036854775809 overflows 64 bits");
  const WorkerSchedule s(3, 2, 4);
  CHECK_THROWS_AS(s.count(4), distsampler::config_error);
  CHECK_THROWS_WITH(s.count(4), "WorkerSchedule: worker 4 is out of range for num_workers 4 (expected 0..3)");
  CHECK_THROWS_WITH(s.list(9), "WorkerSchedule: worker 9 is out of range for num_workers 4 (expected 0..3)");
  CHECK_THROWS_AS(s.at(3, 1), std::out_of_range);
  CHECK_THROWS_WITH(s.at(3, 1), "WorkerSchedule: i 1 is out of range for worker 3's count 1 (expected 0..0)");
  CHECK_THROWS_WITH(
      WorkerSchedule(0, 1, 2).at(0, 0),
      "WorkerSchedule: i 0 is out of range for worker 0's count 0 (expected none: worker 0's count is 0)");
}

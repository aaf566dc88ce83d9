// distsampler tests: runs docs/SHARDS.md's tour of the shard sampler's calls (a fragment), then checks what it read.
// SPDX-License-Identifier: MIT
#include <distsampler/distsampler.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

std::uint64_t records_read = 0, shards_fetched = 0;

void read(std::uint64_t shard, std::uint64_t offset) {
  static_cast<void>(shard);
  static_cast<void>(offset);
  ++records_read;
}
void fetch(std::uint64_t shard) {
  static_cast<void>(shard);
  ++shards_fetched;
}

}  // namespace

int main() {
  const std::vector<std::uint64_t> shard_sizes{120, 0, 35, 300, 7, 64, 90};
  const std::uint64_t num_workers = 2, worker = 1, epoch = 3, i = 0, batch = 16;
  std::vector<distsampler::ShardSample> buffer(batch);
  distsampler::ShardSample* out = buffer.data();
#include "shards_calls.inc"
  // RANK=0 WORLD_SIZE=1: the stream and the walk each read the worker's whole stream once.
  const std::uint64_t expected = 2 * s.worker_size(worker);
  if (records_read != expected || shards_fetched == 0 || plan.empty() || reads.empty()) {
    std::printf("FAILED: %llu records read (expected %llu), %llu shards fetched\n",
                static_cast<unsigned long long>(records_read), static_cast<unsigned long long>(expected),
                static_cast<unsigned long long>(shards_fetched));
    return 1;
  }
  std::printf("doc fragment ok: %llu records, %llu shards scheduled\n", static_cast<unsigned long long>(records_read),
              static_cast<unsigned long long>(shards_fetched));
}

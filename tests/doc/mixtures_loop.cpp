// distsampler tests: runs docs/MIXTURES.md's mixture loop (a fragment) with the names it uses, then checks it.
// SPDX-License-Identifier: MIT
#include <distsampler/distsampler.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

std::vector<std::uint64_t> per_source(3);
std::uint64_t bad = 0;
const std::vector<std::uint64_t> sizes{1000000, 500000, 20000};

void load(std::uint64_t source, std::uint64_t index) {
  if (source >= sizes.size() || index >= sizes[source]) ++bad;
  else ++per_source[source];
}

}  // namespace

int main() {
  std::string saved;
#include "mixtures_loop.inc"
  // One rank (RANK=0 WORLD_SIZE=1), global batch 512, 5000 steps: the weights are kept in every step.
  const std::uint64_t total = per_source[0] + per_source[1] + per_source[2];
  if (bad != 0 || total != 5000 * 512 || per_source[2] < 5000 * 102 || per_source[2] > 5000 * 103 ||
      distsampler::SamplerState::from_text(saved).epoch != 0) {
    std::printf("FAILED: %llu out of range, counts %llu %llu %llu\n", static_cast<unsigned long long>(bad),
                static_cast<unsigned long long>(per_source[0]), static_cast<unsigned long long>(per_source[1]),
                static_cast<unsigned long long>(per_source[2]));
    return 1;
  }
  std::printf("doc fragment ok: %llu samples, sources %llu %llu %llu\n", static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(per_source[0]), static_cast<unsigned long long>(per_source[1]),
              static_cast<unsigned long long>(per_source[2]));
}

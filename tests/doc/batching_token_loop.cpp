// distsampler tests: runs docs/BATCHING.md's token-budget loop (a fragment) with the names it uses, then checks it.
// SPDX-License-Identifier: MIT
#include <distsampler/distsampler.hpp>

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace {

std::set<std::uint64_t> seen;
std::uint64_t reads = 0, empty_micro_batches = 0, steps = 0;

void run_with_zero_loss_weight() { ++empty_micro_batches; }
void forward_backward(const std::vector<std::uint64_t>& indices) {
  for (std::uint64_t i : indices) seen.insert(i);
  reads += indices.size();
}
void optimizer_step() { ++steps; }

}  // namespace

int main() {
  std::vector<std::uint32_t> storage(5000);
  for (std::size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<std::uint32_t>(1 + (i * 7919) % 511);
  const std::uint32_t* lengths = storage.data();
  const std::uint64_t n = storage.size();
  const bool have_checkpoint = false;
  std::string saved;
#include "batching_token_loop.inc"
  // One rank (RANK=0 WORLD_SIZE=1): every sample once, and the last state is the end of the epoch.
  const auto state = distsampler::SamplerState::from_text(saved);
  if (seen.size() != n || reads != n || state.consumed != n) {
    std::printf("FAILED: %zu distinct, %llu reads, consumed %llu of %llu\n", seen.size(),
                static_cast<unsigned long long>(reads), static_cast<unsigned long long>(state.consumed),
                static_cast<unsigned long long>(n));
    return 1;
  }
  std::printf("doc fragment ok: %llu steps, %llu reads, %llu empty micro-batches\n",
              static_cast<unsigned long long>(steps), static_cast<unsigned long long>(reads),
              static_cast<unsigned long long>(empty_micro_batches));
}

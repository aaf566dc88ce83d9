// Prints the document and shuffle indices of bench/pack_peers.hpp's Megatron-style build with numpy's generator, for tests/bench_peer_numpy.py.
// SPDX-License-Identifier: MIT
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "pack_peers.hpp"

// usage: distsampler_bench_peer_vectors N SEQ_LEN SEED; document i has 1 + (7919 i mod 97) tokens.
int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s N SEQ_LEN SEED\n", argv[0]);
    return 2;
  }
  const std::uint64_t n = std::strtoull(argv[1], nullptr, 10), seq_len = std::strtoull(argv[2], nullptr, 10);
  const auto seed = static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10));
  std::vector<std::uint32_t> sizes(static_cast<std::size_t>(n));
  for (std::uint64_t i = 0; i < n; ++i) sizes[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(1 + (7919 * i) % 97);
  const pack_bench::MegatronIndices m = pack_bench::megatron_build(sizes, seq_len, pack_bench::NumpyRandomState(seed));
  std::printf("document_index");
  for (const auto v : m.document_index) std::printf(" %d", static_cast<int>(v));
  std::printf("\nshuffle_index");
  for (const auto v : m.shuffle_index) std::printf(" %u", static_cast<unsigned>(v));
  std::printf("\n");
  return 0;
}

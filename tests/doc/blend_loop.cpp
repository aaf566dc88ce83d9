// distsampler tests: runs docs/BLENDING.md's blend loop (a fragment) with the names it uses, then checks it.
// SPDX-License-Identifier: MIT
#include <distsampler/distsampler.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

// Document lengths of the two sources: 1..4000 tokens, from a fixed generator.
std::vector<std::uint32_t> lengths(std::uint64_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> out;
  for (std::uint64_t i = 0; i < n; ++i) {
    out.push_back(static_cast<std::uint32_t>(1 + distsampler::detail::splitmix64(seed + i) % 4000));
  }
  return out;
}

const std::vector<std::uint32_t> web = lengths(20000, 1), code = lengths(3000, 2);
std::vector<std::uint64_t> tokens(2);
std::uint64_t bad = 0;

void load(std::uint64_t source, const distsampler::PackPiece& piece) {
  const std::vector<std::uint32_t>& l = source == 0 ? web : code;
  if (source > 1 || piece.document >= l.size() || piece.offset + piece.length > l[piece.document]) ++bad;
  else tokens[source] += piece.length;
}

}  // namespace

int main() {
  std::string saved;
#include "blend_loop.inc"
  // One rank (RANK=0 WORLD_SIZE=1), global batch 32 of 2048 tokens, 1000 steps: code holds 0.3, then 0.5.
  const double code_sequences = static_cast<double>(tokens[1]) / 2048;
  const double expected = 500 * 32 * 0.3 + 500 * 32 * 0.5;
  const bool ok = bad == 0 && tokens[0] + tokens[1] == 1000ull * 32 * 2048 && tokens[1] % 2048 == 0 &&
                  std::fabs(code_sequences - expected) <= 2 &&
                  distsampler::SamplerState::from_text(saved).consumed == 1000 * 32;
  std::printf("%s: %llu tokens of web, %llu of code (%.0f sequences, %.1f expected)\n",
              ok ? "doc fragment ok" : "FAILED", static_cast<unsigned long long>(tokens[0]),
              static_cast<unsigned long long>(tokens[1]), code_sequences, expected);
  return ok ? 0 : 1;
}

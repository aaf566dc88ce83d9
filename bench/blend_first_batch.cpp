// Time to the first batch and plan memory of a BlendSampler over K sources next to one PackedSequenceSampler over
// the same documents (docs/BLENDING.md's table). usage: blend_first_batch [N documents] [K sources]
// SPDX-License-Identifier: MIT
#include <distsampler/blend/blend_sampler.hpp>
#include <distsampler/detail/mix.hpp>
#include <distsampler/packing/packed_sequence_sampler.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace ds = distsampler;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Lengths 1..2048 with most mass below 512 (a fixed generator; the figures depend little on the shape).
std::vector<std::uint32_t> lengths(std::uint64_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(n));
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t h = ds::detail::splitmix64(seed ^ ds::detail::splitmix64(i));
    out[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(1 + ((h & 0xffff) * ((h >> 16) & 0x7ff)) / 0xffff);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10000000;
  const std::uint64_t k = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4;
  if (n == 0 || k == 0 || k > n) {
    std::fprintf(stderr, "usage: blend_first_batch [N documents, at least K] [K sources, at least 1]\n");
    return 2;
  }
  const ds::World world(0, 64);
  std::vector<std::vector<std::uint32_t>> parts;
  std::vector<std::uint32_t> all;
  for (std::uint64_t i = 0; i < k; ++i) {
    parts.push_back(lengths(n / k + (i < n % k ? 1 : 0), i + 1));
    all.insert(all.end(), parts.back().begin(), parts.back().end());
  }
  for (const auto mode : {ds::PackMode::concat, ds::PackMode::best_fit}) {
    auto t0 = std::chrono::steady_clock::now();
    const ds::PackedSequenceSampler one(all.size(), all, world,
                                        ds::PackOptions().with_seq_len(4096).with_mode(mode).with_micro_batch_size(4)
                                            .with_accumulation_steps(4).with_seed(42));
    const ds::PackMicroBatch first_one = one.micro_batch(0, 0);
    const double one_s = seconds_since(t0);
    std::vector<ds::LengthView> views;
    std::vector<double> weights;
    for (std::uint64_t i = 0; i < k; ++i) {
      views.emplace_back(parts[static_cast<std::size_t>(i)]);
      weights.push_back(1.0 + static_cast<double>(i));
    }
    t0 = std::chrono::steady_clock::now();
    const ds::BlendSampler blend(views, weights, world,
                                 ds::BlendOptions().with_seq_len(4096).with_mode(mode).with_micro_batch_size(4)
                                     .with_accumulation_steps(4).with_seed(42).with_end_steps(1000));
    ds::BlendCache cache;
    const ds::BlendMicroBatch first_blend = blend.micro_batch(0, 0, cache);
    const double blend_s = seconds_since(t0);
    std::uint64_t plan = blend.schedule().memory_bytes();
    for (std::size_t i = 0; i < k; ++i) plan += blend.source_packing(i).plan_bytes();
    std::printf("| %s | %llu | %llu | %.3f s | %llu B | %.3f s | %llu B | %.2f |\n", std::string(ds::to_string(mode)).c_str(),
                static_cast<unsigned long long>(n), static_cast<unsigned long long>(k), one_s,
                static_cast<unsigned long long>(one.plan_bytes()), blend_s, static_cast<unsigned long long>(plan),
                blend_s / one_s);
    if (first_one.pieces.empty() || first_blend.pieces.empty()) return 1;
  }
  return 0;
}

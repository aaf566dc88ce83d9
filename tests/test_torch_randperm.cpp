// distsampler tests: TorchRandperm and its MT19937, against independent references.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/permutation.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "sanitized.hpp"

using distsampler::TorchGeneration;
using distsampler::TorchRandperm;
namespace detail = distsampler::detail;

namespace {

std::vector<std::uint64_t> all(const TorchRandperm& p) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = 0; i < p.size(); ++i) out.push_back(p(i));
  return out;
}

// The algorithms transcribed as plainly as possible, over std::mt19937, whose output
// sequence the C++ standard fixes exactly (only distributions and shuffle vary).
std::vector<std::uint64_t> reference_swap(std::uint64_t n, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::vector<std::uint64_t> r(n);
  for (std::uint64_t i = 0; i < n; ++i) r[i] = i;
  for (std::uint64_t i = 0; i + 1 < n; ++i) {
    const std::uint64_t z = static_cast<std::uint64_t>(engine()) % (n - i);
    std::swap(r[i], r[i + z]);
  }
  return r;
}

std::vector<std::uint64_t> reference_inside_out(std::uint64_t n, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::vector<std::uint64_t> r(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t hi = engine();
    const std::uint64_t lo = engine();
    const std::uint64_t z = ((hi << 32) | lo) % (i + 1);
    r[i] = r[z];
    r[z] = i;
  }
  return r;
}

}  // namespace

TEST_CASE("Mt19937 draws the standard MT19937 sequence", "[torch][mt19937]") {
  // The C++ standard's check value: the 10000th draw of a default-seeded mt19937.
  detail::Mt19937 engine(5489u);
  std::uint32_t x = 0;
  for (int i = 0; i < 10000; ++i) x = engine();
  CHECK(x == 4123659995u);

  for (std::uint32_t seed : {0u, 1u, 42u, 0xffffffffu}) {
    detail::Mt19937 mine(seed);
    std::mt19937 standard(seed);
    for (int i = 0; i < 2000; ++i) REQUIRE(mine() == standard());
  }
  detail::Mt19937 a(7u);
  std::mt19937 b(7u);
  const std::uint64_t hi = b(), lo = b();
  CHECK(a.next64() == ((hi << 32) | lo));
}

TEST_CASE("TorchRandperm reproduces torch.randperm's known vector", "[torch]") {
  // torch.randperm(10, generator=torch.Generator().manual_seed(42)), torch 1.13.1.
  CHECK(all(TorchRandperm(10, 42, 0)) == std::vector<std::uint64_t>{2, 6, 1, 8, 4, 5, 0, 9, 3, 7});
  // The manual seed is seed + epoch.
  CHECK(all(TorchRandperm(10, 40, 2)) == all(TorchRandperm(10, 42, 0)));
}

TEST_CASE("TorchRandperm seeds the generator with the low 32 bits, seeds taken mod 2^64", "[torch]") {
  CHECK(all(TorchRandperm(100, (std::uint64_t{1} << 32) + 5, 0)) == all(TorchRandperm(100, 5, 0)));
  CHECK(all(TorchRandperm(100, 0, 0)) != all(TorchRandperm(100, 5, 0)));
  // torch's seed -1 is 2^64 - 1; with epoch 1 it wraps to 0, as -1 + 1 does in torch.
  CHECK(all(TorchRandperm(100, static_cast<std::uint64_t>(-1), 1)) == all(TorchRandperm(100, 0, 0)));
  CHECK(TorchRandperm::torch_seed(UINT64_MAX, 3) == 2);
}

TEST_CASE("TorchRandperm's small-n algorithm equals a plain transcription", "[torch]") {
  for (std::uint64_t n : {0u, 1u, 2u, 3u, 17u, 1000u, 65537u}) {
    for (std::uint32_t seed : {0u, 3u, 0xdeadbeefu}) {
      std::vector<std::uint64_t> mine(n);
      detail::torch_randperm_swap(mine.data(), n, seed);
      REQUIRE(mine == reference_swap(n, seed));
      std::vector<std::uint32_t> narrow(n);
      detail::torch_randperm_swap(narrow.data(), n, seed);
      REQUIRE(std::vector<std::uint64_t>(narrow.begin(), narrow.end()) == mine);
    }
  }
}

TEST_CASE("TorchRandperm's torch 2.7 large-n algorithm equals a plain transcription", "[torch]") {
  for (std::uint64_t n : {1u, 2u, 5u, 1000u, 4099u}) {
    for (std::uint32_t seed : {0u, 42u}) {
      std::vector<std::uint64_t> mine(n);
      detail::torch_randperm_inside_out(mine.data(), n, seed);
      REQUIRE(mine == reference_inside_out(n, seed));
      std::vector<bool> seen(n);
      for (auto v : mine) {
        REQUIRE(v < n);
        REQUIRE_FALSE(seen[v]);
        seen[v] = true;
      }
    }
  }
}

TEST_CASE("TorchRandperm picks the algorithm by torch generation and size", "[torch]") {
  constexpr std::uint64_t t = TorchRandperm::large_n_threshold;
  STATIC_REQUIRE(t == 214748364u);
  STATIC_REQUIRE_FALSE(TorchRandperm::uses_inside_out(t - 1, TorchGeneration::v2_7));
  STATIC_REQUIRE(TorchRandperm::uses_inside_out(t, TorchGeneration::v2_7));
  STATIC_REQUIRE(TorchRandperm::uses_inside_out(t, TorchGeneration::current));
  STATIC_REQUIRE_FALSE(TorchRandperm::uses_inside_out(t, TorchGeneration::v1));
  STATIC_REQUIRE_FALSE(TorchRandperm::uses_inside_out(UINT64_MAX, TorchGeneration::v1));
  // Below the threshold both generations give the same order.
  CHECK(all(TorchRandperm(5000, 9, 1, {TorchGeneration::v1})) ==
        all(TorchRandperm(5000, 9, 1, {TorchGeneration::v2_7})));
}

TEST_CASE("TorchRandperm rejects an unknown generation and copies share the table", "[torch][errors]") {
  CHECK_THROWS_WITH(TorchRandperm(10, 0, 0, {static_cast<TorchGeneration>(7)}),
                    "TorchRandperm: generation 7 is unknown (expected TorchGeneration::v1 or TorchGeneration::v2_7)");
  const TorchRandperm p(1000, 1, 2);
  const TorchRandperm copy = p;  // NOLINT(performance-unnecessary-copy-initialization)
  CHECK(all(copy) == all(p));
  CHECK(TorchRandperm().size() == 0);
  CHECK(TorchRandperm(0, 1, 2).size() == 0);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<TorchRandperm>);
  STATIC_REQUIRE(noexcept(p(0)));
}

TEST_CASE("A moved-from TorchRandperm is empty and every assignment keeps the table alive", "[torch][move]") {
  // Under the sanitizer build, any lookup into a freed table fails this test.
  TorchRandperm a(1000, 1, 2);
  const std::vector<std::uint64_t> order = all(a);
  TorchRandperm b(std::move(a));
  CHECK(a.size() == 0);  // NOLINT(bugprone-use-after-move): the documented moved-from state
  CHECK(all(b) == order);
  {
    TorchRandperm c(5, 0, 0);
    c = std::move(b);
    CHECK(all(c) == order);
    CHECK(b.size() == 0);  // NOLINT(bugprone-use-after-move)
    a = c;                 // the copy shares the table; c's destruction must not free it
  }
  CHECK(all(a) == order);
  TorchRandperm& self = a;
  a = self;
  CHECK(all(a) == order);
  a = std::move(self);
  CHECK(all(a) == order);
  b = TorchRandperm(20, 3, 4);
  b = std::move(a);
  CHECK(all(b) == order);
  CHECK(a.size() == 0);        // NOLINT(bugprone-use-after-move)
  a = TorchRandperm(7, 0, 0);  // a moved-from object accepts a new value
  CHECK(a.size() == 7);
  STATIC_REQUIRE(std::is_nothrow_move_assignable_v<TorchRandperm>);
}

TEST_CASE("TorchRandperm throws config_error naming n for every size it cannot hold", "[torch][errors]") {
  const std::string most = std::to_string(std::vector<std::uint64_t>().max_size());
  for (const std::uint64_t n : {UINT64_MAX, std::uint64_t{1} << 62, std::uint64_t{1} << 61,
                                std::uint64_t{std::vector<std::uint64_t>().max_size()} + 1}) {
    CAPTURE(n);
    CHECK_THROWS_WITH(TorchRandperm(n, 0, 0),
                      "TorchRandperm: dataset_size " + std::to_string(n) +
                          " needs 8 bytes per index, more than this address space holds (at most " + most +
                          " indices; use FeistelPermutation, which needs O(1) memory)");
  }
#if !defined(DISTSAMPLER_TEST_SANITIZED)
  // Fits the vector's limits but not the address space: the allocation itself fails.
  // (AddressSanitizer aborts on such a request instead of throwing, so this runs without it.)
  const std::uint64_t huge = std::uint64_t{1} << 58;
  CHECK_THROWS_WITH(TorchRandperm(huge, 0, 0), "TorchRandperm: out of memory materialising dataset_size " +
                                                   std::to_string(huge) +
                                                   " indices (use FeistelPermutation, which needs O(1) memory)");
#endif
}

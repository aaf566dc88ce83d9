// distsampler tests: DistributedSampler's promises, exhaustively over small sizes, for every engine.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/distributed/distributed_sampler.hpp>
#include <distsampler/verify.hpp>

#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

using distsampler::DistributedSampler;
using distsampler::FeistelPermutation;
using distsampler::SamplerOptions;
using distsampler::Tail;
using distsampler::TorchRandperm;
using distsampler::World;

TEMPLATE_TEST_CASE("DistributedSampler is disjoint, covering and balanced for every N <= 257 and W <= 17",
                   "[sampler][property]", TorchRandperm, FeistelPermutation) {
  for (std::uint64_t n = 0; n <= 257; ++n) {
    for (std::uint64_t w = 1; w <= 17; ++w) {
      for (Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
        for (bool shuffle : {true, false}) {
          const std::uint64_t epoch = (n * 7 + w) % 5;
          const SamplerOptions options = SamplerOptions().with_shuffle(shuffle).with_seed(1234 + n).with_tail(tail);
          const auto report = distsampler::check_samplers(n, w, tail, [&](World world) {
            DistributedSampler<TestType> s(n, world, options);
            s.set_epoch(epoch);
            return s;
          });
          INFO(report.summary() << " shuffle=" << shuffle << " epoch=" << epoch);
          REQUIRE(report.ok());
          REQUIRE(report.disjoint());
        }
      }
    }
  }
}

TEMPLATE_TEST_CASE("DistributedSampler's iteration, subscript and indices() agree", "[sampler]", TorchRandperm,
                   FeistelPermutation) {
  DistributedSampler<TestType> s(1003, World(2, 7), SamplerOptions().with_seed(5));
  s.set_epoch(3);
  const auto list = s.indices();
  REQUIRE(list.size() == s.size());
  std::vector<std::uint64_t> iterated;
  for (std::uint64_t index : s) iterated.push_back(index);
  CHECK(iterated == list);
  for (std::uint64_t i = 0; i < s.size(); ++i) REQUIRE(s[i] == list[static_cast<std::size_t>(i)]);
  CHECK(static_cast<std::uint64_t>(s.end() - s.begin()) == s.size());
  CHECK(*(s.begin() + 10) == list[10]);
  CHECK((s.end() - 1).is_padding() == s.is_padding(s.size() - 1));
  CHECK_FALSE(s.empty());
}

TEMPLATE_TEST_CASE("DistributedSampler's fill agrees with the subscript on every slice, padding included", "[sampler]",
                   TorchRandperm, FeistelPermutation) {
  for (std::uint64_t n : {1u, 17u, 1000u, 4097u}) {
    for (std::uint64_t w : {1u, 3u, 8u}) {
      for (std::uint64_t r = 0; r < w; ++r) {
        for (bool shuffle : {true, false}) {
          DistributedSampler<TestType> s(n, World(r, w), SamplerOptions().with_shuffle(shuffle).with_seed(3));
          s.set_epoch(2);
          std::vector<std::uint64_t> out(static_cast<std::size_t>(s.size()));
          for (std::uint64_t first : {std::uint64_t{0}, s.size() / 3}) {
            const std::uint64_t count = s.size() - first;
            s.fill(first, count, out.data());
            for (std::uint64_t i = 0; i < count; ++i) REQUIRE(out[static_cast<std::size_t>(i)] == s[first + i]);
          }
        }
      }
    }
  }
  DistributedSampler<TestType> s(10, World(0, 4));
  std::uint64_t out[4] = {};
  CHECK_THROWS_WITH(s.fill(1, 3, out),
                    "DistributedSampler::fill: position 3 is out of range for size 3 (expected 0..2)");
}

TEMPLATE_TEST_CASE("DistributedSampler is a pure function of its inputs and set_epoch reshuffles", "[sampler]",
                   TorchRandperm, FeistelPermutation) {
  const SamplerOptions options = SamplerOptions().with_seed(99).with_tail(Tail::drop);
  DistributedSampler<TestType> a(5000, World(1, 4), options);
  DistributedSampler<TestType> b(5000, World(1, 4), options);
  a.set_epoch(2);
  b.set_epoch(2);
  CHECK(a.indices() == b.indices());
  CHECK(a.epoch() == 2);

  const auto epoch2 = a.indices();
  a.set_epoch(3);
  CHECK(a.indices() != epoch2);
  a.set_epoch(2);
  CHECK(a.indices() == epoch2);

  // A copy keeps its epoch when the original moves on.
  const auto copy = a;
  a.set_epoch(7);
  CHECK(copy.indices() == epoch2);

  // Another seed, another order; shuffle=false is the identity's stride.
  CHECK(
      DistributedSampler<TestType>(5000, World(1, 4), SamplerOptions().with_seed(100).with_tail(Tail::drop))
          .indices() !=
      DistributedSampler<TestType>(5000, World(1, 4), SamplerOptions().with_seed(99).with_tail(Tail::drop)).indices());
  DistributedSampler<TestType> plain(10, World(1, 4), SamplerOptions().with_shuffle(false));
  CHECK(plain.indices() == std::vector<std::uint64_t>{1, 5, 9});
  plain.set_epoch(5);
  CHECK(plain.indices() == std::vector<std::uint64_t>{1, 5, 9});
}

TEST_CASE("DistributedSampler<TorchRandperm> matches torch's documented example", "[sampler][torch]") {
  // torch.utils.data.DistributedSampler(range(10), num_replicas=4, rank=r, seed=42); set_epoch(1).
  const std::vector<std::vector<std::uint64_t>> expected = {{8, 5, 2}, {4, 1, 3}, {9, 6, 8}, {0, 7, 4}};
  for (std::uint64_t r = 0; r < 4; ++r) {
    DistributedSampler<TorchRandperm> s(10, World(r, 4), SamplerOptions().with_seed(42));
    s.set_epoch(1);
    CHECK(s.indices() == expected[r]);
    CHECK(s.is_padding(2) == (r >= 2));  // slots 10 and 11 of the padded list
  }
}

TEST_CASE("DistributedSampler flags padding so exact evaluation can mask it", "[sampler]") {
  std::uint64_t real = 0, padded = 0;
  for (std::uint64_t r = 0; r < 4; ++r) {
    DistributedSampler<> s(10, World(r, 4), SamplerOptions());
    for (auto it = s.begin(); it != s.end(); ++it) (it.is_padding() ? padded : real) += 1;
  }
  CHECK(real == 10);
  CHECK(padded == 2);
}

TEST_CASE("DistributedSampler rejects bad configuration and positions with messages", "[sampler][errors]") {
  World bad;
  bad.rank = 4;
  bad.world_size = 4;
  CHECK_THROWS_WITH(DistributedSampler<>(10, bad),
                    "DistributedSampler: rank 4 is out of range for world_size 4 (expected 0..3)");
  bad.world_size = 0;
  bad.rank = 0;
  CHECK_THROWS_WITH(DistributedSampler<>(10, bad), "DistributedSampler: world_size is 0 (expected at least 1)");
  CHECK_THROWS_AS(DistributedSampler<>(10, bad), distsampler::config_error);
  CHECK_THROWS_WITH(DistributedSampler<>(10, World(0, 2), SamplerOptions().with_tail(static_cast<Tail>(5))),
                    "DistributedSampler: tail 5 is not a Tail (expected pad, drop or uneven)");

  const DistributedSampler<> s(10, World(0, 4));
  CHECK_THROWS_AS(s[3], std::out_of_range);
  CHECK_THROWS_WITH(s[3], "DistributedSampler::operator[]: position 3 is out of range for size 3 (expected 0..2)");
  CHECK_THROWS_WITH(s.is_padding(9),
                    "DistributedSampler::is_padding: position 9 is out of range for size 3 (expected 0..2)");
  const DistributedSampler<> empty(0, World(0, 4));
  CHECK(empty.empty());
  CHECK(empty.begin() == empty.end());
  CHECK_THROWS_WITH(empty[0],
                    "DistributedSampler::operator[]: position 0 is out of range for size 0 (the rank is empty)");
}

TEST_CASE("DistributedSampler<> handles datasets near 2^64 without materialising them", "[sampler][huge]") {
  const std::uint64_t n = UINT64_MAX;
  DistributedSampler<> s(n, World(63, 64), SamplerOptions().with_seed(7));
  CHECK(s.size() == n / 64 + 1);
  s.set_epoch(11);
  std::vector<std::uint64_t> head;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const std::uint64_t index = s[i];
    REQUIRE(index < n);
    head.push_back(index);
  }
  CHECK(s.is_padding(s.size() - 1));
  CHECK(s[s.size() - 1] < n);
  STATIC_REQUIRE(std::is_nothrow_copy_constructible_v<DistributedSampler<>>);
}

// distsampler tests: the opt-in fmt formatters.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/distsampler.hpp>
#include <distsampler/fmt.hpp>

TEST_CASE("fmt formats the public types", "[fmt]") {
  CHECK(fmt::format("{}", distsampler::World(3, 8, 1, 2)) == "rank 3/8 (local 1/2)");
  CHECK(fmt::format("{}", distsampler::Tail::drop) == "drop");
  CHECK(fmt::format("[{:>6}]", distsampler::Tail::pad) == "[   pad]");
  CHECK(fmt::format("{}", distsampler::SamplerOptions().with_seed(42).with_tail(distsampler::Tail::uneven)) ==
        "shuffle=true seed=42 tail=uneven");
  CHECK(fmt::format("{}", distsampler::TorchGeneration::v1) == "v1");
  CHECK(fmt::format("{}", distsampler::TorchGeneration::current) == "v2.7");
  const auto report = distsampler::check_partition(2, {{0}, {1}}, distsampler::Tail::pad);
  CHECK(fmt::format("{}", report) == "ok: N=2 W=2 tail=pad counts 1..1 padding 0 duplicates 0 missing 0");
}

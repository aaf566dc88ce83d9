// distsampler tests: a second translation unit including every header, so a missing `inline` fails to link.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/distsampler.hpp>
#include <distsampler/fmt.hpp>

TEST_CASE("Every header can be included in two translation units", "[odr]") {
  const distsampler::DistributedSampler<distsampler::TorchRandperm> s(10, distsampler::World(0, 2));
  CHECK(s.size() == 5);
  CHECK(distsampler::check_partition(1, {{0}}, distsampler::Tail::pad).ok());
  CHECK(fmt::format("{}", distsampler::Tail::uneven) == "uneven");
}

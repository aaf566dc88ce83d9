// The consumer's use of distsampler::fmt: the formatters of <distsampler/fmt.hpp>.
// SPDX-License-Identifier: MIT
#include <distsampler/fmt.hpp>

#include <fmt/format.h>

#include <string>

std::string consumer_fmt(const distsampler::World& world) {
  return fmt::format("rank {} of {}, Tail {}", world.rank, world.world_size, distsampler::Tail::uneven);
}

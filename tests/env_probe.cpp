// distsampler tests: prints World::from_env() of this process, so launches can be checked from outside.
// SPDX-License-Identifier: MIT
#include <distsampler/world.hpp>

#include <cstdio>

int main() {
  try {
    const distsampler::World w = distsampler::World::from_env();
    std::printf("rank=%llu world_size=%llu local_rank=%llu local_world_size=%llu\n",
                static_cast<unsigned long long>(w.rank), static_cast<unsigned long long>(w.world_size),
                static_cast<unsigned long long>(w.local_rank), static_cast<unsigned long long>(w.local_world_size));
    return 0;
  } catch (const distsampler::config_error& e) {
    std::printf("config_error: %s\n", e.what());
    return 2;
  }
}

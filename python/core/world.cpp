// _core bindings of World: the launcher's environment and the rank check.
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <cstdlib>

#include "common.hpp"

namespace distsampler_python {

void register_world(py::module_& m) {
  m.def(
      "world_from_env",
      []() -> py::object {
        // None when no launcher variable is set at all; malformed variables raise.
        bool any = false;
        for (const auto& l : ds::detail::launchers) any = any || std::getenv(l.rank) || std::getenv(l.size);
        if (!any) return py::none();
        const ds::World w = ds::World::from_env();
        return py::make_tuple(w.rank, w.world_size, w.local_rank, w.local_world_size);
      },
      "(rank, world_size, local_rank, local_world_size) from the launcher's environment (World::from_env rules), "
      "or None when no launcher variable is set.");
  m.def(
      "validate_world", [](std::uint64_t rank, std::uint64_t world_size) { (void)make_world(rank, world_size); },
      "Raises ConfigError unless 0 <= rank < world_size.");
}

}  // namespace distsampler_python

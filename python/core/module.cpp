// The distsampler._core extension module: its errors and version, then one registration line per family.
// SPDX-License-Identifier: MIT
#include <string>

#include "common.hpp"

namespace dp = distsampler_python;

PYBIND11_MODULE(_core, m) {
  m.doc() = "C++ core of distsampler (use the distsampler package, not this module).";
  (void)dp::py::register_exception<dp::ds::config_error>(m, "ConfigError", PyExc_ValueError);
  (void)dp::py::register_exception<dp::ds::state_error>(m, "StateError", PyExc_ValueError);
  m.attr("version") = std::to_string(DISTSAMPLER_VERSION_MAJOR) + "." + std::to_string(DISTSAMPLER_VERSION_MINOR) +
                      "." + std::to_string(DISTSAMPLER_VERSION_PATCH);

  // A family adds its file to python/core/ and one line here (declared in common.hpp).
  dp::register_world(m);
  dp::register_mesh(m);
  dp::register_state(m);
  dp::register_verify(m);
  dp::register_distributed(m);
  dp::register_batch(m);
  dp::register_shards(m);
  dp::register_tokens(m);
  dp::register_packing(m);
  dp::register_mixture(m);
  dp::register_weighted(m);
  dp::register_files(m);
  dp::register_streams(m);
  dp::register_blend(m);
  dp::register_exchange(m);
}

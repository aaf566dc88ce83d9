// _core binding of SamplerState's text form.
// SPDX-License-Identifier: MIT
#include <string>

#include "common.hpp"

namespace distsampler_python {

void register_state(py::module_& m) {
  m.def(
      "parse_state",
      [](const std::string& text) {
        const ds::SamplerState s = parse_state(text);
        py::dict d;
        d["dataset_size"] = s.dataset_size;
        d["seed"] = s.seed;
        d["epoch"] = s.epoch;
        d["consumed"] = s.consumed;
        d["fingerprint"] = s.fingerprint;
        return d;
      },
      "Parses a state's text form; raises StateError naming the first problem.");
}

}  // namespace distsampler_python

// _core binding of WeightedSampler: weighted draws split over ranks.
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "distsampler/weighted/guard.hpp"
#include "distsampler/weighted/weighted_sampler.hpp"

namespace distsampler_python {

void register_weighted(py::module_& m) {
  using O = ds::WeightedSamplerOptions;
  py::class_<O> wo(m, "WeightedSamplerOptions");
  wo.def(py::init<>());
  bind_order_options(wo);
  wo.def_readwrite("num_samples", &O::num_samples).def_readwrite("replacement", &O::replacement);

  using V = ds::WeightedSampler;
  py::class_<V> c(m, "WeightedSampler");
  bind_common(c);
  bind_guard(c);
  c.def_property_readonly("size", &V::size)
      .def_property_readonly("num_samples", [](const V& v) { return v.options().num_samples; })
      .def("state", [](const V& v, std::uint64_t done) { return v.state(done).to_text(); })
      .def("chunk", [](const V& v, std::uint64_t first, std::uint64_t count) {
        std::vector<std::uint64_t> out;
        {
          py::gil_scoped_release release;
          const std::uint64_t size = v.size();
          if (first > size) first = size;
          if (count > size - first) count = size - first;
          out.reserve(static_cast<std::size_t>(count));
          for (std::uint64_t i = 0; i < count; ++i) out.push_back(v[first + i]);
        }
        return to_list(out);
      });
  m.def(
      "make_weighted_sampler",
      [](const std::vector<double>& weights, std::uint64_t rank, std::uint64_t world_size,
         const ds::WeightedSamplerOptions& o) { return ds::WeightedSampler(weights, make_world(rank, world_size), o); },
      py::arg("weights"), py::arg("rank"), py::arg("world_size"), py::arg("options"), "Builds a C++ WeightedSampler.");
}

}  // namespace distsampler_python

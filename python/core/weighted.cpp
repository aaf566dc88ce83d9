// _core binding of WeightedSampler: weighted draws split over ranks.
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "distsampler/weighted/guard.hpp"
#include "distsampler/weighted/weighted_sampler.hpp"

namespace distsampler_python {
namespace {

ds::WeightedSampler make_weighted_sampler(const std::vector<double>& weights, const ds::World& world,
                                          std::uint64_t num_samples, bool replacement, std::uint64_t seed,
                                          ds::Tail tail) {
  return ds::WeightedSampler(weights, world,
                             ds::WeightedSamplerOptions()
                                 .with_num_samples(num_samples)
                                 .with_replacement(replacement)
                                 .with_seed(seed)
                                 .with_tail(tail));
}

}  // namespace

void register_weighted(py::module_& m) {
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
      [](const std::vector<double>& weights, std::uint64_t rank, std::uint64_t world_size, std::uint64_t num_samples,
         bool replacement, std::uint64_t seed, const std::string& tail) {
        return make_weighted_sampler(weights, make_world(rank, world_size), num_samples, replacement, seed,
                                     tail_of(tail));
      },
      "Builds a C++ WeightedSampler.");
}

}  // namespace distsampler_python

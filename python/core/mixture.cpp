// _core binding of MixtureSampler: micro-batches mixing several sources in exact per-step proportions.
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "distsampler/mixture/guard.hpp"
#include "distsampler/mixture/mixture_sampler.hpp"

namespace distsampler_python {
namespace {

ds::MixtureEnd mixture_end(const std::string& end) {
  return enum_named<ds::MixtureEnd>(end, "MixtureSampler", "end",
                                    {{"first_exhausted", ds::MixtureEnd::first_exhausted},
                                     {"all_seen", ds::MixtureEnd::all_seen},
                                     {"samples", ds::MixtureEnd::samples},
                                     {"steps", ds::MixtureEnd::steps}});
}

const char* mixture_end_name(ds::MixtureEnd end) {
  switch (end) {
    case ds::MixtureEnd::first_exhausted:
      return "first_exhausted";
    case ds::MixtureEnd::all_seen:
      return "all_seen";
    case ds::MixtureEnd::samples:
      return "samples";
    case ds::MixtureEnd::steps:
      return "steps";
  }
  return "invalid";
}

}  // namespace

void register_mixture(py::module_& m) {
  using O = ds::MixtureOptions;
  py::class_<O> mo(m, "MixtureOptions");
  mo.def(py::init<>());
  bind_order_options(mo);
  bind_batch_shape_options(mo);
  mo.def_readwrite("mixing_block", &O::mixing_block)
      .def_property(
          "end", [](const O& o) { return std::string(mixture_end_name(o.end)); },
          [](O& o, const std::string& text) { o.end = mixture_end(text); })
      .def_readwrite("end_count", &O::end_count)
      .def_readwrite("replacement", &O::replacement)
      // (step, weights) pairs: from `step` on, the sources mix by `weights`.
      .def_property(
          "schedule",
          [](const O& o) {
            std::vector<std::pair<std::uint64_t, std::vector<double>>> out;
            for (const auto& change : o.schedule) out.emplace_back(change.step, change.weights);
            return out;
          },
          [](O& o, const std::vector<std::pair<std::uint64_t, std::vector<double>>>& schedule) {
            o.schedule.clear();
            for (const auto& change : schedule) o.schedule.push_back(ds::WeightChange{change.first, change.second});
          });

  using X = ds::MixtureSampler;
  py::class_<X> c(m, "MixtureSampler");
  bind_step_sampler(c);
  bind_guard(c);
  c.def_property_readonly("mixing_block", [](const X& x) { return x.options().mixing_block; })
      .def_property_readonly("source_sizes", &X::source_sizes)
      .def("at",
           [](const X& x, std::uint64_t position) {
             if (position >= x.dataset_size()) {
               throw py::index_error(ds::detail::out_of_range_message("MixtureSampler.at", "position", position,
                                                                      "dataset_size", x.dataset_size()));
             }
             const ds::MixtureIndex i = x.at(position);
             return py::make_tuple(i.source, i.index);
           })
      // Micro-batches number step-major from the resume point (micro_batch_id); those in
      // [first, first + count) as lists of (source, index) pairs.
      .def("micro_batches", [](const X& x, std::uint64_t first, std::uint64_t count) {
        const std::uint64_t total = x.micro_batch_count();
        if (first > total) first = total;
        if (count > total - first) count = total - first;
        std::vector<std::vector<ds::MixtureIndex>> out(static_cast<std::size_t>(count));
        {
          py::gil_scoped_release release;
          for (std::uint64_t j = 0; j < count; ++j) {
            const ds::MicroBatchId at = x.micro_batch_id(first + j);
            out[static_cast<std::size_t>(j)] = x.micro_batch(at.step, at.micro_batch);
          }
        }
        py::list result(out.size());
        for (std::size_t j = 0; j < out.size(); ++j) {
          py::list batch(out[j].size());
          for (std::size_t e = 0; e < out[j].size(); ++e) batch[e] = py::make_tuple(out[j][e].source, out[j][e].index);
          result[j] = batch;
        }
        return result;
      });
  m.def(
      "make_mixture_sampler",
      [](std::vector<std::uint64_t> sizes, std::uint64_t rank, std::uint64_t world_size, const ds::MixtureOptions& o,
         const std::vector<double>& weights) {
        return ds::MixtureSampler(std::move(sizes), weights, make_world(rank, world_size), o);
      },
      py::arg("source_sizes"), py::arg("rank"), py::arg("world_size"), py::arg("options"), py::kw_only(),
      py::arg("weights"), "Builds a C++ MixtureSampler over sources of source_sizes samples mixed by weights.");
}

}  // namespace distsampler_python

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

// global_batch 0: accumulation_steps decides the global batch (as batch_options).
ds::MixtureSampler make_mixture_sampler(std::vector<std::uint64_t> sizes, const std::vector<double>& weights,
                                        const ds::World& world, std::uint64_t micro, std::uint64_t accumulation,
                                        std::uint64_t global_batch, bool shuffle, std::uint64_t seed, ds::Tail tail,
                                        const std::string& end, std::uint64_t end_count, bool replacement,
                                        std::uint64_t mixing_block, std::vector<ds::WeightChange> schedule) {
  ds::MixtureOptions o;
  o.with_micro_batch_size(micro).with_mixing_block(mixing_block).with_end(mixture_end(end), end_count);
  if (global_batch != 0) {
    o.with_global_batch_size(global_batch);
  } else {
    o.with_accumulation_steps(accumulation);
  }
  o.with_replacement(replacement)
      .with_schedule(std::move(schedule))
      .with_shuffle(shuffle)
      .with_seed(seed)
      .with_tail(tail);
  return ds::MixtureSampler(std::move(sizes), weights, world, std::move(o));
}

}  // namespace

void register_mixture(py::module_& m) {
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
      [](std::vector<std::uint64_t> sizes, const std::vector<double>& weights, std::uint64_t rank,
         std::uint64_t world_size, std::uint64_t micro, std::uint64_t accumulation, std::uint64_t global_batch,
         bool shuffle, std::uint64_t seed, const std::string& tail, const std::string& end, std::uint64_t end_count,
         bool replacement, std::uint64_t mixing_block,
         const std::vector<std::pair<std::uint64_t, std::vector<double>>>& schedule) {
        std::vector<ds::WeightChange> changes;
        for (const auto& change : schedule) changes.push_back(ds::WeightChange{change.first, change.second});
        return make_mixture_sampler(std::move(sizes), weights, make_world(rank, world_size), micro, accumulation,
                                    global_batch, shuffle, seed, tail_of(tail), end, end_count, replacement,
                                    mixing_block, std::move(changes));
      },
      "Builds a C++ MixtureSampler; end is \"first_exhausted\", \"all_seen\", \"samples\" or \"steps\".");
}

}  // namespace distsampler_python

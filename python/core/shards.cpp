// _core binding of StreamingShardSampler (the C++ face of distsampler.torch.ShardStream).
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "distsampler/shards/guard.hpp"
#include "distsampler/shards/streaming_shard_sampler.hpp"
#include "distsampler/shards/loader_round_robin.hpp"
#include "distsampler/shards/progress.hpp"

namespace distsampler_python {
namespace {

py::list schedule_list(const std::vector<ds::ScheduledShard>& plan) {
  py::list result(plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i) {
    result[i] = py::make_tuple(plan[i].shard, plan[i].first_slot, plan[i].last_slot, plan[i].samples);
  }
  return result;
}

}  // namespace

void register_shards(py::module_& m) {
  using O = ds::ShardSamplerOptions;
  py::class_<O> so(m, "ShardSamplerOptions");
  so.def(py::init<>());
  bind_order_options(so);
  so.def_readwrite("canonical_streams", &O::canonical_streams)
      .def_readwrite("max_open_shards", &O::max_open_shards)
      .def_readwrite("run_length", &O::run_length)
      .def_readwrite("shuffle_window", &O::shuffle_window)
      .def_readwrite("rotate_shards", &O::rotate_shards)
      .def_readwrite("num_workers", &O::num_workers)
      // The presets (the default-constructed options are mixed()).
      .def_static("mixed", &O::mixed)
      .def_static("sequential", &O::sequential);

  using Z = ds::StreamingShardSampler;
  py::class_<Z>(m, "StreamingShardSampler")
      .def_property_readonly("epoch", &Z::epoch)
      .def_property_readonly("dataset_size", &Z::dataset_size)
      .def_property_readonly("num_workers", &Z::num_workers)
      .def_property_readonly("size", &Z::size)
      .def_property_readonly("fingerprint", [](const Z& z) { return z.state(0).fingerprint; })
      .def("set_epoch", &Z::set_epoch)
      .def("resume", [](Z& z, const std::string& text) { z.resume(parse_state(text)); })
      .def("worker_size", &Z::worker_size)
      .def("state_after_batches",
           [](const Z& z, std::uint64_t batches, std::uint64_t batch_size) {
             return ds::state_after_batches(z, batches, batch_size).to_text();
           })
      .def("state_per_worker",
           [](const Z& z, const std::vector<std::uint64_t>& done) {
             return z.state(ds::WorkerProgress(done)).to_text();
           })
      // (shard, first_slot, last_slot, samples) tuples of worker w's shards in first-read order.
      .def("shard_schedule",
           [](const Z& z, std::uint64_t worker) {
             std::vector<ds::ScheduledShard> plan;
             {
               py::gil_scoped_release release;
               plan = z.shard_schedule(worker);
             }
             return schedule_list(plan);
           })
      // The same merged over this rank's workers.
      .def("rank_shard_schedule",
           [](const Z& z) {
             std::vector<ds::ScheduledShard> plan;
             {
               py::gil_scoped_release release;
               plan = z.rank_shard_schedule();
             }
             return schedule_list(plan);
           })
      // (shard, offset, index, is_padding) tuples of worker w's slots [first, first + count).
      .def("samples", [](const Z& z, std::uint64_t worker, std::uint64_t first, std::uint64_t count) {
        const std::uint64_t size = z.worker_size(worker);
        if (first > size) first = size;
        if (count > size - first) count = size - first;
        std::vector<ds::ShardSample> out(static_cast<std::size_t>(count));
        {
          py::gil_scoped_release release;
          z.fill(worker, first, count, out.data());
        }
        py::list result(out.size());
        for (std::size_t i = 0; i < out.size(); ++i) {
          result[i] = py::make_tuple(out[i].shard, out[i].offset, out[i].index, out[i].is_padding);
        }
        return result;
      });
  m.def(
      "make_streaming_shard_sampler",
      [](std::vector<std::uint64_t> sizes, std::uint64_t rank, std::uint64_t world_size,
         const ds::ShardSamplerOptions& o) {
        return ds::StreamingShardSampler(std::move(sizes), make_world(rank, world_size), o);
      },
      py::arg("shard_sizes"), py::arg("rank"), py::arg("world_size"), py::arg("options"),
      "Builds a C++ StreamingShardSampler (options: a ShardSamplerOptions, from its preset mixed() or "
      "sequential(), then each option set).");
}

}  // namespace distsampler_python

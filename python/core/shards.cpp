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
      [](std::vector<std::uint64_t> sizes, std::uint64_t rank, std::uint64_t world_size, std::uint64_t num_workers,
         bool shuffle, std::uint64_t seed, const std::string& tail, const std::string& preset,
         std::optional<std::uint64_t> canonical_streams, std::optional<std::uint64_t> max_open_shards,
         std::optional<std::uint64_t> run_length, std::optional<std::uint64_t> shuffle_window,
         std::optional<bool> rotate_shards) {
        // The preset first, then every option given explicitly (ShardSamplerOptions::mixed() is the default).
        ds::ShardSamplerOptions o;
        if (preset == "sequential") {
          o = ds::ShardSamplerOptions::sequential();
        } else if (preset != "mixed") {
          throw ds::config_error("ShardStream: preset \"" + preset +
                                 "\" is unknown (expected \"mixed\", the default, or \"sequential\")");
        }
        o.shuffle = shuffle;
        o.seed = seed;
        o.tail = tail_of(tail);
        if (canonical_streams) o.canonical_streams = *canonical_streams;
        if (max_open_shards) o.max_open_shards = *max_open_shards;
        if (run_length) o.run_length = *run_length;
        if (shuffle_window) o.shuffle_window = *shuffle_window;
        if (rotate_shards) o.rotate_shards = *rotate_shards;
        return ds::StreamingShardSampler(std::move(sizes), make_world(rank, world_size),
                                         o.with_num_workers(num_workers));
      },
      py::arg("shard_sizes"), py::arg("rank"), py::arg("world_size"), py::arg("num_workers"), py::arg("shuffle"),
      py::arg("seed"), py::arg("tail"), py::arg("preset") = "mixed", py::arg("canonical_streams") = py::none(),
      py::arg("max_open_shards") = py::none(), py::arg("run_length") = py::none(),
      py::arg("shuffle_window") = py::none(), py::arg("rotate_shards") = py::none(),
      "Builds a C++ StreamingShardSampler: the preset's options (ShardSamplerOptions::mixed() or sequential()), "
      "then each option given.");
}

}  // namespace distsampler_python

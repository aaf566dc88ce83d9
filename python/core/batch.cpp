// _core bindings of DistributedBatchSampler<FeistelPermutation> and DistributedBatchSampler<TorchRandperm>.
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "distsampler/batch/guard.hpp"
#include "distsampler/batch/batch_sampler.hpp"
#include "distsampler/feistel.hpp"

namespace distsampler_python {
namespace {

template <class P>
void bind_distributed_batch_sampler(py::module_& m, const char* name) {
  using B = ds::DistributedBatchSampler<P>;
  py::class_<B> c(m, name);
  bind_step_sampler(c);
  c.def("micro_batch_length", &B::micro_batch_length)
      .def("guard_sums", &guard_sums_of<B>)

      // Micro-batches number step-major from the resume point (micro_batch_id); returns
      // those in [first, first + count) as lists.
      .def("micro_batches",
           [](const B& b, std::uint64_t first, std::uint64_t count) {
             const std::uint64_t total = b.micro_batch_count();
             if (first > total) first = total;
             if (count > total - first) count = total - first;
             std::vector<std::vector<std::uint64_t>> out(static_cast<std::size_t>(count));
             {
               py::gil_scoped_release release;
               for (std::uint64_t j = 0; j < count; ++j) {
                 auto& v = out[static_cast<std::size_t>(j)];
                 const ds::MicroBatchId at = b.micro_batch_id(first + j);
                 v.resize(static_cast<std::size_t>(b.micro_batch_length(at.step, at.micro_batch)));  // not m: see tail
                 v.resize(static_cast<std::size_t>(b.fill_micro_batch(at.step, at.micro_batch, v.data())));
               }
             }
             py::list result(out.size());
             for (std::size_t j = 0; j < out.size(); ++j) result[j] = to_list(out[j]);
             return result;
           })
      // Micro-batches [first, first + count) as one (count, micro_batch_size) array and
      // their lengths (shorter only in an uneven last step; the rest of such a row is 0).
      .def("micro_batch_block",
           [](const B& b, std::uint64_t first, std::uint64_t count) {
             const std::uint64_t total = b.micro_batch_count();
             const std::uint64_t width = b.micro_batch_size();
             if (first > total) first = total;
             if (count > total - first) count = total - first;
             std::vector<std::uint64_t> values(static_cast<std::size_t>(
                 ds::detail::checked_mul("DistributedBatchSampler", "count", count, "micro_batch_size", width)));
             std::vector<std::uint64_t> lengths(static_cast<std::size_t>(count));
             {
               py::gil_scoped_release release;
               for (std::uint64_t j = 0; j < count; ++j) {
                 const ds::MicroBatchId at = b.micro_batch_id(first + j);
                 lengths[static_cast<std::size_t>(j)] =
                     b.fill_micro_batch(at.step, at.micro_batch, values.data() + j * width);
               }
             }
             return py::make_tuple(to_array(std::move(values), b.dataset_size(),
                                            {static_cast<py::ssize_t>(count), static_cast<py::ssize_t>(width)}),
                                   to_list(lengths));
           })
      .def("micro_batch_array", [](const B& b, std::uint64_t id) {
        const ds::MicroBatchId at = b.micro_batch_id(id);
        std::vector<std::uint64_t> v(static_cast<std::size_t>(b.micro_batch_size()));
        {
          py::gil_scoped_release release;
          v.resize(static_cast<std::size_t>(b.fill_micro_batch(at.step, at.micro_batch, v.data())));
        }
        const auto len = static_cast<py::ssize_t>(v.size());
        return to_array(std::move(v), b.dataset_size(), {len});
      });
}

}  // namespace

void register_batch(py::module_& m) {
  using O = ds::BatchSamplerOptions;
  py::class_<O> bo(m, "BatchSamplerOptions");
  bo.def(py::init<>());
  bind_order_options(bo);
  bind_batch_shape_options(bo);
  bo.def_property(
      "epoch_mode", [](const O& o) { return epoch_mode_name(o.epoch_mode); },
      [](O& o, const std::string& text) { o.epoch_mode = epoch_mode_of(text); });

  bind_distributed_batch_sampler<ds::FeistelPermutation>(m, "DistributedBatchSamplerFeistelPermutation");
  bind_distributed_batch_sampler<ds::TorchRandperm>(m, "DistributedBatchSamplerTorchRandperm");
  m.def(
      "make_distributed_batch_sampler",
      [](std::uint64_t n, std::uint64_t rank, std::uint64_t world_size, const O& o,
         const std::optional<ds::TorchRandpermOptions>& torch) -> py::object {
        const ds::World world = make_world(rank, world_size);
        if (torch) return py::cast(ds::DistributedBatchSampler<ds::TorchRandperm>(n, world, o, *torch));
        return py::cast(
            ds::DistributedBatchSampler<ds::FeistelPermutation>(n, world, o, ds::FeistelPermutation::options_type{}));
      },
      py::arg("dataset_size"), py::arg("rank"), py::arg("world_size"), py::arg("options"), py::kw_only(),
      py::arg("torch") = py::none(),
      "Builds a C++ DistributedBatchSampler: DistributedBatchSamplerTorchRandperm when torch "
      "(TorchRandpermOptions) is given, else DistributedBatchSamplerFeistelPermutation.");
}

}  // namespace distsampler_python

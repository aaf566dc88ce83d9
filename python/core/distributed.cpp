// _core bindings of DistributedSampler<FeistelPermutation> and DistributedSampler<TorchRandperm>.
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "distsampler/distributed/guard.hpp"
#include "distsampler/distributed/distributed_sampler.hpp"
#include "distsampler/feistel.hpp"

namespace distsampler_python {
namespace {

template <class P>
void bind_distributed_sampler(py::module_& m, const char* name) {
  using S = ds::DistributedSampler<P>;
  py::class_<S> c(m, name);
  bind_common(c);
  c.def_property_readonly("size", &S::size)
      .def("state", [](const S& s, std::uint64_t done) { return s.state(done).to_text(); })
      .def("__getitem__", [](const S& s, std::uint64_t i) { return s[i]; })
      .def("is_padding", &S::is_padding)
      .def("guard_sums", &guard_sums_of<S>)
      .def("chunk",
           [](const S& s, std::uint64_t first, std::uint64_t count) {
             std::vector<std::uint64_t> out;
             {
               py::gil_scoped_release release;
               if (first < s.size() && count > s.size() - first) count = s.size() - first;
               if (first >= s.size()) count = 0;
               out.resize(static_cast<std::size_t>(count));
               s.fill(first, count, out.data());
             }
             return to_list(out);
           })
      .def("array", [](const S& s, std::uint64_t first, std::uint64_t count) {
        std::vector<std::uint64_t> out;
        {
          py::gil_scoped_release release;
          out.resize(static_cast<std::size_t>(count));
          s.fill(first, count, out.data());
        }
        return to_array(std::move(out), s.dataset_size(), {static_cast<py::ssize_t>(count)});
      });
}

}  // namespace

void register_distributed(py::module_& m) {
  py::class_<ds::SamplerOptions> so(m, "SamplerOptions");
  so.def(py::init<>());
  bind_order_options(so);
  py::class_<ds::TorchRandpermOptions>(m, "TorchRandpermOptions")
      .def(py::init<>())
      .def_property(
          "generation", [](const ds::TorchRandpermOptions& o) { return torch_generation_name(o.generation); },
          [](ds::TorchRandpermOptions& o, const std::string& text) { o.generation = torch_generation_of(text); });

  bind_distributed_sampler<ds::FeistelPermutation>(m, "DistributedSamplerFeistelPermutation");
  bind_distributed_sampler<ds::TorchRandperm>(m, "DistributedSamplerTorchRandperm");
  m.def(
      "make_distributed_sampler",
      [](std::uint64_t n, std::uint64_t rank, std::uint64_t world_size, const ds::SamplerOptions& o,
         const std::optional<ds::TorchRandpermOptions>& torch) -> py::object {
        const ds::World world = make_world(rank, world_size);
        if (torch) return py::cast(ds::DistributedSampler<ds::TorchRandperm>(n, world, o, *torch));
        return py::cast(
            ds::DistributedSampler<ds::FeistelPermutation>(n, world, o, ds::FeistelPermutation::options_type{}));
      },
      py::arg("dataset_size"), py::arg("rank"), py::arg("world_size"), py::arg("options"), py::kw_only(),
      py::arg("torch") = py::none(),
      "Builds a C++ DistributedSampler: DistributedSamplerTorchRandperm when torch (TorchRandpermOptions) is "
      "given, else DistributedSamplerFeistelPermutation.");
}

}  // namespace distsampler_python

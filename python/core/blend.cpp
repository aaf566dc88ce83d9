// _core binding of BlendSampler over NumPy arrays of uint32 document lengths, one per source (kept alive, not copied).
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "distsampler/blend/blend_sampler.hpp"
#include "distsampler/blend/guard.hpp"

namespace distsampler_python {
namespace {

// A BlendSampler over NumPy arrays of uint32 lengths, which it keeps alive (no copy), with
// its BlendCache, so a walk plans each source's pass and window once.
class BlendCore {
 public:
  BlendCore(std::vector<py::array> lengths, ds::BlendSampler sampler)
      : lengths_(std::move(lengths)), sampler_(std::move(sampler)) {}
  BlendCore(const BlendCore& other) : lengths_(other.lengths_), sampler_(other.sampler_) {}

  const ds::BlendSampler& sampler() const noexcept { return sampler_; }

  void set_epoch(std::uint64_t epoch) {
    std::lock_guard<std::mutex> lock(mutex_);
    sampler_.set_epoch(epoch);
  }
  void resume(const ds::SamplerState& state) {
    std::lock_guard<std::mutex> lock(mutex_);
    sampler_.resume(state);
  }

  // This rank's micro-batch number `id` (step-major from the resume point); call without the GIL.
  ds::BlendMicroBatch micro_batch(std::uint64_t id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const ds::MicroBatchId at = sampler_.micro_batch_id(id);
    return sampler_.micro_batch(at.step, at.micro_batch, cache_);
  }

  std::uint64_t total() const { return sampler_.micro_batch_count(); }

 private:
  std::vector<py::array> lengths_;
  ds::BlendSampler sampler_;
  mutable std::mutex mutex_;
  mutable ds::BlendCache cache_;
};

// A micro-batch as a list of sequences, each a list of (source, document, offset, length) tuples.
py::list sequences_of(const ds::BlendMicroBatch& b) {
  py::list out(static_cast<std::size_t>(b.sequences()));
  for (std::uint64_t i = 0; i < b.sequences(); ++i) {
    py::list seq(static_cast<std::size_t>(b.sequence_begin[i + 1] - b.sequence_begin[i]));
    for (std::uint64_t p = b.sequence_begin[i]; p < b.sequence_begin[i + 1]; ++p) {
      const ds::PackPiece& piece = b.pieces[p];
      seq[static_cast<std::size_t>(p - b.sequence_begin[i])] =
          py::make_tuple(b.sources[i], piece.document, piece.offset, piece.length);
    }
    out[static_cast<std::size_t>(i)] = std::move(seq);
  }
  return out;
}

}  // namespace

void register_blend(py::module_& m) {
  using O = ds::BlendOptions;
  py::class_<O> bo(m, "BlendOptions");
  bo.def(py::init<>());
  bind_order_options(bo);
  bind_batch_shape_options(bo);
  bo.def_readwrite("seq_len", &O::seq_len)
      .def_property(
          "mode", [](const O& o) { return std::string(ds::to_string(o.mode)); },
          [](O& o, const std::string& text) { o.mode = ds::parse_pack_mode(text, "BlendSampler: mode"); })
      .def_readwrite("window", &O::window)
      .def_readwrite("chunk", &O::chunk)
      .def_readwrite("split_long", &O::split_long)
      .def_readwrite("plan_limit", &O::plan_limit)
      .def_readwrite("mixing_block", &O::mixing_block)
      .def_readwrite("end_steps", &O::end_steps)
      // (step, weights) pairs: from `step` on, the sources blend by `weights`.
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

  using T = BlendCore;
  py::class_<T> c(m, "BlendSampler");
  bind_held_common(c);
  c.def("guard_sums", [](const T& t) { return guard_sums_of(t.sampler()); })
      .def_property_readonly("guard_layout", [](const T& t) { return ds::guard_shape_of(t.sampler()).layout; })
      .def_property_readonly("micro_batch_count", &T::total)
      .def("state_after_micro_batches",
           [](const T& t, std::uint64_t j) { return t.sampler().state_after_micro_batches(j).to_text(); })
      .def("micro_batch_id",
           [](const T& t, std::uint64_t j) {
             const ds::MicroBatchId id = t.sampler().micro_batch_id(j);
             return py::make_tuple(id.step, id.micro_batch);
           })
      .def_property_readonly("micro_batch_size", [](const T& t) { return t.sampler().micro_batch_size(); })
      .def_property_readonly("global_batch_size", [](const T& t) { return t.sampler().global_batch_size(); })
      .def_property_readonly("mixing_block", [](const T& t) { return t.sampler().options().mixing_block; })
      .def_property_readonly("num_sources", [](const T& t) { return t.sampler().num_sources(); })
      .def("source_sequences",
           [](const T& t, std::size_t source, std::uint64_t position) {
             return t.sampler().source_sequences(source, position);
           })
      .def("source_tokens", [](const T& t, std::size_t source) { return t.sampler().source_packing(source).stats().tokens; })
      // This rank's micro-batches [first, first + count) (numbered step-major).
      .def("micro_batches", [](const T& t, std::uint64_t first, std::uint64_t count) {
        const std::uint64_t total = t.total();
        if (first > total) first = total;
        if (count > total - first) count = total - first;
        std::vector<ds::BlendMicroBatch> out(static_cast<std::size_t>(count));
        {
          py::gil_scoped_release release;
          for (std::uint64_t j = 0; j < count; ++j) out[static_cast<std::size_t>(j)] = t.micro_batch(first + j);
        }
        py::list result(out.size());
        for (std::size_t j = 0; j < out.size(); ++j) result[j] = sequences_of(out[j]);
        return result;
      });
  m.def(
      "make_blend_sampler",
      [](std::vector<py::array> lengths, std::uint64_t rank, std::uint64_t world_size, const ds::BlendOptions& o,
         const std::vector<double>& weights) {
        std::vector<ds::LengthView> views;
        for (const py::array& a : lengths) views.push_back(length_view(a, "BlendSampler", "token count per document"));
        const ds::World world = make_world(rank, world_size);
        std::optional<ds::BlendSampler> built;
        {
          py::gil_scoped_release release;
          built.emplace(views, weights, world, o);
        }
        return BlendCore(std::move(lengths), std::move(*built));
      },
      py::arg("lengths"), py::arg("rank"), py::arg("world_size"), py::arg("options"), py::kw_only(),
      py::arg("weights"),
      "Builds a C++ BlendSampler over one 1-D C-contiguous uint32 array of lengths per source (kept alive, not "
      "copied), blended by weights.");
}

}  // namespace distsampler_python

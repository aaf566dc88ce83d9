// _core binding of PackedSequenceSampler over a NumPy array of uint32 document lengths (kept alive, not copied).
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "distsampler/packing/packed_sequence_sampler.hpp"
#include "distsampler/packing/guard.hpp"

namespace distsampler_python {
namespace {

// A PackedSequenceSampler over a NumPy array of uint32 lengths, which it keeps alive (no
// copy), with the last planned window cached so a walk plans each window once.
class PackCore {
 public:
  PackCore(py::array lengths, ds::PackedSequenceSampler sampler)
      : lengths_(std::move(lengths)), sampler_(std::move(sampler)) {}
  PackCore(const PackCore& other) : lengths_(other.lengths_), sampler_(other.sampler_) {}

  const ds::PackedSequenceSampler& sampler() const noexcept { return sampler_; }

  void set_epoch(std::uint64_t epoch) {
    std::lock_guard<std::mutex> lock(mutex_);
    sampler_.set_epoch(epoch);
  }
  void resume(const ds::SamplerState& state) {
    std::lock_guard<std::mutex> lock(mutex_);
    sampler_.resume(state);
  }

  // This rank's micro-batch number `id` (step-major from the resume point); call without the GIL.
  ds::PackMicroBatch micro_batch(std::uint64_t id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const ds::MicroBatchId at = sampler_.micro_batch_id(id);
    return sampler_.micro_batch(at.step, at.micro_batch, window_);
  }

  std::uint64_t total() const { return sampler_.micro_batch_count(); }

 private:
  py::array lengths_;
  ds::PackedSequenceSampler sampler_;
  mutable std::mutex mutex_;
  mutable ds::PackWindow window_;
};

// A micro-batch as a list of sequences, each a tuple of (document, offset, length) tuples.
py::list sequences_of(const ds::PackMicroBatch& b) {
  py::list out(static_cast<std::size_t>(b.sequences()));
  for (std::uint64_t i = 0; i < b.sequences(); ++i) {
    py::tuple seq(static_cast<std::size_t>(b.sequence_begin[i + 1] - b.sequence_begin[i]));
    for (std::uint64_t p = b.sequence_begin[i]; p < b.sequence_begin[i + 1]; ++p) {
      const ds::PackPiece& piece = b.pieces[p];
      seq[static_cast<std::size_t>(p - b.sequence_begin[i])] =
          py::make_tuple(piece.document, piece.offset, piece.length);
    }
    out[static_cast<std::size_t>(i)] = std::move(seq);
  }
  return out;
}

py::dict pack_stats(const ds::PackEpochStats& s) {
  py::dict d;
  d["documents"] = s.documents;
  d["tokens"] = s.tokens;
  d["sequences"] = s.sequences;
  d["steps"] = s.steps;
  d["read_sequences"] = s.read_sequences;
  d["read_tokens"] = s.read_tokens;
  d["dropped_tokens"] = s.dropped_tokens;
  d["padded_tokens"] = s.read_sequences * s.seq_len - s.read_tokens;
  d["empty_sequences"] = s.empty_sequences;
  d["skipped_documents"] = s.skipped_documents;
  d["split_documents"] = s.split_documents;
  d["padding_efficiency"] = s.padding_efficiency();
  return d;
}

}  // namespace

void register_packing(py::module_& m) {
  using O = ds::PackOptions;
  py::class_<O> po(m, "PackOptions");
  po.def(py::init<>());
  bind_order_options(po);
  bind_batch_shape_options(po);
  po.def_readwrite("seq_len", &O::seq_len)
      .def_property(
          "mode", [](const O& o) { return std::string(ds::to_string(o.mode)); },
          [](O& o, const std::string& text) { o.mode = ds::parse_pack_mode(text, "PackedSequenceSampler: mode"); })
      .def_readwrite("window", &O::window)
      .def_readwrite("chunk", &O::chunk)
      .def_readwrite("split_long", &O::split_long)
      .def_readwrite("plan_limit", &O::plan_limit);

  using T = PackCore;
  py::class_<T> c(m, "PackedSequenceSampler");
  bind_held_common(c);
  c.def("guard_sums", [](const T& t) { return guard_sums_of(t.sampler()); })
      .def_property_readonly("micro_batch_count", &T::total)
      .def("state_after_micro_batches",
           [](const T& t, std::uint64_t j) { return t.sampler().state_after_micro_batches(j).to_text(); })
      .def_property_readonly("micro_batch_size", [](const T& t) { return t.sampler().micro_batch_size(); })
      .def_property_readonly("global_batch_size", [](const T& t) { return t.sampler().global_batch_size(); })
      .def_property_readonly("num_sequences", [](const T& t) { return t.sampler().num_sequences(); })
      .def_property_readonly("plan_bytes", [](const T& t) { return t.sampler().plan_bytes(); })
      .def_property_readonly("plan_stride", [](const T& t) { return t.sampler().plan_stride(); })
      .def_property_readonly("stats", [](const T& t) { return pack_stats(t.sampler().stats()); })
      // This rank's micro-batch k of `step`: micro_batch_size sequences, each a tuple of
      // (document, offset, length) pieces; an empty sequence is ().
      .def("micro_batch",
           [](const T& t, std::uint64_t step, std::uint64_t k) {
             ds::PackMicroBatch b;
             {
               py::gil_scoped_release release;
               b = t.sampler().micro_batch(step, k);
             }
             return sequences_of(b);
           })
      // This rank's micro-batches [first, first + count) (numbered step * K + k).
      .def("micro_batches", [](const T& t, std::uint64_t first, std::uint64_t count) {
        const std::uint64_t total = t.total();
        if (first > total) first = total;
        if (count > total - first) count = total - first;
        std::vector<ds::PackMicroBatch> out(static_cast<std::size_t>(count));
        {
          py::gil_scoped_release release;
          for (std::uint64_t j = 0; j < count; ++j) out[static_cast<std::size_t>(j)] = t.micro_batch(first + j);
        }
        py::list result(out.size());
        for (std::size_t j = 0; j < out.size(); ++j) result[j] = sequences_of(out[j]);
        return result;
      });
  m.def(
      "make_packed_sequence_sampler",
      [](py::array lengths, std::uint64_t rank, std::uint64_t world_size, const ds::PackOptions& o) {
        const ds::LengthView view = length_view(lengths, "PackedSequenceSampler", "token count per document");
        const ds::World world = make_world(rank, world_size);
        std::optional<ds::PackedSequenceSampler> built;
        {
          py::gil_scoped_release release;
          built.emplace(view.size, view, world, o);
        }
        return PackCore(std::move(lengths), std::move(*built));
      },
      py::arg("lengths"), py::arg("rank"), py::arg("world_size"), py::arg("options"),
      "Builds a C++ PackedSequenceSampler over a 1-D C-contiguous uint32 array of lengths (kept alive, not copied).");
}

}  // namespace distsampler_python

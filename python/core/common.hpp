// What every binding file of the _core extension shares: conversions, state parsing, the common sampler members.
// SPDX-License-Identifier: MIT
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

// The vocabulary every binding file shares; each file includes its own family's headers (an edit
// of one family's header recompiles that family's binding file only).
#include "distsampler/error.hpp"
#include "distsampler/lengths.hpp"
#include "distsampler/options.hpp"
#include "distsampler/overlap_check.hpp"
#include "distsampler/permutation.hpp"
#include "distsampler/state.hpp"
#include "distsampler/worker_schedule.hpp"
#include "distsampler/world.hpp"

namespace distsampler_python {

namespace py = pybind11;
namespace ds = distsampler;

// One registration function per family, each defined in its own file and called once by
// module.cpp. A class is bound under its C++ name (DistributedSampler<TorchRandperm> is
// DistributedSamplerTorchRandperm); a factory under make_<snake_case C++ name>.
void register_distributed(py::module_& m);
void register_batch(py::module_& m);
void register_shards(py::module_& m);
void register_tokens(py::module_& m);
void register_packing(py::module_& m);
void register_mixture(py::module_& m);
void register_weighted(py::module_& m);
void register_files(py::module_& m);
void register_exchange(py::module_& m);
void register_streams(py::module_& m);
void register_blend(py::module_& m);
void register_world(py::module_& m);
void register_mesh(py::module_& m);
void register_state(py::module_& m);
void register_verify(py::module_& m);

/// A list of Python ints from C++ indices (the fastest hand-over to a Python loop).
inline py::list to_list(const std::vector<std::uint64_t>& values) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(values.size()));
  if (list == nullptr) throw py::error_already_set();
  for (std::size_t i = 0; i < values.size(); ++i) {
    PyObject* item = PyLong_FromUnsignedLongLong(values[i]);
    if (item == nullptr) {
      Py_DECREF(list);
      throw py::error_already_set();
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), item);
  }
  return py::reinterpret_steal<py::list>(list);
}

/// A NumPy array of `shape` from C++ indices: int64 (what torch indexes with) unless an
/// index could exceed its range.
inline py::array to_array(std::vector<std::uint64_t>&& values, std::uint64_t dataset_size,
                          std::vector<py::ssize_t> shape) {
  if (dataset_size - 1 > static_cast<std::uint64_t>(INT64_MAX) && dataset_size != 0) {
    py::array_t<std::uint64_t> out(shape);
    std::copy(values.begin(), values.end(), out.mutable_data());
    return out;
  }
  py::array_t<std::int64_t> out(shape);
  auto* data = out.mutable_data();
  for (std::size_t i = 0; i < values.size(); ++i) data[i] = static_cast<std::int64_t>(values[i]);
  return out;
}

/// A state from its text form; throws state_error naming the first problem.
inline ds::SamplerState parse_state(const std::string& text) { return ds::SamplerState::from_text(text); }

/// The tail named `text`; throws config_error naming the parameter `tail`.
inline ds::Tail tail_of(const std::string& text) { return ds::parse_tail(text, "tail"); }

/// The world (rank, world_size); throws config_error unless 0 <= rank < world_size.
inline ds::World make_world(std::uint64_t rank, std::uint64_t world_size) { return ds::World(rank, world_size); }

/// The torch generation named `generation` ("v1" or "v2.7"); config_error otherwise.
inline ds::TorchGeneration torch_generation_of(const std::string& generation) {
  if (generation == "v1") return ds::TorchGeneration::v1;
  if (generation == "v2.7") return ds::TorchGeneration::v2_7;
  throw ds::config_error("torch_generation \"" + generation + "\" is unknown (expected \"v1\" or \"v2.7\")");
}

/// "v1" or "v2.7", the name torch_generation_of reads.
inline std::string torch_generation_name(ds::TorchGeneration generation) {
  return generation == ds::TorchGeneration::v1 ? "v1" : "v2.7";
}

// Options cross into Python by field: each options struct is a class with a default
// constructor and one read-write attribute per field (enums by the names their parsers
// read), and each factory takes (data, rank, world_size, options). The Python package sets
// the fields from its own arguments; the C++ sampler validates them when it is built.

/// The order fields (OrderOptions): shuffle, seed, tail ("pad", "drop" or "uneven").
template <class O>
void bind_order_options(py::class_<O>& c) {
  c.def_readwrite("shuffle", &O::shuffle)
      .def_readwrite("seed", &O::seed)
      .def_property(
          "tail", [](const O& o) { return std::string(ds::to_string(o.tail)); },
          [](O& o, const std::string& text) { o.tail = tail_of(text); });
}

/// The batch shape fields (BatchShapeOptions): micro_batch_size, accumulation_steps, global_batch_size.
template <class O>
void bind_batch_shape_options(py::class_<O>& c) {
  c.def_readwrite("micro_batch_size", &O::micro_batch_size)
      .def_readwrite("accumulation_steps", &O::accumulation_steps)
      .def_readwrite("global_batch_size", &O::global_batch_size);
}

/// The epoch mode named `text` ("manual" or "auto_advance"); config_error otherwise.
inline ds::EpochMode epoch_mode_of(const std::string& text) {
  if (text == "manual") return ds::EpochMode::manual;
  if (text == "auto_advance") return ds::EpochMode::auto_advance;
  throw ds::config_error("epoch_mode \"" + text + "\" is unknown (expected \"manual\" or \"auto_advance\")");
}

/// "manual" or "auto_advance", the name epoch_mode_of reads.
inline std::string epoch_mode_name(ds::EpochMode mode) {
  return mode == ds::EpochMode::auto_advance ? "auto_advance" : "manual";
}

/// The enumerator named `text` among `named` (name, value) pairs, or a config_error
/// "who: what \"text\" is unknown (expected \"a\", \"b\" or \"c\")".
template <class E>
E enum_named(const std::string& text, const char* who, const char* what,
             std::initializer_list<std::pair<const char*, E>> named) {
  std::string expected;
  std::size_t i = 0;
  for (const auto& [name, value] : named) {
    if (text == name) return value;
    expected += std::string(i == 0 ? "" : i + 1 == named.size() ? " or " : ", ") + '"' + name + '"';
    ++i;
  }
  throw ds::config_error(std::string(who) + ": " + what + " \"" + text + "\" is unknown (expected " + expected + ")");
}

/// (slots: guard_slots_of, ReadSums words) of sampler `s` over the World it was built for: its
/// family's segment_sums (reads, padding flagged, what the segment leaves unread fed as
/// skips), what the Python mesh guard's cover check adds up (check_mesh_records).
template <class S>
py::tuple guard_sums_of(const S& s) {
  const ds::ReadSums sums = segment_sums(s, ds::World(s.rank(), s.world_size()));
  return py::make_tuple(ds::guard_slots_of(s), std::vector<std::uint64_t>(sums.words().begin(), sums.words().end()));
}

/// The guards' view of a sampler whose family has guard points (its guard.hpp): `guard_sums`
/// (guard_sums_of) and `guard_layout` (its GuardShape's layout: the hash of what defines its
/// reads beside the key, e.g. a weighted sampler's weights), what the Python guard compares.
template <class S>
void bind_guard(py::class_<S>& c) {
  c.def("guard_sums", &guard_sums_of<S>)
      .def_property_readonly("guard_layout", [](const S& s) { return ds::guard_shape_of(s).layout; });
}

/// What every resumable sampler of the module has: its epoch, world, key and state text.
template <class S>
void bind_common(py::class_<S>& c) {
  c.def_property_readonly("epoch", &S::epoch)
      .def_property_readonly("start", &S::start)
      .def_property_readonly("dataset_size", &S::dataset_size)
      .def_property_readonly("rank", &S::rank)
      .def_property_readonly("world_size", &S::world_size)
      .def_property_readonly("key", [](const S& s) { return s.key().describe(); })
      .def_property_readonly("fingerprint", [](const S& s) { return s.key().fingerprint(); })
      .def("set_epoch", &S::set_epoch)
      .def("copy", [](const S& s) { return S(s); })
      .def("resume", [](S& s, const std::string& text) { s.resume(parse_state(text)); });
}

/// bind_common for a binding that holds its C++ sampler (the token and packing cores, whose
/// `sampler()` is the C++ sampler and which set_epoch / resume themselves), plus the shared
/// step and layout members.
template <class T>
void bind_held_common(py::class_<T>& c) {
  c.def_property_readonly("num_steps", [](const T& t) { return t.sampler().num_steps(); })
      .def_property_readonly("accumulation_steps", [](const T& t) { return t.sampler().accumulation_steps(); })
      .def_property_readonly("epoch", [](const T& t) { return t.sampler().epoch(); })
      .def_property_readonly("start", [](const T& t) { return t.sampler().start(); })
      .def_property_readonly("dataset_size", [](const T& t) { return t.sampler().dataset_size(); })
      .def_property_readonly("rank", [](const T& t) { return t.sampler().rank(); })
      .def_property_readonly("world_size", [](const T& t) { return t.sampler().world_size(); })
      .def_property_readonly("layout_hash", [](const T& t) { return t.sampler().layout_hash(); })
      .def_property_readonly("key", [](const T& t) { return t.sampler().key().describe(); })
      .def_property_readonly("fingerprint", [](const T& t) { return t.sampler().key().fingerprint(); })
      .def("set_epoch", &T::set_epoch)
      .def("copy", [](const T& t) { return T(t); })
      .def("resume", [](T& t, const std::string& text) { t.resume(parse_state(text)); })
      .def("state",
           [](const T& t, std::uint64_t steps, std::uint64_t k) { return t.sampler().state(steps, k).to_text(); });
}

/// What the batch and mixture samplers share: steps of micro-batches, epoch, state.
template <class S>
void bind_step_sampler(py::class_<S>& c) {
  bind_common(c);
  c.def_property_readonly("num_steps", &S::num_steps)
      .def_property_readonly("accumulation_steps", &S::accumulation_steps)
      .def_property_readonly("micro_batch_size", &S::micro_batch_size)
      .def_property_readonly("global_batch_size", &S::global_batch_size)
      .def("state",
           [](const S& s, std::uint64_t steps, std::uint64_t micro) { return s.state(steps, micro).to_text(); })
      .def("is_padding", &S::is_padding)
      // The rank's micro-batches in step-major order from the resume point; step 0 of a
      // resumed epoch may hold fewer than accumulation_steps (micro_batches_in_step).
      .def_property_readonly("micro_batch_count", &S::micro_batch_count)
      .def("micro_batches_in_step", &S::micro_batches_in_step)
      .def("micro_batch_id",
           [](const S& s, std::uint64_t j) {
             const ds::MicroBatchId id = s.micro_batch_id(j);
             return py::make_tuple(id.step, id.micro_batch);
           })
      .def("state_after_micro_batches",
           [](const S& s, std::uint64_t j) { return s.state_after_micro_batches(j).to_text(); });
}

// The lengths a sampler reads, as a view of `lengths`: a 1-D C-contiguous uint32 array (the
// Python package converts other integer arrays once, with messages for bad values).
// config_error naming `sampler` and what one length is (`per`) otherwise.
inline ds::LengthView length_view(const py::array& lengths, const char* sampler, const char* per) {
  if (lengths.ndim() != 1 || !py::isinstance<py::array_t<std::uint32_t>>(lengths) ||
      (lengths.flags() & py::array::c_style) == 0) {
    throw ds::config_error(std::string(sampler) + ": lengths is not a 1-D C-contiguous uint32 array (expected one uint32 " +
                           per + "; distsampler.torch." + sampler + " converts other integer arrays)");
  }
  return ds::LengthView(static_cast<const std::uint32_t*>(lengths.data()), static_cast<std::uint64_t>(lengths.size()));
}

}  // namespace distsampler_python

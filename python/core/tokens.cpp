// _core binding of TokenBatchSampler over a NumPy array of uint32 lengths (kept alive, not copied).
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "distsampler/tokens/guard.hpp"
#include "distsampler/tokens/token_batch_sampler.hpp"

namespace distsampler_python {
namespace {

// Buffer exports that keep the memory of a lengths array in place: one on the array and one
// on the object that owns its memory at the end of its base chain (a memory map's mmap,
// whose close() then raises BufferError instead of unmapping what the sampler reads).
class LengthsLock {
 public:
  explicit LengthsLock(const py::array& lengths) {
    exports_.push_back(std::make_unique<py::buffer_info>(py::buffer(lengths).request()));
    py::object owner = lengths;
    while (py::isinstance<py::array>(owner) && !owner.attr("base").is_none()) owner = owner.attr("base");
    if (!py::isinstance<py::array>(owner) && PyObject_CheckBuffer(owner.ptr()) == 1) {
      exports_.push_back(std::make_unique<py::buffer_info>(py::reinterpret_borrow<py::buffer>(owner).request()));
    }
  }

 private:
  std::vector<std::unique_ptr<py::buffer_info>> exports_;
};

// A TokenBatchSampler over a NumPy array of uint32 lengths, which it keeps alive and
// exported (LengthsLock): the sampler reads the array's memory (no copy). Every call
// first checks that the array still has the memory and size it was built on (NumPy's
// resize(refcheck=False) reallocates despite exports) and raises state_error otherwise.
// The last planned window is cached so a walk over consecutive micro-batches plans each
// window once.
class TokenCore {
 public:
  TokenCore(py::array lengths, ds::TokenBatchSampler sampler)
      : lengths_(std::move(lengths)),
        lock_(std::make_shared<LengthsLock>(lengths_)),
        data_(lengths_.data()),
        size_(lengths_.size()),
        sampler_(std::move(sampler)) {}
  TokenCore(const TokenCore& other)
      : lengths_(other.lengths_),
        lock_(other.lock_),
        data_(other.data_),
        size_(other.size_),
        sampler_(other.sampler_) {}

  // The sampler, once the lengths are known to be where it reads them; call with the GIL.
  const ds::TokenBatchSampler& sampler() const {
    if (lengths_.data() != data_ || lengths_.size() != size_ || lengths_.ndim() != 1) {
      throw ds::state_error(
          "TokenBatchSampler: lengths was resized or reallocated after the sampler was built (expected the array "
          "unchanged while the sampler reads it; build a new TokenBatchSampler)");
    }
    return sampler_;
  }

  void set_epoch(std::uint64_t epoch) {
    (void)sampler();
    std::lock_guard<std::mutex> lock(mutex_);
    sampler_.set_epoch(epoch);
    window_.reset();
  }
  void resume(const ds::SamplerState& state) {
    (void)sampler();
    std::lock_guard<std::mutex> lock(mutex_);
    sampler_.resume(state);
    window_.reset();
  }

  // This rank's micro-batch number `id` (= step * K + k); call without the GIL.
  ds::TokenMicroBatch micro_batch(std::uint64_t id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t k = sampler_.accumulation_steps(), step = id / k;
    if (!window_ || step < window_->first_step() || step >= window_->end_step()) window_ = sampler_.window(step);
    return window_->micro_batch(step, id % k, sampler_.rank());
  }

  std::uint64_t total() const {
    return ds::detail::checked_mul("TokenBatchSampler", "num_steps", sampler_.num_steps(), "accumulation_steps",
                                   sampler_.accumulation_steps());
  }

 private:
  py::array lengths_;
  std::shared_ptr<LengthsLock> lock_;  // shared by copies; released with the GIL held (Python frees TokenCore)
  const void* data_;
  py::ssize_t size_;
  ds::TokenBatchSampler sampler_;
  mutable std::mutex mutex_;
  mutable std::optional<ds::TokenWindow> window_;
};

ds::TokenCost token_cost_of(const std::string& text) {
  return enum_named<ds::TokenCost>(
      text, "TokenBatchSampler", "cost",
      {{"padded", ds::TokenCost::padded}, {"linear", ds::TokenCost::linear}, {"quadratic", ds::TokenCost::quadratic}});
}

ds::Oversize oversize_of(const std::string& text) {
  return enum_named<ds::Oversize>(
      text, "TokenBatchSampler", "oversize",
      {{"error", ds::Oversize::error}, {"own_batch", ds::Oversize::own_batch}, {"skip", ds::Oversize::skip}});
}

py::dict token_stats(const ds::TokenEpochStats& s) {
  py::dict d;
  d["steps"] = s.steps;
  d["micro_batches"] = s.micro_batches;
  d["empty_micro_batches"] = s.empty_micro_batches;
  d["splits"] = s.splits;
  d["merges"] = s.merges;
  d["skipped_samples"] = s.skipped_samples;
  d["oversize_batches"] = s.oversize_batches;
  d["tokens"] = s.tokens;
  d["padded"] = s.padded;
  d["padding_efficiency"] = s.padding_efficiency();
  d["max_step_ratio"] = s.max_step_ratio;
  d["mean_step_ratio"] = s.mean_step_ratio;
  d["steps_with_empty_rank"] = s.steps_with_empty_rank;
  return d;
}

}  // namespace

void register_tokens(py::module_& m) {
  using O = ds::TokenBatchOptions;
  py::class_<O> to(m, "TokenBatchOptions");
  to.def(py::init<>());
  bind_order_options(to);
  to.def_readwrite("max_tokens", &O::max_tokens)
      .def_property(
          "cost", [](const O& o) { return std::string(ds::to_string(o.cost)); },
          [](O& o, const std::string& text) { o.cost = token_cost_of(text); })
      .def_readwrite("quadratic_q", &O::quadratic_q)
      .def_readwrite("max_samples", &O::max_samples)
      .def_readwrite("batch_multiple", &O::batch_multiple)
      .def_readwrite("window", &O::window)
      .def_readwrite("accumulation_steps", &O::accumulation_steps)
      .def_readwrite("longest_first", &O::longest_first)
      .def_property(
          "oversize", [](const O& o) { return std::string(ds::to_string(o.oversize)); },
          [](O& o, const std::string& text) { o.oversize = oversize_of(text); });

  using T = TokenCore;
  py::class_<T> c(m, "TokenBatchSampler");
  c.attr("max_group") = ds::TokenBatchSampler::max_group;
  bind_held_common(c);
  c.def("guard_sums", [](const T& t) { return guard_sums_of(t.sampler()); })
      .def_property_readonly("stats", [](const T& t) { return token_stats(t.sampler().stats()); })
      // Every step holds accumulation_steps micro-batches (numbered step * K + k).
      .def_property_readonly("micro_batch_count", &T::total)
      .def("state_after_micro_batches",
           [](const T& t, std::uint64_t j) {
             const std::uint64_t k = t.sampler().accumulation_steps();
             return t.sampler().state(j / k, j % k).to_text();
           })
      // (indices, tokens, padded, oversize) of this rank's micro-batch k of `step`.
      .def("micro_batch",
           [](const T& t, std::uint64_t step, std::uint64_t k) {
             if (k >= t.sampler().accumulation_steps()) (void)t.sampler().micro_batch(step, k);  // throws its message
             if (step >= t.sampler().num_steps()) (void)t.sampler().window(step);                // throws its message
             ds::TokenMicroBatch b;
             {
               py::gil_scoped_release release;
               b = t.micro_batch(step * t.sampler().accumulation_steps() + k);
             }
             return py::make_tuple(to_list(b.indices), b.tokens, b.padded, b.oversize);
           })
      // This rank's micro-batches [first, first + count) (numbered step * K + k) as lists;
      // an empty micro-batch is an empty list.
      .def("micro_batches", [](const T& t, std::uint64_t first, std::uint64_t count) {
        (void)t.sampler();
        const std::uint64_t total = t.total();
        if (first > total) first = total;
        if (count > total - first) count = total - first;
        std::vector<std::vector<std::uint64_t>> out(static_cast<std::size_t>(count));
        {
          py::gil_scoped_release release;
          for (std::uint64_t j = 0; j < count; ++j) out[static_cast<std::size_t>(j)] = t.micro_batch(first + j).indices;
        }
        py::list result(out.size());
        for (std::size_t j = 0; j < out.size(); ++j) result[j] = to_list(out[j]);
        return result;
      });
  m.def(
      "make_token_batch_sampler",
      [](py::array lengths, std::uint64_t rank, std::uint64_t world_size, const ds::TokenBatchOptions& o) {
        const ds::LengthView view = length_view(lengths, "TokenBatchSampler", "length per sample");
        const ds::World world = make_world(rank, world_size);
        std::optional<ds::TokenBatchSampler> built;
        {
          py::gil_scoped_release release;
          built.emplace(view.size, view, world, o);
        }
        return TokenCore(std::move(lengths), std::move(*built));
      },
      py::arg("lengths"), py::arg("rank"), py::arg("world_size"), py::arg("options"),
      "Builds a C++ TokenBatchSampler over a 1-D C-contiguous uint32 array of lengths (kept alive, not copied).");
}

}  // namespace distsampler_python

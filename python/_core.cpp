// distsampler Python extension: binds the C++ samplers of include/distsampler to Python (no second implementation).
// SPDX-License-Identifier: MIT
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "distsampler/distsampler.hpp"

namespace py = pybind11;
namespace ds = distsampler;

namespace {

// Every C++ sampler the module builds is made by one of the make_* functions below, so
// a change of a constructor's shape is adapted in one place.

ds::SamplerOptions sampler_options(bool shuffle, std::uint64_t seed, ds::Tail tail) {
  ds::SamplerOptions o;
  o.shuffle = shuffle;
  o.seed = seed;
  o.tail = tail;
  return o;
}

ds::TorchRandpermOptions torch_options(const std::string& generation) {
  ds::TorchRandpermOptions o;
  if (generation == "v1") {
    o.generation = ds::TorchGeneration::v1;
  } else if (generation == "v2.7") {
    o.generation = ds::TorchGeneration::v2_7;
  } else {
    throw ds::config_error("torch_generation \"" + generation + "\" is unknown (expected \"v1\" or \"v2.7\")");
  }
  return o;
}

template <class P>
ds::DistributedSampler<P> make_sampler(std::uint64_t n, const ds::World& world, const ds::SamplerOptions& options,
                                       const typename P::options_type& permutation) {
  return ds::DistributedSampler<P>(n, world, options, permutation);
}

// global_batch 0: accumulation_steps decides the global batch.
ds::BatchSamplerOptions batch_options(std::uint64_t micro, std::uint64_t accumulation, std::uint64_t global_batch,
                                      bool shuffle, std::uint64_t seed, ds::Tail tail) {
  ds::BatchSamplerOptions o;
  o.micro_batch_size = micro;
  if (global_batch != 0) {
    o.global_batch_size = global_batch;
  } else {
    o.accumulation_steps = accumulation;
  }
  o.shuffle = shuffle;
  o.seed = seed;
  o.tail = tail;
  return o;
}

template <class P>
ds::DistributedBatchSampler<P> make_batch_sampler(std::uint64_t n, const ds::World& world,
                                                  const ds::BatchSamplerOptions& options,
                                                  const typename P::options_type& permutation) {
  return ds::DistributedBatchSampler<P>(n, world, options, permutation);
}

ds::StreamingShardSampler make_shard_sampler(std::vector<std::uint64_t> sizes, const ds::World& world,
                                             std::uint64_t num_workers, bool shuffle, std::uint64_t seed,
                                             ds::Tail tail) {
  ds::ShardSamplerOptions o;
  o.shuffle = shuffle;
  o.seed = seed;
  o.tail = tail;
  return ds::StreamingShardSampler(std::move(sizes), world, o.with_num_workers(num_workers));
}

void shard_resume(ds::StreamingShardSampler& s, const ds::SamplerState& state) { s.resume(state); }

// A list of Python ints from C++ indices (the fastest hand-over to a Python loop).
py::list to_list(const std::vector<std::uint64_t>& values) {
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

// int64 (what torch indexes with) unless an index could exceed its range.
py::array to_array(std::vector<std::uint64_t>&& values, std::uint64_t dataset_size, std::vector<py::ssize_t> shape) {
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

ds::SamplerState parse_state(const std::string& text) { return ds::SamplerState::from_text(text); }

// What every resumable sampler of the module has: its epoch, world, key and state text.
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

template <class P>
void bind_sampler(py::module_& m, const char* name) {
  using S = ds::DistributedSampler<P>;
  py::class_<S> c(m, name);
  bind_common(c);
  c.def_property_readonly("size", &S::size)
      .def("state", [](const S& s, std::uint64_t done) { return s.state(done).to_text(); })
      .def("__getitem__", [](const S& s, std::uint64_t i) { return s[i]; })
      .def("is_padding", &S::is_padding)
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

// What the batch and mixture samplers share: steps of micro-batches, epoch, state.
template <class S>
void bind_step_sampler(py::class_<S>& c) {
  bind_common(c);
  c.def_property_readonly("num_steps", &S::num_steps)
      .def_property_readonly("accumulation_steps", &S::accumulation_steps)
      .def_property_readonly("micro_batch_size", &S::micro_batch_size)
      .def_property_readonly("global_batch_size", &S::global_batch_size)
      .def("state",
           [](const S& s, std::uint64_t steps, std::uint64_t micro) { return s.state(steps, micro).to_text(); })
      .def("is_padding", &S::is_padding);
}

template <class P>
void bind_batch_sampler(py::module_& m, const char* name) {
  using B = ds::DistributedBatchSampler<P>;
  py::class_<B> c(m, name);
  bind_step_sampler(c);
  c.def("micro_batch_length", &B::micro_batch_length)
      // Micro-batches number step * K + k; returns those in [first, first + count) as lists.
      .def("micro_batches",
           [](const B& b, std::uint64_t first, std::uint64_t count) {
             const std::uint64_t k = b.micro_batches_per_step(), total = b.num_steps() * k;
             if (first > total) first = total;
             if (count > total - first) count = total - first;
             std::vector<std::vector<std::uint64_t>> out(static_cast<std::size_t>(count));
             {
               py::gil_scoped_release release;
               for (std::uint64_t j = 0; j < count; ++j) {
                 const std::uint64_t id = first + j;
                 auto& v = out[static_cast<std::size_t>(j)];
                 v.resize(static_cast<std::size_t>(b.micro_batch_size()));
                 v.resize(static_cast<std::size_t>(b.fill_micro_batch(id / k, id % k, v.data())));
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
             const std::uint64_t k = b.micro_batches_per_step(), total = b.num_steps() * k;
             const std::uint64_t width = b.micro_batch_size();
             if (first > total) first = total;
             if (count > total - first) count = total - first;
             std::vector<std::uint64_t> values(static_cast<std::size_t>(count * width));
             std::vector<std::uint64_t> lengths(static_cast<std::size_t>(count));
             {
               py::gil_scoped_release release;
               for (std::uint64_t j = 0; j < count; ++j) {
                 const std::uint64_t id = first + j;
                 lengths[static_cast<std::size_t>(j)] = b.fill_micro_batch(id / k, id % k, values.data() + j * width);
               }
             }
             return py::make_tuple(to_array(std::move(values), b.dataset_size(),
                                            {static_cast<py::ssize_t>(count), static_cast<py::ssize_t>(width)}),
                                   to_list(lengths));
           })
      .def("micro_batch_array", [](const B& b, std::uint64_t id) {
        const std::uint64_t k = b.micro_batches_per_step();
        std::vector<std::uint64_t> v(static_cast<std::size_t>(b.micro_batch_size()));
        {
          py::gil_scoped_release release;
          v.resize(static_cast<std::size_t>(b.fill_micro_batch(id / k, id % k, v.data())));
        }
        const auto len = static_cast<py::ssize_t>(v.size());
        return to_array(std::move(v), b.dataset_size(), {len});
      });
}

py::list schedule_list(const std::vector<ds::ScheduledShard>& plan) {
  py::list result(plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i) {
    result[i] = py::make_tuple(plan[i].shard, plan[i].first_slot, plan[i].last_slot, plan[i].samples);
  }
  return result;
}

void bind_shard_sampler(py::module_& m) {
  using Z = ds::StreamingShardSampler;
  py::class_<Z>(m, "ShardSampler")
      .def_property_readonly("epoch", &Z::epoch)
      .def_property_readonly("dataset_size", &Z::dataset_size)
      .def_property_readonly("num_workers", &Z::num_workers)
      .def_property_readonly("size", &Z::size)
      .def_property_readonly("fingerprint", [](const Z& z) { return z.state(0).fingerprint; })
      .def("set_epoch", &Z::set_epoch)
      .def("resume", [](Z& z, const std::string& text) { shard_resume(z, parse_state(text)); })
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
}

// A TokenBatchSampler over a NumPy array of uint32 lengths, which it keeps alive: the
// sampler reads the array's memory (no copy). The last planned window is cached so a walk
// over consecutive micro-batches plans each window once.
class TokenCore {
 public:
  TokenCore(py::array lengths, ds::TokenBatchSampler sampler)
      : lengths_(std::move(lengths)), sampler_(std::move(sampler)) {}
  TokenCore(const TokenCore& other) : lengths_(other.lengths_), sampler_(other.sampler_) {}

  const ds::TokenBatchSampler& sampler() const noexcept { return sampler_; }

  void set_epoch(std::uint64_t epoch) {
    std::lock_guard<std::mutex> lock(mutex_);
    sampler_.set_epoch(epoch);
    window_.reset();
  }
  void resume(const ds::SamplerState& state) {
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

  std::uint64_t total() const noexcept { return sampler_.num_steps() * sampler_.accumulation_steps(); }

 private:
  py::array lengths_;
  ds::TokenBatchSampler sampler_;
  mutable std::mutex mutex_;
  mutable std::optional<ds::TokenWindow> window_;
};

// The enumerator named `text` among `named` (name, value) pairs, or a config_error
// "who: what \"text\" is unknown (expected \"a\", \"b\" or \"c\")".
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

// The lengths as the sampler reads them: a 1-D C-contiguous uint32 array (the Python
// package converts other integer arrays once, with messages for bad values).
ds::LengthView length_view(const py::array& lengths) {
  if (lengths.ndim() != 1 || !py::isinstance<py::array_t<std::uint32_t>>(lengths) ||
      (lengths.flags() & py::array::c_style) == 0) {
    throw ds::config_error(
        "TokenBatchSampler: lengths is not a 1-D C-contiguous uint32 array (expected one uint32 "
        "length per sample; distsampler.torch.TokenBatchSampler converts other integer arrays)");
  }
  return ds::LengthView(static_cast<const std::uint32_t*>(lengths.data()), static_cast<std::uint64_t>(lengths.size()));
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

void bind_token_sampler(py::module_& m) {
  using T = TokenCore;
  py::class_<T>(m, "TokenSampler")
      .def_property_readonly("num_steps", [](const T& t) { return t.sampler().num_steps(); })
      .def_property_readonly("accumulation_steps", [](const T& t) { return t.sampler().accumulation_steps(); })
      .def_property_readonly("epoch", [](const T& t) { return t.sampler().epoch(); })
      .def_property_readonly("start", [](const T& t) { return t.sampler().start(); })
      .def_property_readonly("dataset_size", [](const T& t) { return t.sampler().dataset_size(); })
      .def_property_readonly("rank", [](const T& t) { return t.sampler().rank(); })
      .def_property_readonly("world_size", [](const T& t) { return t.sampler().world_size(); })
      .def_property_readonly("layout_hash", [](const T& t) { return t.sampler().layout_hash(); })
      .def_property_readonly("key", [](const T& t) { return t.sampler().key().describe(); })
      .def_property_readonly("fingerprint", [](const T& t) { return t.sampler().key().fingerprint(); })
      .def_property_readonly("stats", [](const T& t) { return token_stats(t.sampler().stats()); })
      .def("set_epoch", &T::set_epoch)
      .def("copy", [](const T& t) { return T(t); })
      .def("resume", [](T& t, const std::string& text) { t.resume(parse_state(text)); })
      .def("state",
           [](const T& t, std::uint64_t steps, std::uint64_t k) { return t.sampler().state(steps, k).to_text(); })
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
}

ds::Tail tail_of(const std::string& text) { return ds::parse_tail(text, "tail"); }

ds::World make_world(std::uint64_t rank, std::uint64_t world_size) { return ds::World(rank, world_size); }

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

ds::WeightedSampler make_weighted_sampler(const std::vector<double>& weights, const ds::World& world,
                                          std::uint64_t num_samples, bool replacement, std::uint64_t seed,
                                          ds::Tail tail) {
  return ds::WeightedSampler(weights, world,
                             ds::WeightedSamplerOptions()
                                 .with_num_samples(num_samples)
                                 .with_replacement(replacement)
                                 .with_seed(seed)
                                 .with_tail(tail));
}

void bind_mixture_sampler(py::module_& m) {
  using X = ds::MixtureSampler;
  py::class_<X> c(m, "MixtureSampler");
  bind_step_sampler(c);
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
      // Micro-batches number step * K + k; those in [first, first + count) as lists of
      // (source, index) pairs.
      .def("micro_batches", [](const X& x, std::uint64_t first, std::uint64_t count) {
        const std::uint64_t k = x.micro_batches_per_step(), total = x.num_steps() * k;
        if (first > total) first = total;
        if (count > total - first) count = total - first;
        std::vector<std::vector<ds::MixtureIndex>> out(static_cast<std::size_t>(count));
        {
          py::gil_scoped_release release;
          for (std::uint64_t j = 0; j < count; ++j)
            out[static_cast<std::size_t>(j)] = x.micro_batch((first + j) / k, (first + j) % k);
        }
        py::list result(out.size());
        for (std::size_t j = 0; j < out.size(); ++j) {
          py::list batch(out[j].size());
          for (std::size_t e = 0; e < out[j].size(); ++e) batch[e] = py::make_tuple(out[j][e].source, out[j][e].index);
          result[j] = batch;
        }
        return result;
      });
}

void bind_weighted_sampler(py::module_& m) {
  using V = ds::WeightedSampler;
  py::class_<V> c(m, "WeightedSampler");
  bind_common(c);
  c.def_property_readonly("size", &V::size)
      .def_property_readonly("num_samples", [](const V& v) { return v.options().num_samples; })
      .def("state", [](const V& v, std::uint64_t done) { return v.state(done).to_text(); })
      .def("chunk", [](const V& v, std::uint64_t first, std::uint64_t count) {
        std::vector<std::uint64_t> out;
        {
          py::gil_scoped_release release;
          const std::uint64_t size = v.size();
          if (first > size) first = size;
          if (count > size - first) count = size - first;
          out.reserve(static_cast<std::size_t>(count));
          for (std::uint64_t i = 0; i < count; ++i) out.push_back(v[first + i]);
        }
        return to_list(out);
      });
}

}  // namespace

void register_files(py::module_& m);  // python/core/files.cpp

PYBIND11_MODULE(_core, m) {
  m.doc() = "C++ core of distsampler (use the distsampler package, not this module).";
  auto config = py::register_exception<ds::config_error>(m, "ConfigError", PyExc_ValueError);
  auto state = py::register_exception<ds::state_error>(m, "StateError", PyExc_ValueError);
  (void)config;
  (void)state;
  m.attr("version") = std::to_string(DISTSAMPLER_VERSION_MAJOR) + "." + std::to_string(DISTSAMPLER_VERSION_MINOR) +
                      "." + std::to_string(DISTSAMPLER_VERSION_PATCH);

  bind_sampler<ds::FeistelPermutation>(m, "FeistelSampler");
  bind_sampler<ds::TorchRandperm>(m, "TorchSampler");
  bind_batch_sampler<ds::FeistelPermutation>(m, "FeistelBatchSampler");
  bind_batch_sampler<ds::TorchRandperm>(m, "TorchBatchSampler");
  bind_shard_sampler(m);
  bind_token_sampler(m);
  bind_mixture_sampler(m);
  bind_weighted_sampler(m);
  register_files(m);

  m.def(
      "sampler",
      [](const std::string& order, std::uint64_t n, std::uint64_t rank, std::uint64_t world_size, bool shuffle,
         std::uint64_t seed, const std::string& tail, const std::string& generation) -> py::object {
        const ds::World world = make_world(rank, world_size);
        const ds::SamplerOptions o = sampler_options(shuffle, seed, tail_of(tail));
        if (order == "torch") return py::cast(make_sampler<ds::TorchRandperm>(n, world, o, torch_options(generation)));
        return py::cast(make_sampler<ds::FeistelPermutation>(n, world, o, {}));
      },
      "Builds a C++ DistributedSampler; order is \"feistel\" or \"torch\".");
  m.def(
      "batch_sampler",
      [](const std::string& order, std::uint64_t n, std::uint64_t rank, std::uint64_t world_size, std::uint64_t micro,
         std::uint64_t accumulation, std::uint64_t global_batch, bool shuffle, std::uint64_t seed,
         const std::string& tail, const std::string& generation) -> py::object {
        const ds::World world = make_world(rank, world_size);
        const ds::BatchSamplerOptions o =
            batch_options(micro, accumulation, global_batch, shuffle, seed, tail_of(tail));
        if (order == "torch") {
          return py::cast(make_batch_sampler<ds::TorchRandperm>(n, world, o, torch_options(generation)));
        }
        return py::cast(make_batch_sampler<ds::FeistelPermutation>(n, world, o, {}));
      },
      "Builds a C++ DistributedBatchSampler.");
  m.def(
      "shard_sampler",
      [](std::vector<std::uint64_t> sizes, std::uint64_t rank, std::uint64_t world_size, std::uint64_t num_workers,
         bool shuffle, std::uint64_t seed, const std::string& tail) {
        return make_shard_sampler(std::move(sizes), make_world(rank, world_size), num_workers, shuffle, seed,
                                  tail_of(tail));
      },
      "Builds a C++ StreamingShardSampler.");
  m.def(
      "token_sampler",
      [](py::array lengths, std::uint64_t rank, std::uint64_t world_size, std::uint64_t max_tokens,
         const std::string& cost, std::uint64_t quadratic_q, std::uint64_t max_samples, std::uint64_t batch_multiple,
         std::uint64_t window, std::uint64_t accumulation, bool longest_first, const std::string& oversize,
         bool shuffle, std::uint64_t seed) {
        const ds::LengthView view = length_view(lengths);
        ds::TokenBatchOptions o;
        o.with_max_tokens(max_tokens)
            .with_cost(token_cost_of(cost), quadratic_q)
            .with_max_samples(max_samples)
            .with_batch_multiple(batch_multiple)
            .with_window(window)
            .with_accumulation_steps(accumulation)
            .with_longest_first(longest_first)
            .with_oversize(oversize_of(oversize))
            .with_shuffle(shuffle)
            .with_seed(seed);
        const ds::World world = make_world(rank, world_size);
        std::optional<ds::TokenBatchSampler> built;
        {
          py::gil_scoped_release release;
          built.emplace(view.size, view, world, o);
        }
        return TokenCore(std::move(lengths), std::move(*built));
      },
      "Builds a C++ TokenBatchSampler over a 1-D C-contiguous uint32 array of lengths (kept alive, not copied).");
  m.def(
      "mixture_sampler",
      [](std::vector<std::uint64_t> sizes, const std::vector<double>& weights, std::uint64_t rank,
         std::uint64_t world_size, std::uint64_t micro, std::uint64_t accumulation, std::uint64_t global_batch,
         bool shuffle, std::uint64_t seed, const std::string& tail, const std::string& end, std::uint64_t end_count,
         bool replacement, std::uint64_t mixing_block,
         const std::vector<std::pair<std::uint64_t, std::vector<double>>>& schedule) {
        std::vector<ds::WeightChange> changes;
        for (const auto& c : schedule) changes.push_back(ds::WeightChange{c.first, c.second});
        return make_mixture_sampler(std::move(sizes), weights, make_world(rank, world_size), micro, accumulation,
                                    global_batch, shuffle, seed, tail_of(tail), end, end_count, replacement,
                                    mixing_block, std::move(changes));
      },
      "Builds a C++ MixtureSampler; end is \"first_exhausted\", \"all_seen\", \"samples\" or \"steps\".");
  m.def(
      "weighted_sampler",
      [](const std::vector<double>& weights, std::uint64_t rank, std::uint64_t world_size, std::uint64_t num_samples,
         bool replacement, std::uint64_t seed, const std::string& tail) {
        return make_weighted_sampler(weights, make_world(rank, world_size), num_samples, replacement, seed,
                                     tail_of(tail));
      },
      "Builds a C++ WeightedSampler.");
  m.def(
      "world_from_env",
      []() -> py::object {
        // None when no launcher variable is set at all; malformed variables raise.
        bool any = false;
        for (const auto& l : ds::detail::launchers) any = any || std::getenv(l.rank) || std::getenv(l.size);
        if (!any) return py::none();
        const ds::World w = ds::World::from_env();
        return py::make_tuple(w.rank, w.world_size, w.local_rank, w.local_world_size);
      },
      "(rank, world_size, local_rank, local_world_size) from the launcher's environment (World::from_env rules), "
      "or None when no launcher variable is set.");
  m.def(
      "validate_world", [](std::uint64_t rank, std::uint64_t world_size) { (void)make_world(rank, world_size); },
      "Raises ConfigError unless 0 <= rank < world_size.");
  m.def(
      "parse_state",
      [](const std::string& text) {
        const ds::SamplerState s = parse_state(text);
        py::dict d;
        d["dataset_size"] = s.dataset_size;
        d["seed"] = s.seed;
        d["epoch"] = s.epoch;
        d["consumed"] = s.consumed;
        d["fingerprint"] = s.fingerprint;
        return d;
      },
      "Parses a state's text form; raises StateError naming the first problem.");
  m.def(
      "check_partition",
      [](std::uint64_t n, const std::vector<std::vector<std::uint64_t>>& ranks, const std::string& tail,
         const std::vector<std::vector<bool>>& padding) {
        ds::PartitionReport r;
        {
          py::gil_scoped_release release;
          r = ds::check_partition(n, ranks, tail_of(tail), padding);
        }
        py::dict d;
        d["ok"] = r.ok();
        d["summary"] = r.summary();
        d["failures"] = r.failures;
        d["counts"] = r.counts;
        d["padding"] = r.padding;
        d["duplicates"] = r.duplicates;
        d["missing"] = r.missing;
        d["out_of_range"] = r.out_of_range;
        d["duplicate_examples"] = r.duplicate_examples;
        d["missing_examples"] = r.missing_examples;
        return d;
      },
      py::arg("dataset_size"), py::arg("ranks"), py::arg("tail"), py::arg("padding") = std::vector<std::vector<bool>>{},
      "verify.hpp's check_partition over explicit per-rank lists.");
}

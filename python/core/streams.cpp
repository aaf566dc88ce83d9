// Bindings of the streams family: one consumer's cursor over shards of unknown size, and the job state.
// SPDX-License-Identifier: MIT
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "distsampler/streams/guard.hpp"
#include "distsampler/streams/stream_sampler.hpp"

namespace distsampler_python {
namespace {

using ProgressTuple = py::tuple;

ProgressTuple progress_tuple(const ds::StreamProgress& p) {
  py::list carries;
  for (const ds::StreamCarry& c : p.carries) carries.append(py::make_tuple(c.pass, c.shard, c.record, c.done, c.total));
  return py::make_tuple(p.pass, p.position, p.offset, carries);
}

ds::StreamProgress progress_of(const py::handle& t) {
  const auto tup = py::reinterpret_borrow<py::tuple>(t);
  if (tup.size() != 4) throw ds::state_error("StreamCursor: a progress is (pass, position, offset, carries)");
  ds::StreamProgress p;
  p.pass = tup[0].cast<std::uint64_t>();
  p.position = tup[1].cast<std::uint64_t>();
  p.offset = tup[2].cast<std::uint64_t>();
  for (const py::handle c : tup[3]) {
    const auto ct = py::reinterpret_borrow<py::tuple>(c);
    if (ct.size() != 5) throw ds::state_error("StreamCursor: a carry is (pass, shard, record, done, total)");
    p.carries.push_back(ds::StreamCarry{ct[0].cast<std::uint64_t>(), ct[1].cast<std::uint64_t>(),
                                        ct[2].cast<std::uint64_t>(), ct[3].cast<std::uint64_t>(),
                                        ct[4].cast<std::uint64_t>()});
  }
  return p;
}

// The plan every consumer of one run shares: fresh, or resumed from a job state's text.
std::shared_ptr<ds::StreamPlan> make_plan(std::uint64_t shards, std::vector<std::uint64_t> byte_sizes,
                                          std::uint64_t seed, std::uint64_t consumers,
                                          const std::optional<std::string>& state,
                                          std::vector<ds::StreamProgress>* start, std::uint64_t share) {
  auto plan =
      std::make_shared<ds::StreamPlan>(shards, std::move(byte_sizes), consumers, ds::StreamOptions{seed, share});
  std::vector<ds::StreamProgress> s(static_cast<std::size_t>(consumers));
  if (state) s = ds::resume_stream(*plan, ds::StreamJobState::from_text(*state));
  if (start != nullptr) *start = std::move(s);
  return plan;
}

/// One consumer of a stream run (the C++ StreamCursor with the plan it reads).
class StreamCursor {  // ds::StreamCursor with the plan it reads
 public:
  StreamCursor(std::uint64_t shards, std::vector<std::uint64_t> byte_sizes, std::uint64_t seed, std::uint64_t consumers,
               std::uint64_t consumer, const std::optional<std::string>& state,
               const std::optional<py::tuple>& progress, std::uint64_t share) {
    std::vector<ds::StreamProgress> start;
    auto plan = make_plan(shards, std::move(byte_sizes), seed, consumers, state, &start, share);
    if (consumer >= consumers)
      ds::detail::throw_out_of_range("StreamCursor", "consumer", consumer, "consumers", consumers);
    cursor_.emplace(plan, consumer, progress ? progress_of(*progress) : start[static_cast<std::size_t>(consumer)]);
  }

  py::list next(std::uint64_t capacity, const py::function& read) {
    auto reader = [&](const ds::StreamRead& r) -> std::optional<std::uint64_t> {
      const py::object got = read(r.pass, r.shard, r.record);
      if (got.is_none()) return std::nullopt;
      const auto n = got.cast<long long>();
      if (n < 0)
        throw ds::config_error("StreamCursor: read returned " + std::to_string(n) +
                               " outputs (expected None or at least 0)");
      return static_cast<std::uint64_t>(n);
    };
    py::list out;
    for (const ds::StreamEmit& e : cursor_->next(capacity, reader))
      out.append(py::make_tuple(e.pass, e.shard, e.record, e.begin, e.end));
    return out;
  }

  ProgressTuple progress() const { return progress_tuple(cursor_->progress()); }
  py::tuple stats() const {
    const ds::StreamReadStats& s = cursor_->stats();
    return py::make_tuple(s.records, s.ends, s.probe_records);
  }

 private:
  std::optional<ds::StreamCursor> cursor_;
};

}  // namespace

void register_streams(py::module_& m) {
  py::class_<StreamCursor>(m, "StreamCursor")
      .def(py::init<std::uint64_t, std::vector<std::uint64_t>, std::uint64_t, std::uint64_t, std::uint64_t,
                    std::optional<std::string>, std::optional<py::tuple>, std::uint64_t>(),
           py::arg("shards"), py::arg("byte_sizes"), py::arg("seed"), py::arg("consumers"), py::arg("consumer"),
           py::arg("state") = py::none(), py::arg("progress") = py::none(), py::arg("share") = 1)
      .def("next", &StreamCursor::next, py::arg("capacity"), py::arg("read"))
      .def("progress", &StreamCursor::progress)
      .def("stats", &StreamCursor::stats);
  m.def(
      "assemble_stream_state",
      [](std::uint64_t shards, std::vector<std::uint64_t> byte_sizes, std::uint64_t seed, std::uint64_t consumers,
         const std::optional<std::string>& state, const py::list& progress, std::uint64_t step, std::uint64_t share) {
        auto plan = make_plan(shards, std::move(byte_sizes), seed, consumers, state, nullptr, share);
        std::vector<ds::StreamProgress> all;
        for (const py::handle p : progress) all.push_back(progress_of(p));
        return ds::assemble_stream_state(*plan, all, step).to_text();
      },
      py::arg("shards"), py::arg("byte_sizes"), py::arg("seed"), py::arg("consumers"), py::arg("state"),
      py::arg("progress"), py::arg("step"), py::arg("share") = 1);
  m.def(
      "resume_stream",
      [](std::uint64_t shards, std::vector<std::uint64_t> byte_sizes, std::uint64_t seed, std::uint64_t consumers,
         const std::optional<std::string>& state, std::uint64_t share) {
        std::vector<ds::StreamProgress> start;
        (void)make_plan(shards, std::move(byte_sizes), seed, consumers, state, &start, share);
        py::list out;
        for (const ds::StreamProgress& p : start) out.append(progress_tuple(p));
        return out;
      },
      py::arg("shards"), py::arg("byte_sizes"), py::arg("seed"), py::arg("consumers"), py::arg("state"),
      py::arg("share") = 1);
  py::class_<ds::StreamJobState>(m, "StreamJobState")
      .def_static(
          "from_text", [](const std::string& text) { return ds::StreamJobState::from_text(text); }, py::arg("text"))
      .def("to_text", &ds::StreamJobState::to_text)
      .def_readonly("seed", &ds::StreamJobState::seed)
      .def_readonly("shards", &ds::StreamJobState::shards)
      .def_readonly("share", &ds::StreamJobState::share)
      .def_readonly("next_pass", &ds::StreamJobState::next_pass)
      .def_readonly("step", &ds::StreamJobState::step)
      .def_property_readonly("open_passes",
                             [](const ds::StreamJobState& s) {
                               std::vector<std::uint64_t> out;
                               for (const ds::StreamOpenPass& o : s.open) out.push_back(o.pass);
                               return out;
                             })
      .def_property_readonly("carries", [](const ds::StreamJobState& s) {
        py::list out;
        for (const ds::StreamCarry& c : s.carries) out.append(py::make_tuple(c.pass, c.shard, c.record, c.done, c.total));
        return out;
      });
}

}  // namespace distsampler_python

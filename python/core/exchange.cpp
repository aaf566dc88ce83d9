// _core binding of the guard exchange (store_exchange.hpp) over a Python store: distsampler.torch.guard's transport.
// SPDX-License-Identifier: MIT
#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common.hpp"
#include "distsampler/store_exchange.hpp"

namespace distsampler_python {
namespace {

// A torch.distributed Store (or any object with its set/get/add/compare_set/delete_key) as
// store_exchange's transport. A RuntimeError from the store (what torch's stores raise when
// their server is gone or a call times out) is the store failing; other Python exceptions
// (KeyboardInterrupt, ...) pass through unchanged. Sleeps between polls release the GIL.
class PyStore {
 public:
  using failure = std::runtime_error;
  explicit PyStore(py::object store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::vector<std::uint8_t>& value) { call("set", key, as_bytes(value)); }
  std::vector<std::uint8_t> get(const std::string& key) { return from_bytes(call("get", key)); }
  std::int64_t add(const std::string& key, std::int64_t delta) {
    return call("add", key, delta).template cast<std::int64_t>();
  }
  std::vector<std::uint8_t> compare_set(const std::string& key, const std::vector<std::uint8_t>& expected,
                                        const std::vector<std::uint8_t>& desired) {
    return from_bytes(call("compare_set", key, as_bytes(expected), as_bytes(desired)));
  }
  void delete_key(const std::string& key) { call("delete_key", key); }
  void pause(std::chrono::milliseconds t) {
    py::gil_scoped_release release;
    std::this_thread::sleep_for(t);
  }

 private:
  template <class... Args>
  py::object call(const char* name, Args&&... args) {
    try {
      return store_.attr(name)(std::forward<Args>(args)...);
    } catch (py::error_already_set& e) {
      if (e.matches(PyExc_RuntimeError)) throw failure(py::str(e.value()).cast<std::string>());
      throw;
    }
  }
  static py::bytes as_bytes(const std::vector<std::uint8_t>& v) {
    return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
  }
  static std::vector<std::uint8_t> from_bytes(const py::object& o) {
    const std::string s = py::isinstance<py::str>(o) ? o.cast<std::string>() : std::string(o.cast<py::bytes>());
    return std::vector<std::uint8_t>(s.begin(), s.end());
  }

  py::object store_;
};

}  // namespace

void register_exchange(py::module_& m) {
  m.def(
      "guard_exchange",
      [](py::object store, const std::string& ns, std::uint64_t rank, std::uint64_t world_size, const py::bytes& mine,
         double timeout, const std::string& who) {
        const ds::World process = make_world(rank, world_size);
        // Seconds to milliseconds, at least 1 and at most about 31 years (the caller checked timeout > 0).
        const double ms = std::ceil(std::min(timeout * 1000.0, 1e12));
        const auto wait = std::chrono::milliseconds(static_cast<std::int64_t>(std::max(ms, 1.0)));
        const std::string text = mine;
        PyStore transport(std::move(store));
        const auto records = ds::store_exchange::exchange(
            transport, ns, process, std::vector<std::uint8_t>(text.begin(), text.end()), wait, who);
        py::list out;
        for (const auto& r : records) out.append(py::bytes(reinterpret_cast<const char*>(r.data()), r.size()));
        return out;
      },
      py::arg("store"), py::arg("ns"), py::arg("rank"), py::arg("world_size"), py::kw_only(), py::arg("mine"),
      py::arg("timeout"), py::arg("who"),
      "Every rank's record (bytes, index = rank) of one guard call under `ns`, through `store` (a "
      "torch.distributed Store), or ConfigError with the same message on every live rank: store_exchange.hpp's "
      "protocol, the C++ c10d guard's.");
}

}  // namespace distsampler_python

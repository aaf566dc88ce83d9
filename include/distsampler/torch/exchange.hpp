// distsampler c10d guard, its exchange: store_exchange's protocol over a c10d store. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TORCH_EXCHANGE_HPP
#define DISTSAMPLER_TORCH_EXCHANGE_HPP

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "../error.hpp"
#include "../store_exchange.hpp"
#include "../world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace torch_guard {
namespace detail {

[[noreturn]] inline void store_failed(const char* who, const World& process, const std::string& ns, const char* what,
                                      const std::exception& e) {
  store_exchange::store_failed(who, process, ns, what, e.what());
}

// A c10d::Store as store_exchange's transport (c10d's errors are std::exceptions).
class C10dStore {
 public:
  using failure = std::exception;
  explicit C10dStore(c10d::Store& store) noexcept : store_(store) {}
  void set(const std::string& key, const std::vector<std::uint8_t>& value) { store_.set(key, value); }
  std::vector<std::uint8_t> get(const std::string& key) { return store_.get(key); }
  std::int64_t add(const std::string& key, std::int64_t delta) { return store_.add(key, delta); }
  std::vector<std::uint8_t> compare_set(const std::string& key, const std::vector<std::uint8_t>& expected,
                                        const std::vector<std::uint8_t>& desired) {
    return store_.compareSet(key, expected, desired);
  }
  void delete_key(const std::string& key) { store_.deleteKey(key); }
  void pause(std::chrono::milliseconds t) { std::this_thread::sleep_for(t); }

 private:
  c10d::Store& store_;
};

// The namespace of this rank's next guard call: this rank's n-th guard on this store meets
// the other ranks' n-th. Counted in the store, per rank, so threads and processes alike stay
// in step; and deliberately not the epoch, so a rank with a wrong epoch still meets the others.
inline std::string call_namespace(c10d::Store& store, const World& process, const char* who) {
  std::string ns = "distsampler/guard/calls/" + std::to_string(process.rank);
  try {
    ns = "distsampler/guard/" + std::to_string(store.add(ns, 1));
  } catch (const std::exception& e) {
    store_failed(who, process, ns, "count", e);
  }
  return ns;
}

// The timeout a guard waits: `timeout`, or the store's own when it is zero; config_error when negative.
inline std::chrono::milliseconds guard_timeout(c10d::Store& store, std::chrono::milliseconds timeout, const char* who) {
  if (timeout.count() < 0) {
    distsampler::detail::throw_config_error(std::string(who) + ": timeout " + std::to_string(timeout.count()) +
                                            " ms is negative (expected a positive duration, or zero for the "
                                            "store's timeout)");
  }
  return timeout.count() == 0 ? store.getTimeout() : timeout;
}

// The exchange of one guard call under `ns` through a c10d store: store_exchange::exchange
// (store_exchange.hpp has the protocol; the Python guard runs the same one).
inline std::vector<std::vector<std::uint8_t>> exchange(c10d::Store& store, const std::string& ns, const World& process,
                                                       const std::vector<std::uint8_t>& mine,
                                                       std::chrono::milliseconds timeout, const char* who) {
  C10dStore transport(store);
  return store_exchange::exchange(transport, ns, process, mine, timeout, who);
}

}  // namespace detail
}  // namespace torch_guard
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_TORCH_EXCHANGE_HPP

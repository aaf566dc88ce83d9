// distsampler tests: the guards' exchange protocol (store_exchange.hpp) over an in-memory store, ranks as threads.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/error.hpp>
#include <distsampler/store_exchange.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ds = distsampler;

namespace {

using StoreBytes = std::vector<std::uint8_t>;

// One key-value store shared by the threads (what a TCPStore's server holds), with the calls the
// protocol makes counted; `broken` makes every call fail as a store whose server died.
struct MemoryStore {
  std::mutex mutex;
  std::map<std::string, StoreBytes> values;
  std::map<std::string, std::int64_t> counters;
  bool broken = false;
};

// One rank's handle on the shared store: store_exchange's transport.
class MemoryTransport {
 public:
  using failure = std::runtime_error;
  explicit MemoryTransport(MemoryStore& store) : s_(store) {}
  void set(const std::string& key, const StoreBytes& value) {
    std::lock_guard<std::mutex> lock(s_.mutex);
    fail_if_broken();
    s_.values[key] = value;
  }
  StoreBytes get(const std::string& key) {
    // A real store's get waits for the key; the protocol reads only keys it knows are set.
    std::lock_guard<std::mutex> lock(s_.mutex);
    fail_if_broken();
    const auto it = s_.values.find(key);
    if (it == s_.values.end()) throw std::logic_error("get of a key never set: " + key);
    return it->second;
  }
  std::int64_t add(const std::string& key, std::int64_t delta) {
    std::lock_guard<std::mutex> lock(s_.mutex);
    fail_if_broken();
    return s_.counters[key] += delta;
  }
  StoreBytes compare_set(const std::string& key, const StoreBytes& expected, const StoreBytes& desired) {
    std::lock_guard<std::mutex> lock(s_.mutex);
    fail_if_broken();
    const auto it = s_.values.find(key);
    if (it == s_.values.end() ? expected.empty() : it->second == expected) {
      s_.values[key] = desired;
      return desired;
    }
    return it == s_.values.end() ? StoreBytes{} : it->second;
  }
  void delete_key(const std::string& key) {
    std::lock_guard<std::mutex> lock(s_.mutex);
    s_.values.erase(key);
    s_.counters.erase(key);
  }
  void pause(std::chrono::milliseconds t) { std::this_thread::sleep_for(t); }

 private:
  void fail_if_broken() {
    if (s_.broken) throw failure("Connection reset by peer\nException raised from recvBytes");
  }
  MemoryStore& s_;
};

// Runs one guard call on each rank in `callers` (threads), every rank of `world` publishing
// "record r"; returns each caller's outcome: its records joined by '|', or "error: " and the message.
std::vector<std::string> exchange_on_threads(MemoryStore& store, std::uint64_t world, const std::vector<std::uint64_t>& callers,
                             std::chrono::milliseconds timeout) {
  std::vector<std::string> outcome(callers.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < callers.size(); ++i) {
    threads.emplace_back([&, i] {
      MemoryTransport transport(store);
      const std::string text = "record " + std::to_string(callers[i]);
      try {
        const auto records = ds::store_exchange::exchange(transport, "ns", ds::World(callers[i], world),
                                                          StoreBytes(text.begin(), text.end()), timeout, "guard");
        for (const auto& r : records) outcome[i] += (outcome[i].empty() ? "" : "|") + std::string(r.begin(), r.end());
      } catch (const ds::config_error& e) {
        outcome[i] = std::string("error: ") + e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return outcome;
}

}  // namespace

TEST_CASE("The exchange gives every rank every record, in rank order, and leaves no key behind") {
  MemoryStore store;
  const auto outcome = exchange_on_threads(store, 4, {0, 1, 2, 3}, std::chrono::seconds(20));
  for (const auto& o : outcome) CHECK(o == "record 0|record 1|record 2|record 3");
  // Rank 0 deleted the call's keys once every rank had read the decision.
  CHECK(store.values.empty());
  CHECK(store.counters.empty());
}

TEST_CASE("A rank that never calls is named by every live rank, with the same message") {
  MemoryStore store;
  const auto outcome = exchange_on_threads(store, 3, {0, 1}, std::chrono::milliseconds(300));
  const std::string expected =
      "error: guard: rank 2 did not arrive within 0.3 s (expected all 3 ranks to call the guard, equally often, on "
      "one store)";
  CHECK(outcome[0] == expected);
  CHECK(outcome[1] == expected);
}

TEST_CASE("Two absent ranks are both named") {
  MemoryStore store;
  const auto outcome = exchange_on_threads(store, 4, {0, 2}, std::chrono::milliseconds(200));
  const std::string expected =
      "error: guard: ranks 1, 3 did not arrive within 0.2 s (expected all 4 ranks to call the guard, equally often, "
      "on one store)";
  CHECK(outcome[0] == expected);
  CHECK(outcome[1] == expected);
}

TEST_CASE("A rank that arrives after the others failed gets their decision") {
  MemoryStore store;
  const auto first = exchange_on_threads(store, 2, {0}, std::chrono::milliseconds(100));
  const std::string expected =
      "error: guard: rank 1 did not arrive within 0.1 s (expected all 2 ranks to call the guard, equally often, on "
      "one store)";
  CHECK(first[0] == expected);
  const auto late = exchange_on_threads(store, 2, {1}, std::chrono::milliseconds(100));
  CHECK(late[0] == expected);
}

TEST_CASE("A store that fails names the store's error, and its server's end, on the calling rank") {
  MemoryStore store;
  store.broken = true;
  const auto outcome = exchange_on_threads(store, 2, {1}, std::chrono::seconds(1));
  CHECK(outcome[0] ==
        "error: guard: rank 1 failed to write the store keys under 'ns' (expected all 2 ranks to call the guard, "
        "equally often, on one store): Connection reset by peer; the store's server is gone (a TCPStore's runs in "
        "the process that created it, usually rank 0, which has died or closed it): restart every rank from the last "
        "checkpoint");
}

TEST_CASE("Timeouts print as the guards' messages show them") {
  using ds::store_exchange::seconds_text;
  CHECK(seconds_text(std::chrono::milliseconds(20000)) == "20 s");
  CHECK(seconds_text(std::chrono::milliseconds(500)) == "0.5 s");
  CHECK(seconds_text(std::chrono::milliseconds(1250)) == "1.25 s");
  CHECK(seconds_text(std::chrono::milliseconds(1)) == "0.001 s");
  CHECK(ds::store_exchange::ranks_text({2}) == "rank 2");
  CHECK(ds::store_exchange::ranks_text({1, 3}) == "ranks 1, 3");
}

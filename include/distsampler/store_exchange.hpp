// distsampler's guard exchange: every rank's record through a key-value store, one decision for all, within a
// timeout. The one protocol of the c10d guard (C++) and distsampler.torch.guard (Python). SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STORE_EXCHANGE_HPP
#define DISTSAMPLER_STORE_EXCHANGE_HPP

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "error.hpp"
#include "world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace store_exchange {

/// "20 s", "0.5 s", "1.25 s": a timeout as the guards' messages show it.
inline std::string seconds_text(std::chrono::milliseconds t) {
  const auto ms = static_cast<std::uint64_t>(t.count());
  std::string text = std::to_string(ms / 1000);
  if (ms % 1000 != 0) {
    std::string frac = std::to_string(1000 + ms % 1000).substr(1);
    while (frac.back() == '0') frac.pop_back();
    text += "." + frac;
  }
  return text + " s";
}

/// "rank 2" or "ranks 1, 3".
inline std::string ranks_text(const std::vector<std::uint64_t>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return text;
}

/// What to add to a store error that says the store's server went away: a TCPStore's server
/// runs in the process that created it (usually rank 0), so it died with that process.
inline std::string store_gone_hint(const std::string& reason) {
  for (const char* sign : {"Connection reset", "Broken pipe", "Connection refused", "Connection closed"}) {
    if (reason.find(sign) != std::string::npos) {
      return "; the store's server is gone (a TCPStore's runs in the process that created it, usually rank 0, "
             "which has died or closed it): restart every rank from the last checkpoint";
    }
  }
  return "";
}

/// config_error "WHO: rank R failed to WHAT the store keys under 'NS' (...): REASON", REASON
/// being the first line of the store's own error.
[[noreturn]] inline void store_failed(const std::string& who, const World& process, const std::string& ns,
                                      const char* what, std::string reason) {
  reason = reason.substr(0, reason.find('\n'));
  distsampler::detail::throw_config_error(who + ": rank " + std::to_string(process.rank) + " failed to " + what +
                                          " the store keys under '" + ns + "' (expected all " +
                                          std::to_string(process.world_size) +
                                          " ranks to call the guard, equally often, on one store): " + reason +
                                          store_gone_hint(reason));
}

/// The exchange of one guard call under `ns`: publishes `mine`, returns every rank's record
/// (index = rank), or throws config_error with the same message on every live rank.
///
/// `Store` is the transport, an adapter with `set(key, bytes)`, `get(key) -> bytes`,
/// `add(key, delta) -> std::int64_t`, `compare_set(key, expected, desired) -> bytes`,
/// `delete_key(key)`, `pause(milliseconds)` (sleeps between polls) and `using failure`, the
/// exception type its calls throw when the store fails; bytes are std::vector<std::uint8_t>.
/// A c10d store (torch/exchange.hpp) and a Python store (the binding behind
/// distsampler.torch.guard) are the two adapters.
///
/// Rank r sets ns/record/r, then counts itself in (ns/in, ns/in/r); once ns/in reaches
/// world_size it reads every record and counts itself out (ns/out, ns/out/r). A rank that sees
/// ns/out reach world_size proposes "ok"; one whose deadline (entry + timeout) passes first
/// proposes a failure naming the ranks not counted in (did not arrive) or not counted out (died
/// or stalled inside the guard). The first proposal wins (compare_set on ns/decision): every
/// rank acts on that one, so no rank says ok while another fails, and a rank that arrives
/// after a failure was decided fails with it. Ranks poll (1 to 50 ms apart, two round trips
/// each), so the cost is O(world_size) words per rank plus the wait for the slowest rank.
/// Rank 0, which usually hosts the store, returns only after every rank it expects has read
/// the decision (or after another `timeout`), then deletes the call's keys when all did. A
/// store that fails (its host died) throws naming the store's own error.
template <class Store>
std::vector<std::vector<std::uint8_t>> exchange(Store& store, const std::string& ns, const World& process,
                                                const std::vector<std::uint8_t>& mine,
                                                std::chrono::milliseconds timeout, const std::string& who) {
  using clock = std::chrono::steady_clock;
  using bytes = std::vector<std::uint8_t>;
  const auto deadline = clock::now() + timeout;
  const std::uint64_t w = process.world_size, r = process.rank;
  const auto key = [&](const char* part, std::uint64_t q) { return ns + "/" + part + "/" + std::to_string(q); };
  const std::string expectation = " within " + seconds_text(timeout) + " (expected all " + std::to_string(w) +
                                  " ranks to call the guard, equally often, on one store";
  std::vector<bytes> records;
  std::string proposal, decision;
  const char* stage = "write";
  try {
    store.set(key("record", r), mine);
    // The counter before the flag: a rank whose flag is set is counted, so once the deadline
    // passed with the counter short, some flag is missing (or the counter has just caught up).
    store.add(ns + "/in", 1);
    store.add(key("in", r), 1);
    stage = "read";
    // Waits until `counter` reaches world_size (true), or a decision exists or this rank's
    // deadline passed (false; then `proposal` names the ranks without their `flag`).
    const auto wait_all = [&](const char* counter, const char* flag, const std::string& what) {
      auto pause = std::chrono::milliseconds(1);
      for (;;) {
        if (store.add(ns + "/" + counter, 0) == static_cast<std::int64_t>(w)) return true;
        if (store.add(ns + "/decided", 0) > 0) return false;
        if (clock::now() >= deadline) {
          std::vector<std::uint64_t> absent;
          for (std::uint64_t q = 0; q < w; ++q) {
            if (store.add(key(flag, q), 0) == 0) absent.push_back(q);
          }
          if (!absent.empty()) {  // else the last rank is between its flag and the counter
            proposal = "fail " + std::to_string(absent.size()) + " " + ranks_text(absent) + what;
            return false;
          }
        }
        store.pause(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(50));
      }
    };
    if (wait_all("in", "in", " did not arrive" + expectation + ")")) {
      for (std::uint64_t q = 0; q < w; ++q) records.push_back(store.get(key("record", q)));
      store.add(ns + "/out", 1);
      store.add(key("out", r), 1);
      if (wait_all("out", "out", " arrived but did not finish" + expectation + "; it died or stalled inside)")) {
        proposal = "ok";
      }
    }
    bytes decided;
    if (!proposal.empty()) {
      decided = store.compare_set(ns + "/decision", bytes{}, bytes(proposal.begin(), proposal.end()));
      store.add(ns + "/decided", 1);
    } else {
      decided = store.get(ns + "/decision");
    }
    decision.assign(decided.begin(), decided.end());
    store.add(ns + "/left", 1);
    if (r == 0) {
      std::uint64_t expected = w;
      if (decision != "ok") expected -= std::stoull(decision.substr(5));
      const auto until = clock::now() + timeout;
      auto pause = std::chrono::milliseconds(1);
      bool all_left = false;
      while (!(all_left = store.add(ns + "/left", 0) >= static_cast<std::int64_t>(expected)) && clock::now() < until) {
        store.pause(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(50));
      }
      if (all_left && decision == "ok") {
        for (std::uint64_t q = 0; q < w; ++q) {
          for (const char* part : {"record", "in", "out"}) store.delete_key(key(part, q));
        }
        for (const char* part : {"/in", "/out", "/decided", "/decision", "/left"}) store.delete_key(ns + part);
      }
    }
  } catch (const typename Store::failure& e) {
    store_failed(who, process, ns, stage, e.what());
  }
  if (decision != "ok") {
    distsampler::detail::throw_config_error(who + ": " + decision.substr(decision.find(' ', 5) + 1));
  }
  return records;
}

}  // namespace store_exchange
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STORE_EXCHANGE_HPP

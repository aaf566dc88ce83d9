// distsampler c10d guard, its exchange: every rank's record through a c10d store, one decision for all, within a
// timeout. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TORCH_EXCHANGE_HPP
#define DISTSAMPLER_TORCH_EXCHANGE_HPP

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "../error.hpp"
#include "../world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace torch_guard {
namespace detail {

// "20 s", "0.5 s", "1.25 s": a timeout as messages show it.
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

// "rank 2" or "ranks 1, 3".
inline std::string ranks_text(const std::vector<std::uint64_t>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return text;
}

// What to add to a store error that says the store's server went away: a TCPStore's server
// runs in the process that created it (usually rank 0), so it died with that process.
inline std::string store_gone_hint(const std::string& reason) {
  for (const char* sign : {"Connection reset", "Broken pipe", "Connection refused", "Connection closed"}) {
    if (reason.find(sign) != std::string::npos) {
      return "; the store's server is gone (a TCPStore's runs in the process that created it, usually rank 0, "
             "which has died or closed it): restart every rank from the last checkpoint";
    }
  }
  return "";
}

[[noreturn]] inline void store_failed(const char* who, const World& process, const std::string& ns, const char* what,
                                      const std::exception& e) {
  std::string reason = e.what();
  reason = reason.substr(0, reason.find('\n'));
  distsampler::detail::throw_config_error(std::string(who) + ": rank " + std::to_string(process.rank) + " failed to " +
                                          what + " the store keys under '" + ns + "' (expected all " +
                                          std::to_string(process.world_size) +
                                          " ranks to call the guard, equally often, on one store): " + reason +
                                          store_gone_hint(reason));
}

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

// The exchange of one guard call under `ns`: publishes `mine`, returns every rank's record
// (index = rank), or throws config_error with the same message on every live rank.
//
// Rank r sets ns/record/r, then counts itself in (ns/in, ns/in/r); once ns/in reaches
// world_size it reads every record and counts itself out (ns/out, ns/out/r). A rank that sees
// ns/out reach world_size proposes "ok"; one whose deadline (entry + timeout) passes first
// proposes a failure naming the ranks not counted in (did not arrive) or not counted out (died
// or stalled inside the guard). The first proposal wins (compareSet on ns/decision): every
// rank acts on that one, so no rank says ok while another fails, and a rank that arrives
// after a failure was decided fails with it. Ranks poll (1 to 50 ms apart, two round trips
// each), so the cost is O(world_size) words per rank plus the wait for the slowest rank.
// Rank 0, which hosts a store made by store_from_env, returns only after every rank it
// expects has read the decision (or after another `timeout`), then deletes the call's keys
// when all did. A store that fails (its host died) throws naming the store's own error.
inline std::vector<std::vector<std::uint8_t>> exchange(c10d::Store& store, const std::string& ns, const World& process,
                                                       const std::vector<std::uint8_t>& mine,
                                                       std::chrono::milliseconds timeout, const char* who) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  const std::uint64_t w = process.world_size, r = process.rank;
  const auto key = [&](const char* part, std::uint64_t q) { return ns + "/" + part + "/" + std::to_string(q); };
  const std::string expectation = " within " + seconds_text(timeout) + " (expected all " + std::to_string(w) +
                                  " ranks to call the guard, equally often, on one store";
  std::vector<std::vector<std::uint8_t>> records;
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
        std::this_thread::sleep_for(pause);
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
    std::vector<std::uint8_t> decided;
    if (!proposal.empty()) {
      decided = store.compareSet(ns + "/decision", {}, std::vector<std::uint8_t>(proposal.begin(), proposal.end()));
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
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(50));
      }
      if (all_left && decision == "ok") {
        for (std::uint64_t q = 0; q < w; ++q) {
          for (const char* part : {"record", "in", "out"}) store.deleteKey(key(part, q));
        }
        for (const char* part : {"/in", "/out", "/decided", "/decision", "/left"}) store.deleteKey(ns + part);
      }
    }
  } catch (const std::exception& e) {
    store_failed(who, process, ns, stage, e);
  }
  if (decision != "ok") {
    distsampler::detail::throw_config_error(std::string(who) + ": " + decision.substr(decision.find(' ', 5) + 1));
  }
  return records;
}

}  // namespace detail
}  // namespace torch_guard
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_TORCH_EXCHANGE_HPP

// distsampler internal: SamplerState's canonical-form checks, consumed_total and validate, included by state.hpp.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_STATE_CHECK_HPP
#define DISTSAMPLER_DETAIL_STATE_CHECK_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "format.hpp"
#include "values.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

namespace detail {

// "700-764/4096x3": a strided entry as the text form writes it.
[[nodiscard]] inline std::string strided_text(const StridedRange& r) {
  return std::to_string(r.begin) + "-" + std::to_string(r.begin + r.length) + "/" + std::to_string(r.stride) + "x" +
         std::to_string(r.count);
}

// Canonical strided entries (see SamplerState). Entries whose spans overlap form a
// cluster; one stride per cluster, and their first elements' offsets modulo the stride,
// taken as intervals on a circle of that length, must not overlap: then no two entries
// share a position. O(entries log entries).
inline void check_strided(const SamplerState& s, const char* who) {
  const std::uint64_t n = s.dataset_size;
  auto where = [&](std::size_t i) {
    return std::string(who) + ": strided entry " + std::to_string(i) + " (" + strided_text(s.strided[i]) + ")";
  };
  std::size_t cluster = 0;  // first entry of the current cluster
  std::size_t widest = 0;   // the cluster's entry reaching furthest
  std::uint64_t reach = 0;  // end() of `widest`
  auto close_cluster = [&](std::size_t last) {
    std::vector<std::size_t> order;
    for (std::size_t i = cluster; i < last; ++i) order.push_back(i);
    const std::uint64_t stride = s.strided[cluster].stride;
    auto phase = [&](std::size_t i) { return s.strided[i].begin % stride; };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return phase(a) < phase(b); });
    for (std::size_t j = 0; j + 1 < order.size(); ++j) {
      const std::size_t a = order[j], b = order[j + 1];
      if (phase(a) + s.strided[a].length > phase(b)) {
        throw_state_error(where(std::max(a, b)) + " shares positions with strided entry " +
                          std::to_string(std::min(a, b)) + " (expected entries of one stride at disjoint offsets)");
      }
    }
    if (order.size() > 1 && phase(order.back()) + s.strided[order.back()].length > phase(order.front()) + stride) {
      const std::size_t a = order.back(), b = order.front();
      throw_state_error(where(std::max(a, b)) + " shares positions with strided entry " +
                        std::to_string(std::min(a, b)) + " (expected entries of one stride at disjoint offsets)");
    }
  };
  for (std::size_t i = 0; i < s.strided.size(); ++i) {
    const StridedRange& r = s.strided[i];
    if (r.length == 0) throw_state_error(where(i) + " has length 0 (expected at least 1)");
    if (r.count < 2) {
      throw_state_error(where(i) + " has count " + std::to_string(r.count) +
                        " (expected at least 2; a single element is an ahead range)");
    }
    if (r.stride <= r.length) {
      throw_state_error(where(i) + " has stride " + std::to_string(r.stride) + " not above its length " +
                        std::to_string(r.length) +
                        " (expected stride > length; touching elements are one ahead range)");
    }
    if (r.begin > n || r.length > n - r.begin || r.count - 1 > (n - r.begin - r.length) / r.stride) {
      throw_state_error(where(i) + " ends past dataset_size " + std::to_string(n) +
                        " (expected its last element to end at most at dataset_size)");
    }
    if (r.begin <= s.consumed) {
      throw_state_error(where(i) + " does not begin after consumed " + std::to_string(s.consumed) +
                        " (expected strided entries past the prefix with a gap)");
    }
    if (i != 0 && r.begin <= s.strided[i - 1].begin) {
      throw_state_error(where(i) + " does not begin after the previous entry's begin " +
                        std::to_string(s.strided[i - 1].begin) + " (expected strided entries sorted by begin)");
    }
    if (i != 0 && r.begin < reach) {
      if (r.stride != s.strided[widest].stride) {
        throw_state_error(where(i) + " overlaps the span of strided entry " + std::to_string(widest) + " of stride " +
                          std::to_string(s.strided[widest].stride) +
                          " (expected overlapping entries to share one stride)");
      }
    } else {
      if (i != 0) close_cluster(i);
      cluster = i;
      reach = 0;
    }
    if (r.end() > reach) {
      reach = r.end();
      widest = i;
    }
  }
  if (!s.strided.empty()) close_cluster(s.strided.size());
}

inline void check_consumed(const SamplerState& s, const char* who) {
  if (s.consumed > s.dataset_size) {
    throw_state_error(std::string(who) + ": consumed " + std::to_string(s.consumed) + " exceeds dataset_size " +
                      std::to_string(s.dataset_size) + " (expected consumed <= dataset_size)");
  }
  // Canonical ahead ranges: each non-empty, past the prefix and the range before it with
  // a gap, within the dataset. O(ranges).
  std::uint64_t floor = s.consumed;  // the next range must begin after this
  for (std::size_t i = 0; i < s.ahead.size(); ++i) {
    const PositionRange& r = s.ahead[i];
    const std::string where = std::string(who) + ": ahead range " + std::to_string(i) + " [" + std::to_string(r.begin) +
                              ", " + std::to_string(r.end) + ")";
    if (r.begin >= r.end) throw_state_error(where + " is empty or reversed (expected begin < end)");
    if (r.end > s.dataset_size) {
      throw_state_error(where + " ends past dataset_size " + std::to_string(s.dataset_size) +
                        " (expected end <= dataset_size)");
    }
    if (r.begin <= floor) {
      throw_state_error(where + " does not begin after " + (i == 0 ? "consumed " : "the previous range's end ") +
                        std::to_string(floor) + " (expected sorted ranges separated by a gap)");
    }
    floor = r.end;
  }
  check_strided(s, who);
}

}  // namespace detail

inline std::uint64_t SamplerState::consumed_total() const noexcept {
  std::uint64_t total = consumed;
  for (const PositionRange& r : ahead) total += r.size();
  for (const StridedRange& s : strided) {
    total += s.size();
    // Ahead ranges are sorted and disjoint: subtract the elements' positions inside those the span meets.
    auto it = std::upper_bound(ahead.begin(), ahead.end(), s.begin,
                               [](std::uint64_t x, const PositionRange& r) { return x < r.end; });
    const std::uint64_t last = s.end();
    for (; it != ahead.end() && it->begin < last; ++it) total -= s.size_below(it->end) - s.size_below(it->begin);
  }
  return total;
}

inline void SamplerState::validate(const StateKey& expected, std::string_view who) const {
  const std::string prefix(who);
  if (version < 1 || version > 5) {
    detail::throw_state_error(prefix + ": unsupported version " + std::to_string(version) + " (expected 1 to 5)");
  }
  if (!has_key()) {
    validate_legacy(expected, prefix);
  } else {
    std::string diffs;
    auto differs = [&](const std::string& what, const std::string& saved, const std::string& mine) {
      diffs += (diffs.empty() ? "" : "; ") + what + " (state " + saved + ", sampler " + mine + ")";
    };
    if (sampler != expected.sampler) differs("sampler family differs", sampler, std::string(expected.sampler));
    if (dataset_size != expected.dataset_size) {
      differs("dataset_size differs", std::to_string(dataset_size), std::to_string(expected.dataset_size));
    }
    if (seed != expected.seed) differs("seed differs", std::to_string(seed), std::to_string(expected.seed));
    if (shuffle != expected.shuffle) {
      differs("shuffle differs", detail::bool_name(shuffle), detail::bool_name(expected.shuffle));
    }
    if (tail != expected.tail) {
      differs("tail differs", std::string(to_string(tail)), std::string(to_string(expected.tail)));
    }
    if (layout != expected.layout) {
      differs(
          expected.layout_name.empty() ? std::string("layout differs") : std::string(expected.layout_name) + " differ",
          "layout " + detail::hex64(layout), "layout " + detail::hex64(expected.layout));
    }
    if (engine != expected.order_engine() || engine_version != expected.order_engine_version()) {
      differs("engine differs", engine + "/" + std::to_string(engine_version),
              std::string(expected.order_engine()) + "/" + std::to_string(expected.order_engine_version()));
    }
    if (!diffs.empty()) detail::throw_state_error(prefix + ": " + diffs);
  }
  detail::check_consumed(*this, prefix.c_str());
  if (!ahead.empty() && !expected.accepts_ahead) {
    detail::throw_state_error(prefix + ": the state has " + std::to_string(ahead.size()) +
                              " ahead ranges (expected none: this sampler resumes only a consumed prefix)");
  }
  if (!strided.empty() && !expected.accepts_ahead) {
    detail::throw_state_error(prefix + ": the state has " + std::to_string(strided.size()) +
                              " strided entries (expected none: this sampler resumes only a consumed prefix)");
  }
  if (!extra.empty() && !expected.accepts_extra) {
    detail::throw_state_error(prefix + ": the state has " + std::to_string(extra.size()) +
                              " family words (expected none: this sampler's states hold only consumed positions)");
  }
}

inline void SamplerState::validate_legacy(const StateKey& expected, const std::string& prefix) const {
  const std::uint64_t want = expected.legacy_fingerprint();
  const std::string prints = "state fingerprint " + detail::hex64(fingerprint) + ", expected " + detail::hex64(want);
  auto fail = [&](const std::string& what) {
    detail::throw_state_error(prefix + ": " + what + " (version " + std::to_string(version) + " state; " + prints +
                              ")");
  };
  if (dataset_size != expected.dataset_size) {
    fail("dataset_size differs (state " + std::to_string(dataset_size) + ", sampler " +
         std::to_string(expected.dataset_size) + ")");
  }
  if (seed != expected.seed) {
    fail("seed differs (state " + std::to_string(seed) + ", sampler " + std::to_string(expected.seed) + ")");
  }
  if (fingerprint != want) {
    // The fingerprint hides the fields; name shuffle or tail when flipping that one explains it.
    StateKey alt = expected;
    alt.shuffle = !expected.shuffle;
    if (alt.legacy_fingerprint() == fingerprint) {
      fail("shuffle differs (state " + detail::bool_name(alt.shuffle) + ", sampler " +
           detail::bool_name(expected.shuffle) + ")");
    }
    for (const Tail t : {Tail::pad, Tail::drop, Tail::uneven}) {
      alt = expected;
      alt.tail = t;
      if (t != expected.tail && alt.legacy_fingerprint() == fingerprint) {
        fail("tail differs (state " + std::string(to_string(t)) + ", sampler " + std::string(to_string(expected.tail)) +
             ")");
      }
    }
    fail("fingerprint differs: saved by another sampler family, engine or options than " + expected.describe() +
         ", or corrupted");
  }
  if (expected.order_engine_version() != 1 && !(expected.shuffle && expected.legacy_order)) {
    fail("engine differs (state " + std::string(expected.order_engine()) + "/1, sampler " +
         std::string(expected.order_engine()) + "/" + std::to_string(expected.order_engine_version()) +
         "; version 1 and 2 states were written by version 1 of their engine, whose order this one does not keep)");
  }
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_STATE_CHECK_HPP

// distsampler lane rounds: a consumer's whole rounds of blocks seen lane by lane, for fast fills and shard schedules.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARD_LANE_ROUNDS_HPP
#define DISTSAMPLER_SHARD_LANE_ROUNDS_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "../../detail/small_permutation.hpp"
#include "catalog.hpp"
#include "epoch_order.hpp"
#include "../../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Records a consumer reads from one lane of a ShardEpochOrder at a fixed pace: in rows
/// row, row + row_step, ... (rows of them), records [u_begin, u_end) of the run the lane
/// reads in that row (ShardEpochOrder::window_row), record u of the i-th row at slot
/// slot + i * slot_step + record_stride * (u - u_begin).
struct LaneProgression {
  std::uint64_t lane = 0;
  std::uint64_t row = 0;
  std::uint64_t row_step = 1;
  std::uint64_t rows = 0;
  std::uint64_t u_begin = 0;
  std::uint64_t u_end = 0;
  std::uint64_t slot = 0;
  std::uint64_t slot_step = 0;
  std::uint64_t record_stride = 1;

  /// The slot of record u (in [u_begin, u_end)) of the i-th row (i < rows).
  [[nodiscard]] constexpr std::uint64_t slot_of(std::uint64_t i, std::uint64_t u) const noexcept {
    return slot + i * slot_step + record_stride * (u - u_begin);
  }
};

/// Splits `rounds` rounds of reading into lane progressions: round j (< rounds) reads G
/// positions [g + j * period, g + j * period + width) of `order` at slots slot + j *
/// width, ..., in G order. Requires width <= order.block_size(), period a multiple of
/// order.block_size(), and every round inside the whole blocks (g + (rounds - 1) * period +
/// width <= order.regular_size()); the caller checks. Each round then reads the same
/// positions of its blocks, so each run position of a round, followed over the rounds,
/// steps through the runs by period / block_size() blocks and returns to its lane every p
/// rounds (p = C / gcd(C, runs per step)): one progression per run position, residue of
/// the round mod p and block part. Calls f(const LaneProgression&) at most 2 * m *
/// min(p, rounds) times; the progressions cover every record of the rounds exactly once.
/// O(calls).
template <class F>
void for_each_lane_progression(const ShardEpochOrder& order, std::uint64_t g, std::uint64_t width, std::uint64_t period,
                               std::uint64_t rounds, std::uint64_t slot, F&& f) {
  const ShardSamplerOptions& o = order.options();
  const std::uint64_t m = o.max_open_shards, l = o.run_length, c = o.canonical_streams, b = order.block_size();
  const std::uint64_t phase = g % b, first_block = g / b, step = (period / b) * m;
  const std::uint64_t common = std::gcd(step, c), p = c / common, row_step = std::max<std::uint64_t>(1, step / common);
  for (std::uint64_t part = 0; part < 2; ++part) {
    // Part 0: positions [phase, min(b, phase + width)) of block first_block + ...; part 1:
    // the rest of the round, at the start of the next block.
    const std::uint64_t lo = part == 0 ? phase : 0;
    const std::uint64_t hi = part == 0 ? std::min(b, phase + width) : (phase + width > b ? phase + width - b : 0);
    const std::uint64_t at_part = part == 0 ? 0 : b - phase;
    for (std::uint64_t a = 0; a < m && a < hi; ++a) {
      // Position a + m * u of a block is record u of its run a.
      const std::uint64_t u0 = lo <= a ? 0 : (lo - a + m - 1) / m, u1 = std::min(l, (hi - a + m - 1) / m);
      if (u0 >= u1) continue;
      const std::uint64_t run = (first_block + part) * m + a, within = at_part + a + m * u0 - lo;
      for (std::uint64_t t = 0; t < p && t < rounds; ++t) {
        const std::uint64_t r = run + t * step;
        f(LaneProgression{ShardEpochOrder::spread_lane(r % c, c, m), r / c, row_step, (rounds - t + p - 1) / p, u0, u1,
                          slot + t * width + within, p * width, m});
      }
    }
  }
}

/// Calls out(slot, sample) for every record of `pr` (a progression of `order`), row by
/// row, following the lane with one shard cursor: O(records) plus a cursor move per
/// shard change, no allocation.
template <class Out>
void read_lane_progression(const ShardEpochOrder& order, const LaneProgression& pr, Out&& out) {
  const std::uint64_t l = order.options().run_length, lane_q = pr.lane * order.lane_length();
  const std::uint64_t key = order.lane_key(pr.lane);
  ShardEpochOrder::Cursor cursor = order.lane_cursor(pr.lane);
  auto read_run = [&](std::uint64_t x, std::uint64_t slot) {
    const std::uint64_t q = lane_q + x * l;
    for (std::uint64_t u = pr.u_begin; u < pr.u_end; ++u, slot += pr.record_stride) {
      order.seek(cursor, q + u);
      out(slot, ShardEpochOrder::at_cursor(cursor, q + u));
    }
  };
  const std::uint64_t wr = order.window_rows();
  if (wr > 1 && wr <= detail::small_permutation_max && pr.row_step < wr) {
    // Several rows per window: decode each window once.
    std::uint64_t window = UINT64_MAX, table = 0;
    for (std::uint64_t i = 0; i < pr.rows; ++i) {
      const std::uint64_t row = pr.row + i * pr.row_step;
      if (row / wr != window) {
        window = row / wr;
        table = order.window_table(key, window);
      }
      read_run(window * wr + ((table >> (4 * (row % wr))) & 0xf), pr.slot + i * pr.slot_step);
    }
    return;
  }
  for (std::uint64_t i = 0; i < pr.rows; ++i) {
    read_run(order.window_row_keyed(key, pr.row + i * pr.row_step), pr.slot + i * pr.slot_step);
  }
}

/// Calls sink(shard, records, first_slot, last_slot) for each piece of a shard that `pr`
/// reads from (a shard cut by no lane boundary is one piece): how many records it reads
/// there and its first and last slot doing so. Counts rows in bulk: rows whose whole
/// shuffle window of runs lies inside the piece read it entirely, so only the rows of
/// the at most two windows straddling each end of a piece are looked at one by one.
/// O(pieces * (window_rows / row_step + 1) + log shards), independent of the rows.
template <class Sink>
void tally_lane_progression(const ShardEpochOrder& order, const LaneProgression& pr, Sink&& sink) {
  if (pr.rows == 0 || pr.u_begin >= pr.u_end) return;
  const std::uint64_t l = order.options().run_length, ns = order.runs_per_lane(), wr = order.window_rows();
  const std::uint64_t u0 = pr.u_begin, u1 = pr.u_end, lane_q = pr.lane * order.lane_length();
  const std::uint64_t key = order.lane_key(pr.lane);
  const std::uint64_t last_row = pr.row + (pr.rows - 1) * pr.row_step;
  const std::uint64_t x_first = (pr.row / wr) * wr, x_end = std::min(ns, (last_row / wr + 1) * wr);
  // First progression index i with row(i) >= r (may be pr.rows).
  auto first_at = [&](std::uint64_t r) -> std::uint64_t {
    if (r <= pr.row) return 0;
    return std::min(pr.rows, (r - pr.row + pr.row_step - 1) / pr.row_step);
  };
  const std::vector<std::uint64_t>& prefix = order.sequence_prefix();
  const std::vector<std::uint64_t>& shards = order.shard_order();
  const std::uint64_t q_first = lane_q + x_first * l, q_end = lane_q + x_end * l;
  auto j = static_cast<std::size_t>(std::upper_bound(prefix.begin(), prefix.end(), q_first) - prefix.begin() - 1);
  for (; j + 1 < prefix.size() && prefix[j] < q_end; ++j) {
    // The piece, in lane-local record numbers [a, e).
    const std::uint64_t a = std::max(prefix[j], q_first) - lane_q, e = std::min(prefix[j + 1], q_end) - lane_q;
    if (a >= e) continue;
    // Runs with a read record in the piece: [x_lo, x_hi); wholly inside it: [xc0, xc1).
    const std::uint64_t x_lo = std::max(x_first, a < u1 ? 0 : (a - u1) / l + 1);
    const std::uint64_t x_hi = std::min(x_end, e <= u0 ? 0 : (e - u0 + l - 1) / l);
    if (x_lo >= x_hi) continue;
    const std::uint64_t xc0 = std::max(x_lo, a <= u0 ? 0 : (a - u0 + l - 1) / l);
    const std::uint64_t xc1 = std::min(x_hi, e < u1 ? 0 : (e - u1) / l + 1);
    std::uint64_t count = 0, first = UINT64_MAX, last = 0;
    auto one_by_one = [&](std::uint64_t w_begin, std::uint64_t w_end) {
      for (std::uint64_t i = first_at(w_begin * wr), i_end = first_at(std::min(ns, w_end * wr)); i < i_end; ++i) {
        const std::uint64_t x = order.window_row_keyed(key, pr.row + i * pr.row_step);
        const std::uint64_t v0 = std::max(x * l + u0, a), v1 = std::min(x * l + u1, e);
        if (v0 >= v1) continue;
        count += v1 - v0;
        first = std::min(first, pr.slot_of(i, v0 - x * l));
        last = std::max(last, pr.slot_of(i, v1 - 1 - x * l));
      }
    };
    const std::uint64_t w_lo = x_lo / wr, w_hi = (x_hi - 1) / wr + 1;  // windows touching the piece
    // Windows wholly inside [xc0, xc1) (the lane's last window may be short).
    const std::uint64_t wc0 = (xc0 + wr - 1) / wr, wc1 = xc1 == ns ? (ns + wr - 1) / wr : xc1 / wr;
    if (xc0 < xc1 && wc0 < wc1) {
      const std::uint64_t i0 = first_at(wc0 * wr), i1 = first_at(std::min(ns, wc1 * wr));
      if (i0 < i1) {
        count += (i1 - i0) * (u1 - u0);
        first = pr.slot_of(i0, u0);
        last = pr.slot_of(i1 - 1, u1 - 1);
      }
      one_by_one(w_lo, wc0);
      one_by_one(wc1, w_hi);
    } else {
      one_by_one(w_lo, w_hi);
    }
    if (count != 0) sink(shards[j], count, first, last);
  }
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARD_LANE_ROUNDS_HPP

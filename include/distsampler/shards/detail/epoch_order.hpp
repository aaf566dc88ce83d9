// distsampler ShardEpochOrder: an epoch's global order of a sharded dataset (the shard permutation layer).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARD_EPOCH_ORDER_HPP
#define DISTSAMPLER_SHARD_EPOCH_ORDER_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../../detail/bounded.hpp"
#include "../../detail/mix.hpp"
#include "../../detail/small_permutation.hpp"
#include "../../feistel.hpp"
#include "catalog.hpp"
#include "../options.hpp"
#include "../../state.hpp"
#include "../../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The global order G of one epoch of a sharded dataset: a bijection from positions
/// [0, N) to the catalog's samples, a pure function of (shard sizes, shuffle, seed,
/// canonical_streams C, max_open_shards m, run_length L, shuffle_window w, rotate_shards,
/// epoch); never of world size, worker count or tail.
///  1. the shard order is shuffled (Fisher-Yates, SplitMix64, unbiased draws) and each
///     shard is read from a per-epoch rotation of its offsets (from offset 0 without
///     rotate_shards): the sequence Q;
///  2. Q's first C * ns * L samples (ns = N / (C * L)) are cut into C equal lanes of
///     ns runs of L consecutive samples; each lane's runs are permuted within windows of
///     w runs (a keyed permutation per lane and window: an exact Fisher-Yates draw for
///     w <= 16, a FeistelPermutation above); runs are then taken row-major (the first run
///     of every lane, then the second, ...; within a row the lanes come in the order of
///     spread_lane, so a block's lanes are spread evenly over Q) and each group of m
///     consecutive runs forms a block of m * L samples, read round-robin across its m runs;
///  3. what remains (fewer than m + C runs' worth) follows in Q order.
/// Unshuffled: Q is the shards in order from offset 0, and no window applies. With C = m = 1
/// and w = 1 (ShardSamplerOptions::sequential()) G is Q itself: position p is Q position p.
///
/// Throws config_error from the constructor for invalid order options (see
/// detail::validate_order_options). Complexity: construction O(shards) time and memory;
/// at, sequence_position O(1) plus O(log shards) to find the shard. Deterministic on every
/// platform. Immutable: const members may run concurrently.
class ShardEpochOrder {
 public:
  ShardEpochOrder(std::shared_ptr<const ShardCatalog> catalog, const ShardSamplerOptions& options, std::uint64_t epoch)
      : catalog_(std::move(catalog)), options_(options), epoch_(epoch) {
    detail::validate_order_options(options_, "ShardEpochOrder");
    const std::uint64_t n = catalog_->total();
    // Lanes: C equal lanes of ns runs of L; the rest follows in Q order.
    const std::uint64_t c = options_.canonical_streams, l = options_.run_length, m = options_.max_open_shards;
    const std::uint64_t runs_per_lane = c > n / l ? 0 : n / (c * l);
    lane_length_ = runs_per_lane * l;
    const std::uint64_t runs = c * runs_per_lane;
    regular_ = (runs / m) * m * l;
    leftover_runs_ = runs % m;
    epoch_key_ = detail::mix64(detail::splitmix64(options_.seed ^ 0x7368617264733031u) ^ detail::splitmix64(~epoch_));
    const std::size_t s = catalog_->sizes().size();
    order_.resize(s);
    for (std::size_t i = 0; i < s; ++i) order_[i] = static_cast<std::uint64_t>(i);
    if (options_.shuffle && s > 1) {
      detail::SplitMix64 stream(epoch_key_);
      for (std::size_t i = s - 1; i > 0; --i) {
        const auto j = static_cast<std::size_t>(detail::bounded_draw(stream, static_cast<std::uint64_t>(i) + 1));
        std::swap(order_[i], order_[j]);
      }
    }
    prefix_.resize(s + 1);
    prefix_[0] = 0;
    for (std::size_t i = 0; i < s; ++i) prefix_[i + 1] = prefix_[i] + catalog_->shard_size(order_[i]);
    // Where each lane starts in Q, while the lanes are not many more than the shards.
    if (lane_length_ != 0 && c <= 4 * static_cast<std::uint64_t>(s) + 1024) {
      lane_first_.resize(static_cast<std::size_t>(c));
      std::size_t j = 0;
      for (std::uint64_t lane = 0; lane < c; ++lane) {
        while (prefix_[j + 1] <= lane * lane_length_) ++j;
        lane_first_[static_cast<std::size_t>(lane)] = static_cast<std::uint64_t>(j);
      }
    }
  }

  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// N, the number of positions.
  [[nodiscard]] std::uint64_t size() const noexcept { return catalog_->total(); }
  [[nodiscard]] const ShardCatalog& catalog() const noexcept { return *catalog_; }
  [[nodiscard]] const std::shared_ptr<const ShardCatalog>& shared_catalog() const noexcept { return catalog_; }
  [[nodiscard]] const ShardSamplerOptions& options() const noexcept { return options_; }
  /// m * L: G is made of blocks of this many positions (then the remainder).
  [[nodiscard]] std::uint64_t block_size() const noexcept { return options_.block_size(); }
  /// shard_order()[j] is the shard read j-th in Q.
  [[nodiscard]] const std::vector<std::uint64_t>& shard_order() const noexcept { return order_; }

  /// The lane read in column `column` (< c) of a row: columns are ordered by (column mod
  /// m, column / m), so the m consecutive columns of a block are lanes spread evenly over
  /// the shard sequence (j, j + c/m, j + 2c/m, ... when m divides c). A bijection of [0, c);
  /// the identity when m is 1 or c. O(1).
  [[nodiscard]] static constexpr std::uint64_t spread_lane(std::uint64_t column, std::uint64_t c,
                                                           std::uint64_t m) noexcept {
    const std::uint64_t residue = column % m;
    return residue * (c / m) + std::min(residue, c % m) + column / m;
  }

  /// The version of the order these options give, as saved states record it: 3 when
  /// spreading a block's lanes changed it (1 < m < C), else 2, the order of version 2
  /// (contiguous lanes), which the spread leaves unchanged there, so its states still load.
  [[nodiscard]] static constexpr std::uint32_t format_version(const ShardSamplerOptions& options) noexcept {
    return options.max_open_shards > 1 && options.max_open_shards < options.canonical_streams ? 3u : 2u;
  }

  /// The sample at position p (< N) of G. O(log shards).
  [[nodiscard]] ShardSample at(std::uint64_t p) const noexcept { return at_sequence(sequence_position(p)); }

  /// The position in the shard sequence Q of global position p (< N). O(1).
  [[nodiscard]] std::uint64_t sequence_position(std::uint64_t p) const noexcept {
    const std::uint64_t m = options_.max_open_shards, l = options_.run_length, b = m * l;
    if (p < regular_) {
      const std::uint64_t w = p % b;
      return run_start((p / b) * m + w % m) + w / m;
    }
    const std::uint64_t y = p - regular_;
    if (y < leftover_runs_ * l) return run_start((regular_ / b) * m + y / l) + y % l;
    return options_.canonical_streams * lane_length_ + (y - leftover_runs_ * l);
  }

  /// The sample at position q (< N) of the shard sequence Q. O(log shards).
  [[nodiscard]] ShardSample at_sequence(std::uint64_t q) const noexcept {
    const auto j = static_cast<std::size_t>(std::upper_bound(prefix_.begin(), prefix_.end(), q) - prefix_.begin() - 1);
    const std::uint64_t shard = order_[j];
    const std::uint64_t offset = rotate(q - prefix_[j], rotation(shard), catalog_->shard_size(shard));
    return ShardSample{shard, offset, catalog_->index(shard, offset), false};
  }

  /// The shard of Q being read at a cursor: Q positions [begin, end) are records
  /// rotated from `rotation` of shard `shard` (shard_order()[j]); `index_base` is the
  /// shard's first global index. A default cursor holds no shard (begin == end).
  struct Cursor {
    std::size_t j = 0;
    std::uint64_t begin = 0, end = 0, shard = 0, size = 0, rotation = 0, index_base = 0;
  };
  /// Moves `cursor` to the shard holding Q position q (< N), searching outwards from
  /// where it stands: O(1) when q is in its shard, O(log d) for a move over d shards.
  void seek(Cursor& cursor, std::uint64_t q) const noexcept {
    if (q >= cursor.begin && q < cursor.end) return;
    const std::size_t s = order_.size();
    std::size_t lo = 0, hi = s;  // the answer j has prefix_[j] <= q < prefix_[j + 1], lo <= j < hi
    if (cursor.end != cursor.begin) {
      std::size_t step = 1;
      if (q >= cursor.end) {
        lo = cursor.j + 1;
        while (lo + step < s && prefix_[lo + step] <= q) {
          lo += step;
          step *= 2;
        }
        hi = std::min(s, lo + step);
      } else {
        hi = cursor.j;
        while (hi > step && prefix_[hi - step] > q) {
          hi -= step;
          step *= 2;
        }
        lo = hi > step ? hi - step : 0;
      }
    }
    const auto from = prefix_.begin() + static_cast<std::ptrdiff_t>(lo) + 1;
    const auto to = prefix_.begin() + static_cast<std::ptrdiff_t>(hi) + 1;
    const auto j = static_cast<std::size_t>(std::upper_bound(from, to, q) - prefix_.begin() - 1);
    cursor = cursor_at(j);
  }
  /// A cursor at the first shard of lane `lane` (< C), from which seek moves along the
  /// lane. O(1) (O(log shards) when there are over four lanes per shard).
  [[nodiscard]] Cursor lane_cursor(std::uint64_t lane) const noexcept {
    Cursor cursor;
    if (lane_first_.empty()) {
      seek(cursor, lane * lane_length_);
      return cursor;
    }
    return cursor_at(static_cast<std::size_t>(lane_first_[static_cast<std::size_t>(lane)]));
  }
  /// The sample at Q position q, which must lie in `cursor`'s shard. O(1).
  [[nodiscard]] static ShardSample at_cursor(const Cursor& cursor, std::uint64_t q) noexcept {
    const std::uint64_t offset = rotate(q - cursor.begin, cursor.rotation, cursor.size);
    return ShardSample{cursor.shard, offset, cursor.index_base + offset, false};
  }

  /// Samples in each lane: lane l is Q positions [l * lane_length(), (l + 1) *
  /// lane_length()), runs_per_lane() runs of run_length.
  [[nodiscard]] std::uint64_t lane_length() const noexcept { return lane_length_; }
  /// Runs (and rows) of each lane.
  [[nodiscard]] std::uint64_t runs_per_lane() const noexcept { return lane_length_ / options_.run_length; }
  /// G positions in whole blocks of block_size() (the rest, fewer than (m + C) * L, follows).
  [[nodiscard]] std::uint64_t regular_size() const noexcept { return regular_; }
  /// The rows of one shuffle window: the runs a lane permutes among themselves (1 when
  /// unshuffled).
  [[nodiscard]] std::uint64_t window_rows() const noexcept {
    return options_.shuffle && options_.shuffle_window > 1 ? options_.shuffle_window : 1;
  }
  /// sequence_prefix()[j] is the Q position where shard_order()[j] starts (one entry more
  /// than shards; the last is N).
  [[nodiscard]] const std::vector<std::uint64_t>& sequence_prefix() const noexcept { return prefix_; }

  /// Calls sink(shard, begin, length, first_slot, stride) for the shard ranges read for G
  /// positions [g0, g1) (g1 <= N), numbering them from slot `slot`: records begin ..
  /// begin + length - 1 of `shard` are slots first_slot, first_slot + stride, ... Within a
  /// block the ranges come run by run (stride m), not in first-read order. O(ranges *
  /// log shards).
  template <class Sink>
  void visit(std::uint64_t g0, std::uint64_t g1, std::uint64_t slot, Sink& sink) const {
    const std::uint64_t m = options_.max_open_shards, b = block_size();
    std::uint64_t g = g0;
    while (g < g1 && g < regular_) {
      const std::uint64_t block = g / b, w0 = g % b;
      const std::uint64_t w1 = std::min(b, w0 + (g1 - g));
      for (std::uint64_t a = 0; a < m; ++a) {
        // Run a's slots in [w0, w1): w = a + m * u.
        const std::uint64_t u0 = w0 <= a ? 0 : (w0 - a + m - 1) / m;
        if (a + m * u0 >= w1) continue;
        const std::uint64_t u1 = (w1 - a + m - 1) / m;  // first u with a + m*u >= w1
        const std::uint64_t q = run_start(block * m + a);
        visit_sequence(q + u0, q + u1, slot + (a + m * u0 - w0), m, sink);
      }
      slot += w1 - w0;
      g += w1 - w0;
    }
    // Past the blocks consecutive positions are consecutive in Q, except at run
    // boundaries among the leftover runs.
    while (g < g1) {
      const std::uint64_t q = sequence_position(g);
      const std::uint64_t y = g - regular_, l = options_.run_length;
      std::uint64_t piece = g1 - g;
      if (y < leftover_runs_ * l) piece = std::min(piece, l - y % l);
      visit_sequence(q, q + piece, slot, 1, sink);
      slot += piece;
      g += piece;
    }
  }

  /// Which of its runs lane `lane` reads in row `row` (< runs_per_lane()): a keyed
  /// permutation within each window of window_rows() rows (the last window may be
  /// shorter), so the result lies in the row's window. Windows of up to 16 runs are
  /// decoded from one hash (an exact draw); larger ones use a FeistelPermutation. O(1).
  [[nodiscard]] std::uint64_t window_row(std::uint64_t lane, std::uint64_t row) const noexcept {
    return window_row_keyed(lane_key(lane), row);
  }
  /// The key of a lane's windows: window_row(lane, row) == window_row_keyed(lane_key(lane),
  /// row), so a walk along one lane hashes the lane once. O(1).
  [[nodiscard]] std::uint64_t lane_key(std::uint64_t lane) const noexcept {
    return detail::splitmix64(epoch_key_ ^ lane);
  }
  /// The runs of window `window` of a lane at once, for windows of at most 16 rows
  /// (window_rows() <= 16): window_row_keyed(lane_key, window * w + i) == window * w +
  /// ((window_table(lane_key, window) >> (4 * i)) & 0xf), for the window's rows. One
  /// decode for all its rows. O(w).
  [[nodiscard]] std::uint64_t window_table(std::uint64_t lane_key, std::uint64_t window) const noexcept {
    const std::uint64_t w = window_rows(), base = window * w, size = std::min(w, runs_per_lane() - base);
    if (w <= 1 || size <= 1) return 0xfedcba9876543210u;
    return detail::small_permutation_table(detail::mix64(lane_key ^ window), size);
  }
  /// window_row with the lane's key precomputed (see lane_key). O(1).
  [[nodiscard]] std::uint64_t window_row_keyed(std::uint64_t lane_key, std::uint64_t row) const noexcept {
    const std::uint64_t w = options_.shuffle_window, lane_runs = lane_length_ / options_.run_length;
    if (!options_.shuffle || w <= 1) return row;
    const std::uint64_t window = row / w, base = window * w, size = std::min(w, lane_runs - base);
    if (size <= 1) return row;
    const std::uint64_t key = detail::mix64(lane_key ^ window);
    if (size <= detail::small_permutation_max) return base + detail::small_permutation_at(key, size, row - base);
    return base + FeistelPermutation(size, key, 0)(row - base);
  }

 private:
  // A cursor at the j-th shard of Q.
  [[nodiscard]] Cursor cursor_at(std::size_t j) const noexcept {
    Cursor c;
    c.j = j;
    c.begin = prefix_[j];
    c.end = prefix_[j + 1];
    c.shard = order_[j];
    c.size = catalog_->shard_size(c.shard);
    c.rotation = rotation(c.shard);
    c.index_base = catalog_->shard_offset(c.shard);
    return c;
  }

  // The Q position where run `run` (row-major over the C columns of a row) starts.
  [[nodiscard]] std::uint64_t run_start(std::uint64_t run) const noexcept {
    const std::uint64_t c = options_.canonical_streams, lane = spread_lane(run % c, c, options_.max_open_shards);
    return lane * lane_length_ + window_row(lane, run / c) * options_.run_length;
  }

  [[nodiscard]] std::uint64_t rotation(std::uint64_t shard) const noexcept {
    if (!options_.shuffle || !options_.rotate_shards) return 0;
    const std::uint64_t key = detail::mix64(epoch_key_ ^ detail::splitmix64(shard));
    return detail::mulhi64(key, catalog_->shard_size(shard));
  }

  // (local + rot) mod size for local, rot < size, without overflow near 2^64.
  [[nodiscard]] static constexpr std::uint64_t rotate(std::uint64_t local, std::uint64_t rot,
                                                      std::uint64_t size) noexcept {
    return local < size - rot ? local + rot : local - (size - rot);
  }

  // The shard ranges of Q positions [q0, q1), read one slot every `stride`.
  template <class Sink>
  void visit_sequence(std::uint64_t q0, std::uint64_t q1, std::uint64_t slot, std::uint64_t stride, Sink& sink) const {
    std::uint64_t q = q0;
    while (q < q1) {
      const auto j =
          static_cast<std::size_t>(std::upper_bound(prefix_.begin(), prefix_.end(), q) - prefix_.begin() - 1);
      const std::uint64_t shard = order_[j], size = catalog_->shard_size(shard);
      const std::uint64_t piece_end = std::min(q1, prefix_[j + 1]);
      const std::uint64_t off = rotate(q - prefix_[j], rotation(shard), size);
      const std::uint64_t len = piece_end - q;
      const std::uint64_t first_len = std::min(len, size - off);  // rotation may wrap once
      sink(shard, off, first_len, slot, stride);
      if (first_len < len) sink(shard, std::uint64_t{0}, len - first_len, slot + first_len * stride, stride);
      slot += len * stride;
      q = piece_end;
    }
  }

  std::shared_ptr<const ShardCatalog> catalog_;
  ShardSamplerOptions options_;
  std::uint64_t epoch_ = 0;
  std::uint64_t epoch_key_ = 0;
  std::uint64_t lane_length_ = 0;          // samples per lane
  std::uint64_t regular_ = 0;              // positions in whole blocks
  std::uint64_t leftover_runs_ = 0;        // lane runs after the last whole block
  std::vector<std::uint64_t> order_;       // order_[j] = the shard read j-th
  std::vector<std::uint64_t> prefix_;      // prefix_[j] = samples in order_[0..j)
  std::vector<std::uint64_t> lane_first_;  // lane_first_[l]: the j whose shard holds Q position l * lane_length_
};

/// The engine name a shard order has in saved states: every option of ShardEpochOrder
/// that changes the order ("shard-shuffle-streams64-open8-run8-window16", "-norotate"
/// appended when shuffled shards are read from offset 0); the shard sizes are the state's
/// layout field (ShardCatalog::layout_hash()) and the seed its own field. Equal names over
/// equal catalogs mean equal orders.
[[nodiscard]] inline std::string shard_order_name(const ShardSamplerOptions& options) {
  return std::string(options.shuffle ? "shard-shuffle" : "shard-noshuffle") + "-streams" +
         std::to_string(options.canonical_streams) + "-open" + std::to_string(options.max_open_shards) + "-run" +
         std::to_string(options.run_length) + "-window" + std::to_string(options.shuffle ? options.shuffle_window : 1) +
         (options.shuffle && !options.rotate_shards ? "-norotate" : "");
}

/// The name version 1 and 2 states fingerprinted for the same order ("shard-v2 shuffle
/// streams=64 open=8 run=8 window=16 shards=3 layout=0x..."), so they still load; orders
/// without rotation had no such states, and their name (" norotate" appended) matches none.
[[nodiscard]] inline std::string shard_legacy_order_name(const ShardSamplerOptions& options,
                                                         const ShardCatalog& catalog) {
  return std::string("shard-v2 ") + (options.shuffle ? "shuffle" : "noshuffle") +
         " streams=" + std::to_string(options.canonical_streams) + " open=" + std::to_string(options.max_open_shards) +
         " run=" + std::to_string(options.run_length) +
         " window=" + std::to_string(options.shuffle ? options.shuffle_window : 1) +
         " shards=" + std::to_string(catalog.num_shards()) + " layout=" + detail::hex64(catalog.layout_hash()) +
         (options.shuffle && !options.rotate_shards ? " norotate" : "");
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARD_EPOCH_ORDER_HPP

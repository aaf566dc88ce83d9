// distsampler MixtureSchedule: which source of a mixture each position of the stream takes, by integer count math.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_MIXTURE_SCHEDULE_HPP
#define DISTSAMPLER_MIXTURE_SCHEDULE_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../detail/checked.hpp"
#include "../detail/mix.hpp"
#include "../state/format.hpp"
#include "../error.hpp"
#include "node.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// A weight change of a mixture: from optimizer step `step` on (steps of the mixing block),
/// the sources' weights are `weights` (one per source, finite, >= 0, not all 0; normalised).
struct WeightChange {
  std::uint64_t step = 0;
  std::vector<double> weights;
};

/// Where one position of a mixture's stream goes: to `source`, as that source's
/// `ordinal`-th sample of the stream (0, 1, 2, ...; its pass is ordinal / size).
struct MixtureSlot {
  std::uint64_t source = 0;
  std::uint64_t ordinal = 0;
  friend constexpr bool operator==(const MixtureSlot& a, const MixtureSlot& b) noexcept {
    return a.source == b.source && a.ordinal == b.ordinal;
  }
  friend constexpr bool operator!=(const MixtureSlot& a, const MixtureSlot& b) noexcept { return !(a == b); }
};

/// The count math of a mixture: for K sources with weights w_i (per segment of a weight
/// schedule), which source position p of the stream takes, and how many samples of source
/// i the prefix [0, p) holds (count_i(p)). No table: O(K) memory per segment.
///
/// Algorithm. Weights become integer units u_i summing to U = 2^52. Sources with a
/// positive weight are the leaves of a weight-balanced binary tree (sorted by weight,
/// split where the weight halves). The stream is cut into blocks of G positions (the
/// mixing block, normally the global batch). Per block every node v gets floor(G w_v) or
/// ceil(G w_v) positions, w_v the weight of its leaves: the root gets G; a node splits
/// its count between its children L and R, whose shares G w_L = B_L + x_L and G w_R =
/// B_R + x_R have integer parts B and fractions x. When x_L + x_R < 1 the node has one
/// odd position in some blocks, and the n-th odd position of the segment goes to L when
/// round(n a) grows, a = x_L / (x_L + x_R) (a Sturmian split, centred rounding); when
/// x_L + x_R >= 1 both children get B + 1 except in the blocks where one misses, and the
/// misses are split the same way with a = (1 - x_L) / (2 - x_L - x_R). So each child's
/// count per block is B or B + 1 and its cumulative count is non-decreasing (house
/// monotone) with error e_child = a e_node + d, |d| <= 1/2, at block boundaries.
/// Within a block, node v's c_v positions are split between L and R (c_L, c_R known) by
/// a line with a phase f in [1/4, 3/4) drawn per (block, node) from the phase key:
/// L takes the t-th position when floor((t + 1) c_L / c_v + f) > floor(t c_L / c_v + f).
/// So the slots of a source within a block move from block to block (no fixed pattern),
/// and every prefix of the block deviates from the line by less than 3/4 per level.
/// Both errors shrink by the children's shares down the tree; docs/MIXTURES.md has the
/// bound and the measured maxima.
///
/// Weight changes happen at block boundaries; each source's count carries over, so a
/// change loses and repeats nothing. The error each node carries into a new segment
/// offsets that segment's roundings (MixtureNode::psi and shift, clipped to +-2), so the
/// new segment continues from it instead of adding its own error on top. locate() and count() are O(depth) (depth <= K
/// - 1, about log2 K for comparable weights); 128-bit integer arithmetic, no floating point after construction. A value
/// type, immutable after construction; deterministic; const members may run concurrently.
class MixtureSchedule {
 public:
  /// The unit of the integer weights: they sum to 2^52.
  static constexpr std::uint64_t weight_units = MixtureNode::weight_units;
  /// The largest mixing block (2^32), so the within-block math fits 128 bits.
  static constexpr std::uint64_t max_block = std::uint64_t{1} << 32;

  MixtureSchedule() = default;

  /// Sources of `sizes`, weights `weights` from position 0 and `changes` from step *
  /// block on. Throws config_error, prefixed by `who`, naming the parameter: no sources,
  /// a weight count that differs from the source count, a negative, NaN or infinite
  /// weight, all weights 0, a source of size 0 with a positive weight, sizes summing past
  /// 2^64 - 1, block 0 or above max_block, change steps not strictly increasing from 1,
  /// or a change whose step * block overflows 64 bits. O(K log K) per segment.
  MixtureSchedule(std::vector<std::uint64_t> sizes, const std::vector<double>& weights,
                  const std::vector<WeightChange>& changes, std::uint64_t block, std::string_view who)
      : sizes_(std::move(sizes)), block_(block) {
    const std::string w(who);
    if (sizes_.empty()) detail::throw_config_error(w + ": source_sizes is empty (expected at least one source)");
    if (sizes_.size() > (std::size_t{1} << 31)) {
      detail::throw_config_error(w + ": " + std::to_string(sizes_.size()) + " sources (expected at most 2^31)");
    }
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < sizes_.size(); ++i) {
      if (sizes_[i] > UINT64_MAX - total) {
        detail::throw_config_error(w + ": source_sizes overflow 64 bits at source " + std::to_string(i) +
                                   " (expected sizes summing to at most 18446744073709551615)");
      }
      total += sizes_[i];
    }
    if (block_ == 0 || block_ > max_block) {
      detail::throw_config_error(w + ": mixing block " + std::to_string(block_) +
                                 " is out of range (expected 1..4294967296)");
    }
    add_segment(0, weights, w + ": weights");
    std::uint64_t last = 0;
    for (std::size_t j = 0; j < changes.size(); ++j) {
      const WeightChange& c = changes[j];
      const std::string entry = w + ": schedule[" + std::to_string(j) + "] (step " + std::to_string(c.step) + ")";
      if (c.step <= last) {
        detail::throw_config_error(
            entry + (j == 0 ? " is not after step 0" : " does not follow the previous step " + std::to_string(last)) +
            " (expected strictly increasing steps from 1; the weights argument holds step 0)");
      }
      const std::string step_name = "schedule[" + std::to_string(j) + "] step";
      add_segment(detail::checked_mul(who, step_name, c.step, "mixing block", block_), c.weights, entry + " weights");
      last = c.step;
    }
    for (std::size_t j = 1; j < segments_.size(); ++j) {
      const Segment& prev = segments_[j - 1];
      Segment& seg = segments_[j];
      const std::uint64_t blocks = (seg.begin - prev.begin) / block_;
      for (std::size_t i = 0; i < sizes_.size(); ++i) {
        seg.offset[i] = prev.offset[i] + static_cast<std::uint64_t>(block_count(prev, i, blocks));
      }
      compensate(j);
    }
  }

  [[nodiscard]] std::size_t num_sources() const noexcept { return sizes_.size(); }
  [[nodiscard]] const std::vector<std::uint64_t>& sizes() const noexcept { return sizes_; }
  [[nodiscard]] std::uint64_t block() const noexcept { return block_; }
  [[nodiscard]] std::size_t num_segments() const noexcept { return segments_.size(); }
  /// The first stream position of segment j (0 for the initial weights).
  [[nodiscard]] std::uint64_t segment_begin(std::size_t j) const noexcept { return segments_[j].begin; }
  /// The index of the segment holding `position`.
  [[nodiscard]] std::size_t segment_of(std::uint64_t position) const noexcept {
    std::size_t j = segments_.size() - 1;
    while (segments_[j].begin > position) --j;
    return j;
  }
  /// Source i's weight in segment j as integer units (summing to weight_units).
  [[nodiscard]] std::uint64_t units(std::size_t segment, std::size_t source) const noexcept {
    return segments_[segment].units[source];
  }
  /// True when source i has a positive weight in some segment.
  [[nodiscard]] bool used(std::size_t source) const noexcept {
    for (const Segment& s : segments_) {
      if (s.units[source] != 0) return true;
    }
    return false;
  }

  /// The source and ordinal of stream position `position`. `phase_key` draws the
  /// within-block phases; `centred` uses phase 1/2 everywhere instead. O(depth).
  [[nodiscard]] MixtureSlot locate(std::uint64_t position, std::uint64_t phase_key, bool centred) const noexcept {
    using u128 = detail::u128;
    const std::size_t j = segment_of(position);
    const Segment& seg = segments_[j];
    const std::uint64_t r = position - seg.begin, b = r / block_;
    std::uint64_t t = r % block_;
    u128 lo = static_cast<u128>(b) * block_, hi = lo + block_;
    std::uint32_t v = 0;
    while (seg.nodes[v].left != leaf) {
      const MixtureNode& n = seg.nodes[v];
      const u128 l_lo = n.left_count(b, lo), l_hi = n.left_count(b + 1, hi);
      const auto cv = static_cast<std::uint64_t>(hi - lo), cl = static_cast<std::uint64_t>(l_hi - l_lo);
      const std::int64_t f = static_cast<std::int64_t>(phase(phase_key, centred, j, b, v)) + n.shift;
      const MixtureNode::Within w = n.within(lo, l_lo, t, cl, cv, f);
      const std::uint64_t before = w.before;
      if (w.left) {
        t = before;
        lo = l_lo;
        hi = l_hi;
        v = n.left;
      } else {
        t -= before;
        lo -= l_lo;
        hi -= l_hi;
        v = n.right;
      }
    }
    const std::uint32_t s = seg.nodes[v].right;
    return MixtureSlot{s, seg.offset[s] + static_cast<std::uint64_t>(lo) + t};
  }

  /// count_i(position): how many of stream positions [0, position) go to `source`.
  /// Non-decreasing in position. Same phases as locate(). O(depth).
  [[nodiscard]] std::uint64_t count(std::size_t source, std::uint64_t position, std::uint64_t phase_key,
                                    bool centred) const {
    using u128 = detail::u128;
    const std::size_t j = segment_of(position);
    const Segment& seg = segments_[j];
    if (seg.leaf_of[source] == leaf) return seg.offset[source];
    const std::uint64_t r = position - seg.begin, b = r / block_;
    std::uint64_t t = r % block_;
    u128 lo = static_cast<u128>(b) * block_, hi = lo + block_;
    for (const Step& step : path(seg, source)) {
      const MixtureNode& n = seg.nodes[step.node];
      const u128 l_lo = n.left_count(b, lo), l_hi = n.left_count(b + 1, hi);
      const auto cv = static_cast<std::uint64_t>(hi - lo), cl = static_cast<std::uint64_t>(l_hi - l_lo);
      const std::int64_t f = static_cast<std::int64_t>(phase(phase_key, centred, j, b, step.node)) + n.shift;
      const std::uint64_t before = n.within(lo, l_lo, t, cl, cv, f).before;
      if (step.left) {
        t = before;
        lo = l_lo;
        hi = l_hi;
      } else {
        t -= before;
        lo -= l_lo;
        hi -= l_hi;
      }
    }
    return seg.offset[source] + static_cast<std::uint64_t>(lo) + t;
  }

  /// The smallest position p with count(source, p) >= target (0 for target 0), or
  /// UINT64_MAX when no position below 2^64 - 1 reaches it. O(64 depth).
  [[nodiscard]] std::uint64_t first_reaching(std::size_t source, std::uint64_t target, std::uint64_t phase_key,
                                             bool centred) const {
    if (target == 0) return 0;
    if (count(source, UINT64_MAX, phase_key, centred) < target) return UINT64_MAX;
    std::uint64_t lo = 0, hi = UINT64_MAX;  // count(lo) < target <= count(hi)
    while (hi - lo > 1) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      if (count(source, mid, phase_key, centred) >= target) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    return hi;
  }

  /// Bytes held by this schedule (its vectors' elements and the segment records): O(K) per segment.
  [[nodiscard]] std::size_t memory_bytes() const noexcept {
    std::size_t bytes = sizeof(*this) + sizes_.size() * sizeof(std::uint64_t);
    for (const Segment& seg : segments_) {
      bytes += sizeof(Segment) + seg.units.size() * 8 + seg.offset.size() * 8 + seg.nodes.size() * sizeof(MixtureNode) +
               seg.leaf_of.size() * 4 + seg.goes_left.size();
    }
    return bytes;
  }

  /// A 64-bit hash of everything that defines the stream: sizes, block, segment starts
  /// and integer weights. Identical on every platform.
  [[nodiscard]] std::uint64_t layout_hash() const noexcept {
    std::uint64_t h = detail::hash_field(0xcbf29ce484222325u, "distsampler-mixture-v1");
    h = detail::hash_field(h, block_);
    h = detail::hash_field(h, static_cast<std::uint64_t>(sizes_.size()));
    for (const std::uint64_t s : sizes_) h = detail::hash_field(h, s);
    for (const Segment& seg : segments_) {
      h = detail::hash_field(h, seg.begin);
      for (const std::uint64_t u : seg.units) h = detail::hash_field(h, u);
    }
    return detail::mix64(h);
  }

 private:
  static constexpr std::uint32_t leaf = MixtureNode::none;

  struct Segment {
    std::uint64_t begin = 0;
    std::vector<std::uint64_t> units;     // per source
    std::vector<std::uint64_t> offset;    // per source: count at `begin`
    std::vector<MixtureNode> nodes;       // nodes[0] is the root
    std::vector<std::uint32_t> leaf_of;   // per source: its leaf, or `leaf` when its weight is 0
    std::vector<std::uint8_t> goes_left;  // per node: 1 when it is its parent's left child
  };

  void add_segment(std::uint64_t begin, const std::vector<double>& weights, const std::string& what) {
    const std::size_t k = sizes_.size();
    if (weights.size() != k) {
      detail::throw_config_error(what + " has " + std::to_string(weights.size()) + " values for " + std::to_string(k) +
                                 " sources (expected one weight per source)");
    }
    double sum = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const double x = weights[i];
      if (!(x >= 0) || !std::isfinite(x)) {
        detail::throw_config_error(what + "[" + std::to_string(i) + "] is " + detail::weight_text(x) +
                                   " (expected a finite weight >= 0)");
      }
      if (x > 0 && sizes_[i] == 0) {
        detail::throw_config_error(what + "[" + std::to_string(i) + "] is " + detail::weight_text(x) + " but source " +
                                   std::to_string(i) +
                                   " is empty (expected weight 0 for an empty source, or a non-empty source)");
      }
      sum += x;
    }
    if (!(sum > 0) || !std::isfinite(sum)) {
      detail::throw_config_error(what + " are all 0 or sum past the largest double (expected a positive, finite sum)");
    }
    Segment seg;
    seg.begin = begin;
    seg.units = detail::mixture_units(weights, sum);
    seg.offset.assign(k, 0);
    seg.leaf_of.assign(k, leaf);
    std::vector<std::uint32_t> order;
    for (std::size_t i = 0; i < k; ++i) {
      if (seg.units[i] != 0) order.push_back(static_cast<std::uint32_t>(i));
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return seg.units[a] > seg.units[b]; });
    std::vector<std::uint64_t> prefix(order.size() + 1, 0);
    for (std::size_t i = 0; i < order.size(); ++i) prefix[i + 1] = prefix[i] + seg.units[order[i]];
    seg.nodes.reserve(2 * order.size());
    build(seg, order, prefix, 0, order.size(), leaf);
    seg.goes_left.assign(seg.nodes.size(), 0);
    for (std::uint32_t v = 0; v < seg.nodes.size(); ++v) {
      if (seg.nodes[v].left != leaf) seg.goes_left[seg.nodes[v].left] = 1;
    }
    segments_.push_back(std::move(seg));
  }

  // Builds the subtree over order[lo, hi) and returns its node id.
  std::uint32_t build(Segment& seg, const std::vector<std::uint32_t>& order, const std::vector<std::uint64_t>& prefix,
                      std::size_t lo, std::size_t hi, std::uint32_t parent) const {
    const auto id = static_cast<std::uint32_t>(seg.nodes.size());
    seg.nodes.push_back(MixtureNode{});
    seg.nodes[id].parent = parent;
    if (hi - lo == 1) {
      seg.nodes[id].right = order[lo];
      seg.leaf_of[order[lo]] = id;
      return id;
    }
    // Split where the weight halves, leaving at least one leaf on each side.
    const std::uint64_t half = prefix[lo] + (prefix[hi] - prefix[lo]) / 2;
    auto it = std::lower_bound(prefix.begin() + static_cast<std::ptrdiff_t>(lo) + 1,
                               prefix.begin() + static_cast<std::ptrdiff_t>(hi), half);
    auto mid = static_cast<std::size_t>(it - prefix.begin());
    if (mid > lo + 1 && half - prefix[mid - 1] < prefix[mid] - half) --mid;
    mid = std::min(std::max(mid, lo + 1), hi - 1);
    const std::uint32_t l = build(seg, order, prefix, lo, mid, id);
    const std::uint32_t r = build(seg, order, prefix, mid, hi, id);
    MixtureNode& n = seg.nodes[id];
    n.left = l;
    n.right = r;
    n.units_l = prefix[mid] - prefix[lo];
    n.units_v = prefix[hi] - prefix[lo];
    split_share(prefix[mid] - prefix[lo], n.base_l, n.frac_l);
    split_share(prefix[hi] - prefix[mid], n.base_r, n.frac_r);
    return id;
  }

  // G * units / U as integer part and fraction (in 1/U).
  void split_share(std::uint64_t units, std::uint64_t& base, std::uint64_t& frac) const noexcept {
    const detail::u128 x = static_cast<detail::u128>(block_) * units;
    base = static_cast<std::uint64_t>(x / weight_units);
    frac = static_cast<std::uint64_t>(x % weight_units);
  }

  // Each source's error carried into segment j (its count minus its ideal at the segment's
  // start) offsets the segment's roundings so the new segment continues from it.
  void compensate(std::size_t j) {
    using u128 = detail::u128;
    Segment& seg = segments_[j];
    const double unit = static_cast<double>(weight_units);
    std::vector<double> carry(seg.nodes.size(), 0);
    std::vector<double> source_carry(sizes_.size(), 0);
    for (std::size_t i = 0; i < sizes_.size(); ++i) {
      u128 ideal = 0u;
      for (std::size_t k = 0; k < j; ++k) {
        ideal += static_cast<u128>(segments_[k + 1].begin - segments_[k].begin) * segments_[k].units[i];
      }
      const u128 have = static_cast<u128>(seg.offset[i]) * weight_units;
      source_carry[i] =
          have >= ideal ? detail::to_double(have - ideal) / unit : -detail::to_double(ideal - have) / unit;
    }
    for (std::size_t v = seg.nodes.size(); v-- > 0;) {
      MixtureNode& n = seg.nodes[v];
      if (n.left == leaf) {
        carry[v] = source_carry[n.right];
        continue;
      }
      carry[v] = carry[n.left] + carry[n.right];
      const double cl = carry[n.left], cv = carry[v];
      double psi = 0;
      if (n.frac_l + n.frac_r < weight_units) {
        const double d = static_cast<double>(n.frac_l + n.frac_r);
        if (d > 0) psi = static_cast<double>(n.frac_l) / d * cv - cl;
      } else {
        const double a =
            static_cast<double>(weight_units - n.frac_l) / static_cast<double>(2 * weight_units - n.frac_l - n.frac_r);
        psi = cl - a * cv;
      }
      n.psi = std::min<std::int64_t>(2047, std::max<std::int64_t>(-2048, std::llround(psi * 1024)));
      const double sh = static_cast<double>(n.units_l) / static_cast<double>(n.units_v) * cv - cl;
      n.shift = std::min<std::int64_t>(INT64_C(1) << 33,
                                       std::max<std::int64_t>(-(INT64_C(1) << 33), std::llround(sh * 4294967296.0)));
    }
  }

  static std::uint64_t phase(std::uint64_t key, bool centred, std::size_t segment, std::uint64_t b,
                             std::uint32_t node) noexcept {
    if (centred) return std::uint64_t{1} << 31;
    const std::uint64_t h = detail::mix64(key ^ detail::splitmix64(b ^ detail::splitmix64(segment)) ^
                                          (static_cast<std::uint64_t>(node) * detail::splitmix64_gamma));
    return (std::uint64_t{1} << 30) + (h >> 33);  // [2^30, 3 * 2^30)
  }

  // Source i's cumulative count after `blocks` blocks of segment `seg` (block boundaries only).
  detail::u128 block_count(const Segment& seg, std::size_t source, std::uint64_t blocks) const {
    if (seg.leaf_of[source] == leaf) return 0u;
    detail::u128 c = static_cast<detail::u128>(blocks) * block_;
    for (const Step& step : path(seg, source)) {
      const detail::u128 l = seg.nodes[step.node].left_count(blocks, c);
      c = step.left ? l : c - l;
    }
    return c;
  }

  struct Step {
    std::uint32_t node;
    bool left;  // the path continues to the node's left child
  };

  // The internal nodes from the root down to source's leaf, with the side taken at each.
  static std::vector<Step> path(const Segment& seg, std::size_t source) {
    std::vector<Step> up;
    for (std::uint32_t u = seg.leaf_of[source]; seg.nodes[u].parent != leaf; u = seg.nodes[u].parent) {
      up.push_back(Step{seg.nodes[u].parent, seg.goes_left[u] != 0});
    }
    std::reverse(up.begin(), up.end());
    return up;
  }

  std::vector<std::uint64_t> sizes_;
  std::uint64_t block_ = 1;
  std::vector<Segment> segments_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_MIXTURE_SCHEDULE_HPP

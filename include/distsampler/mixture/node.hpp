// distsampler MixtureNode: one node of a mixture's weight tree and its rounding rules (per block, within a block).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_MIXTURE_NODE_HPP
#define DISTSAMPLER_MIXTURE_NODE_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../detail/ieee_double.hpp"
#include "../detail/u128.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// One node of MixtureSchedule's weight tree: how the node's positions are split between
/// its children L and R, per block of G positions and within a block (see
/// MixtureSchedule for the algorithm). Weights are integer units of 2^-52. A node with
/// `left == none` is a leaf and `right` is its source. Pure integer functions; O(1).
struct MixtureNode {
  static constexpr std::uint32_t none = UINT32_MAX;
  /// The unit of the integer weights: they sum to 2^52.
  static constexpr std::uint64_t weight_units = std::uint64_t{1} << 52;

  std::uint32_t left = none;  ///< the left child, or none for a leaf
  std::uint32_t right = 0;    ///< the right child, or the source of a leaf
  std::uint32_t parent = none;
  std::uint64_t base_l = 0, base_r = 0;    ///< integer parts of G w_L, G w_R
  std::uint64_t frac_l = 0, frac_r = 0;    ///< their fractions, in 2^-52
  std::uint64_t units_l = 0, units_v = 0;  ///< weight units of the left child and of the node
  std::int64_t psi = 0;                    ///< offset of the block split's rounding, in 1/1024 (-2048..2047)
  std::int64_t shift = 0;                  ///< offset of the within-block line, in 2^-32 (-2^33..2^33)

  /// clamp(floor(n a / d + 1/2 + psi / 1024), 0, n): non-decreasing in n, steps of 0 or 1, 0 at 0.
  static detail::u128 split(detail::u128 n, detail::u128 a, detail::u128 d,
                                    std::int64_t psi) noexcept {
    using u128 = detail::u128;
    const u128 shifted =
        (n * a * 1024u + d * static_cast<std::uint64_t>(4608 + psi)) / (d * 1024u);  // the value + 4
    return shifted < 4u ? u128{0u} : std::min(shifted - 4u, n);
  }

  /// The left child's cumulative count after b blocks, given this node's cumulative count c
  /// (a count the parent's rule produced). The odd positions (x_L + x_R < 1) or the misses
  /// (x_L + x_R >= 1) are split by split(): each child gets B or B + 1 per block.
  [[nodiscard]] detail::u128 left_count(std::uint64_t b, detail::u128 c) const noexcept {
    using u128 = detail::u128;
    const u128 bb = b;
    if (frac_l + frac_r < weight_units) {
      const u128 d = frac_l + frac_r;
      if (d == 0u) return bb * base_l;
      return bb * base_l + split(c - bb * (base_l + base_r), frac_l, d, psi);
    }
    const u128 miss = bb * (base_l + base_r + 2) - c;
    return bb * (base_l + 1) - split(miss, weight_units - frac_l, u128{2u} * weight_units - frac_l - frac_r, psi);
  }

  /// What within() says about the node's t-th position of a block.
  struct Within {
    std::uint64_t before;  ///< left positions among the node's first t of the block
    bool left;             ///< the t-th position goes left
  };

  /// The node's count before the block is c, the left child's cl0; the block gives cv to
  /// the node and cl to the left. The left's cumulative count follows the node's line
  /// floor((c + t) u_L / u_v + f), f = phase / 2^32 (any value; its integer part moves the
  /// line), clamped into what the block's counts allow: a clamp of non-decreasing
  /// unit-step functions is one too, and it meets both ends of the block.
  [[nodiscard]] Within within(detail::u128 c, detail::u128 cl0, std::uint64_t t, std::uint64_t cl,
                              std::uint64_t cv, std::int64_t phase) const noexcept {
    using u128 = detail::u128;
    const std::int64_t whole = phase >= 0 ? phase >> 32 : -((-phase + 0xffffffff) >> 32);
    const auto f = static_cast<std::uint64_t>(phase - whole * (INT64_C(1) << 32));
    // x u_L = q u_v + r once; x + 1 adds u_L to r. floor(q + r / u_v + f) is q, or q + 1 when
    // r 2^32 >= (2^32 - f) u_v: a comparison, no second division.
    const u128 x = (c + t) * units_l;
    const u128 q = x / units_v, r = x % units_v;
    const u128 cut = (u128{1u} << 32) - f;
    const auto line_at = [&](u128 rr) {
      const u128 carry = rr / units_v;  // 0 or 1: rr < 2 u_v
      const u128 rest = rr - carry * units_v;
      const u128 line = q + carry + u128{(rest << 32) >= cut * units_v ? 1u : 0u};
      if (whole >= 0) return line + static_cast<std::uint64_t>(whole);
      const u128 down = static_cast<std::uint64_t>(-whole);
      return line < down ? u128{0u} : line - down;
    };
    const auto clamp = [&](std::uint64_t tt, u128 line) {
      const u128 low = cl0 + (tt > cv - cl ? tt - (cv - cl) : 0), high = cl0 + std::min(tt, cl);
      return static_cast<std::uint64_t>(std::max(low, std::min(line, high)) - cl0);
    };
    const std::uint64_t before = clamp(t, line_at(r));
    const std::uint64_t after = t < cv ? clamp(t + 1, line_at(r + units_l)) : before;
    return Within{before, after > before};
  }
};

namespace detail {

/// A weight as messages show it: "nan", "inf", "-inf" or std::to_string's.
[[nodiscard]] inline std::string weight_text(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return std::to_string(x);
}

/// Largest-remainder rounding of weights / sum (finite, >= 0, sum > 0) to integers summing
/// to 2^52; zero weights stay 0. Exact scaling by 2^52; deterministic.
[[nodiscard]] inline std::vector<std::uint64_t> mixture_units(const std::vector<double>& weights, double sum) {
  constexpr std::uint64_t total = MixtureNode::weight_units;
  std::vector<std::uint64_t> units(weights.size(), 0);
  std::vector<std::pair<double, std::size_t>> rest;
  std::uint64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] == 0) continue;
    const double q = weights[i] / sum * static_cast<double>(total);
    const double f = std::floor(q);
    units[i] = static_cast<std::uint64_t>(f);
    given += units[i];
    rest.emplace_back(q - f, i);
  }
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  // Rounding leaves the sum within a few units of 2^52 either way.
  for (std::size_t at = 0; given < total && !rest.empty(); ++at, ++given) ++units[rest[at % rest.size()].second];
  for (std::size_t at = rest.size(); given > total && at > 0;) {
    const std::size_t i = rest[--at].second;
    if (units[i] > 1) {
      --units[i];
      --given;
    }
    if (at == 0 && given > total) at = rest.size();
  }
  return units;
}

}  // namespace detail

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_MIXTURE_NODE_HPP

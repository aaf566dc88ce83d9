// distsampler FeistelPermutation: the default shuffle, a keyed O(1)-memory bijection on [0, n) with random access and
// inverse. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FEISTEL_HPP
#define DISTSAMPLER_FEISTEL_HPP

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "detail/mix.hpp"
#include "detail/small_permutation.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// A pseudo-random permutation of [0, n), keyed by (seed, epoch), that maps any
/// position to its dataset index (and back) in O(1) time and O(1) memory, for every
/// n from 0 to 2^64 - 1. The default shuffle of the samplers: a rank computes only
/// its own positions and never materialises the n indices.
///
/// Algorithm (format_version 2; version 1 drew the n <= 16 tables by modulo with
/// rejection, one stream word per swap, and gave other orders for those sizes only):
///  - Key: `k = splitmix64(splitmix64(splitmix64(seed ^ tag) ^ epoch) ^ n)`, a chain of
///    bijective mixers, so (seed, epoch + 1) and (seed + 1, epoch) are unrelated, and
///    different dataset sizes get unrelated orders. Round keys are the SplitMix64 stream
///    seeded with k.
///  - n <= 16: the permutation is drawn by Fisher-Yates from the stream's first word x,
///    read as a fraction in [0, 1): for slot s = n - 1 down to 1, swap with slot
///    floor(x * (s + 1)) and keep the fractional part (detail::small_permutation_table;
///    each of the n! orders has probability within 2^-19 of 1/n!). It is kept in two
///    64-bit words of nibbles (forward and inverse); Feistel networks on 4 bits or fewer
///    mix too slowly to be uniform.
///  - n > 16: a Feistel network on b = bit_width(n - 1) bits (the smallest power of two
///    >= n, computed with integers, so 2^k + 1 is never lost), halves of ceil(b/2) and
///    floor(b/2) bits, with cycle walking (re-encrypt until the value is < n; under 2
///    encryptions on average, since 2^b < 2n). Each round is
///    `half ^= ((other + a_i) * m_i) >> (64 - width(half))`: the top bits of a 64-bit
///    multiply-add (Dietzfelbinger's multiply-add-shift hash, near-pairwise-independent
///    over the keys) with a per-round key a_i and odd multiplier m_i. 8 rounds when
///    b >= 9, 16 rounds for 17 <= n <= 256 (short halves need more rounds to mix).
///
/// Quality: passes position-uniformity, pairwise-order, epoch-independence, adjacent-
/// output and per-rank-spread tests against a true Fisher-Yates shuffle (docs/QUALITY.md).
/// Like every Feistel or block-cipher shuffle it is not a uniform draw from all n!
/// permutations (e.g. for n = 2^b with b >= 5 every permutation is even); no sampling
/// statistic an ML workload computes can see this.
///
/// Determinism: a pure function of (n, seed, epoch) with integer arithmetic only; the
/// same order on every platform, compiler and standard library. The order is part of
/// the format: it changes only with `format_version`.
///
/// Thread-safety: an immutable value (about 300 bytes); copy it freely, call it from any
/// number of threads. Never allocates, never throws.
///
/// Example:
/// ```
/// distsampler::FeistelPermutation p(1'000'000'000, /*seed=*/42, /*epoch=*/3);
/// std::uint64_t index = p(17);      // the dataset index at position 17
/// assert(p.inverse(index) == 17);
/// ```
class FeistelPermutation {
 public:
  /// No options: the algorithm is fixed by `format_version`.
  struct options_type {};

  /// `p(position)` costs O(1) and construction materialises nothing.
  static constexpr bool random_access = true;

  /// Identifies the order this class produces. Any change to the output for any
  /// (n, seed, epoch) bumps it, so saved sampler state can tell the orders apart.
  static constexpr std::uint32_t format_version = 2;
  /// The engine's identity in saved states.
  [[nodiscard]] static constexpr std::string_view name(const options_type& /*options*/) noexcept { return "feistel"; }

  /// Sizes up to this are shuffled exactly from a small table instead of a Feistel network.
  static constexpr std::uint64_t table_max_size = detail::small_permutation_max;
  /// Format 2 changed only the exact tables (n <= table_max_size): larger orders are format 1's.
  [[nodiscard]] static constexpr bool keeps_format1_order(std::uint64_t n) noexcept { return n > table_max_size; }

  /// The empty permutation (n = 0).
  constexpr FeistelPermutation() noexcept = default;

  /// The permutation of [0, n) for (seed, epoch). Every n is valid, 0 and 2^64 - 1
  /// included. O(1): about 40 mixes of 64-bit words. noexcept, constexpr.
  constexpr FeistelPermutation(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch,
                               const options_type& /*options*/ = {}) noexcept
      : n_(n) {
    detail::SplitMix64 stream(key(n, seed, epoch));
    if (n <= table_max_size) {
      if (n == 0) return;
      forward_table_ = detail::small_permutation_table(stream(), n);
      for (std::uint64_t i = 0; i < n; ++i) inverse_table_ |= i << (4 * nibble(forward_table_, i));
      return;
    }
    const unsigned bits = detail::bit_width(n - 1);  // 5..64
    right_bits_ = bits / 2;
    right_mask_ = (std::uint64_t{1} << right_bits_) - 1;
    left_shift_ = 64 - (bits - right_bits_);
    right_shift_ = 64 - right_bits_;
    rounds_ = bits >= 9 ? 8 : 16;
    for (unsigned i = 0; i < 2 * rounds_; i += 2) {
      keys_[i] = stream();
      keys_[i + 1] = stream() | 1;
    }
  }

  /// n, the number of positions (and of indices).
  [[nodiscard]] constexpr std::uint64_t size() const noexcept { return n_; }

  /// The number of Feistel rounds: 8 or 16, or 0 when n <= table_max_size (exact table).
  [[nodiscard]] constexpr unsigned rounds() const noexcept { return rounds_; }

  /// The dataset index at `position`. Precondition: position < size(); otherwise
  /// `position` itself is returned (a value >= size(), never undefined behaviour).
  /// Expected O(1): fewer than two encryptions on average (cycle walking needs k or
  /// more with probability below 2^(1-k)); no allocation.
  [[nodiscard]] constexpr std::uint64_t operator()(std::uint64_t position) const noexcept {
    if (position >= n_) return position;
    if (rounds_ == 0) return nibble(forward_table_, position);
    std::uint64_t x = position;
    do {
      x = encrypt(x);
    } while (x >= n_);
    return x;
  }

  /// The position of dataset index `index`: `inverse(p(i)) == i` and `p(inverse(j)) == j`.
  /// Precondition: index < size(); otherwise `index` itself is returned.
  /// O(1), same cost as operator(); no allocation.
  [[nodiscard]] constexpr std::uint64_t inverse(std::uint64_t index) const noexcept {
    if (index >= n_) return index;
    if (rounds_ == 0) return nibble(inverse_table_, index);
    std::uint64_t x = index;
    do {
      x = decrypt(x);
    } while (x >= n_);
    return x;
  }

  /// Writes `out[j] = (*this)(first_position + j * stride)` for j in [0, count): the
  /// batch form of operator(), with identical results. Faster because independent
  /// positions are encrypted in lockstep and cycle walking is done afterwards, without
  /// branches that depend on the data. `stride` serves a rank's strided share
  /// (positions rank, rank + world_size, ...).
  /// Precondition: `out` holds `count` values; positions past size() follow operator()'s rule.
  /// O(count) time, O(1) extra memory (a 512-byte stack buffer); no allocation.
  void fill(std::uint64_t first_position, std::uint64_t count, std::uint64_t* out,
            std::uint64_t stride = 1) const noexcept {
    if (count == 0) return;
    const bool in_range = first_position < n_ && (stride == 0 || count - 1 <= (n_ - 1 - first_position) / stride);
    if (!in_range || rounds_ == 0) {
      for (std::uint64_t j = 0; j < count; ++j) out[j] = (*this)(first_position + j * stride);
      return;
    }
    std::uint64_t position = first_position;
    for (std::uint64_t done = 0; done < count; done += fill_block_size) {
      const std::size_t m = count - done < fill_block_size ? static_cast<std::size_t>(count - done) : fill_block_size;
      fill_block(position, stride, m, out + done);
      position += stride * m;  // wraps only after the last block, and is then unused
    }
  }

 private:
  static constexpr unsigned max_rounds = 16;
  static constexpr std::uint64_t domain_tag = 0x6665697374656c31u;  // "feistel1"

  [[nodiscard]] static constexpr std::uint64_t key(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch) noexcept {
    return detail::splitmix64(detail::splitmix64(detail::splitmix64(seed ^ domain_tag) ^ epoch) ^ n);
  }

  [[nodiscard]] static constexpr std::uint64_t nibble(std::uint64_t table, std::uint64_t i) noexcept {
    return (table >> (4 * i)) & 0xfu;
  }

  // Eight rounds per step: the loop runs once (b >= 9) or twice and the body unrolls.
  [[nodiscard]] constexpr std::uint64_t encrypt(std::uint64_t x) const noexcept {
    std::uint64_t left = x >> right_bits_, right = x & right_mask_;
    const unsigned ls = left_shift_, rs = right_shift_;
    for (unsigned r = 0; r < rounds_; r += 8) {
      const std::uint64_t* k = keys_ + 2 * r;
      left ^= ((right + k[0]) * k[1]) >> ls;
      right ^= ((left + k[2]) * k[3]) >> rs;
      left ^= ((right + k[4]) * k[5]) >> ls;
      right ^= ((left + k[6]) * k[7]) >> rs;
      left ^= ((right + k[8]) * k[9]) >> ls;
      right ^= ((left + k[10]) * k[11]) >> rs;
      left ^= ((right + k[12]) * k[13]) >> ls;
      right ^= ((left + k[14]) * k[15]) >> rs;
    }
    return (left << right_bits_) | right;
  }

  static constexpr std::size_t fill_block_size = 256;

  // One block of fill(): encrypt every position, then re-encrypt those still outside
  // [0, n) (cycle walking) until none is left. Both steps run four values in lockstep.
  void fill_block(std::uint64_t position, std::uint64_t stride, std::size_t m, std::uint64_t* out) const noexcept {
    std::uint16_t pending[fill_block_size];  // offsets whose value is still >= n
    std::size_t count = 0, i = 0;
    for (; i + lanes <= m; i += lanes) {
      encrypt_lanes(position, position + stride, position + 2 * stride, position + 3 * stride, out + i, out + i + 1,
                    out + i + 2, out + i + 3);
      position += lanes * stride;
      for (std::size_t l = 0; l < lanes; ++l) {
        pending[count] = static_cast<std::uint16_t>(i + l);
        count += static_cast<std::size_t>(out[i + l] >= n_);
      }
    }
    for (; i < m; ++i) {
      out[i] = encrypt(position);
      position += stride;
      pending[count] = static_cast<std::uint16_t>(i);
      count += static_cast<std::size_t>(out[i] >= n_);
    }
    while (count != 0) {
      std::size_t still = 0;
      for (std::size_t t = 0; t < count; t += lanes) {
        // A short last group repeats its last offset: the same input, the same output.
        const std::size_t last = count - 1;
        const std::uint16_t at[lanes] = {pending[t], pending[t + 1 < last ? t + 1 : last],
                                         pending[t + 2 < last ? t + 2 : last], pending[t + 3 < last ? t + 3 : last]};
        encrypt_lanes(out[at[0]], out[at[1]], out[at[2]], out[at[3]], out + at[0], out + at[1], out + at[2],
                      out + at[3]);
        const std::size_t group = count - t < lanes ? count - t : lanes;
        for (std::size_t l = 0; l < group; ++l) {
          pending[still] = at[l];
          still += static_cast<std::size_t>(out[at[l]] >= n_);
        }
      }
      count = still;
    }
  }

  // encrypt() on four independent values in lockstep: the rounds of different values
  // interleave, so the multiplier stays busy instead of waiting on one dependency chain.
  // Written out by hand because -O2 does not unroll loops over small arrays.
  static constexpr std::size_t lanes = 4;
  constexpr void encrypt_lanes(std::uint64_t x0, std::uint64_t x1, std::uint64_t x2, std::uint64_t x3,
                               std::uint64_t* y0, std::uint64_t* y1, std::uint64_t* y2,
                               std::uint64_t* y3) const noexcept {
    std::uint64_t l0 = x0 >> right_bits_, l1 = x1 >> right_bits_, l2 = x2 >> right_bits_, l3 = x3 >> right_bits_;
    std::uint64_t r0 = x0 & right_mask_, r1 = x1 & right_mask_, r2 = x2 & right_mask_, r3 = x3 & right_mask_;
    const unsigned ls = left_shift_, rs = right_shift_;
    for (unsigned r = 0; r < 2 * rounds_; r += 4) {
      const std::uint64_t a = keys_[r], m = keys_[r + 1], b = keys_[r + 2], k = keys_[r + 3];
      l0 ^= ((r0 + a) * m) >> ls;
      l1 ^= ((r1 + a) * m) >> ls;
      l2 ^= ((r2 + a) * m) >> ls;
      l3 ^= ((r3 + a) * m) >> ls;
      r0 ^= ((l0 + b) * k) >> rs;
      r1 ^= ((l1 + b) * k) >> rs;
      r2 ^= ((l2 + b) * k) >> rs;
      r3 ^= ((l3 + b) * k) >> rs;
    }
    // Results are stored one by one: building them in an array and copying it would
    // make the compiler reload pairs of fresh stores as 16-byte words, which stalls.
    *y0 = (l0 << right_bits_) | r0;
    *y1 = (l1 << right_bits_) | r1;
    *y2 = (l2 << right_bits_) | r2;
    *y3 = (l3 << right_bits_) | r3;
  }

  [[nodiscard]] constexpr std::uint64_t decrypt(std::uint64_t x) const noexcept {
    std::uint64_t left = x >> right_bits_, right = x & right_mask_;
    const unsigned ls = left_shift_, rs = right_shift_;
    for (unsigned r = rounds_; r != 0; r -= 8) {
      const std::uint64_t* k = keys_ + 2 * (r - 8);
      right ^= ((left + k[14]) * k[15]) >> rs;
      left ^= ((right + k[12]) * k[13]) >> ls;
      right ^= ((left + k[10]) * k[11]) >> rs;
      left ^= ((right + k[8]) * k[9]) >> ls;
      right ^= ((left + k[6]) * k[7]) >> rs;
      left ^= ((right + k[4]) * k[5]) >> ls;
      right ^= ((left + k[2]) * k[3]) >> rs;
      left ^= ((right + k[0]) * k[1]) >> ls;
    }
    return (left << right_bits_) | right;
  }

  std::uint64_t n_ = 0;
  std::uint64_t right_mask_ = 0;
  unsigned right_bits_ = 0;
  unsigned left_shift_ = 0;   // 64 - left bits: a round's output has exactly the left width
  unsigned right_shift_ = 0;  // 64 - right bits
  unsigned rounds_ = 0;       // 0 selects the exact table (n <= table_max_size)
  std::uint64_t forward_table_ = 0;
  std::uint64_t inverse_table_ = 0;
  std::uint64_t keys_[2 * max_rounds] = {};  // per round: xor key, odd multiplier
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FEISTEL_HPP

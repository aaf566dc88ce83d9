// distsampler packing internals: the checks of the lengths, the one pass's digest of them (tokens, counts, layout key) and the state's named checks.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PACKING_DETAIL_SCAN_HPP
#define DISTSAMPLER_PACKING_DETAIL_SCAN_HPP

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../../detail/mix.hpp"
#include "../../error.hpp"
#include "../../state.hpp"
#include "../../version.hpp"
#include "../options.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

// The lengths' checks before any is read: config_error prefixed by `who`.
inline void check_lengths(const LengthView& lengths, std::uint64_t dataset_size, std::string_view who) {
  const std::string w(who);
  if (lengths.size != dataset_size) {
    throw_config_error(w + ": lengths has " + std::to_string(lengths.size) + " values but dataset_size is " +
                       std::to_string(dataset_size) + " (expected one token count per document)");
  }
  if (dataset_size > 0 && lengths.data == nullptr) {
    throw_config_error(w + ": lengths has no data for dataset_size " + std::to_string(dataset_size) +
                       " (expected a pointer to the token counts)");
  }
}

// What the one pass over the lengths finds, fed chunk by chunk in any order (the first
// epoch plan's order): tokens, documents of 0 tokens and over L, and a hash of every
// length that does not depend on the order the chunks come in (each chunk's four-lane
// hash, keyed by the chunk's number, summed).
class LengthDigest {
 public:
  explicit LengthDigest(std::uint64_t seq_len) noexcept : seq_len_(seq_len) {}

  // Chunk `index` of the lengths, lengths[0..n) (consecutive documents): returns its tokens.
  std::uint64_t add_chunk(const std::uint32_t* lengths, std::size_t n, std::uint64_t index) noexcept {
    constexpr std::uint64_t k = 0x9e3779b97f4a7c15u;
    std::uint64_t lanes[4] = {0x6a09e667f3bcc909u, 0xbb67ae8584caa73bu, 0x3c6ef372fe94f82bu, 0xa54ff53a5f1d36f1u};
    std::uint64_t a = lanes[0], b = lanes[1], c = lanes[2], d = lanes[3];  // in registers: four multiply chains
    std::uint64_t sum = 0, zeros = 0, longer = 0;
    const auto count = [&](std::uint64_t len) {  // branch-free
      sum += len;
      zeros += len == 0 ? 1u : 0u;
      longer += len > seq_len_ ? 1u : 0u;
    };
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      count(lengths[i]);
      count(lengths[i + 1]);
      count(lengths[i + 2]);
      count(lengths[i + 3]);
      a = (a ^ lengths[i]) * k;
      b = (b ^ lengths[i + 1]) * k;
      c = (c ^ lengths[i + 2]) * k;
      d = (d ^ lengths[i + 3]) * k;
    }
    lanes[0] = a;
    lanes[1] = b;
    lanes[2] = c;
    lanes[3] = d;
    for (; i < n; ++i) {  // lane i mod 4, as the loop above
      count(lengths[i]);
      lanes[i & 3] = (lanes[i & 3] ^ lengths[i]) * k;
    }
    std::uint64_t h = mix64(index + 0x9e3779b97f4a7c15u);
    for (const std::uint64_t v : lanes) h = hash_field(h, mix64(v));
    hash_ += mix64(h);
    tokens_ += sum;
    zeros_ += zeros;
    longer_ += longer;
    return sum;
  }

  [[nodiscard]] std::uint64_t tokens() const noexcept { return tokens_; }
  [[nodiscard]] std::uint64_t zeros() const noexcept { return zeros_; }
  [[nodiscard]] std::uint64_t longer() const noexcept { return longer_; }

  // The state's layout word: a 40-bit hash of the lengths and the window options, then L
  // (23 bits), then the mode (1 bit).
  [[nodiscard]] std::uint64_t layout(std::uint64_t dataset_size, const PackOptions& o) const noexcept {
    std::uint64_t h = hash_;
    for (const std::uint64_t v : {dataset_size, o.window, o.chunk, std::uint64_t{o.split_long}}) h = hash_field(h, v);
    return (mix64(h) << 24) | (o.seq_len << 1) | static_cast<std::uint64_t>(o.mode);
  }

 private:
  std::uint64_t seq_len_;
  std::uint64_t hash_ = 0;
  std::uint64_t tokens_ = 0;
  std::uint64_t zeros_ = 0;
  std::uint64_t longer_ = 0;
};

// Best-fit without split_long: config_error naming the first document over seq_len (an
// index-order scan, run only when the pass found one).
[[noreturn]] inline void refuse_longer(const LengthView& lengths, std::uint64_t seq_len, std::string_view who) {
  std::uint64_t i = 0;
  while (i + 1 < lengths.size && lengths.data[i] <= seq_len) ++i;
  throw_config_error(std::string(who) + ": document " + std::to_string(i) + " has " +
                     std::to_string(lengths.data[i]) + " tokens, over seq_len " + std::to_string(seq_len) +
                     " (expected at most seq_len with split_long off; or turn split_long on)");
}

// A state of this family with another mode, L or token count: state_error naming the field
// (the generic check could only say the layout differs). Other states pass to validate().
inline void check_pack_state(const SamplerState& state, std::string_view family, std::uint64_t layout,
                             std::uint64_t tokens, std::string_view who) {
  if (!state.has_key() || state.sampler != family) return;
  const std::string prefix = std::string(who) + ": ";
  if ((state.layout & 1) != (layout & 1)) {
    throw_state_error(prefix + "mode differs (state " + std::string(to_string(static_cast<PackMode>(state.layout & 1))) +
                      ", sampler " + std::string(to_string(static_cast<PackMode>(layout & 1))) + ")");
  }
  const std::uint64_t saved = (state.layout >> 1) & PackOptions::max_seq_len, mine = (layout >> 1) & PackOptions::max_seq_len;
  if (saved != mine) {
    throw_state_error(prefix + "seq_len differs (state " + std::to_string(saved) + ", sampler " + std::to_string(mine) +
                      ")");
  }
  if (state.dataset_size != tokens) {
    throw_state_error(prefix + "document lengths differ (state " + std::to_string(state.dataset_size) +
                      " tokens, sampler " + std::to_string(tokens) + ")");
  }
}

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PACKING_DETAIL_SCAN_HPP

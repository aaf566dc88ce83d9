// distsampler packing internals: the one pass over the lengths (checks, chunk sums, layout key) and the state's named checks.
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

// What one pass over the lengths finds.
struct LengthScan {
  std::vector<std::uint64_t> chunk_tokens;  // tokens per chunk of options.chunk documents
  std::uint64_t tokens = 0;
  std::uint64_t zeros = 0;   // documents of 0 tokens
  std::uint64_t longer = 0;  // documents over seq_len
  std::uint64_t layout = 0;  // 40-bit hash of lengths and window options, then L (23 bits), then the mode (1 bit)
};

// One sequential pass: checks the lengths against dataset_size and the options (config_error
// prefixed by `who`), sums the chunks, hashes the lengths (four lanes) with the options.
[[nodiscard]] inline LengthScan scan_lengths(const DocumentLengths& lengths, std::uint64_t dataset_size,
                                             const PackOptions& o, std::string_view who) {
  const std::string w(who);
  if (lengths.size != dataset_size) {
    throw_config_error(w + ": lengths has " + std::to_string(lengths.size) + " values but dataset_size is " +
                       std::to_string(dataset_size) + " (expected one token count per document)");
  }
  if (dataset_size > 0 && lengths.data == nullptr) {
    throw_config_error(w + ": lengths has no data for dataset_size " + std::to_string(dataset_size) +
                       " (expected a pointer to the token counts)");
  }
  const std::uint64_t c = o.chunk, l = o.seq_len;
  const bool refuse_long = o.mode == PackMode::best_fit && !o.split_long;
  LengthScan out;
  out.chunk_tokens.assign(static_cast<std::size_t>((dataset_size + c - 1) / c), 0);
  std::uint64_t lanes[4] = {0x6a09e667f3bcc909u, 0xbb67ae8584caa73bu, 0x3c6ef372fe94f82bu, 0xa54ff53a5f1d36f1u};
  for (std::uint64_t first = 0; first < dataset_size; first += c) {
    const std::uint64_t end = std::min(dataset_size, first + c);
    std::uint64_t sum = 0;
    for (std::uint64_t i = first; i < end; ++i) {
      const std::uint64_t len = lengths.data[i];
      sum += len;
      std::uint64_t& h = lanes[i & 3];
      h = (h ^ len) * 0x9e3779b97f4a7c15u;
      if (len == 0) ++out.zeros;
      if (len > l) {
        ++out.longer;
        if (refuse_long) {
          throw_config_error(w + ": document " + std::to_string(i) + " has " + std::to_string(len) +
                             " tokens, over seq_len " + std::to_string(l) +
                             " (expected at most seq_len with split_long off; or turn split_long on)");
        }
      }
    }
    out.chunk_tokens[static_cast<std::size_t>(first / c)] = sum;
    out.tokens += sum;
  }
  std::uint64_t h = 0;
  for (const std::uint64_t v : lanes) h = hash_field(h, mix64(v));
  for (const std::uint64_t v : {dataset_size, o.window, o.chunk, std::uint64_t{o.split_long}}) h = hash_field(h, v);
  out.layout = (mix64(h) << 24) | (l << 1) | static_cast<std::uint64_t>(o.mode);
  if (o.mode != PackMode::best_fit) out.longer = 0;
  return out;
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

// distsampler fuzz target: feeds arbitrary bytes to both SamplerState parsers; only state_error may escape them.
// SPDX-License-Identifier: MIT
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <distsampler/state.hpp>

namespace {

// A state that parses must serialise back to a state that parses to the same value.
void check_round_trip(const distsampler::SamplerState& s) {
  const auto bytes = s.to_bytes();
  if (distsampler::SamplerState::from_bytes(bytes.data(), bytes.size()) != s) std::abort();
  if (distsampler::SamplerState::from_text(s.to_text()) != s) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const distsampler::SamplerState s = distsampler::SamplerState::from_bytes(data, size);
    check_round_trip(s);
    // Every byte is checked, so accepted bytes are exactly what the writer produces.
    const auto bytes = s.to_bytes();
    if (bytes.size() != size || !std::equal(bytes.begin(), bytes.end(), data)) std::abort();
  } catch (const distsampler::state_error&) {
  }
  try {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    const distsampler::SamplerState s = distsampler::SamplerState::from_text(text);
    check_round_trip(s);
    // Version 3 has one spelling: accepted text is exactly what the writer produces.
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    if (s.version == 3 && s.to_text() != text) std::abort();
  } catch (const distsampler::state_error&) {
  }
  return 0;
}

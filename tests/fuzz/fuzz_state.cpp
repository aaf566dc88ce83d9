// distsampler fuzz target: feeds arbitrary bytes to both SamplerState parsers; only state_error may escape them.
// SPDX-License-Identifier: MIT
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
    check_round_trip(distsampler::SamplerState::from_bytes(data, size));
  } catch (const distsampler::state_error&) {
  }
  try {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    check_round_trip(distsampler::SamplerState::from_text(text));
  } catch (const distsampler::state_error&) {
  }
  return 0;
}

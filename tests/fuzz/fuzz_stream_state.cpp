// distsampler fuzz target: arbitrary family words of a stream job state (a SamplerState of family stream) through from_state.
// SPDX-License-Identifier: MIT
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <distsampler/streams/progress.hpp>

// The input's first 8 bytes are next_pass, the rest the family words (8 bytes each, little-endian), in a state
// whose key and checksum are right, so the fuzzer reaches the word reader and the content checks instead of
// stopping at the checksum. Only state_error may escape; what parses writes back the same words, and its text
// and byte forms read back equal.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace ds = distsampler;
  if (size < 8) return 0;
  ds::SamplerState state;
  state.set_key(ds::StreamJobState::key(1 + data[0] % 16, 3, 0));
  state.epoch = ds::detail::get_u64_le(data) >> 8;
  for (std::size_t at = 8; at + 8 <= size; at += 8) state.extra.push_back(ds::detail::get_u64_le(data + at));
  try {
    const ds::StreamJobState s = ds::StreamJobState::from_state(state);
    if (s.to_state() != state) std::abort();
    if (!(ds::StreamJobState::from_text(s.to_text()) == s) || !(ds::StreamJobState::from_bytes(s.to_bytes()) == s))
      std::abort();
  } catch (const ds::state_error&) {
  }
  return 0;
}

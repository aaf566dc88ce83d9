// distsampler fuzz target: arbitrary stream job state bodies, sealed with their checksum, through StreamJobState::from_text.
// SPDX-License-Identifier: MIT
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <distsampler/streams/progress.hpp>

// The input is a state's text before " checksum=": sealed with the right checksum, so the fuzzer reaches the
// parser and the content checks instead of stopping at the checksum. Only state_error may escape; what parses
// writes back to the same text.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace ds = distsampler;
  const std::string body(reinterpret_cast<const char*>(data), size);
  const std::string text = body + " checksum=" + ds::detail::hex64(ds::detail::mix64(ds::detail::fnv1a64(data, size)));
  try {
    const ds::StreamJobState s = ds::StreamJobState::from_text(text);
    if (s.to_text() != text) std::abort();
  } catch (const ds::state_error&) {
  }
  try {
    (void)ds::StreamJobState::from_text(body);
  } catch (const ds::state_error&) {
  }
  return 0;
}

// distsampler internal: building blocks of SamplerState's forms (hashes, little-endian words, a strict text reader).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_STATE_FORMAT_HPP
#define DISTSAMPLER_DETAIL_STATE_FORMAT_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "../error.hpp"
#include "../version.hpp"
#include "../detail/decimal.hpp"
#include "../detail/mix.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

/// Length of the version-1 byte form (a state without ahead ranges, before version 3).
inline constexpr std::size_t legacy_state_bytes = 56;

/// FNV-1a 64 over bytes, continuing from `h`.
[[nodiscard]] constexpr std::uint64_t fnv1a64(const std::uint8_t* data, std::size_t size,
                                              std::uint64_t h = 0xcbf29ce484222325u) noexcept {
  for (std::size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 0x100000001b3u;
  }
  return h;
}

inline void put_u64_le(std::uint8_t* out, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

inline void put_u32_le(std::uint8_t* out, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

[[nodiscard]] inline std::uint64_t get_u64_le(const std::uint8_t* in) noexcept {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | in[i];
  return v;
}

[[nodiscard]] inline std::uint32_t get_u32_le(const std::uint8_t* in) noexcept {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | in[i];
  return v;
}

[[nodiscard]] inline std::uint64_t hash_field(std::uint64_t h, std::string_view text) noexcept {
  // Length first, so adjacent fields cannot trade characters.
  std::uint8_t len[8];
  put_u64_le(len, text.size());
  h = fnv1a64(len, 8, h);
  for (const char c : text) {
    const auto byte = static_cast<std::uint8_t>(c);
    h = fnv1a64(&byte, 1, h);
  }
  return h;
}

[[nodiscard]] inline std::uint64_t hash_field(std::uint64_t h, std::uint64_t value) noexcept {
  std::uint8_t bytes[8];
  put_u64_le(bytes, value);
  return fnv1a64(bytes, 8, h);
}

/// "0x" and 16 lowercase hex digits.
[[nodiscard]] inline std::string hex64(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 60; shift >= 0; shift -= 4) out += digits[(v >> shift) & 0xf];
  return out;
}

/// Checksum of a byte form of `size` bytes (its last 8 excluded): FNV-1a 64 finalised by
/// mix64. A change of any one byte always changes it (each FNV step is a bijection of the
/// running hash). The default size is the version-1 form's.
[[nodiscard]] inline std::uint64_t state_checksum(const std::uint8_t* data,
                                                  std::size_t size = legacy_state_bytes) noexcept {
  return mix64(fnv1a64(data, size - 8));
}

/// True for the characters a name keeps as they are in the text form; every other byte is
/// written %HH (uppercase hex).
[[nodiscard]] constexpr bool name_char_is_plain(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '+' || c == '-';
}

/// A name as the text form writes it: plain characters kept, every other byte %HH.
[[nodiscard]] inline std::string escape_name(std::string_view name) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : name) {
    if (name_char_is_plain(c)) {
      out += c;
    } else {
      const auto b = static_cast<unsigned char>(c);
      out += '%';
      out += digits[b >> 4];
      out += digits[b & 0xf];
    }
  }
  return out;
}

/// A bounds-checked reader over a state's text form; every failure throws state_error.
/// `strict` (version 3) admits only the canonical spelling of each value: lowercase hex.
class StateTextReader {
 public:
  explicit StateTextReader(std::string_view text) noexcept : text_(text) {}

  [[noreturn]] void fail(const std::string& what) const { fail_at(what, at_); }
  [[noreturn]] void fail_at(const std::string& what, std::size_t at) const {
    throw_state_error("SamplerState::from_text: " + what + " at offset " + std::to_string(at));
  }

  void literal(std::string_view expected, const char* what) {
    if (text_.substr(at_, expected.size()) != expected) {
      fail(std::string("expected ") + what + " \"" + std::string(expected) + "\"");
    }
    at_ += expected.size();
  }

  /// A decimal value running up to the next character of `stops` (or the end of the text),
  /// parsed by parse_decimal; a leading zero is refused, as writers never produce one.
  std::uint64_t decimal(const char* key, std::string_view stops = " ") {
    const std::size_t begin = at_;
    while (at_ < text_.size() && stops.find(text_[at_]) == std::string_view::npos && text_[at_] != '\n') ++at_;
    const std::string_view token = text_.substr(begin, at_ - begin);
    const DecimalParse parsed = parse_decimal(token);
    if (parsed.error == DecimalError::empty) fail_at(std::string("expected a decimal value for ") + key, begin);
    if (parsed.error != DecimalError::ok) {
      fail_at(std::string(key) + " \"" + std::string(token) + "\" " + describe(parsed.error), begin);
    }
    // One spelling per value (the checksum covers values, not their text): no leading zero.
    if (token.size() > 1 && token[0] == '0') {
      fail_at(std::string(key) + " \"" + std::string(token) + "\" has a leading zero (expected the plain decimal)",
              begin);
    }
    return parsed.value;
  }

  std::uint64_t hex16(const char* key, bool strict) {
    literal("0x", "hex prefix");
    std::uint64_t value = 0;
    for (int i = 0; i < 16; ++i) {
      const char c = at_ < text_.size() ? text_[at_] : '\0';
      std::uint64_t digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<std::uint64_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<std::uint64_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F' && !strict) {
        digit = static_cast<std::uint64_t>(c - 'A' + 10);
      } else {
        fail(std::string("expected 16 ") + (strict ? "lowercase " : "") + "hex digits for " + key + ", got " +
             std::to_string(i));
      }
      value = (value << 4) | digit;
      ++at_;
    }
    return value;
  }

  /// A name written by escape_name, up to the next character of `stops`: plain characters
  /// and %HH escapes with uppercase hex of characters that are not plain (the one spelling).
  std::string name(const char* key, std::string_view stops) {
    const std::size_t begin = at_;
    std::string out;
    while (at_ < text_.size() && stops.find(text_[at_]) == std::string_view::npos) {
      const char c = text_[at_];
      if (name_char_is_plain(c)) {
        out += c;
        ++at_;
        continue;
      }
      if (c != '%')
        fail(std::string("character ") + std::to_string(static_cast<unsigned char>(c)) + " in " + key +
             " (expected letters, digits, . _ + - or %HH escapes)");
      const int hi = at_ + 1 < text_.size() ? upper_hex(text_[at_ + 1]) : -1;
      const int lo = at_ + 2 < text_.size() ? upper_hex(text_[at_ + 2]) : -1;
      if (hi < 0 || lo < 0) {
        fail(std::string("malformed escape in ") + key + " (expected % and 2 uppercase hex digits)");
      }
      const auto decoded = static_cast<char>(hi * 16 + lo);
      if (name_char_is_plain(decoded)) {
        fail(std::string("needless escape in ") + key + " (expected the plain character)");
      }
      out += decoded;
      at_ += 3;
    }
    if (out.empty()) fail_at(std::string("expected a name for ") + key, begin);
    return out;
  }

  /// Consumes `text` when it comes next; says whether it did.
  bool optional(std::string_view text) noexcept {
    if (text_.substr(at_, text.size()) != text) return false;
    at_ += text.size();
    return true;
  }

  void end() {
    if (at_ < text_.size() && text_[at_] == '\n' && at_ + 1 == text_.size()) ++at_;
    if (at_ != text_.size()) fail("unexpected trailing text");
  }

 private:
  static constexpr int upper_hex(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_STATE_FORMAT_HPP

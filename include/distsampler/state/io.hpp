// distsampler internal: SamplerState's text and byte forms (writers and strict readers), included by state.hpp.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DETAIL_STATE_IO_HPP
#define DISTSAMPLER_DETAIL_STATE_IO_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "check.hpp"
#include "format.hpp"
#include "values.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

namespace detail {

// Bytes of the version-2 form with `count` ahead ranges, or 0 when that overflows.
[[nodiscard]] constexpr std::size_t state_bytes_for(std::uint64_t count) noexcept {
  return count > (SIZE_MAX - 64) / 16 ? 0 : static_cast<std::size_t>(64 + 16 * count);
}

// Bytes of the version-3 form, or 0 when that overflows.
[[nodiscard]] constexpr std::size_t state_v3_bytes_for(std::uint64_t names, std::uint64_t count) noexcept {
  return count > (SIZE_MAX - 80 - names) / 16 ? 0 : static_cast<std::size_t>(80 + names + 16 * count);
}

// Bytes of the version-4 form, or 0 when that overflows.
[[nodiscard]] constexpr std::size_t state_v4_bytes_for(std::uint64_t names, std::uint64_t count,
                                                       std::uint64_t strided) noexcept {
  if (count > (SIZE_MAX - 88 - names) / 16) return 0;
  const std::uint64_t before = 88 + names + 16 * count;
  return strided > (SIZE_MAX - before) / 32 ? 0 : static_cast<std::size_t>(before + 32 * strided);
}

// Bytes of the version-5 form, or 0 when that overflows.
[[nodiscard]] constexpr std::size_t state_v5_bytes_for(std::uint64_t names, std::uint64_t count, std::uint64_t strided,
                                                       std::uint64_t words) noexcept {
  const std::size_t v4 = state_v4_bytes_for(names, count, strided);
  if (v4 == 0 || words > (SIZE_MAX - v4 - 8) / 8) return 0;
  return static_cast<std::size_t>(v4 + 8 + 8 * words);
}

// Throws state_error, for `who`, when `s` holds strided entries or family words but no key.
inline void require_key_for_strided(const SamplerState& s, const char* who) {
  if (!s.strided.empty() && !s.has_key()) {
    throw_state_error(std::string(who) + ": the state has " + std::to_string(s.strided.size()) +
                      " strided entries but no key (expected set_key first: only version 4 holds them)");
  }
  if (!s.extra.empty() && !s.has_key()) {
    throw_state_error(std::string(who) + ": the state has " + std::to_string(s.extra.size()) +
                      " family words but no key (expected set_key first: only version 5 holds them)");
  }
}

// The Tail whose byte-form code is `code`; false when there is none.
[[nodiscard]] inline bool tail_from_code(std::uint64_t code, Tail& out) noexcept {
  for (const Tail t : {Tail::pad, Tail::drop, Tail::uneven}) {
    if (code == static_cast<std::uint64_t>(t)) {
      out = t;
      return true;
    }
  }
  return false;
}

}  // namespace detail

inline std::string SamplerState::to_text() const {
  detail::require_key_for_strided(*this, "SamplerState::to_text");
  const bool keyed = has_key();
  std::string out = "distsampler-state v" + std::to_string(written_version());
  if (keyed) {
    out += " sampler=" + detail::escape_name(sampler);
  }
  out += " dataset_size=" + std::to_string(dataset_size) + " seed=" + std::to_string(seed);
  if (keyed) {
    out += " shuffle=" + detail::bool_name(shuffle) + " tail=" + std::string(to_string(tail)) +
           " engine=" + detail::escape_name(engine) + "/" + std::to_string(engine_version) +
           " layout=" + detail::hex64(layout);
  }
  out += " epoch=" + std::to_string(epoch) + " consumed=" + std::to_string(consumed);
  if (!ahead.empty()) {
    out += " ahead=";
    for (std::size_t i = 0; i < ahead.size(); ++i) {
      if (i != 0) out += ',';
      out += std::to_string(ahead[i].begin) + "-" + std::to_string(ahead[i].end);
    }
  }
  if (!strided.empty()) {
    out += " strided=";
    for (std::size_t i = 0; i < strided.size(); ++i) out += (i != 0 ? "," : "") + detail::strided_text(strided[i]);
  }
  if (!extra.empty()) {
    out += " extra=";
    for (std::size_t i = 0; i < extra.size(); ++i) out += (i != 0 ? "," : "") + std::to_string(extra[i]);
  }
  if (!keyed) return out + " fingerprint=" + detail::hex64(fingerprint);
  const std::vector<std::uint8_t> bytes = to_bytes();
  return out + " checksum=" + detail::hex64(detail::get_u64_le(bytes.data() + bytes.size() - 8));
}

inline SamplerState SamplerState::from_text(std::string_view text) {
  detail::StateTextReader in(text);
  SamplerState s;
  in.literal("distsampler-state", "magic");
  in.literal(" v", "version prefix");
  const std::uint64_t version = in.decimal("version");
  if (version < 1 || version > 5) {
    detail::throw_state_error("SamplerState::from_text: unsupported version " + std::to_string(version) +
                              " (expected 1 to 5)");
  }
  s.version = static_cast<std::uint32_t>(version);
  const bool keyed = version >= 3;
  if (keyed) {
    in.literal(" sampler=", "key");
    s.sampler = in.name("sampler", " ");
  }
  in.literal(" dataset_size=", "key");
  s.dataset_size = in.decimal("dataset_size");
  in.literal(" seed=", "key");
  s.seed = in.decimal("seed");
  if (keyed) {
    in.literal(" shuffle=", "key");
    if (in.optional("true")) {
      s.shuffle = true;
    } else {
      in.literal("false", "shuffle value");
      s.shuffle = false;
    }
    in.literal(" tail=", "key");
    bool known = false;
    for (const Tail t : {Tail::pad, Tail::drop, Tail::uneven}) {
      if (!known && in.optional(to_string(t))) {
        s.tail = t;
        known = true;
      }
    }
    if (!known) in.fail("expected a tail (pad, drop or uneven)");
    in.literal(" engine=", "key");
    s.engine = in.name("engine", "/ ");
    in.literal("/", "engine version separator");
    const std::uint64_t ev = in.decimal("engine version");
    if (ev > UINT32_MAX) in.fail("engine version " + std::to_string(ev) + " exceeds 4294967295");
    s.engine_version = static_cast<std::uint32_t>(ev);
    in.literal(" layout=", "key");
    s.layout = in.hex16("layout", true);
  }
  in.literal(" epoch=", "key");
  s.epoch = in.decimal("epoch");
  in.literal(" consumed=", "key");
  s.consumed = in.decimal("consumed");
  if (version == 2 || (keyed && in.optional(" ahead="))) {
    if (version == 2) in.literal(" ahead=", "key");
    do {
      PositionRange r;
      r.begin = in.decimal("ahead begin", "-, ");
      in.literal("-", "range separator");
      r.end = in.decimal("ahead end", ", ");
      s.ahead.push_back(r);
    } while (in.optional(","));
  }
  if (version == 4 || (version == 5 && in.optional(" strided="))) {
    // A version-3 text relabelled v4 (or v5 text without its words) says so, not only what key is missing.
    if (version == 4 && !in.optional(" strided=")) {
      in.fail("expected key \" strided=\" (a version 4 state always holds strided entries; without them it is a "
              "version 3 state: was its version edited?)");
    }
    do {
      StridedRange r;
      r.begin = in.decimal("strided begin", "-, ");
      in.literal("-", "range separator");
      const std::uint64_t end = in.decimal("strided end", "/, ");
      if (end <= r.begin) {
        in.fail("strided entry " + std::to_string(s.strided.size()) + " first element [" + std::to_string(r.begin) +
                ", " + std::to_string(end) + ") is empty or reversed (expected begin < end)");
      }
      r.length = end - r.begin;
      in.literal("/", "stride separator");
      r.stride = in.decimal("strided stride", "x, ");
      in.literal("x", "count separator");
      r.count = in.decimal("strided count", ", ");
      s.strided.push_back(r);
    } while (in.optional(","));
  }
  if (version == 5) {
    if (!in.optional(" extra=")) {
      in.fail("expected key \" extra=\" (a version 5 state always holds its family's words; without them it is a "
              "version 3 or 4 state: was its version edited?)");
    }
    do {
      s.extra.push_back(in.decimal("extra word", ", "));
    } while (in.optional(","));
  }
  std::uint64_t checksum = 0;
  if (keyed) {
    if (s.sampler.size() > max_name_size || s.engine.size() > max_name_size) {
      in.fail("a name longer than " + std::to_string(max_name_size) + " bytes");
    }
    in.literal(" checksum=", "key");
    checksum = in.hex16("checksum", true);
  } else {
    in.literal(" fingerprint=", "key");
    s.fingerprint = in.hex16("fingerprint", false);
  }
  in.end();
  if (keyed) {
    const std::vector<std::uint8_t> bytes = s.to_bytes();
    const std::uint64_t computed = detail::get_u64_le(bytes.data() + bytes.size() - 8);
    if (checksum != computed) {
      detail::throw_state_error("SamplerState::from_text: checksum mismatch (stored " + detail::hex64(checksum) +
                                ", computed " + detail::hex64(computed) + "; the state is corrupted or was edited)");
    }
    s.fingerprint = s.key_view().fingerprint();
  }
  detail::check_consumed(s, "SamplerState::from_text");
  return s;
}

inline std::vector<std::uint8_t> SamplerState::to_bytes() const {
  detail::require_key_for_strided(*this, "SamplerState::to_bytes");
  const bool keyed = has_key(), v5 = !extra.empty(), v4 = !v5 && !strided.empty();
  const std::size_t names = sampler.size() + engine.size();
  const std::size_t size = v5 ? detail::state_v5_bytes_for(names, ahead.size(), strided.size(), extra.size())
                           : v4              ? detail::state_v4_bytes_for(names, ahead.size(), strided.size())
                           : keyed         ? detail::state_v3_bytes_for(names, ahead.size())
                           : ahead.empty() ? byte_size
                                           : detail::state_bytes_for(ahead.size());
  std::vector<std::uint8_t> out(size, 0);
  out[0] = 'D';
  out[1] = 'S';
  out[2] = 'S';
  out[3] = 'T';
  detail::put_u32_le(out.data() + 4, written_version());
  detail::put_u64_le(out.data() + 8, dataset_size);
  detail::put_u64_le(out.data() + 16, seed);
  detail::put_u64_le(out.data() + 24, epoch);
  detail::put_u64_le(out.data() + 32, consumed);
  std::size_t ranges_at = 56;
  if (keyed) {
    detail::put_u64_le(out.data() + 40, layout);
    detail::put_u32_le(out.data() + 48, engine_version);
    detail::put_u32_le(out.data() + 52, static_cast<std::uint32_t>(sampler.size()));
    detail::put_u32_le(out.data() + 56, static_cast<std::uint32_t>(engine.size()));
    out[60] = shuffle ? 1 : 0;
    out[61] = static_cast<std::uint8_t>(tail);
    detail::put_u64_le(out.data() + 64, ahead.size());
    std::size_t at = 72;
    if (v4 || v5) {
      detail::put_u64_le(out.data() + 72, strided.size());
      at = 80;
    }
    if (v5) {
      detail::put_u64_le(out.data() + 80, extra.size());
      at = 88;
    }
    for (const char c : sampler) out[at++] = static_cast<std::uint8_t>(c);
    for (const char c : engine) out[at++] = static_cast<std::uint8_t>(c);
    ranges_at = at;
  } else {
    detail::put_u64_le(out.data() + 40, fingerprint);
    if (!ahead.empty()) detail::put_u64_le(out.data() + 48, ahead.size());
  }
  for (std::size_t i = 0; i < ahead.size(); ++i) {
    detail::put_u64_le(out.data() + ranges_at + 16 * i, ahead[i].begin);
    detail::put_u64_le(out.data() + ranges_at + 8 + 16 * i, ahead[i].end);
  }
  const std::size_t strided_at = ranges_at + 16 * ahead.size();
  for (std::size_t i = 0; i < strided.size(); ++i) {
    std::uint8_t* at = out.data() + strided_at + 32 * i;
    detail::put_u64_le(at, strided[i].begin);
    detail::put_u64_le(at + 8, strided[i].length);
    detail::put_u64_le(at + 16, strided[i].stride);
    detail::put_u64_le(at + 24, strided[i].count);
  }
  const std::size_t extra_at = strided_at + 32 * strided.size();
  for (std::size_t i = 0; i < extra.size(); ++i) detail::put_u64_le(out.data() + extra_at + 8 * i, extra[i]);
  detail::put_u64_le(out.data() + size - 8, detail::state_checksum(out.data(), size));
  return out;
}

inline SamplerState SamplerState::from_bytes(const std::uint8_t* data, std::size_t size) {
  const std::string who = "SamplerState::from_bytes: ";
  auto truncated = [&](std::size_t needed) {
    detail::throw_state_error(who + "truncated input of " + std::to_string(size) + " bytes (expected at least " +
                              std::to_string(needed) + ")");
  };
  if (size < 4) truncated(4);
  if (data[0] != 'D' || data[1] != 'S' || data[2] != 'S' || data[3] != 'T') {
    detail::throw_state_error(who + "bad magic (expected \"DSST\"; not a distsampler state)");
  }
  if (size < 8) truncated(8);
  const std::uint32_t version = detail::get_u32_le(data + 4);
  if (version < 1 || version > 5) {
    detail::throw_state_error(who + "unsupported version " + std::to_string(version) + " (expected 1 to 5)");
  }
  std::size_t expected = byte_size;
  std::uint64_t count = 0, sampler_size = 0, engine_size = 0, strided_count = 0, extra_count = 0;
  if (version == 2) {
    if (size < 56) truncated(56);
    count = detail::get_u64_le(data + 48);
    if (count == 0) detail::throw_state_error(who + "version 2 with 0 ahead ranges (expected at least 1)");
    expected = detail::state_bytes_for(count);
  } else if (version >= 3) {
    const std::size_t header = version == 3 ? 72 : version == 4 ? 80 : 88;
    if (size < header) truncated(header);
    sampler_size = detail::get_u32_le(data + 52);
    engine_size = detail::get_u32_le(data + 56);
    for (const std::uint64_t name : {sampler_size, engine_size}) {
      if (name == 0 || name > max_name_size) {
        detail::throw_state_error(who + "name length " + std::to_string(name) + " is out of range (expected 1.." +
                                  std::to_string(max_name_size) + ")");
      }
    }
    count = detail::get_u64_le(data + 64);
    if (version == 3) {
      expected = detail::state_v3_bytes_for(sampler_size + engine_size, count);
    } else if (version == 5) {
      strided_count = detail::get_u64_le(data + 72);
      extra_count = detail::get_u64_le(data + 80);
      if (extra_count == 0) {
        detail::throw_state_error(who +
                                  "version 5 with 0 family words (expected at least 1; without them the "
                                  "state is version 3 or 4)");
      }
      expected = detail::state_v5_bytes_for(sampler_size + engine_size, count, strided_count, extra_count);
    } else {
      strided_count = detail::get_u64_le(data + 72);
      if (strided_count == 0) {
        detail::throw_state_error(who +
                                  "version 4 with 0 strided entries (expected at least 1; without them the "
                                  "state is version 3)");
      }
      expected = detail::state_v4_bytes_for(sampler_size + engine_size, count, strided_count);
    }
  }
  if (expected == 0) {
    detail::throw_state_error(who + "ahead range count " + std::to_string(count) +
                              (strided_count != 0 ? " with strided entry count " + std::to_string(strided_count) : "") +
                              (extra_count != 0 ? " with family word count " + std::to_string(extra_count) : "") +
                              " is too large for any input (expected a count that fits in memory)");
  }
  if (size < expected) truncated(expected);
  if (size > expected) {
    detail::throw_state_error(who + std::to_string(size - expected) + " trailing bytes (expected exactly " +
                              std::to_string(expected) + ")");
  }
  const std::uint64_t stored = detail::get_u64_le(data + size - 8);
  const std::uint64_t computed = detail::state_checksum(data, size);
  if (stored != computed) {
    detail::throw_state_error(who + "checksum mismatch (stored " + detail::hex64(stored) + ", computed " +
                              detail::hex64(computed) + "; the state is corrupted)");
  }
  SamplerState s;
  s.version = version;
  s.dataset_size = detail::get_u64_le(data + 8);
  s.seed = detail::get_u64_le(data + 16);
  s.epoch = detail::get_u64_le(data + 24);
  s.consumed = detail::get_u64_le(data + 32);
  std::size_t ranges_at = 56;
  if (version >= 3) {
    if (data[60] > 1) {
      detail::throw_state_error(who + "shuffle byte " + std::to_string(data[60]) + " (expected 0 or 1)");
    }
    if (!detail::tail_from_code(data[61], s.tail)) {
      detail::throw_state_error(who + "tail byte " + std::to_string(data[61]) + " (expected 0, 1 or 2)");
    }
    if (data[62] != 0 || data[63] != 0) detail::throw_state_error(who + "reserved bytes 62..63 are not 0");
    s.layout = detail::get_u64_le(data + 40);
    s.engine_version = detail::get_u32_le(data + 48);
    s.shuffle = data[60] == 1;
    const std::size_t names_at = version == 3 ? 72 : version == 4 ? 80 : 88;
    const auto* names = reinterpret_cast<const char*>(data + names_at);
    s.sampler.assign(names, static_cast<std::size_t>(sampler_size));
    s.engine.assign(names + sampler_size, static_cast<std::size_t>(engine_size));
    ranges_at = static_cast<std::size_t>(names_at + sampler_size + engine_size);
    s.fingerprint = s.key_view().fingerprint();
  } else {
    s.fingerprint = detail::get_u64_le(data + 40);
  }
  s.ahead.resize(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < s.ahead.size(); ++i) {
    s.ahead[i].begin = detail::get_u64_le(data + ranges_at + 16 * i);
    s.ahead[i].end = detail::get_u64_le(data + ranges_at + 8 + 16 * i);
  }
  s.strided.resize(static_cast<std::size_t>(strided_count));
  const std::size_t strided_at = ranges_at + 16 * s.ahead.size();
  for (std::size_t i = 0; i < s.strided.size(); ++i) {
    const std::uint8_t* at = data + strided_at + 32 * i;
    s.strided[i] = StridedRange{detail::get_u64_le(at), detail::get_u64_le(at + 8), detail::get_u64_le(at + 16),
                                detail::get_u64_le(at + 24)};
  }
  s.extra.resize(static_cast<std::size_t>(extra_count));
  const std::size_t extra_at = strided_at + 32 * s.strided.size();
  for (std::size_t i = 0; i < s.extra.size(); ++i) s.extra[i] = detail::get_u64_le(data + extra_at + 8 * i);
  detail::check_consumed(s, "SamplerState::from_bytes");
  return s;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DETAIL_STATE_IO_HPP

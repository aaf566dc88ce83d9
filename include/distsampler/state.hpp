// distsampler SamplerState: the tiny, versioned, validated position of a run within its epochs (save, load, check).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STATE_HPP
#define DISTSAMPLER_STATE_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "detail/mix.hpp"
#include "error.hpp"
#include "partition.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// What a saved state must match to be resumed: the things that define an epoch's
/// global order and its tail. Deliberately NOT included: world size, micro-batch size,
/// accumulation steps, global batch size and worker count — those may change between
/// save and resume (elastic resume), because `consumed` counts positions of the global
/// order, which does not depend on them.
///
/// `sampler` names the sampler family ("distributed" or "batch"): their tails differ, so
/// a state of one is not resumed by the other. `engine` names the permutation (with its
/// options, e.g. "torch-v2.7"); it is ignored when `shuffle` is false.
struct StateKey {
  std::string_view sampler;
  std::uint64_t dataset_size = 0;
  std::uint64_t seed = 0;
  bool shuffle = true;
  Tail tail = Tail::pad;
  std::string_view engine;

  /// 64-bit hash of every field, identical on every platform. O(length of the names).
  [[nodiscard]] std::uint64_t fingerprint() const noexcept;
  /// "sampler=batch dataset_size=10 seed=1 shuffle=true tail=drop engine=feistel".
  [[nodiscard]] std::string describe() const;
};

/// A half-open range [begin, end) of positions of an epoch's global order.
struct PositionRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;

  [[nodiscard]] constexpr std::uint64_t size() const noexcept { return end - begin; }
  friend constexpr bool operator==(const PositionRange& a, const PositionRange& b) noexcept {
    return a.begin == b.begin && a.end == b.end;
  }
  friend constexpr bool operator!=(const PositionRange& a, const PositionRange& b) noexcept { return !(a == b); }
};

/// A run's position: in which epoch, and which positions of that epoch's global order
/// (shared by all ranks, independent of world size and worker count) have been consumed:
/// the prefix [0, consumed) and, beyond it, the ranges in `ahead`. Together with a sampler
/// built with the same dataset and options, it says exactly which samples remain.
///
/// `ahead` is empty for DistributedSampler and DistributedBatchSampler, whose consumers
/// always leave a prefix. StreamingShardSampler consumers read blocks of the order, so a
/// stop between block boundaries (say 48 samples into blocks of 64, or workers of one
/// DataLoader one batch apart) leaves up to a few ranges per consumer consumed beyond the
/// prefix. `ahead` is kept canonical: sorted, each range non-empty, separated from the
/// prefix and from each other by at least one position, ending at most at dataset_size.
///
/// Two serialised forms, both complete and both validated on load:
///  - text, one line: `distsampler-state v1 dataset_size=1000 seed=42 epoch=3 consumed=640
///    fingerprint=0x0123456789abcdef` (keys in this order, single spaces, decimal numbers,
///    16 hex digits; one trailing '\n' is accepted). With ahead ranges the version is 2
///    and ` ahead=700-764,900-964` (begin-end pairs, end exclusive) comes before
///    ` fingerprint=`. Meant to be read and logged; `fingerprint` guards dataset_size and
///    seed but not epoch and positions.
///  - bytes, little-endian: "DSST", u32 version, u64 dataset_size, seed, epoch, consumed,
///    fingerprint; version 2 then has u64 count and count pairs of u64 begin, end; last a
///    u64 checksum of every byte before it (FNV-1a 64, finalised by splitmix64's mixer).
///    Version 1 is 56 bytes, version 2 is 64 + 16 * count. Any single corrupted byte is
///    detected.
///
/// Writers produce version 1 when `ahead` is empty (byte-identical to earlier releases, so
/// older readers still load such states) and version 2 otherwise. Loading throws
/// state_error (never reads out of bounds, never aborts) for truncated, malformed or
/// corrupted input, an unknown version, consumed > dataset_size, or non-canonical ahead
/// ranges. Deterministic and platform independent.
struct SamplerState {
  /// The newest format version this library reads and writes (see above for when 1 is written).
  static constexpr std::uint32_t current_version = 2;
  /// Length of the version-1 byte form (a state without ahead ranges).
  static constexpr std::size_t byte_size = 56;

  /// The format version this state was read as (1 when made in memory). Informational:
  /// writers choose the version from `ahead` (see written_version()), and equality ignores it.
  std::uint32_t version = 1;
  std::uint64_t dataset_size = 0;
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::uint64_t consumed = 0;     ///< positions [0, consumed) of the epoch's global order are done
  std::uint64_t fingerprint = 0;  ///< StateKey::fingerprint() of the sampler that saved it
  std::vector<PositionRange> ahead;  ///< consumed ranges beyond the prefix (canonical; see above)

  /// Positions consumed in all: consumed plus the sizes of the ahead ranges. O(ranges).
  [[nodiscard]] std::uint64_t consumed_total() const noexcept {
    std::uint64_t total = consumed;
    for (const PositionRange& r : ahead) total += r.size();
    return total;
  }

  /// The version the writers produce for this state: 1 without ahead ranges, else 2.
  [[nodiscard]] std::uint32_t written_version() const noexcept { return ahead.empty() ? 1u : 2u; }

  /// The one-line text form (no trailing newline). O(ranges).
  [[nodiscard]] std::string to_text() const;
  /// Parses the text form. Throws state_error naming the first problem found.
  [[nodiscard]] static SamplerState from_text(std::string_view text);

  /// The byte form: 56 bytes, or 64 + 16 per ahead range. O(ranges).
  [[nodiscard]] std::vector<std::uint8_t> to_bytes() const;
  /// Parses the byte form from `size` bytes at `data` (nullptr is fine when size is 0).
  /// Throws state_error naming the first problem found.
  [[nodiscard]] static SamplerState from_bytes(const std::uint8_t* data, std::size_t size);
  [[nodiscard]] static SamplerState from_bytes(const std::vector<std::uint8_t>& bytes) {
    return from_bytes(bytes.data(), bytes.size());
  }

  /// Throws state_error, prefixed by `who`, unless this state belongs to a sampler with
  /// key `expected`: dataset_size, seed, and then the fingerprint must match, consumed <=
  /// dataset_size, and the ahead ranges are canonical (and empty unless the sampler family
  /// is "shard"). When the fingerprint differs in exactly one of shuffle, tail, engine or
  /// sampler family, the message names that field and both values.
  void validate(const StateKey& expected, std::string_view who = "SamplerState") const;

  /// Equal when they describe the same positions of the same run: every field but `version`.
  friend bool operator==(const SamplerState& a, const SamplerState& b) noexcept {
    return a.dataset_size == b.dataset_size && a.seed == b.seed && a.epoch == b.epoch &&
           a.consumed == b.consumed && a.fingerprint == b.fingerprint && a.ahead == b.ahead;
  }
  friend bool operator!=(const SamplerState& a, const SamplerState& b) noexcept { return !(a == b); }
};

namespace detail {

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

[[nodiscard]] inline std::uint64_t get_u64_le(const std::uint8_t* in) noexcept {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | in[i];
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

[[nodiscard]] inline std::string hex64(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = "0x";
  for (int shift = 60; shift >= 0; shift -= 4) out += digits[(v >> shift) & 0xf];
  return out;
}

/// Checksum of the `size` bytes before a byte form's last 8 (size: the whole form's length).
[[nodiscard]] inline std::uint64_t state_checksum(const std::uint8_t* data,
                                                  std::size_t size = SamplerState::byte_size) noexcept {
  return mix64(fnv1a64(data, size - 8));
}

/// A bounds-checked reader over the text form; every failure throws state_error.
class StateTextReader {
 public:
  explicit StateTextReader(std::string_view text) noexcept : text_(text) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw_state_error("SamplerState::from_text: " + what + " at offset " + std::to_string(at_));
  }

  void literal(std::string_view expected, const char* what) {
    if (text_.substr(at_, expected.size()) != expected) {
      fail(std::string("expected ") + what + " \"" + std::string(expected) + "\"");
    }
    at_ += expected.size();
  }

  std::uint64_t decimal(const char* key) {
    const std::size_t begin = at_;
    std::uint64_t value = 0;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
      const auto digit = static_cast<std::uint64_t>(text_[at_] - '0');
      if (value > (UINT64_MAX - digit) / 10) {
        at_ = begin;
        fail(std::string("value of ") + key + " overflows 64 bits");
      }
      value = value * 10 + digit;
      ++at_;
    }
    if (at_ == begin) fail(std::string("expected a decimal value for ") + key);
    return value;
  }

  std::uint64_t hex16(const char* key) {
    literal("0x", "hex prefix");
    std::uint64_t value = 0;
    for (int i = 0; i < 16; ++i) {
      if (at_ >= text_.size()) fail(std::string("expected 16 hex digits for ") + key + ", got " + std::to_string(i));
      const char c = text_[at_];
      std::uint64_t digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<std::uint64_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<std::uint64_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<std::uint64_t>(c - 'A' + 10);
      } else {
        fail(std::string("expected 16 hex digits for ") + key + ", got " + std::to_string(i));
      }
      value = (value << 4) | digit;
      ++at_;
    }
    return value;
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
  std::string_view text_;
  std::size_t at_ = 0;
};

inline void check_consumed(const SamplerState& s, const char* who) {
  if (s.consumed > s.dataset_size) {
    throw_state_error(std::string(who) + ": consumed " + std::to_string(s.consumed) + " exceeds dataset_size " +
                      std::to_string(s.dataset_size) + " (expected consumed <= dataset_size)");
  }
  // Canonical ahead ranges: each non-empty, past the prefix and the range before it with
  // a gap, within the dataset. O(ranges).
  std::uint64_t floor = s.consumed;  // the next range must begin after this
  for (std::size_t i = 0; i < s.ahead.size(); ++i) {
    const PositionRange& r = s.ahead[i];
    const std::string where = std::string(who) + ": ahead range " + std::to_string(i) + " [" +
                              std::to_string(r.begin) + ", " + std::to_string(r.end) + ")";
    if (r.begin >= r.end) throw_state_error(where + " is empty or reversed (expected begin < end)");
    if (r.end > s.dataset_size) {
      throw_state_error(where + " ends past dataset_size " + std::to_string(s.dataset_size) +
                        " (expected end <= dataset_size)");
    }
    if (r.begin <= floor) {
      throw_state_error(where + " does not begin after " + (i == 0 ? "consumed " : "the previous range's end ") +
                        std::to_string(floor) + " (expected sorted ranges separated by a gap)");
    }
    floor = r.end;
  }
}

// Enough bytes for the byte form of `count` ahead ranges, or 0 when that overflows.
[[nodiscard]] constexpr std::size_t state_bytes_for(std::uint64_t count) noexcept {
  return count > (SIZE_MAX - 64) / 16 ? 0 : static_cast<std::size_t>(64 + 16 * count);
}

}  // namespace detail

inline std::uint64_t StateKey::fingerprint() const noexcept {
  std::uint64_t h = detail::hash_field(0xcbf29ce484222325u, "distsampler-state-key");
  h = detail::hash_field(h, sampler);
  h = detail::hash_field(h, dataset_size);
  h = detail::hash_field(h, seed);
  h = detail::hash_field(h, shuffle ? std::uint64_t{1} : std::uint64_t{0});
  h = detail::hash_field(h, static_cast<std::uint64_t>(tail));
  h = detail::hash_field(h, shuffle ? engine : std::string_view("identity"));
  return detail::mix64(h);
}

inline std::string StateKey::describe() const {
  return "sampler=" + std::string(sampler) + " dataset_size=" + std::to_string(dataset_size) +
         " seed=" + std::to_string(seed) + " shuffle=" + (shuffle ? "true" : "false") +
         " tail=" + std::string(to_string(tail)) + " engine=" + (shuffle ? std::string(engine) : "identity");
}

inline std::string SamplerState::to_text() const {
  std::string out = "distsampler-state v" + std::to_string(written_version()) +
                    " dataset_size=" + std::to_string(dataset_size) + " seed=" + std::to_string(seed) +
                    " epoch=" + std::to_string(epoch) + " consumed=" + std::to_string(consumed);
  if (!ahead.empty()) {
    out += " ahead=";
    for (std::size_t i = 0; i < ahead.size(); ++i) {
      if (i != 0) out += ',';
      out += std::to_string(ahead[i].begin) + "-" + std::to_string(ahead[i].end);
    }
  }
  return out + " fingerprint=" + detail::hex64(fingerprint);
}

inline SamplerState SamplerState::from_text(std::string_view text) {
  detail::StateTextReader in(text);
  SamplerState s;
  in.literal("distsampler-state", "magic");
  in.literal(" v", "version prefix");
  const std::uint64_t version = in.decimal("version");
  if (version != 1 && version != 2) {
    detail::throw_state_error("SamplerState::from_text: unsupported version " + std::to_string(version) +
                              " (expected 1 or 2)");
  }
  s.version = static_cast<std::uint32_t>(version);
  in.literal(" dataset_size=", "key");
  s.dataset_size = in.decimal("dataset_size");
  in.literal(" seed=", "key");
  s.seed = in.decimal("seed");
  in.literal(" epoch=", "key");
  s.epoch = in.decimal("epoch");
  in.literal(" consumed=", "key");
  s.consumed = in.decimal("consumed");
  if (version == 2) {
    in.literal(" ahead=", "key");
    do {
      PositionRange r;
      r.begin = in.decimal("ahead begin");
      in.literal("-", "range separator");
      r.end = in.decimal("ahead end");
      s.ahead.push_back(r);
    } while (in.optional(","));
  }
  in.literal(" fingerprint=", "key");
  s.fingerprint = in.hex16("fingerprint");
  in.end();
  detail::check_consumed(s, "SamplerState::from_text");
  return s;
}

inline std::vector<std::uint8_t> SamplerState::to_bytes() const {
  const std::size_t size = ahead.empty() ? byte_size : detail::state_bytes_for(ahead.size());
  std::vector<std::uint8_t> out(size, 0);
  out[0] = 'D';
  out[1] = 'S';
  out[2] = 'S';
  out[3] = 'T';
  const std::uint32_t v = written_version();
  for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(4 + i)] = static_cast<std::uint8_t>(v >> (8 * i));
  detail::put_u64_le(out.data() + 8, dataset_size);
  detail::put_u64_le(out.data() + 16, seed);
  detail::put_u64_le(out.data() + 24, epoch);
  detail::put_u64_le(out.data() + 32, consumed);
  detail::put_u64_le(out.data() + 40, fingerprint);
  if (!ahead.empty()) {
    detail::put_u64_le(out.data() + 48, ahead.size());
    for (std::size_t i = 0; i < ahead.size(); ++i) {
      detail::put_u64_le(out.data() + 56 + 16 * i, ahead[i].begin);
      detail::put_u64_le(out.data() + 64 + 16 * i, ahead[i].end);
    }
  }
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
  std::uint32_t version = 0;
  for (int i = 3; i >= 0; --i) version = (version << 8) | data[4 + i];
  if (version != 1 && version != 2) {
    detail::throw_state_error(who + "unsupported version " + std::to_string(version) + " (expected 1 or 2)");
  }
  std::size_t expected = byte_size;
  std::uint64_t count = 0;
  if (version == 2) {
    if (size < 56) truncated(56);
    count = detail::get_u64_le(data + 48);
    if (count == 0) detail::throw_state_error(who + "version 2 with 0 ahead ranges (expected at least 1)");
    expected = detail::state_bytes_for(count);
    if (expected == 0) {
      detail::throw_state_error(who + "ahead range count " + std::to_string(count) +
                                " is too large for any input (expected a count that fits in memory)");
    }
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
  s.fingerprint = detail::get_u64_le(data + 40);
  s.ahead.resize(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < s.ahead.size(); ++i) {
    s.ahead[i].begin = detail::get_u64_le(data + 56 + 16 * i);
    s.ahead[i].end = detail::get_u64_le(data + 64 + 16 * i);
  }
  detail::check_consumed(s, "SamplerState::from_bytes");
  return s;
}

inline void SamplerState::validate(const StateKey& expected, std::string_view who) const {
  const std::string prefix(who);
  const std::uint64_t want = expected.fingerprint();
  const std::string prints = "state fingerprint " + detail::hex64(fingerprint) + ", expected " + detail::hex64(want);
  if (version != 1 && version != 2) {
    detail::throw_state_error(prefix + ": unsupported version " + std::to_string(version) + " (expected 1 or 2)");
  }
  if (dataset_size != expected.dataset_size) {
    detail::throw_state_error(prefix + ": dataset_size differs (state has " + std::to_string(dataset_size) +
                              ", this sampler has " + std::to_string(expected.dataset_size) + "; " + prints + ")");
  }
  if (seed != expected.seed) {
    detail::throw_state_error(prefix + ": seed differs (state has " + std::to_string(seed) + ", this sampler has " +
                              std::to_string(expected.seed) + "; " + prints + ")");
  }
  detail::check_consumed(*this, prefix.c_str());
  if (fingerprint == want) {
    if (!ahead.empty() && expected.sampler != "shard") {
      detail::throw_state_error(prefix + ": the state has " + std::to_string(ahead.size()) +
                                " ahead ranges (expected none: only StreamingShardSampler resumes them)");
    }
    return;
  }
  // Find the single option that explains the difference, so the message can name it.
  auto differs = [&](const char* field, const std::string& saved, const std::string& mine) {
    detail::throw_state_error(prefix + ": " + field + " differs (state was saved with " + field + "=" + saved +
                              ", this sampler has " + field + "=" + mine + "; " + prints + ")");
  };
  StateKey alt = expected;
  alt.shuffle = !expected.shuffle;
  if (alt.fingerprint() == fingerprint) {
    differs("shuffle", alt.shuffle ? "true" : "false", expected.shuffle ? "true" : "false");
  }
  for (const Tail t : {Tail::pad, Tail::drop, Tail::uneven}) {
    alt = expected;
    alt.tail = t;
    if (t != expected.tail && alt.fingerprint() == fingerprint) {
      differs("tail", std::string(to_string(t)), std::string(to_string(expected.tail)));
    }
  }
  for (const std::string_view e : {"feistel", "torch-v1", "torch-v2.7", "identity"}) {
    alt = expected;
    alt.engine = e;
    if (e != expected.engine && alt.fingerprint() == fingerprint) {
      differs("engine", std::string(e), std::string(expected.engine));
    }
  }
  for (const std::string_view k : {"distributed", "batch", "shard"}) {
    alt = expected;
    alt.sampler = k;
    if (k != expected.sampler && alt.fingerprint() == fingerprint) {
      differs("sampler", std::string(k), std::string(expected.sampler));
    }
  }
  detail::throw_state_error(prefix + ": fingerprint differs (" + prints + " for " + expected.describe() +
                            "; saved with other options, or corrupted)");
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STATE_HPP

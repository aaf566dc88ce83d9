// distsampler tests: SamplerState text and byte forms, validation, and robustness against corrupt input.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <distsampler/detail/mix.hpp>
#include <distsampler/state.hpp>

using distsampler::SamplerState;
using distsampler::state_error;
using distsampler::StateKey;
using distsampler::Tail;

namespace {

SamplerState sample_state() {
  SamplerState s;
  s.dataset_size = 1000;
  s.seed = 42;
  s.epoch = 3;
  s.consumed = 640;
  s.fingerprint = 0x0123456789abcdefu;
  return s;
}

std::vector<std::uint8_t> bytes_of(const SamplerState& s) { return s.to_bytes(); }

// A state with consumed ranges beyond its prefix (the StreamingShardSampler kind).
SamplerState ahead_state() {
  SamplerState s = sample_state();
  s.ahead = {{700, 764}, {900, 901}, {950, 1000}};
  return s;
}

// Every proper prefix of either form of `s` is refused with state_error.
void require_truncations_rejected(const SamplerState& s) {
  const std::string text = s.to_text();
  for (std::size_t len = 0; len < text.size(); ++len) {
    CAPTURE(len);
    CHECK_THROWS_AS(SamplerState::from_text(text.substr(0, len)), state_error);
  }
  const auto b = bytes_of(s);
  for (std::size_t len = 0; len < b.size(); ++len) {
    CAPTURE(len);
    // A fresh allocation of exactly `len` bytes, so ASan catches any read past it.
    const std::vector<std::uint8_t> cut(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(len));
    CHECK_THROWS_AS(SamplerState::from_bytes(cut.data(), cut.size()), state_error);
  }
}

// Every single-bit change of the byte form `b` is refused with state_error.
void require_bit_flips_detected(const std::vector<std::uint8_t>& b) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      auto c = b;
      c[i] = static_cast<std::uint8_t>(c[i] ^ (1u << bit));
      CAPTURE(i, bit);
      CHECK_THROWS_AS(SamplerState::from_bytes(c), state_error);
    }
  }
}

// Parses with both parsers; only state_error may escape the parser (anything else fails the test).
template <class Parse>
bool parses(Parse&& parse) {
  try {
    (void)parse();
    return true;
  } catch (const state_error&) {
    return false;
  }
}

}  // namespace

TEST_CASE("The text form is one documented line and round-trips", "[state][text]") {
  const SamplerState s = sample_state();
  CHECK(s.to_text() == "distsampler-state v1 dataset_size=1000 seed=42 epoch=3 consumed=640 fingerprint=0x0123456789abcdef");
  CHECK(SamplerState::from_text(s.to_text()) == s);
  CHECK(SamplerState::from_text(s.to_text() + "\n") == s);
  CHECK(SamplerState::from_text("distsampler-state v1 dataset_size=1000 seed=42 epoch=3 consumed=640 "
                                "fingerprint=0x0123456789ABCDEF") == s);
}

TEST_CASE("The byte form has the documented layout and round-trips", "[state][bytes]") {
  const SamplerState s = sample_state();
  const auto b = bytes_of(s);
  REQUIRE(b.size() == 56);
  CHECK(std::string(b.begin(), b.begin() + 4) == "DSST");
  CHECK(b[4] == 1);
  CHECK(b[5] == 0);
  CHECK(b[8] == 0xe8);  // 1000 little-endian
  CHECK(b[9] == 0x03);
  CHECK(b[16] == 42);
  CHECK(b[40] == 0xef);
  CHECK(b[47] == 0x01);
  CHECK(SamplerState::from_bytes(b) == s);
}

TEST_CASE("Extreme and random states round-trip through both forms", "[state]") {
  SamplerState s;
  s.dataset_size = UINT64_MAX;
  s.seed = UINT64_MAX;
  s.epoch = UINT64_MAX;
  s.consumed = UINT64_MAX;
  s.fingerprint = UINT64_MAX;
  CHECK(SamplerState::from_text(s.to_text()) == s);
  CHECK(SamplerState::from_bytes(bytes_of(s)) == s);
  CHECK(SamplerState::from_text(SamplerState{}.to_text()) == SamplerState{});
  distsampler::detail::SplitMix64 rng(7);
  for (int i = 0; i < 200; ++i) {
    SamplerState r;
    r.dataset_size = rng() >> (rng() % 64);
    r.seed = rng();
    r.epoch = rng() >> (rng() % 64);
    r.consumed = r.dataset_size == 0 ? 0 : rng() % r.dataset_size;
    r.fingerprint = rng();
    CHECK(SamplerState::from_text(r.to_text()) == r);
    CHECK(SamplerState::from_bytes(bytes_of(r)) == r);
  }
}

TEST_CASE("The fingerprint is a stable function of every key field", "[state][fingerprint]") {
  const StateKey key{"batch", 1000, 42, true, Tail::drop, "feistel"};
  // Golden: changing this value invalidates every saved state, so it must be a decision.
  CHECK(distsampler::detail::hex64(key.fingerprint()) == "0x525b3db9088c6bc8");
  CHECK(key.describe() == "sampler=batch dataset_size=1000 seed=42 shuffle=true tail=drop engine=feistel");
  StateKey k = key;
  k.dataset_size = 1001;
  CHECK(k.fingerprint() != key.fingerprint());
  k = key;
  k.seed = 43;
  CHECK(k.fingerprint() != key.fingerprint());
  k = key;
  k.tail = Tail::pad;
  CHECK(k.fingerprint() != key.fingerprint());
  k = key;
  k.shuffle = false;
  CHECK(k.fingerprint() != key.fingerprint());
  k = key;
  k.engine = "torch-v1";
  CHECK(k.fingerprint() != key.fingerprint());
  k = key;
  k.sampler = "distributed";
  CHECK(k.fingerprint() != key.fingerprint());
  SECTION("without shuffle the engine does not matter") {
    StateKey a = key, b = key;
    a.shuffle = b.shuffle = false;
    b.engine = "torch-v2.7";
    CHECK(a.fingerprint() == b.fingerprint());
  }
}

TEST_CASE("Malformed text throws state_error naming the problem", "[state][text][errors]") {
  const std::string prefix = "SamplerState::from_text: ";
  CHECK_THROWS_WITH(SamplerState::from_text(""), prefix + "expected magic \"distsampler-state\" at offset 0");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-stat"),
                    prefix + "expected magic \"distsampler-state\" at offset 0");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state 1"),
                    prefix + "expected version prefix \" v\" at offset 17");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v"),
                    prefix + "expected a decimal value for version at offset 19");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v3 dataset_size=1"),
                    prefix + "unsupported version 3 (expected 1 or 2)");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v0 dataset_size=1"),
                    prefix + "unsupported version 0 (expected 1 or 2)");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 size=1"),
                    prefix + "expected key \" dataset_size=\" at offset 20");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=-1"),
                    prefix + "expected a decimal value for dataset_size at offset 34");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=10 seed=18446744073709551616"),
                    prefix + "value of seed overflows 64 bits at offset 42");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=10 seed=1 epoch=0 consumed=2 "
                                            "fingerprint=0123456789abcdef"),
                    prefix + "expected hex prefix \"0x\" at offset 75");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=10 seed=1 epoch=0 consumed=2 "
                                            "fingerprint=0x0123"),
                    prefix + "expected 16 hex digits for fingerprint, got 4 at offset 81");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=10 seed=1 epoch=0 consumed=2 "
                                            "fingerprint=0x0123456789abcdeg"),
                    prefix + "expected 16 hex digits for fingerprint, got 15 at offset 92");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=10 seed=1 epoch=0 consumed=2 "
                                            "fingerprint=0x0123456789abcdef0"),
                    prefix + "unexpected trailing text at offset 93");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=10 seed=1 epoch=0 consumed=2 "
                                            "fingerprint=0x0123456789abcdef\n\n"),
                    prefix + "unexpected trailing text at offset 93");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=10 seed=1 epoch=0 consumed=11 "
                                            "fingerprint=0x0123456789abcdef"),
                    prefix + "consumed 11 exceeds dataset_size 10 (expected consumed <= dataset_size)");
}

TEST_CASE("Malformed bytes throw state_error naming the problem", "[state][bytes][errors]") {
  const std::string prefix = "SamplerState::from_bytes: ";
  auto b = bytes_of(sample_state());
  CHECK_THROWS_WITH(SamplerState::from_bytes(nullptr, 0),
                    prefix + "truncated input of 0 bytes (expected at least 4)");
  CHECK_THROWS_WITH(SamplerState::from_bytes(b.data(), 6), prefix + "truncated input of 6 bytes (expected at least 8)");
  CHECK_THROWS_WITH(SamplerState::from_bytes(b.data(), 55),
                    prefix + "truncated input of 55 bytes (expected at least 56)");
  auto longer = b;
  longer.push_back(0);
  CHECK_THROWS_WITH(SamplerState::from_bytes(longer), prefix + "1 trailing bytes (expected exactly 56)");
  auto bad_magic = b;
  bad_magic[0] = 'X';
  CHECK_THROWS_WITH(SamplerState::from_bytes(bad_magic),
                    prefix + "bad magic (expected \"DSST\"; not a distsampler state)");
  auto v3 = b;
  v3[4] = 3;
  CHECK_THROWS_WITH(SamplerState::from_bytes(v3), prefix + "unsupported version 3 (expected 1 or 2)");
  auto corrupt = b;
  corrupt[30] ^= 0x10;
  const std::uint64_t stored = distsampler::detail::get_u64_le(corrupt.data() + 48);
  const std::uint64_t computed = distsampler::detail::state_checksum(corrupt.data());
  CHECK_THROWS_WITH(SamplerState::from_bytes(corrupt),
                    prefix + "checksum mismatch (stored " + distsampler::detail::hex64(stored) + ", computed " +
                        distsampler::detail::hex64(computed) + "; the state is corrupted)");
  SamplerState over = sample_state();
  over.consumed = 1001;
  CHECK_THROWS_WITH(SamplerState::from_bytes(bytes_of(over)),
                    prefix + "consumed 1001 exceeds dataset_size 1000 (expected consumed <= dataset_size)");
}

TEST_CASE("Every truncation of a valid state throws state_error", "[state][truncation]") {
  SECTION("version 1") { require_truncations_rejected(sample_state()); }
  SECTION("version 2") { require_truncations_rejected(ahead_state()); }
}

TEST_CASE("Every single-bit corruption of the byte form is detected", "[state][bytes]") {
  SECTION("version 1") { require_bit_flips_detected(bytes_of(sample_state())); }
  SECTION("version 2") { require_bit_flips_detected(bytes_of(ahead_state())); }
}

TEST_CASE("Random corruption of either form never crashes and throws only state_error", "[state][fuzz]") {
  distsampler::detail::SplitMix64 rng(2024);
  const std::string text = sample_state().to_text();
  const auto bytes = bytes_of(sample_state());
  const std::string alphabet = "0123456789abcdefxX =-\n\0vdistsampler_";
  int text_ok = 0, bytes_ok = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string t = text;
    auto b = bytes;
    const std::uint64_t edits = 1 + rng() % 4;
    for (std::uint64_t e = 0; e < edits; ++e) {
      switch (rng() % 4) {
        case 0: t[rng() % t.size()] = alphabet[rng() % alphabet.size()]; break;
        // substr rather than erase/insert: GCC 12 -O2 reports a false -Wrestrict for those.
        case 1: {
          const std::size_t at = rng() % t.size();
          t = t.substr(0, at) + t.substr(std::min(t.size(), at + 1 + rng() % 3));
          break;
        }
        case 2: {
          const std::size_t at = rng() % (t.size() + 1);
          t = t.substr(0, at) + alphabet[rng() % alphabet.size()] + t.substr(at);
          break;
        }
        default: t.resize(rng() % (t.size() + 1)); break;
      }
      if (t.empty()) t.push_back('d');
      b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
      if (rng() % 8 == 0) b.resize(rng() % (b.size() + 1));
      if (b.empty()) b.push_back(static_cast<std::uint8_t>(rng()));
    }
    text_ok += parses([&] { return SamplerState::from_text(t); });
    // A write can leave a byte as it was; only real changes must be caught.
    if (b != bytes) bytes_ok += parses([&] { return SamplerState::from_bytes(b); });
  }
  // Digit edits can leave a valid text state; byte changes are caught by the checksum.
  CHECK(text_ok < 3000);
  CHECK(bytes_ok == 0);
}

TEST_CASE("Validation names the field that differs", "[state][validate][errors]") {
  const StateKey key{"batch", 1000, 42, true, Tail::drop, "feistel"};
  SamplerState s;
  s.dataset_size = 1000;
  s.seed = 42;
  s.epoch = 2;
  s.consumed = 64;
  s.fingerprint = key.fingerprint();
  CHECK_NOTHROW(s.validate(key));
  const std::string want = distsampler::detail::hex64(key.fingerprint());
  auto prints = [&](const StateKey& saved) {
    return "state fingerprint " + distsampler::detail::hex64(saved.fingerprint()) + ", expected " + want;
  };
  auto saved_with = [&](StateKey k) {
    SamplerState r = s;
    r.dataset_size = k.dataset_size;
    r.seed = k.seed;
    r.fingerprint = k.fingerprint();
    return r;
  };

  StateKey other = key;
  other.dataset_size = 999;
  CHECK_THROWS_WITH(saved_with(other).validate(key, "DistributedBatchSampler"),
                    "DistributedBatchSampler: dataset_size differs (state has 999, this sampler has 1000; " +
                        prints(other) + ")");
  other = key;
  other.seed = 7;
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: seed differs (state has 7, this sampler has 42; " + prints(other) + ")");
  other = key;
  other.tail = Tail::pad;
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: tail differs (state was saved with tail=pad, this sampler has tail=drop; " +
                        prints(other) + ")");
  other = key;
  other.shuffle = false;
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: shuffle differs (state was saved with shuffle=false, this sampler has "
                    "shuffle=true; " + prints(other) + ")");
  other = key;
  other.engine = "torch-v2.7";
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: engine differs (state was saved with engine=torch-v2.7, this sampler has "
                    "engine=feistel; " + prints(other) + ")");
  other = key;
  other.sampler = "distributed";
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: sampler differs (state was saved with sampler=distributed, this sampler has "
                    "sampler=batch; " + prints(other) + ")");
  other = key;
  other.engine = "my-engine";
  other.tail = Tail::uneven;
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: fingerprint differs (" + prints(other) +
                        " for sampler=batch dataset_size=1000 seed=42 shuffle=true tail=drop engine=feistel; "
                        "saved with other options, or corrupted)");
  SamplerState over = s;
  over.consumed = 1001;
  CHECK_THROWS_WITH(over.validate(key),
                    "SamplerState: consumed 1001 exceeds dataset_size 1000 (expected consumed <= dataset_size)");
  SamplerState future = s;
  future.version = 9;
  CHECK_THROWS_WITH(future.validate(key), "SamplerState: unsupported version 9 (expected 1 or 2)");
  SamplerState ahead = s;
  ahead.ahead = {{100, 110}};
  CHECK_THROWS_WITH(ahead.validate(key),
                    "SamplerState: the state has 1 ahead ranges (expected none: only StreamingShardSampler resumes "
                    "them)");
  const StateKey shard{"shard", 1000, 42, true, Tail::drop, "feistel"};
  ahead.fingerprint = shard.fingerprint();
  CHECK_NOTHROW(ahead.validate(shard));
  CHECK_THROWS_WITH(ahead.validate(key),
                    "SamplerState: sampler differs (state was saved with sampler=shard, this sampler has "
                    "sampler=batch; state fingerprint " + distsampler::detail::hex64(shard.fingerprint()) +
                        ", expected " + want + ")");
}

TEST_CASE("States with ahead ranges use version 2 of both forms and round-trip", "[state][ahead]") {
  const SamplerState s = ahead_state();
  CHECK(s.written_version() == 2);
  CHECK(sample_state().written_version() == 1);
  CHECK(s.consumed_total() == 640 + 64 + 1 + 50);
  CHECK(s.to_text() == "distsampler-state v2 dataset_size=1000 seed=42 epoch=3 consumed=640 "
                       "ahead=700-764,900-901,950-1000 fingerprint=0x0123456789abcdef");
  const SamplerState t = SamplerState::from_text(s.to_text());
  CHECK(t == s);
  CHECK(t.version == 2);
  const auto b = bytes_of(s);
  REQUIRE(b.size() == 64 + 16 * 3);
  CHECK(b[4] == 2);
  CHECK(b[48] == 3);  // the range count
  CHECK(b[56] == 0xbc);  // 700 = 0x2bc little-endian
  CHECK(b[57] == 0x02);
  CHECK(b[64] == 0xfc);  // 764 = 0x2fc
  const SamplerState u = SamplerState::from_bytes(b);
  CHECK(u == s);
  CHECK(u.version == 2);
  // Equality compares positions, not the version a state was read as.
  SamplerState other = s;
  other.ahead[1].end = 902;
  CHECK(other != s);
}

TEST_CASE("Non-canonical ahead ranges and malformed version 2 input throw state_error", "[state][ahead][errors]") {
  const std::string text = "SamplerState::from_text: ";
  const std::string head = "distsampler-state v2 dataset_size=1000 seed=42 epoch=3 consumed=640 ";
  const std::string tail = " fingerprint=0x0123456789abcdef";
  CHECK_THROWS_WITH(SamplerState::from_text(head + tail.substr(1)),
                    text + "expected key \" ahead=\" at offset 67");
  CHECK_THROWS_WITH(SamplerState::from_text(head + "ahead=" + tail),
                    text + "expected a decimal value for ahead begin at offset 74");
  CHECK_THROWS_WITH(SamplerState::from_text(head + "ahead=700" + tail),
                    text + "expected range separator \"-\" at offset 77");
  CHECK_THROWS_WITH(SamplerState::from_text(head + "ahead=700-710," + tail),
                    text + "expected a decimal value for ahead begin at offset 82");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=1000 seed=42 epoch=3 consumed=640 "
                                            "ahead=700-710" + tail),
                    text + "expected key \" fingerprint=\" at offset 67");
  auto range_error = [&](const std::string& ranges) {
    try {
      (void)SamplerState::from_text(head + "ahead=" + ranges + tail);
    } catch (const state_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(range_error("700-700") == "SamplerState::from_text: ahead range 0 [700, 700) is empty or reversed "
                                  "(expected begin < end)");
  CHECK(range_error("710-700") == "SamplerState::from_text: ahead range 0 [710, 700) is empty or reversed "
                                  "(expected begin < end)");
  CHECK(range_error("700-1001") == "SamplerState::from_text: ahead range 0 [700, 1001) ends past dataset_size 1000 "
                                   "(expected end <= dataset_size)");
  CHECK(range_error("640-700") == "SamplerState::from_text: ahead range 0 [640, 700) does not begin after consumed "
                                  "640 (expected sorted ranges separated by a gap)");
  CHECK(range_error("600-700") == "SamplerState::from_text: ahead range 0 [600, 700) does not begin after consumed "
                                  "640 (expected sorted ranges separated by a gap)");
  CHECK(range_error("700-710,710-720") ==
        "SamplerState::from_text: ahead range 1 [710, 720) does not begin after the previous range's end 710 "
        "(expected sorted ranges separated by a gap)");
  CHECK(range_error("800-810,700-720") ==
        "SamplerState::from_text: ahead range 1 [700, 720) does not begin after the previous range's end 810 "
        "(expected sorted ranges separated by a gap)");
  CHECK(range_error("641-700") == "no error");

  const std::string bytes = "SamplerState::from_bytes: ";
  auto resealed = [](std::vector<std::uint8_t> b) {
    distsampler::detail::put_u64_le(b.data() + b.size() - 8, distsampler::detail::state_checksum(b.data(), b.size()));
    return b;
  };
  auto b = bytes_of(ahead_state());
  auto zero = b;
  distsampler::detail::put_u64_le(zero.data() + 48, 0);
  CHECK_THROWS_WITH(SamplerState::from_bytes(zero), bytes + "version 2 with 0 ahead ranges (expected at least 1)");
  auto huge = b;
  distsampler::detail::put_u64_le(huge.data() + 48, UINT64_MAX / 2);
  CHECK_THROWS_WITH(SamplerState::from_bytes(huge),
                    bytes + "ahead range count 9223372036854775807 is too large for any input (expected a count "
                            "that fits in memory)");
  auto more = b;
  distsampler::detail::put_u64_le(more.data() + 48, 4);
  CHECK_THROWS_WITH(SamplerState::from_bytes(more), bytes + "truncated input of 112 bytes (expected at least 128)");
  auto fewer = b;
  distsampler::detail::put_u64_le(fewer.data() + 48, 2);
  CHECK_THROWS_WITH(SamplerState::from_bytes(fewer), bytes + "16 trailing bytes (expected exactly 96)");
  CHECK_THROWS_WITH(SamplerState::from_bytes(b.data(), 50), bytes + "truncated input of 50 bytes (expected at least 56)");
  auto reversed = b;
  distsampler::detail::put_u64_le(reversed.data() + 72, 1000);  // second range begins at 1000
  CHECK_THROWS_WITH(SamplerState::from_bytes(resealed(reversed)),
                    "SamplerState::from_bytes: ahead range 1 [1000, 901) is empty or reversed (expected begin < "
                    "end)");
  // A version-1 header cannot carry ranges: its 56 bytes are the whole form.
  auto as_v1 = b;
  as_v1[4] = 1;
  CHECK_THROWS_WITH(SamplerState::from_bytes(resealed(as_v1)), bytes + "56 trailing bytes (expected exactly 56)");
}

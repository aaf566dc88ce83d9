// distsampler tests: SamplerState text and byte forms (versions 1 to 4), validation, corrupt input.
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

// The keys of the version-3 states below (tests/golden/state_v3.py computes their forms).
const StateKey batch_key{"batch", 1000, 42, true, Tail::drop, "feistel", 2, 0, {}, false, {}, false, false};
const StateKey shard_key{"shard",       1000, 42, true, Tail::drop, "shard-v2 shuffle", 2, 0x0123456789abcdefu,
                         "shard sizes", true, {}, false, false};

// A version-3 state: sample_state()'s positions saved by a sampler with `key`.
SamplerState keyed_state(const StateKey& key = batch_key) {
  SamplerState s;
  s.set_key(key);
  s.epoch = 3;
  s.consumed = 640;
  return s;
}

// A version-3 state with ahead ranges, saved under shard_key.
SamplerState keyed_ahead_state() {
  SamplerState s = keyed_state(shard_key);
  s.ahead = {{700, 764}, {900, 901}, {950, 1000}};
  return s;
}

// A version-4 state: keyed_ahead_state() plus strided entries (tests/golden/state_v3.py
// computes its forms): two interleaved entries of stride 20, one whose elements lie inside
// the ahead range [700, 764), one of stride 100.
SamplerState keyed_strided_state() {
  SamplerState s = keyed_ahead_state();
  s.strided = {{650, 4, 20, 3}, {656, 2, 20, 2}, {702, 2, 30, 2}, {766, 10, 100, 2}};
  return s;
}

// Every single-bit change of the text form `t` is refused with state_error.
void require_text_bit_flips_detected(const std::string& t) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string c = t;
      c[i] = static_cast<char>(static_cast<unsigned char>(c[i]) ^ (1u << bit));
      CAPTURE(i, bit, c);
      CHECK_THROWS_AS(SamplerState::from_text(c), state_error);
    }
  }
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

TEST_CASE("A state without its key keeps the version 1 text form and round-trips", "[state][text][legacy]") {
  const SamplerState s = sample_state();
  CHECK(s.to_text() ==
        "distsampler-state v1 dataset_size=1000 seed=42 epoch=3 consumed=640 fingerprint=0x0123456789abcdef");
  CHECK(SamplerState::from_text(s.to_text()) == s);
  CHECK(SamplerState::from_text(s.to_text() + "\n") == s);
  CHECK(SamplerState::from_text("distsampler-state v1 dataset_size=1000 seed=42 epoch=3 consumed=640 "
                                "fingerprint=0x0123456789ABCDEF") == s);
}

TEST_CASE("A state without its key keeps the version 1 byte form and round-trips", "[state][bytes][legacy]") {
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
  const StateKey key = batch_key;
  // Golden (tests/golden/state_v3.py): changing these values invalidates saved states, so
  // it must be a decision. The legacy value is what version 1 and 2 states store.
  CHECK(distsampler::detail::hex64(key.fingerprint()) == "0xc74c783e75182822");
  CHECK(distsampler::detail::hex64(key.legacy_fingerprint()) == "0x525b3db9088c6bc8");
  CHECK(key.describe() ==
        "sampler=batch dataset_size=1000 seed=42 shuffle=true tail=drop engine=feistel/2 layout=0x0000000000000000");
  StateKey k = key;
  k.engine_version = 1;
  CHECK(k.fingerprint() != key.fingerprint());
  CHECK(k.legacy_fingerprint() == key.legacy_fingerprint());
  k = key;
  k.layout = 1;
  CHECK(k.fingerprint() != key.fingerprint());
  k = key;
  k.layout_name = "shard sizes";
  k.accepts_ahead = true;
  CHECK(k.fingerprint() == key.fingerprint());  // labels and policy, not the order
  k = key;
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
  CHECK(k.legacy_fingerprint() != key.legacy_fingerprint());
  SECTION("without shuffle the engine does not matter") {
    StateKey a = key, b = key;
    a.shuffle = b.shuffle = false;
    b.engine = "torch-v2.7";
    b.engine_version = 7;
    CHECK(a.fingerprint() == b.fingerprint());
    CHECK(a.legacy_fingerprint() == b.legacy_fingerprint());
    CHECK(b.describe() ==
          "sampler=batch dataset_size=1000 seed=42 shuffle=false tail=drop engine=identity/1 "
          "layout=0x0000000000000000");
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
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v6 dataset_size=1"),
                    prefix + "unsupported version 6 (expected 1 to 5)");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v0 dataset_size=1"),
                    prefix + "unsupported version 0 (expected 1 to 5)");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v4 dataset_size=1"),
                    prefix + "expected key \" sampler=\" at offset 20");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v3 dataset_size=1"),
                    prefix + "expected key \" sampler=\" at offset 20");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 size=1"),
                    prefix + "expected key \" dataset_size=\" at offset 20");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=-1"),
                    prefix + "dataset_size \"-1\" has a sign (expected an unsigned decimal integer) at offset 34");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=1x seed=1"),
                    prefix + "dataset_size \"1x\" is not a decimal integer (expected only digits 0-9) at offset 34");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size= seed=1"),
                    prefix + "expected a decimal value for dataset_size at offset 34");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=10 seed=18446744073709551616"),
                    prefix +
                        "seed \"18446744073709551616\" overflows 64 bits (expected at most "
                        "18446744073709551615) at offset 42");
  CHECK(SamplerState::from_text("distsampler-state v1 dataset_size=10 seed=18446744073709551615 epoch=0 consumed=2 "
                                "fingerprint=0x0123456789abcdef")
            .seed == UINT64_MAX);
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
  CHECK_THROWS_WITH(SamplerState::from_bytes(nullptr, 0), prefix + "truncated input of 0 bytes (expected at least 4)");
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
  auto v6 = b;
  v6[4] = 6;
  CHECK_THROWS_WITH(SamplerState::from_bytes(v6), prefix + "unsupported version 6 (expected 1 to 5)");
  auto v5 = b;
  v5[4] = 5;
  CHECK_THROWS_WITH(SamplerState::from_bytes(v5), prefix + "truncated input of 56 bytes (expected at least 88)");
  auto v4 = b;
  v4[4] = 4;
  CHECK_THROWS_WITH(SamplerState::from_bytes(v4), prefix + "truncated input of 56 bytes (expected at least 80)");
  auto v3 = b;
  v3[4] = 3;
  CHECK_THROWS_WITH(SamplerState::from_bytes(v3), prefix + "truncated input of 56 bytes (expected at least 72)");
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
  SECTION("version 3") { require_truncations_rejected(keyed_state()); }
  SECTION("version 3 with ahead ranges") { require_truncations_rejected(keyed_ahead_state()); }
  SECTION("version 4") { require_truncations_rejected(keyed_strided_state()); }
}

TEST_CASE("Every single-bit corruption of the byte form is detected", "[state][bytes]") {
  SECTION("version 1") { require_bit_flips_detected(bytes_of(sample_state())); }
  SECTION("version 2") { require_bit_flips_detected(bytes_of(ahead_state())); }
  SECTION("version 3") { require_bit_flips_detected(bytes_of(keyed_state())); }
  SECTION("version 3 with ahead ranges") { require_bit_flips_detected(bytes_of(keyed_ahead_state())); }
  SECTION("version 4") { require_bit_flips_detected(bytes_of(keyed_strided_state())); }
}

TEST_CASE("Every single-bit corruption of a version 3 or 4 text form is detected", "[state][text]") {
  SECTION("without ahead ranges") {
    const std::string t = keyed_state().to_text();
    REQUIRE(SamplerState::from_text(t) == keyed_state());
    require_text_bit_flips_detected(t);
    require_text_bit_flips_detected(t + "\n");
  }
  SECTION("with ahead ranges and an escaped name") {
    const std::string t = keyed_ahead_state().to_text();
    REQUIRE(SamplerState::from_text(t) == keyed_ahead_state());
    require_text_bit_flips_detected(t);
  }
  SECTION("version 4") {
    const std::string t = keyed_strided_state().to_text();
    REQUIRE(SamplerState::from_text(t) == keyed_strided_state());
    require_text_bit_flips_detected(t);
  }
}

namespace {

// Applies 3000 rounds of 1 to 4 random edits to both forms of `original` and counts the
// edited forms that parse to a state other than `original`.
std::pair<int, int> random_corruptions_accepted(const SamplerState& original, std::uint64_t seed) {
  distsampler::detail::SplitMix64 rng(seed);
  const std::string text = original.to_text();
  const auto bytes = bytes_of(original);
  const std::string alphabet = "0123456789abcdefxX =-\n\0vdistsampler_%/";
  int text_ok = 0, bytes_ok = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string t = text;
    auto b = bytes;
    const std::uint64_t edits = 1 + rng() % 4;
    for (std::uint64_t e = 0; e < edits; ++e) {
      switch (rng() % 4) {
        case 0:
          t[rng() % t.size()] = alphabet[rng() % alphabet.size()];
          break;
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
        default:
          t.resize(rng() % (t.size() + 1));
          break;
      }
      if (t.empty()) t.push_back('d');
      b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
      if (rng() % 8 == 0) b.resize(rng() % (b.size() + 1));
      if (b.empty()) b.push_back(static_cast<std::uint8_t>(rng()));
    }
    // Only state_error may escape; an edit can leave the same state (a rewritten byte, a
    // trailing newline), and only real changes must be caught.
    try {
      text_ok += SamplerState::from_text(t) != original ? 1 : 0;
    } catch (const state_error&) {
    }
    if (b != bytes) bytes_ok += parses([&] { return SamplerState::from_bytes(b); });
  }
  return {text_ok, bytes_ok};
}

}  // namespace

TEST_CASE("Random corruption of either form never crashes and throws only state_error", "[state][fuzz]") {
  SECTION("version 1: digit edits can leave a valid text state; byte changes are caught by the checksum") {
    const auto [text_ok, bytes_ok] = random_corruptions_accepted(sample_state(), 2024);
    CHECK(text_ok < 3000);
    CHECK(bytes_ok == 0);
  }
  SECTION("version 3: both forms are checksummed") {
    for (const SamplerState& s : {keyed_state(), keyed_ahead_state(), keyed_strided_state()}) {
      const auto [text_ok, bytes_ok] = random_corruptions_accepted(s, 2025);
      CHECK(text_ok == 0);
      CHECK(bytes_ok == 0);
    }
  }
}

TEST_CASE("Validation of a version 3 state names every field that differs", "[state][validate][errors]") {
  const StateKey key = batch_key;
  const SamplerState s = keyed_state(key);
  CHECK(s.has_key());
  CHECK(s.fingerprint == key.fingerprint());
  CHECK_NOTHROW(s.validate(key));
  CHECK_NOTHROW(SamplerState::from_text(s.to_text()).validate(key));
  CHECK_NOTHROW(SamplerState::from_bytes(s.to_bytes()).validate(key));
  auto saved_with = [&](const StateKey& k) { return keyed_state(k); };

  StateKey other = key;
  other.dataset_size = 999;
  CHECK_THROWS_WITH(saved_with(other).validate(key, "DistributedBatchSampler"),
                    "DistributedBatchSampler: dataset_size differs (state 999, sampler 1000)");
  other = key;
  other.seed = 43;
  CHECK_THROWS_WITH(saved_with(other).validate(key), "SamplerState: seed differs (state 43, sampler 42)");
  other = key;
  other.tail = Tail::pad;
  CHECK_THROWS_WITH(saved_with(other).validate(key), "SamplerState: tail differs (state pad, sampler drop)");
  other = key;
  other.shuffle = false;
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: shuffle differs (state false, sampler true); engine differs (state identity/1, "
                    "sampler feistel/2)");
  other = key;
  other.engine = "torch-v2.7";
  other.engine_version = 1;
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: engine differs (state torch-v2.7/1, sampler feistel/2)");
  other = key;
  other.engine_version = 1;
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: engine differs (state feistel/1, sampler feistel/2)");
  other = key;
  other.sampler = "distributed";
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: sampler family differs (state distributed, sampler batch)");
  other = key;
  other.layout = 5;
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: layout differs (state layout 0x0000000000000005, sampler layout "
                    "0x0000000000000000)");
  other = key;
  other.seed = 7;
  other.tail = Tail::uneven;
  other.engine = "my-engine";
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: seed differs (state 7, sampler 42); tail differs (state uneven, sampler drop); "
                    "engine differs (state my-engine/2, sampler feistel/2)");
  SECTION("without shuffle the engine plays no part") {
    StateKey plain = key;
    plain.shuffle = false;
    StateKey plain_torch = plain;
    plain_torch.engine = "torch-v1";
    plain_torch.engine_version = 1;
    CHECK_NOTHROW(saved_with(plain).validate(plain_torch));
  }
  SECTION("the sampler names its layout field") {
    StateKey reordered = shard_key;
    reordered.layout = 0xfedcba9876543210u;
    CHECK_THROWS_WITH(keyed_state(reordered).validate(shard_key, "StreamingShardSampler::resume"),
                      "StreamingShardSampler::resume: shard sizes differ (state layout 0xfedcba9876543210, sampler "
                      "layout 0x0123456789abcdef)");
  }
  SamplerState over = s;
  over.consumed = 1001;
  CHECK_THROWS_WITH(over.validate(key),
                    "SamplerState: consumed 1001 exceeds dataset_size 1000 (expected consumed <= dataset_size)");
  SamplerState future = s;
  future.version = 9;
  CHECK_THROWS_WITH(future.validate(key), "SamplerState: unsupported version 9 (expected 1 to 5)");
  SamplerState ahead = s;
  ahead.ahead = {{700, 710}};
  CHECK_THROWS_WITH(ahead.validate(key),
                    "SamplerState: the state has 1 ahead ranges (expected none: this sampler resumes only a consumed "
                    "prefix)");
  CHECK_NOTHROW(keyed_ahead_state().validate(shard_key));
  SamplerState bad_ahead = keyed_ahead_state();
  bad_ahead.ahead[0].begin = 640;
  CHECK_THROWS_WITH(bad_ahead.validate(shard_key),
                    "SamplerState: ahead range 0 [640, 764) does not begin after consumed 640 (expected sorted ranges "
                    "separated by a gap)");
}

TEST_CASE("set_key records the key and refuses names a state cannot hold", "[state][errors]") {
  SamplerState s = keyed_state(shard_key);
  CHECK(s.sampler == "shard");
  CHECK(s.engine == "shard-v2 shuffle");
  CHECK(s.engine_version == 2);
  CHECK(s.layout == 0x0123456789abcdefu);
  CHECK(s.dataset_size == 1000);
  CHECK(s.seed == 42);
  CHECK(s.written_version() == 3);
  StateKey plain = batch_key;
  plain.shuffle = false;
  s.set_key(plain);
  CHECK(s.engine == "identity");
  CHECK(s.engine_version == 1);
  const SamplerState before = s;
  StateKey nameless = batch_key;
  nameless.sampler = "";
  CHECK_THROWS_WITH(s.set_key(nameless),
                    "SamplerState::set_key: sampler \"\" and engine \"feistel\" must each be "
                    "1..1024 bytes");
  const std::string long_name(1025, 'e');
  StateKey long_engine = batch_key;
  long_engine.engine = long_name;
  CHECK_THROWS_AS(s.set_key(long_engine), distsampler::config_error);
  CHECK(s == before);
}

TEST_CASE("Validation of a version 1 or 2 state checks its fingerprint", "[state][validate][errors][legacy]") {
  // States written by earlier releases carry only the legacy fingerprint of the key; they
  // were written by version 1 of their engine.
  StateKey key = batch_key;
  key.engine_version = 1;
  SamplerState s;
  s.dataset_size = 1000;
  s.seed = 42;
  s.epoch = 2;
  s.consumed = 64;
  s.fingerprint = key.legacy_fingerprint();
  CHECK_NOTHROW(s.validate(key));
  CHECK_NOTHROW(SamplerState::from_text(s.to_text()).validate(key));
  const std::string want = distsampler::detail::hex64(key.legacy_fingerprint());
  auto prints = [&](const StateKey& saved) {
    return "state fingerprint " + distsampler::detail::hex64(saved.legacy_fingerprint()) + ", expected " + want;
  };
  auto saved_with = [&](StateKey k) {
    SamplerState r = s;
    r.dataset_size = k.dataset_size;
    r.seed = k.seed;
    r.fingerprint = k.legacy_fingerprint();
    return r;
  };

  StateKey other = key;
  other.dataset_size = 999;
  CHECK_THROWS_WITH(saved_with(other).validate(key, "DistributedBatchSampler"),
                    "DistributedBatchSampler: dataset_size differs (state 999, sampler 1000) (version 1 state; " +
                        prints(other) + ")");
  other = key;
  other.seed = 7;
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: seed differs (state 7, sampler 42) (version 1 state; " + prints(other) + ")");
  other = key;
  other.tail = Tail::pad;
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: tail differs (state pad, sampler drop) (version 1 state; " + prints(other) + ")");
  other = key;
  other.shuffle = false;
  CHECK_THROWS_WITH(saved_with(other).validate(key),
                    "SamplerState: shuffle differs (state false, sampler true) "
                    "(version 1 state; " +
                        prints(other) + ")");
  // Engine and sampler family are hidden in the fingerprint: the message says so.
  for (const char* field : {"engine", "sampler"}) {
    other = key;
    (std::string(field) == "engine" ? other.engine : other.sampler) = "other";
    CAPTURE(field);
    CHECK_THROWS_WITH(saved_with(other).validate(key),
                      "SamplerState: fingerprint differs: saved by another sampler family, engine or options than "
                      "sampler=batch dataset_size=1000 seed=42 shuffle=true tail=drop engine=feistel/1 "
                      "layout=0x0000000000000000, or corrupted (version 1 state; " +
                          prints(other) + ")");
  }
  // A version-1 state cannot say which engine version wrote it: it was version 1.
  StateKey newer = key;
  newer.engine_version = 2;
  CHECK_THROWS_WITH(s.validate(newer),
                    "SamplerState: engine differs (state feistel/1, sampler feistel/2; version 1 and 2 states were "
                    "written by version 1 of their engine, whose order this one does not keep) (version 1 state; "
                    "state fingerprint " +
                        want + ", expected " + want + ")");
  StateKey plain = key;
  plain.shuffle = false;
  plain.engine_version = 2;  // ignored: the unshuffled order is the identity
  CHECK_NOTHROW(saved_with(plain).validate(plain));
  SamplerState ahead = s;
  ahead.ahead = {{100, 110}};
  CHECK_THROWS_WITH(ahead.validate(key),
                    "SamplerState: the state has 1 ahead ranges (expected none: this sampler resumes only a consumed "
                    "prefix)");
  StateKey shard = shard_key;
  shard.engine_version = 1;
  ahead.fingerprint = shard.legacy_fingerprint();
  CHECK_NOTHROW(ahead.validate(shard));
  CHECK_THROWS_WITH(ahead.validate(key),
                    "SamplerState: fingerprint differs: saved by another sampler family, engine or options than " +
                        key.describe() + ", or corrupted (version 1 state; state fingerprint " +
                        distsampler::detail::hex64(shard.legacy_fingerprint()) + ", expected " + want + ")");
}

TEST_CASE("The version 3 forms are the documented ones and round-trip", "[state][text][bytes]") {
  // Expected forms from tests/golden/state_v3.py, an independent implementation of the format.
  const SamplerState s = keyed_state();
  CHECK(s.to_text() ==
        "distsampler-state v3 sampler=batch dataset_size=1000 seed=42 shuffle=true tail=drop "
        "engine=feistel/2 layout=0x0000000000000000 epoch=3 consumed=640 checksum=0x1c3c1b51d66016b0");
  const SamplerState a = keyed_ahead_state();
  CHECK(a.to_text() ==
        "distsampler-state v3 sampler=shard dataset_size=1000 seed=42 shuffle=true tail=drop "
        "engine=shard-v2%20shuffle/2 layout=0x0123456789abcdef epoch=3 consumed=640 "
        "ahead=700-764,900-901,950-1000 checksum=0x08d121f1e099c5fa");
  for (const SamplerState& x : {s, a}) {
    const SamplerState t = SamplerState::from_text(x.to_text());
    CHECK(t == x);
    CHECK(t.version == 3);
    CHECK(t.fingerprint == x.fingerprint);
    CHECK(SamplerState::from_text(x.to_text() + "\n") == x);
    const SamplerState u = SamplerState::from_bytes(x.to_bytes());
    CHECK(u == x);
    CHECK(u.version == 3);
  }
  const auto b = s.to_bytes();
  REQUIRE(b.size() == 80 + 5 + 7);
  CHECK(std::string(b.begin(), b.begin() + 4) == "DSST");
  CHECK(b[4] == 3);
  CHECK(b[8] == 0xe8);  // 1000 little-endian
  CHECK(b[16] == 42);
  CHECK(b[24] == 3);
  CHECK(b[48] == 2);  // engine version
  CHECK(b[52] == 5);  // "batch"
  CHECK(b[56] == 7);  // "feistel"
  CHECK(b[60] == 1);  // shuffle
  CHECK(b[61] == 1);  // drop
  CHECK(std::string(b.begin() + 72, b.begin() + 84) == "batchfeistel");
  CHECK(distsampler::detail::hex64(distsampler::detail::get_u64_le(b.data() + 84)) == "0x1c3c1b51d66016b0");
  const auto c = a.to_bytes();
  REQUIRE(c.size() == 80 + 5 + 16 + 16 * 3);
  CHECK(c[64] == 3);  // range count
  CHECK(distsampler::detail::get_u64_le(c.data() + 72 + 21) == 700);
  CHECK(distsampler::detail::hex64(distsampler::detail::get_u64_le(c.data() + c.size() - 8)) == "0x08d121f1e099c5fa");
}

TEST_CASE("Hand edits of a version 3 text state are refused", "[state][text][errors]") {
  const std::string t = keyed_state().to_text();
  const std::string prefix = "SamplerState::from_text: ";
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string e = t;
    const std::size_t at = e.find(from);
    REQUIRE(at != std::string::npos);
    return e.replace(at, from.size(), to);
  };
  auto message = [](const std::string& text) {
    try {
      (void)SamplerState::from_text(text);
    } catch (const state_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string mismatch = prefix + "checksum mismatch (stored 0x1c3c1b51d66016b0, computed ";
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"consumed=640", "consumed=200"},
                                                        {"epoch=3", "epoch=7"},
                                                        {"seed=42", "seed=43"},
                                                        {"tail=drop", "tail=pad"},
                                                        {"shuffle=true", "shuffle=false"},
                                                        {"feistel/2", "feistel/1"},
                                                        {"sampler=batch", "sampler=distributed"},
                                                        {"layout=0x0000000000000000", "layout=0x0000000000000001"},
                                                        {"dataset_size=1000", "dataset_size=1001"},
                                                        {" checksum", " ahead=700-701 checksum"}}) {
    CAPTURE(from, to);
    CHECK(message(edited(from, to)).rfind(mismatch, 0) == 0);
  }
  CHECK(message(edited("checksum=0x1c3c1b51d66016b0", "checksum=0x1C3C1B51D66016B0")) ==
        prefix + "expected 16 lowercase hex digits for checksum, got 1 at offset 160");
  CHECK(message(edited("layout=0x0000000000000000", "layout=0x000000000000000A")) ==
        prefix + "expected 16 lowercase hex digits for layout, got 15 at offset 125");
  // The checksum covers values, not their spelling: a leading zero is refused by itself.
  CHECK(message(edited("consumed=640", "consumed=0640")) ==
        prefix + "consumed \"0640\" has a leading zero (expected the plain decimal) at offset 144");
  CHECK(message(edited("epoch=3", "epoch=03")) ==
        prefix + "epoch \"03\" has a leading zero (expected the plain decimal) at offset 133");
  CHECK(message(edited("sampler=batch", "sampler=bat%63h")) ==
        prefix + "needless escape in sampler (expected the plain character) at offset 32");
  CHECK(message(edited("sampler=batch", "sampler=b%2ch")) ==
        prefix + "malformed escape in sampler (expected % and 2 uppercase hex digits) at offset 30");
  CHECK(message(edited("sampler=batch", "sampler=b!h")) ==
        prefix + "character 33 in sampler (expected letters, digits, . _ + - or %HH escapes) at offset 30");
  CHECK(message(edited("sampler=batch", "sampler=")) == prefix + "expected a name for sampler at offset 29");
  CHECK(message(edited("tail=drop", "tail=wrap")) == prefix + "expected a tail (pad, drop or uneven) at offset 79");
  CHECK(message(edited("shuffle=true", "shuffle=yes")) == prefix + "expected shuffle value \"false\" at offset 69");
  CHECK(message(edited("feistel/2", "feistel/4294967296")) ==
        prefix + "engine version 4294967296 exceeds 4294967295 at offset 109");
  CHECK(message(edited("feistel/2", "feistel 2")) == prefix + "expected engine version separator \"/\" at offset 98");
}

TEST_CASE("Malformed version 3 bytes throw state_error naming the problem", "[state][bytes][errors]") {
  const std::string prefix = "SamplerState::from_bytes: ";
  auto resealed = [](std::vector<std::uint8_t> b) {
    distsampler::detail::put_u64_le(b.data() + b.size() - 8, distsampler::detail::state_checksum(b.data(), b.size()));
    return b;
  };
  const auto b = keyed_state().to_bytes();
  CHECK_THROWS_WITH(SamplerState::from_bytes(b.data(), 71),
                    prefix + "truncated input of 71 bytes (expected at least 72)");
  auto no_name = b;
  distsampler::detail::put_u32_le(no_name.data() + 52, 0);
  CHECK_THROWS_WITH(SamplerState::from_bytes(no_name), prefix + "name length 0 is out of range (expected 1..1024)");
  auto long_name = b;
  distsampler::detail::put_u32_le(long_name.data() + 56, 1025);
  CHECK_THROWS_WITH(SamplerState::from_bytes(long_name),
                    prefix + "name length 1025 is out of range (expected 1..1024)");
  auto huge = b;
  distsampler::detail::put_u64_le(huge.data() + 64, UINT64_MAX / 2);
  CHECK_THROWS_WITH(SamplerState::from_bytes(huge),
                    prefix +
                        "ahead range count 9223372036854775807 is too large for any input (expected a count "
                        "that fits in memory)");
  auto shuffle = b;
  shuffle[60] = 2;
  CHECK_THROWS_WITH(SamplerState::from_bytes(resealed(shuffle)), prefix + "shuffle byte 2 (expected 0 or 1)");
  auto tail = b;
  tail[61] = 3;
  CHECK_THROWS_WITH(SamplerState::from_bytes(resealed(tail)), prefix + "tail byte 3 (expected 0, 1 or 2)");
  auto reserved = b;
  reserved[63] = 1;
  CHECK_THROWS_WITH(SamplerState::from_bytes(resealed(reserved)), prefix + "reserved bytes 62..63 are not 0");
  auto corrupt = b;
  corrupt[75] ^= 0x20;  // "batch" -> "batCh"
  CHECK_THROWS_WITH(
      SamplerState::from_bytes(corrupt),
      prefix + "checksum mismatch (stored 0x1c3c1b51d66016b0, computed " +
          distsampler::detail::hex64(distsampler::detail::state_checksum(corrupt.data(), corrupt.size())) +
          "; the state is corrupted)");
}

TEST_CASE("States with ahead ranges use version 2 of both forms and round-trip", "[state][ahead]") {
  const SamplerState s = ahead_state();
  CHECK(s.written_version() == 2);
  CHECK(sample_state().written_version() == 1);
  CHECK(s.consumed_total() == 640 + 64 + 1 + 50);
  CHECK(s.to_text() ==
        "distsampler-state v2 dataset_size=1000 seed=42 epoch=3 consumed=640 "
        "ahead=700-764,900-901,950-1000 fingerprint=0x0123456789abcdef");
  const SamplerState t = SamplerState::from_text(s.to_text());
  CHECK(t == s);
  CHECK(t.version == 2);
  const auto b = bytes_of(s);
  REQUIRE(b.size() == 64 + 16 * 3);
  CHECK(b[4] == 2);
  CHECK(b[48] == 3);     // the range count
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
  CHECK_THROWS_WITH(SamplerState::from_text(head + tail.substr(1)), text + "expected key \" ahead=\" at offset 67");
  CHECK_THROWS_WITH(SamplerState::from_text(head + "ahead=" + tail),
                    text + "expected a decimal value for ahead begin at offset 74");
  CHECK_THROWS_WITH(SamplerState::from_text(head + "ahead=700" + tail),
                    text + "expected range separator \"-\" at offset 77");
  CHECK_THROWS_WITH(SamplerState::from_text(head + "ahead=700-710," + tail),
                    text + "expected a decimal value for ahead begin at offset 82");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v1 dataset_size=1000 seed=42 epoch=3 consumed=640 "
                                            "ahead=700-710" +
                                            tail),
                    text + "expected key \" fingerprint=\" at offset 67");
  auto range_error = [&](const std::string& ranges) {
    try {
      (void)SamplerState::from_text(head + "ahead=" + ranges + tail);
    } catch (const state_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(range_error("700-700") ==
        "SamplerState::from_text: ahead range 0 [700, 700) is empty or reversed "
        "(expected begin < end)");
  CHECK(range_error("710-700") ==
        "SamplerState::from_text: ahead range 0 [710, 700) is empty or reversed "
        "(expected begin < end)");
  CHECK(range_error("700-1001") ==
        "SamplerState::from_text: ahead range 0 [700, 1001) ends past dataset_size 1000 "
        "(expected end <= dataset_size)");
  CHECK(range_error("640-700") ==
        "SamplerState::from_text: ahead range 0 [640, 700) does not begin after consumed "
        "640 (expected sorted ranges separated by a gap)");
  CHECK(range_error("600-700") ==
        "SamplerState::from_text: ahead range 0 [600, 700) does not begin after consumed "
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
                    bytes +
                        "ahead range count 9223372036854775807 is too large for any input (expected a count "
                        "that fits in memory)");
  auto more = b;
  distsampler::detail::put_u64_le(more.data() + 48, 4);
  CHECK_THROWS_WITH(SamplerState::from_bytes(more), bytes + "truncated input of 112 bytes (expected at least 128)");
  auto fewer = b;
  distsampler::detail::put_u64_le(fewer.data() + 48, 2);
  CHECK_THROWS_WITH(SamplerState::from_bytes(fewer), bytes + "16 trailing bytes (expected exactly 96)");
  CHECK_THROWS_WITH(SamplerState::from_bytes(b.data(), 50),
                    bytes + "truncated input of 50 bytes (expected at least 56)");
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

TEST_CASE("The version 4 forms are the documented ones and round-trip", "[state][text][bytes][strided]") {
  // Expected forms from tests/golden/state_v3.py, an independent implementation of the format.
  const SamplerState s = keyed_strided_state();
  CHECK(s.written_version() == 4);
  CHECK(s.to_text() ==
        "distsampler-state v4 sampler=shard dataset_size=1000 seed=42 shuffle=true tail=drop "
        "engine=shard-v2%20shuffle/2 layout=0x0123456789abcdef epoch=3 consumed=640 "
        "ahead=700-764,900-901,950-1000 strided=650-654/20x3,656-658/20x2,702-704/30x2,766-776/100x2 "
        "checksum=0x60d2fcb730ceade0");
  const auto b = s.to_bytes();
  REQUIRE(b.size() == 88 + 5 + 16 + 16 * 3 + 32 * 4);
  CHECK(b[4] == 4);
  CHECK(b[64] == 3);  // ahead count
  CHECK(b[72] == 4);  // strided count
  CHECK(std::string(b.begin() + 80, b.begin() + 85) == "shard");
  const std::size_t strided_at = 80 + 5 + 16 + 16 * 3;
  CHECK(distsampler::detail::get_u64_le(b.data() + strided_at) == 650);
  CHECK(distsampler::detail::get_u64_le(b.data() + strided_at + 8) == 4);
  CHECK(distsampler::detail::get_u64_le(b.data() + strided_at + 16) == 20);
  CHECK(distsampler::detail::get_u64_le(b.data() + strided_at + 24) == 3);
  CHECK(distsampler::detail::hex64(distsampler::detail::get_u64_le(b.data() + b.size() - 8)) == "0x60d2fcb730ceade0");
  for (const SamplerState& t : {SamplerState::from_text(s.to_text()), SamplerState::from_bytes(b)}) {
    CHECK(t == s);
    CHECK(t.version == 4);
    CHECK(t.fingerprint == s.fingerprint);
    CHECK_NOTHROW(t.validate(shard_key));
  }
  // 640 + 115 ahead + 12 + 4 + 20 strided; the entry at 702 lies inside the ahead range 700-764.
  CHECK(s.consumed_total() == 791);
  SamplerState other = s;
  other.strided[3].count = 3;
  CHECK(other != s);
  // Without strided entries the same state is version 3, as before.
  CHECK(keyed_ahead_state().written_version() == 3);
}

TEST_CASE("The version 5 forms carry a family's words under the checksum and round-trip",
          "[state][text][bytes][extra]") {
  // Expected forms from tests/golden/state_v3.py (EXTRA), an independent implementation.
  const StateKey stream_key{"stream", 4, 9, true, Tail::pad, "feistel", 2, 0x0123456789abcdefu,
                            "byte sizes", false, {}, false, true};
  SamplerState s;
  s.set_key(stream_key);
  s.epoch = 2;
  s.extra = {1, 0, UINT64_MAX};
  CHECK(s.written_version() == 5);
  const std::string text =
      "distsampler-state v5 sampler=stream dataset_size=4 seed=9 shuffle=true tail=pad engine=feistel/2 "
      "layout=0x0123456789abcdef epoch=2 consumed=0 extra=1,0,18446744073709551615 checksum=0xf65b0ae77b7dac17";
  CHECK(s.to_text() == text);
  const auto b = s.to_bytes();
  REQUIRE(b.size() == 133);
  CHECK(b[4] == 5);
  CHECK(b[80] == 3);  // word count
  CHECK(distsampler::detail::get_u64_le(b.data() + b.size() - 16) == UINT64_MAX);
  for (const SamplerState& t : {SamplerState::from_text(text), SamplerState::from_bytes(b)}) {
    CHECK(t == s);
    CHECK(t.version == 5);
    CHECK_NOTHROW(t.validate(stream_key));
  }
  SamplerState other = s;
  other.extra[1] = 7;
  CHECK(other != s);
  require_text_bit_flips_detected(text);
  require_bit_flips_detected(b);
  require_truncations_rejected(s);
  // A sampler without family words refuses them; a state without a key cannot hold them.
  StateKey no_words = stream_key;
  no_words.accepts_extra = false;
  CHECK_THROWS_WITH(s.validate(no_words),
                    "SamplerState: the state has 3 family words (expected none: this sampler's states hold only "
                    "consumed positions)");
  SamplerState keyless;
  keyless.extra = {1};
  CHECK_THROWS_WITH(keyless.to_text(), "SamplerState::to_text: the state has 1 family words but no key (expected "
                                       "set_key first: only version 5 holds them)");
  auto none = b;
  distsampler::detail::put_u64_le(none.data() + 80, 0);
  CHECK_THROWS_WITH(SamplerState::from_bytes(none),
                    "SamplerState::from_bytes: version 5 with 0 family words (expected at least 1; without them the "
                    "state is version 3 or 4)");
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v5 sampler=stream dataset_size=4 seed=9 shuffle=true "
                                            "tail=pad engine=feistel/2 layout=0x0123456789abcdef epoch=2 consumed=0 "
                                            "checksum=0xf65b0ae77b7dac17"),
                    "SamplerState::from_text: expected key \" extra=\" (a version 5 state always holds its family's "
                    "words; without them it is a version 3 or 4 state: was its version edited?) at offset 141");
  // With strided entries too: both sections, in their order.
  SamplerState both = keyed_strided_state();
  both.extra = {5};
  CHECK(SamplerState::from_text(both.to_text()) == both);
  CHECK(SamplerState::from_bytes(both.to_bytes()) == both);
  CHECK(both.to_text().find(" strided=650-654/20x3,656-658/20x2,702-704/30x2,766-776/100x2 extra=5 checksum=") !=
        std::string::npos);
}

TEST_CASE("Hand edits of a version 4 text state and malformed version 4 bytes are refused",
          "[state][text][bytes][strided][errors]") {
  const std::string t = keyed_strided_state().to_text();
  const std::string prefix = "SamplerState::from_text: ";
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string e = t;
    const std::size_t at = e.find(from);
    REQUIRE(at != std::string::npos);
    return e.replace(at, from.size(), to);
  };
  const std::string mismatch = prefix + "checksum mismatch (stored 0x60d2fcb730ceade0, computed ";
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{{"650-654/20x3", "650-654/20x4"},
                                                                                 {"650-654/20x3", "650-655/20x3"},
                                                                                 {"766-776/100x2", "766-776/110x2"},
                                                                                 {"656-658/20x2", "657-659/20x2"},
                                                                                 {",702-704/30x2", ""},
                                                                                 {"v4", "v3"}}) {
    CAPTURE(from, to);
    try {
      (void)SamplerState::from_text(edited(from, to));
      FAIL("accepted");
    } catch (const state_error& e) {
      const std::string what = e.what();
      if (from == "v4") {
        CHECK(what == prefix + "expected key \" checksum=\" at offset 189");
      } else {
        CHECK(what.rfind(mismatch, 0) == 0);
      }
    }
  }
  CHECK_THROWS_WITH(SamplerState::from_text(edited("650-654/20x3", "654-650/20x3")),
                    prefix +
                        "strided entry 0 first element [654, 650) is empty or reversed (expected begin < end) "
                        "at offset 205");
  CHECK_THROWS_WITH(SamplerState::from_text(edited("650-654/20x3", "650-654x3")),
                    prefix + "strided end \"654x3\" is not a decimal integer (expected only digits 0-9) at offset 202");
  CHECK_THROWS_WITH(SamplerState::from_text(edited("650-654/20x3", "650-654/20")),
                    prefix + "expected count separator \"x\" at offset 208");
  CHECK_THROWS_WITH(SamplerState::from_text(edited("650-654/20x3", "650-654/020x3")),
                    prefix + "strided stride \"020\" has a leading zero (expected the plain decimal) at offset 206");
  // A version 4 text must hold strided entries.
  CHECK_THROWS_WITH(SamplerState::from_text(keyed_ahead_state().to_text().replace(18, 2, "v4")),
                    prefix + "expected key \" strided=\" (a version 4 state always holds strided entries; without "
                             "them it is a version 3 state: was its version edited?) at offset 189");

  const std::string bytes = "SamplerState::from_bytes: ";
  const auto b = keyed_strided_state().to_bytes();
  CHECK_THROWS_WITH(SamplerState::from_bytes(b.data(), 79),
                    bytes + "truncated input of 79 bytes (expected at least 80)");
  auto none = b;
  distsampler::detail::put_u64_le(none.data() + 72, 0);
  CHECK_THROWS_WITH(SamplerState::from_bytes(none),
                    bytes +
                        "version 4 with 0 strided entries (expected at least 1; without them the state is "
                        "version 3)");
  auto huge = b;
  distsampler::detail::put_u64_le(huge.data() + 72, UINT64_MAX / 2);
  CHECK_THROWS_WITH(SamplerState::from_bytes(huge),
                    bytes +
                        "ahead range count 3 with strided entry count 9223372036854775807 is too large for any "
                        "input (expected a count that fits in memory)");
  auto more = b;
  distsampler::detail::put_u64_le(more.data() + 72, 5);
  CHECK_THROWS_WITH(SamplerState::from_bytes(more), bytes + "truncated input of " + std::to_string(b.size()) +
                                                        " bytes (expected at least " + std::to_string(b.size() + 32) +
                                                        ")");
}

TEST_CASE("Non-canonical strided entries are refused naming the entry and what was expected",
          "[state][strided][errors]") {
  auto message = [](SamplerState s) {
    // Through the byte form, resealed: only the canonical-form check can refuse it.
    try {
      s.validate(shard_key);
    } catch (const state_error& e) {
      const std::string validated = e.what();
      try {
        (void)SamplerState::from_bytes(s.to_bytes());
      } catch (const state_error& f) {
        const std::string parsed = f.what();
        const std::string a = "SamplerState: ", b = "SamplerState::from_bytes: ";
        REQUIRE(validated.rfind(a, 0) == 0);
        REQUIRE(parsed == b + validated.substr(a.size()));
        return validated.substr(a.size());
      }
      return std::string("parsed");
    }
    return std::string("valid");
  };
  auto with = [](std::vector<distsampler::StridedRange> strided) {
    SamplerState s = keyed_ahead_state();
    s.strided = std::move(strided);
    return s;
  };
  CHECK(message(with({{650, 4, 20, 3}})) == "valid");
  CHECK(message(with({{650, 0, 20, 3}})) == "strided entry 0 (650-650/20x3) has length 0 (expected at least 1)");
  CHECK(message(with({{650, 4, 20, 1}})) ==
        "strided entry 0 (650-654/20x1) has count 1 (expected at least 2; a single element is an ahead range)");
  CHECK(message(with({{650, 4, 4, 3}})) ==
        "strided entry 0 (650-654/4x3) has stride 4 not above its length 4 (expected stride > length; touching "
        "elements are one ahead range)");
  CHECK(message(with({{650, 4, 20, 18}})) == "valid");  // last element [990, 994)
  CHECK(message(with({{650, 4, 20, 18}, {995, 4, 20, 2}})) ==
        "strided entry 1 (995-999/20x2) ends past dataset_size 1000 (expected its last element to end at most at "
        "dataset_size)");
  CHECK(message(with({{650, 4, UINT64_MAX, 2}})) ==
        "strided entry 0 (650-654/18446744073709551615x2) ends past dataset_size 1000 (expected its last element to "
        "end at most at dataset_size)");
  CHECK(message(with({{640, 4, 20, 2}})) ==
        "strided entry 0 (640-644/20x2) does not begin after consumed 640 (expected strided entries past the prefix "
        "with a gap)");
  CHECK(message(with({{660, 4, 20, 2}, {650, 4, 30, 2}})) ==
        "strided entry 1 (650-654/30x2) does not begin after the previous entry's begin 660 (expected strided "
        "entries sorted by begin)");
  CHECK(message(with({{650, 4, 20, 3}, {660, 4, 30, 2}})) ==
        "strided entry 1 (660-664/30x2) overlaps the span of strided entry 0 of stride 20 (expected overlapping "
        "entries to share one stride)");
  CHECK(message(with({{650, 4, 20, 3}, {652, 4, 20, 2}})) ==
        "strided entry 1 (652-656/20x2) shares positions with strided entry 0 (expected entries of one stride at "
        "disjoint offsets)");
  // Offsets modulo 20: the first entry takes 10..13; 18..19 is free, 18..30 wraps onto 0..10 and meets it.
  CHECK(message(with({{650, 4, 20, 3}, {658, 2, 20, 2}})) == "valid");
  CHECK(message(with({{650, 4, 20, 3}, {658, 13, 20, 2}})) ==
        "strided entry 1 (658-671/20x2) shares positions with strided entry 0 (expected entries of one stride at "
        "disjoint offsets)");
  // Spans that do not overlap may have any strides; the entry of stride 100 starts after 694.
  CHECK(message(with({{650, 4, 20, 3}, {694, 10, 100, 2}})) == "valid");

  // Only a keyed state can hold strided entries, and only a sampler that resumes ahead ranges takes them.
  SamplerState unkeyed = sample_state();
  unkeyed.strided = {{650, 4, 20, 3}};
  CHECK_THROWS_WITH(unkeyed.to_text(),
                    "SamplerState::to_text: the state has 1 strided entries but no key (expected "
                    "set_key first: only version 4 holds them)");
  CHECK_THROWS_WITH(unkeyed.to_bytes(),
                    "SamplerState::to_bytes: the state has 1 strided entries but no key (expected "
                    "set_key first: only version 4 holds them)");
  SamplerState batch = keyed_state();
  batch.strided = {{650, 4, 20, 3}};
  CHECK_THROWS_WITH(batch.validate(batch_key),
                    "SamplerState: the state has 1 strided entries (expected none: this "
                    "sampler resumes only a consumed prefix)");
}

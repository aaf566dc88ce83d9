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

std::vector<std::uint8_t> bytes_of(const SamplerState& s) {
  const auto a = s.to_bytes();
  return std::vector<std::uint8_t>(a.begin(), a.end());
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
  CHECK_THROWS_WITH(SamplerState::from_text("distsampler-state v2 dataset_size=1"),
                    prefix + "unsupported version 2 (expected 1)");
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
  auto v2 = b;
  v2[4] = 2;
  CHECK_THROWS_WITH(SamplerState::from_bytes(v2), prefix + "unsupported version 2 (expected 1)");
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
  const SamplerState s = sample_state();
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

TEST_CASE("Every single-bit corruption of the byte form is detected", "[state][bytes]") {
  const auto b = bytes_of(sample_state());
  for (std::size_t i = 0; i < b.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      auto c = b;
      c[i] = static_cast<std::uint8_t>(c[i] ^ (1u << bit));
      CAPTURE(i, bit);
      CHECK_THROWS_AS(SamplerState::from_bytes(c), state_error);
    }
  }
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
  CHECK_THROWS_WITH(future.validate(key), "SamplerState: unsupported version 9 (expected 1)");
}

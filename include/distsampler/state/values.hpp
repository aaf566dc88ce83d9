// distsampler internal: StateKey, the position ranges and SamplerState's fields; state.hpp adds checks and forms.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STATE_VALUES_HPP
#define DISTSAMPLER_STATE_VALUES_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../detail/mix.hpp"
#include "format.hpp"
#include "../error.hpp"
#include "../options.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// What a saved state must match to be resumed: everything that defines an epoch's global
/// order and its tail. Deliberately NOT included: world size, micro-batch size, accumulation
/// steps, global batch size and worker count — those may change between save and resume
/// (elastic resume), because `consumed` counts positions of the global order, which does
/// not depend on them.
///
/// Every sampler fills the fields from what it knows; state.hpp knows no sampler or engine:
///  - `sampler` names the sampler family (its tails and positions mean different things);
///  - `engine` and `engine_version` are the permutation's identity (engine_identity<P>() in
///    permutation_traits.hpp); both are ignored when `shuffle` is false, when the order is
///    the identity ("identity", version 1);
///  - `layout` is a 64-bit hash of anything else that defines the order (a shard catalog),
///    0 when there is nothing else; `layout_name` is how messages call it, a plural noun
///    ("shard sizes" gives "shard sizes differ");
///  - `accepts_ahead` says whether the sampler resumes consumed ranges beyond the prefix.
/// The names are views: the strings must outlive the key.
struct StateKey {
  std::string_view sampler;
  std::uint64_t dataset_size = 0;
  std::uint64_t seed = 0;
  bool shuffle = true;
  Tail tail = Tail::pad;
  std::string_view engine;
  std::uint32_t engine_version = 0;
  std::uint64_t layout = 0;
  std::string_view layout_name;
  bool accepts_ahead = false;
  /// The engine name version 1 and 2 states fingerprinted, when it differs from `engine`
  /// (the shard sampler once folded its layout into the name); empty: `engine`.
  std::string_view legacy_engine;
  /// True when this key's order is the one that version 1 and 2 states (which record no
  /// engine version) describe although engine_version is above 1: the engine's newer
  /// format left this dataset size's order unchanged. Set by the sampler from the engine.
  bool legacy_order = false;
  /// Whether the sampler resumes a state with family words (SamplerState::extra).
  bool accepts_extra = false;

  /// The engine the order uses: `engine` when shuffled, else "identity".
  [[nodiscard]] constexpr std::string_view order_engine() const noexcept { return shuffle ? engine : "identity"; }
  /// The version of order_engine(): `engine_version` when shuffled, else 1.
  [[nodiscard]] constexpr std::uint32_t order_engine_version() const noexcept { return shuffle ? engine_version : 1; }

  /// 64-bit hash of every field that defines the order (sampler, dataset_size, seed, shuffle,
  /// tail, order_engine(), order_engine_version(), layout), identical on every platform.
  /// O(length of the names).
  [[nodiscard]] std::uint64_t fingerprint() const noexcept;
  /// The fingerprint stored by version 1 and 2 states: the same without engine_version and
  /// layout. O(length of the names).
  [[nodiscard]] std::uint64_t legacy_fingerprint() const noexcept;
  /// "sampler=batch dataset_size=10 seed=1 shuffle=true tail=drop engine=feistel/2 layout=0x0000000000000000".
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

/// Positions consumed in an arithmetic progression of equal ranges (the whole blocks one
/// consumer of a block deal read beyond what every consumer read): elements
/// [begin + i * stride, begin + i * stride + length) for i < count. Canonical in a state:
/// length >= 1, count >= 2 (one element is a PositionRange), stride > length (touching
/// elements are one PositionRange). Plain data; members O(1), no overflow checks (call
/// end() on entries a state validated).
struct StridedRange {
  std::uint64_t begin = 0;
  std::uint64_t length = 0;
  std::uint64_t stride = 0;
  std::uint64_t count = 0;

  /// Element i (< count).
  [[nodiscard]] constexpr PositionRange element(std::uint64_t i) const noexcept {
    return PositionRange{begin + i * stride, begin + i * stride + length};
  }
  /// End of the last element: begin + (count - 1) * stride + length (count >= 1).
  [[nodiscard]] constexpr std::uint64_t end() const noexcept { return begin + (count - 1) * stride + length; }
  /// Positions in all elements: length * count.
  [[nodiscard]] constexpr std::uint64_t size() const noexcept { return length * count; }
  /// Positions of the elements below x (elements are disjoint when stride >= length).
  [[nodiscard]] constexpr std::uint64_t size_below(std::uint64_t x) const noexcept {
    if (x <= begin || count == 0) return 0;
    const std::uint64_t t = x - begin, whole = t / stride;
    if (whole >= count) return size();
    return whole * length + (t % stride < length ? t % stride : length);
  }
  friend constexpr bool operator==(const StridedRange& a, const StridedRange& b) noexcept {
    return a.begin == b.begin && a.length == b.length && a.stride == b.stride && a.count == b.count;
  }
  friend constexpr bool operator!=(const StridedRange& a, const StridedRange& b) noexcept { return !(a == b); }
};

/// A set of positions as sorted, merged `ranges` plus `strided` progressions, which may
/// overlap the ranges but not each other: what a block deal's consumers read, in segment
/// or in epoch positions, before it is stored in a SamplerState.
struct PositionSet {
  std::vector<PositionRange> ranges;
  std::vector<StridedRange> strided;
};

/// A run's position: in which epoch, and which positions of that epoch's global order
/// (shared by all ranks, independent of world size and worker count) have been consumed:
/// the prefix [0, consumed) and, beyond it, the ranges in `ahead` and the elements of the
/// progressions in `strided`; and the key of the
/// sampler that saved it (set_key). Together with a sampler built with the same dataset and
/// options, it says exactly which samples remain.
///
/// `ahead` is empty for samplers whose consumers always leave a prefix. Samplers whose
/// consumers read blocks of the order (StateKey::accepts_ahead) can leave up to a few ranges
/// per consumer consumed beyond the prefix. `ahead` is kept canonical: sorted, each range
/// non-empty, separated from the prefix and from each other by at least one position,
/// ending at most at dataset_size.
///
/// `strided` holds what a consumer read beyond the slowest in whole blocks (one entry per
/// consumer, or per run of neighbouring consumers at the same count, instead of one range
/// per block), so a state stays O(consumers) at any stop. Canonical: each entry as
/// StridedRange says, its last element ending at most at dataset_size, beginning after
/// `consumed` with a gap, sorted by begin; entries whose spans (begin to end()) overlap
/// share one stride and never a position (their elements interleave). An element may lie
/// inside an ahead range (a resumed segment's fronts cover earlier segments' holes as one
/// range); positions are counted once.
///
/// `extra` holds a family's own words beyond the consumed set (the streams family's open
/// passes); state.hpp does not read them, the checksum covers them, and only a keyed state
/// holds them (version 5).
///
/// The text and byte forms of versions 1 to 5 (which version is written when, every field,
/// the checksum) are specified in docs/STATE.md.
///
/// Loading throws state_error (never reads out of bounds, never aborts) for truncated,
/// malformed or corrupted input, an unknown version, consumed > dataset_size, or
/// non-canonical ahead ranges or strided entries. Deterministic and platform independent.
struct SamplerState {
  /// The newest format version this library reads and writes.
  static constexpr std::uint32_t current_version = 5;
  /// Length of the version-1 byte form.
  static constexpr std::size_t byte_size = detail::legacy_state_bytes;
  /// Longest sampler or engine name a version-3 state records.
  static constexpr std::size_t max_name_size = 1024;

  /// The format version this state was read as (1 when made in memory). Informational:
  /// writers choose the version (see written_version()), and equality ignores it.
  std::uint32_t version = 1;
  std::uint64_t dataset_size = 0;
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::uint64_t consumed = 0;         ///< positions [0, consumed) of the epoch's global order are done
  std::uint64_t fingerprint = 0;      ///< the saving sampler's key: fingerprint() (keyed) or legacy_fingerprint()
  std::vector<PositionRange> ahead;   ///< consumed ranges beyond the prefix (canonical; see above)
  std::vector<StridedRange> strided;  ///< consumed progressions beyond the prefix (canonical; see above)
  std::vector<std::uint64_t> extra;   ///< the family's own words (see above); empty for most families
  // The saving sampler's key (StateKey's fields); `sampler` is empty in a state without a key.
  std::string sampler;
  bool shuffle = true;
  Tail tail = Tail::pad;
  std::string engine;                ///< StateKey::order_engine()
  std::uint32_t engine_version = 0;  ///< StateKey::order_engine_version()
  std::uint64_t layout = 0;

  /// Records `key` (dataset_size, seed, the key's fields and its fingerprint). Throws
  /// config_error when a name is empty or longer than max_name_size (nothing is changed then).
  void set_key(const StateKey& key);
  /// True when the state carries its key: set_key() was called, or it was read as version 3.
  [[nodiscard]] bool has_key() const noexcept { return !sampler.empty(); }

  /// Positions consumed in all (each once): consumed, the ahead ranges and the strided
  /// elements not inside an ahead range. For a canonical state; O(ranges + strided entries
  /// * log ranges + pairs of an entry and a range its span meets).
  [[nodiscard]] std::uint64_t consumed_total() const noexcept;

  /// The version the writers produce: 5 with family words, else 4 with strided entries,
  /// else 3 with a key, else 1 without ahead ranges, else 2.
  [[nodiscard]] std::uint32_t written_version() const noexcept {
    return !extra.empty() ? 5u : !strided.empty() ? 4u : has_key() ? 3u : ahead.empty() ? 1u : 2u;
  }

  /// The one-line text form (no trailing newline). O(ranges + strided entries + names).
  /// Throws state_error for strided entries or family words without a key.
  [[nodiscard]] std::string to_text() const;
  /// Parses the text form. Throws state_error naming the first problem found.
  [[nodiscard]] static SamplerState from_text(std::string_view text);

  /// The byte form (see above). O(ranges + strided entries + words + names). Throws
  /// state_error for strided entries or family words without a key.
  [[nodiscard]] std::vector<std::uint8_t> to_bytes() const;
  /// Parses the byte form from `size` bytes at `data` (nullptr is fine when size is 0).
  /// Throws state_error naming the first problem found.
  [[nodiscard]] static SamplerState from_bytes(const std::uint8_t* data, std::size_t size);
  [[nodiscard]] static SamplerState from_bytes(const std::vector<std::uint8_t>& bytes) {
    return from_bytes(bytes.data(), bytes.size());
  }

  /// Throws state_error, prefixed by `who`, unless this state belongs to a sampler with key
  /// `expected`. A state with its key: every field must match, and the message names each
  /// one that differs with both values ("seed differs (state 43, sampler 42)"; the layout by
  /// expected.layout_name). A version 1 or 2 state: dataset_size and seed, then the legacy
  /// fingerprint (naming shuffle or tail when changing that one field explains it), and the
  /// engine version must be 1 (what wrote those states). Then consumed <= dataset_size,
  /// canonical ahead ranges and strided entries, and none unless expected.accepts_ahead;
  /// family words only when expected.accepts_extra.
  /// O(ranges + strided entries * log strided entries + names).
  void validate(const StateKey& expected, std::string_view who = "SamplerState") const;

  /// Equal when every field but `version` is equal. The library writes one form for given
  /// progress, so states saved from the same progress compare equal.
  friend bool operator==(const SamplerState& a, const SamplerState& b) noexcept {
    return a.dataset_size == b.dataset_size && a.seed == b.seed && a.epoch == b.epoch && a.consumed == b.consumed &&
           a.fingerprint == b.fingerprint && a.ahead == b.ahead && a.strided == b.strided && a.sampler == b.sampler &&
           a.shuffle == b.shuffle && a.tail == b.tail && a.engine == b.engine && a.engine_version == b.engine_version &&
           a.layout == b.layout && a.extra == b.extra;
  }
  friend bool operator!=(const SamplerState& a, const SamplerState& b) noexcept { return !(a == b); }

 private:
  [[nodiscard]] StateKey key_view() const noexcept {
    StateKey k;
    k.sampler = sampler;
    k.dataset_size = dataset_size;
    k.seed = seed;
    k.shuffle = shuffle;
    k.tail = tail;
    k.engine = engine;
    k.engine_version = engine_version;
    k.layout = layout;
    return k;
  }
  void validate_legacy(const StateKey& expected, const std::string& prefix) const;
};

namespace detail {

[[nodiscard]] inline std::string bool_name(bool b) { return b ? "true" : "false"; }

// The hash of the fields every state version fingerprints, under `tag`, with `engine`.
[[nodiscard]] inline std::uint64_t hash_key_fields(const StateKey& key, std::string_view tag,
                                                   std::string_view engine) noexcept {
  std::uint64_t h = hash_field(0xcbf29ce484222325u, tag);
  h = hash_field(h, key.sampler);
  h = hash_field(h, key.dataset_size);
  h = hash_field(h, key.seed);
  h = hash_field(h, key.shuffle ? std::uint64_t{1} : std::uint64_t{0});
  h = hash_field(h, static_cast<std::uint64_t>(key.tail));
  return hash_field(h, engine);
}

}  // namespace detail

inline std::uint64_t StateKey::fingerprint() const noexcept {
  std::uint64_t h = detail::hash_key_fields(*this, "distsampler-state-key-v3", order_engine());
  h = detail::hash_field(h, order_engine_version());
  h = detail::hash_field(h, layout);
  return detail::mix64(h);
}

inline std::uint64_t StateKey::legacy_fingerprint() const noexcept {
  return detail::mix64(detail::hash_key_fields(*this, "distsampler-state-key",
                                               shuffle && !legacy_engine.empty() ? legacy_engine : order_engine()));
}

inline std::string StateKey::describe() const {
  return "sampler=" + std::string(sampler) + " dataset_size=" + std::to_string(dataset_size) +
         " seed=" + std::to_string(seed) + " shuffle=" + detail::bool_name(shuffle) +
         " tail=" + std::string(to_string(tail)) + " engine=" + std::string(order_engine()) + "/" +
         std::to_string(order_engine_version()) + " layout=" + detail::hex64(layout);
}

inline void SamplerState::set_key(const StateKey& key) {
  const std::string_view e = key.order_engine();
  if (key.sampler.empty() || key.sampler.size() > max_name_size || e.empty() || e.size() > max_name_size) {
    detail::throw_config_error("SamplerState::set_key: sampler \"" + std::string(key.sampler) + "\" and engine \"" +
                               std::string(e) + "\" must each be 1.." + std::to_string(max_name_size) + " bytes");
  }
  std::string new_sampler(key.sampler), new_engine(e);
  sampler.swap(new_sampler);
  engine.swap(new_engine);
  dataset_size = key.dataset_size;
  seed = key.seed;
  shuffle = key.shuffle;
  tail = key.tail;
  engine_version = key.order_engine_version();
  layout = key.layout;
  fingerprint = key.fingerprint();
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STATE_VALUES_HPP

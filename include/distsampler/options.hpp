// distsampler options layer: the tail policy, the epoch mode and the options every rank must agree on, set by name.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_OPTIONS_HPP
#define DISTSAMPLER_OPTIONS_HPP

#include <cstdint>
#include <string>
#include <string_view>

#include "error.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// What to do when the dataset size N is not a multiple of the world size W.
enum class Tail {
  /// torch's default (drop_last=False): every rank gets ceil(N / W) samples; the last
  /// N mod W positions are filled by wrapping around to the start of the epoch's order.
  /// Those duplicates are flagged by `is_padding`, so exact evaluation can mask them.
  pad,
  /// torch's drop_last=True: every rank gets floor(N / W) samples; the last N mod W
  /// positions of the epoch's order are not read this epoch (they change every epoch).
  drop,
  /// Every index exactly once: rank r gets floor(N / W) + (r < N mod W) samples, so
  /// counts differ by at most 1. For exact evaluation; breaks collectives that need
  /// equal step counts, hence never a default.
  uneven,
};

/// "pad", "drop" or "uneven".
[[nodiscard]] constexpr std::string_view to_string(Tail tail) noexcept {
  switch (tail) {
    case Tail::pad:
      return "pad";
    case Tail::drop:
      return "drop";
    case Tail::uneven:
      return "uneven";
  }
  return "invalid";
}

/// Parses "pad", "drop" or "uneven"; throws config_error naming `who` otherwise.
[[nodiscard]] inline Tail parse_tail(std::string_view text, std::string_view who = "tail") {
  if (text == "pad") return Tail::pad;
  if (text == "drop") return Tail::drop;
  if (text == "uneven") return Tail::uneven;
  detail::throw_config_error(std::string(who) + " \"" + std::string(text) +
                             "\" is unknown (expected pad, drop or uneven)");
}

/// When a sampler's epoch changes.
enum class EpochMode {
  /// Only set_epoch(), next_epoch() and resume() change the epoch (torch's behaviour:
  /// forgetting set_epoch repeats the order).
  manual,
  /// As manual, and additionally every pass after the first starts the next epoch by
  /// itself (see each sampler for what starts a pass). set_epoch() and resume() make the
  /// next pass read exactly the epoch (and remainder) they selected.
  auto_advance,
};

namespace detail {

// Enum values arrive from casts and deserialised integers: checked where options are taken.
constexpr void check_tail(Tail tail, std::string_view who) {
  if (tail != Tail::pad && tail != Tail::drop && tail != Tail::uneven) {
    throw_config_error(std::string(who) + ": tail " + std::to_string(static_cast<int>(tail)) +
                       " is not a Tail (expected pad, drop or uneven)");
  }
}

constexpr void check_epoch_mode(EpochMode mode, std::string_view who) {
  if (mode != EpochMode::manual && mode != EpochMode::auto_advance) {
    throw_config_error(std::string(who) + ": epoch_mode " + std::to_string(static_cast<int>(mode)) +
                       " is not an EpochMode (expected manual or auto_advance)");
  }
}

}  // namespace detail

/// The options that define an epoch's order in every sampler: `shuffle`, the shared
/// `seed` and the `tail` policy, with by-name setters that return the derived options
/// type (so `BatchSamplerOptions().with_seed(42).with_micro_batch_size(8)` chains). Each
/// sampler's options derive from it and choose the default tail; none is an aggregate, so
/// positional braces such as `{true, 42}` do not compile.
///
/// `seed` is shared by all ranks: one shared seed and a partition is what makes ranks
/// disjoint; per-rank seeds (`42 + rank`) give each rank its own full shuffle, so ranks
/// overlap. torch's negative seeds are taken mod 2^64: seed -1 is 2^64 - 1.
template <class Derived>
struct OrderOptions {
  bool shuffle = true;     ///< false: the identity order (torch's shuffle=False)
  std::uint64_t seed = 0;  ///< the shared seed of every epoch's order
  Tail tail = Tail::pad;   ///< what happens to the positions that do not fill a round (see Tail)

  constexpr Derived& with_shuffle(bool value) noexcept {
    shuffle = value;
    return self();
  }
  constexpr Derived& with_seed(std::uint64_t value) noexcept {
    seed = value;
    return self();
  }
  constexpr Derived& with_tail(Tail value) noexcept {
    tail = value;
    return self();
  }

 protected:
  constexpr explicit OrderOptions(Tail default_tail) noexcept : tail(default_tail) {}
  /// Equality of the three order fields, for the derived types' operator==.
  [[nodiscard]] constexpr bool same_order_options(const OrderOptions& other) const noexcept {
    return shuffle == other.shuffle && seed == other.seed && tail == other.tail;
  }

 private:
  constexpr Derived& self() noexcept { return static_cast<Derived&>(*this); }
};

/// The batch shape of the samplers that read micro-batches (the batch and mixture
/// families): `micro_batch_size` m (required: the sampler throws config_error while
/// it is 0), and the global batch G = m x world_size x accumulation_steps given either by
/// `accumulation_steps` (default 1) or by `global_batch_size` (0 = not set), which the
/// sampler resolves against its world (resolve_batch_shape in batch_layout.hpp). Setters
/// return the derived options type, as OrderOptions'.
template <class Derived>
struct BatchShapeOptions {
  std::uint64_t micro_batch_size = 0;    ///< m, samples per micro-batch (required)
  std::uint64_t accumulation_steps = 1;  ///< K, micro-batches per rank per optimizer step
  std::uint64_t global_batch_size = 0;   ///< G; 0 = follows from m, world_size and K

  constexpr Derived& with_micro_batch_size(std::uint64_t value) noexcept {
    micro_batch_size = value;
    return self();
  }
  constexpr Derived& with_accumulation_steps(std::uint64_t value) noexcept {
    accumulation_steps = value;
    return self();
  }
  constexpr Derived& with_global_batch_size(std::uint64_t value) noexcept {
    global_batch_size = value;
    return self();
  }

 protected:
  constexpr BatchShapeOptions() noexcept = default;
  /// Equality of the three shape fields, for the derived types' operator==.
  [[nodiscard]] constexpr bool same_batch_shape(const BatchShapeOptions& other) const noexcept {
    return micro_batch_size == other.micro_batch_size && accumulation_steps == other.accumulation_steps &&
           global_batch_size == other.global_batch_size;
  }

 private:
  constexpr Derived& self() noexcept { return static_cast<Derived&>(*this); }
};

/// The index sampler's options (the distributed family's), the same on every rank (unlike World). Set them by name:
///
///     SamplerOptions().with_seed(42).with_tail(Tail::drop)
///
/// The type is not an aggregate, so a positional `{true, 42}` does not compile (the
/// batch sampler's options have another default tail, and positions would hide that).
///
/// The order fields and their setters come from OrderOptions (tail default: pad).
struct SamplerOptions : OrderOptions<SamplerOptions> {
  constexpr SamplerOptions() noexcept : OrderOptions(Tail::pad) {}  // user-provided: not an aggregate

  friend constexpr bool operator==(const SamplerOptions& a, const SamplerOptions& b) noexcept {
    return a.same_order_options(b);
  }
  friend constexpr bool operator!=(const SamplerOptions& a, const SamplerOptions& b) noexcept { return !(a == b); }
};

/// The micro-batch sampler's options (the batch family's), set by name like SamplerOptions:
///
///     BatchSamplerOptions().with_micro_batch_size(8).with_accumulation_steps(2).with_seed(42)
///     BatchSamplerOptions().with_micro_batch_size(8).with_global_batch_size(512)
///
/// micro_batch_size, accumulation_steps and global_batch_size come from BatchShapeOptions
/// (m required; G or K, resolved against the world: accumulation_steps = G / (m x
/// world_size)). After construction the sampler's options() holds both, resolved.
///
/// The tail defaults to drop (the last partial global batch is not read this epoch), as
/// is usual for training. For the last R mod G positions of the epoch (R = positions
/// remaining):
///  - drop: not read; every step is a full global batch.
///  - pad: one more step; its slots past the real positions repeat the epoch's order from
///    its start (position (j - (R mod G)) mod N for the j-th slot of the step, as torch
///    pads) and are flagged by is_padding.
///  - uneven: one more step holding exactly the remaining positions, spread over the
///    W * K micro-batch slots of the step as evenly as possible (sizes differ by at most
///    1; a micro-batch is empty when fewer than W * K positions remain). Every rank still
///    runs the same number of steps and micro-batches; every position is read exactly once.
struct BatchSamplerOptions : OrderOptions<BatchSamplerOptions>, BatchShapeOptions<BatchSamplerOptions> {
  EpochMode epoch_mode = EpochMode::manual;

  constexpr BatchSamplerOptions() noexcept : OrderOptions(Tail::drop) {}  // user-provided: not an aggregate
  constexpr BatchSamplerOptions& with_epoch_mode(EpochMode value) noexcept {
    epoch_mode = value;
    return *this;
  }

  friend constexpr bool operator==(const BatchSamplerOptions& a, const BatchSamplerOptions& b) noexcept {
    return a.same_order_options(b) && a.same_batch_shape(b) && a.epoch_mode == b.epoch_mode;
  }
  friend constexpr bool operator!=(const BatchSamplerOptions& a, const BatchSamplerOptions& b) noexcept {
    return !(a == b);
  }
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_OPTIONS_HPP

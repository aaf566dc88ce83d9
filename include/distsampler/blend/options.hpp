// distsampler blends: BlendSampler's options (BlendOptions), what the packing of each source and the blend share.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_BLEND_OPTIONS_HPP
#define DISTSAMPLER_BLEND_OPTIONS_HPP

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../mixture/schedule.hpp"
#include "../options.hpp"
#include "../packing/options.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// BlendSampler's options, the same on every rank, set by name:
///
///     BlendOptions().with_seq_len(2048).with_mode(PackMode::concat).with_micro_batch_size(4)
///         .with_accumulation_steps(8).with_seed(42).with_schedule({{5000, {0.5, 0.5}}})
///         .with_end_steps(10000)
///
/// The order fields (shuffle, seed; tail stays Tail::drop) come from OrderOptions,
/// `micro_batch_size` M (sequences per micro-batch), `accumulation_steps` and
/// `global_batch_size` from BatchShapeOptions. Each source is packed as PackOptions says:
/// `seq_len` L (required), `mode`, `window`, `chunk`, `split_long` and `plan_limit` mean
/// what they mean there (docs/PACKING.md). `mixing_block` (0 = the global batch at
/// construction) is the block over which the blend's counts are exact and the unit of the
/// schedule's steps and of `end_steps`; it defines the order, so a run resumed with
/// another global batch sets it to the one the run started with. `schedule` lists weight
/// changes (steps strictly increasing from 1, in mixing blocks). `end_steps` (required,
/// at least 1) is the run's length in mixing blocks.
struct BlendOptions : OrderOptions<BlendOptions>, BatchShapeOptions<BlendOptions> {
  std::uint64_t seq_len = 0;                      ///< L, tokens per sequence (required)
  PackMode mode = PackMode::concat;               ///< concat or best_fit, every source alike
  std::uint64_t window = std::uint64_t{1} << 16;  ///< D, documents shuffled (and packed) together
  std::uint64_t chunk = 1024;                     ///< C, consecutive documents that stay together
  bool split_long = true;                         ///< best_fit: split documents longer than L
  std::uint64_t plan_limit = std::uint64_t{1} << 16;  ///< window records of one pass's plan
  std::uint64_t mixing_block = 0;                 ///< 0: the global batch at construction
  std::vector<WeightChange> schedule;             ///< weight changes from their step on
  std::uint64_t end_steps = 0;                    ///< the run's mixing blocks (required)

  BlendOptions() noexcept : OrderOptions(Tail::drop) {}  // user-provided: not an aggregate
  BlendOptions& with_seq_len(std::uint64_t value) noexcept {
    seq_len = value;
    return *this;
  }
  BlendOptions& with_mode(PackMode value) noexcept {
    mode = value;
    return *this;
  }
  /// D documents per window, C per chunk (default min(1024, D)), as PackOptions::with_window.
  BlendOptions& with_window(std::uint64_t value) noexcept { return with_window(value, value < 1024 ? value : 1024); }
  BlendOptions& with_window(std::uint64_t value, std::uint64_t chunk_size) noexcept {
    window = value;
    chunk = chunk_size;
    return *this;
  }
  BlendOptions& with_split_long(bool value) noexcept {
    split_long = value;
    return *this;
  }
  BlendOptions& with_plan_limit(std::uint64_t value) noexcept {
    plan_limit = value;
    return *this;
  }
  BlendOptions& with_mixing_block(std::uint64_t value) noexcept {
    mixing_block = value;
    return *this;
  }
  BlendOptions& with_schedule(std::vector<WeightChange> value) {
    schedule = std::move(value);
    return *this;
  }
  BlendOptions& with_end_steps(std::uint64_t value) noexcept {
    end_steps = value;
    return *this;
  }

  /// The options each source is packed with: these packing fields, `seed` (the source's
  /// own, see BlendSampler), shuffle and tail, one sequence per step on one rank.
  [[nodiscard]] PackOptions pack_options(std::uint64_t source_seed) const {
    PackOptions p;
    p.with_seq_len(seq_len).with_mode(mode).with_window(window, chunk).with_split_long(split_long)
        .with_plan_limit(plan_limit).with_micro_batch_size(1).with_seed(source_seed).with_shuffle(shuffle)
        .with_tail(tail);
    return p;
  }

  /// Throws config_error, prefixed by `who`, naming the first option out of its range:
  /// the packing fields as PackOptions::validate (seq_len, mode, chunk, window,
  /// plan_limit, a tail other than drop), then end_steps 0. The batch shape is checked by
  /// resolve_batch_shape, the schedule by MixtureSchedule.
  void validate(std::string_view who) const {
    pack_options(seed).validate(who);
    if (end_steps == 0) {
      detail::throw_config_error(std::string(who) +
                                 ": end_steps is 0 (expected at least 1 step; set it with with_end_steps(n))");
    }
  }
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_BLEND_OPTIONS_HPP

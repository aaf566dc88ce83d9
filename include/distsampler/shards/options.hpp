// distsampler ShardSamplerOptions: the options of a StreamingShardSampler, set by name, and their validation.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARD_OPTIONS_HPP
#define DISTSAMPLER_SHARD_OPTIONS_HPP

#include <cstdint>
#include <string>
#include <string_view>

#include "../error.hpp"
#include "../options.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The options of a StreamingShardSampler, set by name:
///     ShardSamplerOptions().with_seed(42).with_tail(Tail::drop).with_num_workers(4)
/// All but `num_workers` must be the same on every rank; with the shard sizes they
/// define the epoch's global order (world size and worker count do not).
///
///  - `canonical_streams` (C): the shuffled shard sequence is cut into C contiguous
///    streams ("lanes", MosaicML's canonical nodes); the global order takes runs from
///    them in turn, so at any moment the whole job reads near C places of the dataset.
///  - `max_open_shards` (m): a consumer interleaves m runs at a time, so it never has
///    more than m shard ranges open at once; more runs mix more shards per batch. A
///    block's m runs come from m lanes spread evenly over the shard sequence (lanes j,
///    j + C/m, j + 2C/m, ... when m divides C), so a block samples the whole dataset.
///  - `run_length` (L): consecutive samples read from one run (one place of one shard).
///    `block_size() = m * L` is the unit of locality and of the read plan.
///  - `shuffle_window` (w): each lane reads its runs in a random order within consecutive
///    windows of w runs (w * L samples), so a shard's records are not read in file order:
///    its runs come shuffled, a window at a time. 1 reads every lane in order (the shard
///    rotation still changes each epoch). A lane keeps the shards of one window live, so
///    a larger window shuffles more at the cost of more shards touched at once.
///  - `num_workers`: loader workers per rank; each (rank, worker) is one consumer with
///    its own stream. It may differ between runs (a state resumes on any count).
///
/// Defaults: shuffled, seed 0, Tail::pad, 512 streams, 64 open shards, runs of 1 (blocks of
/// 64 samples, one from each of 64 lanes spread over the whole shard sequence), windows of
/// 16 runs, 1 worker: batches mix like a full shuffle (docs/SHARDS.md has the numbers) while
/// a consumer keeps about 64 shards open. For sequential-only readers raise run_length (8:
/// blocks of 8 runs of 8 with max_open_shards 8) and accept less mixed micro-batches. Not an aggregate, so
/// positional `{true, 42}` does not compile. Setters are constexpr and noexcept; the
/// values are checked where they are used (detail::validate_shard_options).
struct ShardSamplerOptions : OrderOptions<ShardSamplerOptions> {
  std::uint64_t canonical_streams = 512;
  std::uint64_t max_open_shards = 64;
  std::uint64_t run_length = 1;
  std::uint64_t shuffle_window = 16;
  std::uint64_t num_workers = 1;

  constexpr ShardSamplerOptions() noexcept : OrderOptions(Tail::pad) {}  // user-provided: not an aggregate
  constexpr ShardSamplerOptions& with_canonical_streams(std::uint64_t v) noexcept {
    canonical_streams = v;
    return *this;
  }
  constexpr ShardSamplerOptions& with_max_open_shards(std::uint64_t v) noexcept {
    max_open_shards = v;
    return *this;
  }
  constexpr ShardSamplerOptions& with_run_length(std::uint64_t v) noexcept {
    run_length = v;
    return *this;
  }
  constexpr ShardSamplerOptions& with_shuffle_window(std::uint64_t v) noexcept {
    shuffle_window = v;
    return *this;
  }
  constexpr ShardSamplerOptions& with_num_workers(std::uint64_t v) noexcept {
    num_workers = v;
    return *this;
  }

  /// max_open_shards * run_length (valid options only: validation rejects an overflow).
  [[nodiscard]] constexpr std::uint64_t block_size() const noexcept { return max_open_shards * run_length; }

  friend constexpr bool operator==(const ShardSamplerOptions& a, const ShardSamplerOptions& b) noexcept {
    return a.same_order_options(b) && a.canonical_streams == b.canonical_streams &&
           a.max_open_shards == b.max_open_shards && a.run_length == b.run_length &&
           a.shuffle_window == b.shuffle_window && a.num_workers == b.num_workers;
  }
  friend constexpr bool operator!=(const ShardSamplerOptions& a, const ShardSamplerOptions& b) noexcept {
    return !(a == b);
  }
};

namespace detail {

/// Checks the options that shape the epoch order: canonical_streams, max_open_shards,
/// run_length and shuffle_window at least 1, max_open_shards <= canonical_streams, and a
/// block size that fits 64 bits. Throws config_error "<who>: <name> ..." naming the value
/// and what was expected.
inline void validate_order_options(const ShardSamplerOptions& o, std::string_view who) {
  const std::string w = std::string(who) + ": ";
  if (o.canonical_streams == 0) throw_config_error(w + "canonical_streams is 0 (expected at least 1)");
  if (o.max_open_shards == 0) throw_config_error(w + "max_open_shards is 0 (expected at least 1)");
  if (o.run_length == 0) throw_config_error(w + "run_length is 0 (expected at least 1)");
  if (o.shuffle_window == 0) throw_config_error(w + "shuffle_window is 0 (expected at least 1)");
  if (o.max_open_shards > o.canonical_streams) {
    throw_config_error(w + "max_open_shards " + std::to_string(o.max_open_shards) + " exceeds canonical_streams " +
                       std::to_string(o.canonical_streams) + " (expected max_open_shards <= canonical_streams)");
  }
  if (o.run_length > UINT64_MAX / o.max_open_shards) {
    throw_config_error(w + "max_open_shards " + std::to_string(o.max_open_shards) + " * run_length " +
                       std::to_string(o.run_length) +
                       " overflows 64 bits (expected a block size <= " + std::to_string(UINT64_MAX) + ")");
  }
}

/// Checks every option for a sampler on `world_size` ranks: num_workers at least 1 with
/// world_size * num_workers within 64 bits, a valid Tail, then validate_order_options.
/// Throws config_error as that does.
inline void validate_shard_options(const ShardSamplerOptions& o, std::uint64_t world_size, std::string_view who) {
  const std::string w = std::string(who) + ": ";
  if (o.num_workers == 0) throw_config_error(w + "num_workers is 0 (expected at least 1)");
  if (world_size != 0 && o.num_workers > UINT64_MAX / world_size) {
    throw_config_error(w + "world_size " + std::to_string(world_size) + " * num_workers " +
                       std::to_string(o.num_workers) +
                       " overflows 64 bits (expected a product <= " + std::to_string(UINT64_MAX) + ")");
  }
  if (o.tail != Tail::pad && o.tail != Tail::drop && o.tail != Tail::uneven) {
    throw_config_error(w + "tail " + std::to_string(static_cast<int>(o.tail)) +
                       " is not a Tail (expected pad, drop or uneven)");
  }
  validate_order_options(o, who);
}

}  // namespace detail

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARD_OPTIONS_HPP

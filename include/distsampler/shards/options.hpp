// distsampler ShardSamplerOptions: the options of a StreamingShardSampler, set by name, and their validation.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARD_OPTIONS_HPP
#define DISTSAMPLER_SHARD_OPTIONS_HPP

#include <cstdint>
#include <string>
#include <string_view>

#include "../detail/checked.hpp"
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
///    more than m runs (read_plan ranges of consecutive offsets) open at once; more runs
///    mix more shards per batch. The shards it has started and not finished can be more
///    than m (a lane's window may cross a shard boundary; a shard may meet two of its
///    lanes), and with m > 1 it changes shard on nearly every sample. A
///    block's m runs come from m lanes spread evenly over the shard sequence (lanes j,
///    j + C/m, j + 2C/m, ... when m divides C), so a block samples the whole dataset.
///  - `run_length` (L): consecutive samples read from one run (one place of one shard).
///    `block_size() = m * L` is the unit of locality and of the read plan.
///  - `shuffle_window` (w): each lane reads its runs in a random order within consecutive
///    windows of w runs (w * L samples), so a shard's records are not read in file order:
///    its runs come shuffled, a window at a time. 1 reads every lane in order (the shard
///    rotation still changes each epoch). A lane keeps the shards of one window live, so
///    a larger window shuffles more at the cost of more shards touched at once.
///  - `rotate_shards`: when shuffled, each shard is read from a per-epoch rotation of its
///    offsets (offset r, r + 1, ..., size - 1, 0, ..., r - 1 for a per-epoch r), so run
///    boundaries move between epochs; false reads every shard from offset 0 (the shard
///    order and the windows still change each epoch), which the sequential() preset needs
///    for offsets that only increase. Part of the order: saved states record it.
///  - `num_workers`: loader workers per rank; each (rank, worker) is one consumer with
///    its own stream. It may differ between runs (a state resumes on any count).
///
/// Defaults (equal to mixed()): shuffled, seed 0, Tail::pad, 512 streams, 64 open shards,
/// runs of 1 (blocks of 64 samples, one from each of 64 lanes spread over the whole shard
/// sequence), windows of 16 runs, rotated shards, 1 worker: batches mix like a full shuffle
/// (docs/SHARDS.md has the numbers), but reads are not sequential: see mixed(). Readers
/// that need runs of records in increasing offsets from one shard at a time take
/// sequential(). Not an aggregate, so positional `{true, 42}` does not compile. Setters are
/// constexpr and noexcept; the values are checked where they are used
/// (detail::validate_shard_options).
struct ShardSamplerOptions : OrderOptions<ShardSamplerOptions> {
  std::uint64_t canonical_streams = 512;
  std::uint64_t max_open_shards = 64;
  std::uint64_t run_length = 1;
  std::uint64_t shuffle_window = 16;
  bool rotate_shards = true;
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
  constexpr ShardSamplerOptions& with_rotate_shards(bool v) noexcept {
    rotate_shards = v;
    return *this;
  }
  constexpr ShardSamplerOptions& with_num_workers(std::uint64_t v) noexcept {
    num_workers = v;
    return *this;
  }

  /// The preset that mixes: the defaults, canonical_streams 512, max_open_shards 64,
  /// run_length 1, shuffle_window 16, rotate_shards true (ShardSamplerOptions() ==
  /// mixed()). A block of 64 slots of a worker's stream holds one sample from each of 64
  /// lanes spread over the shard sequence, so a micro-batch of 64 is a stratified sample
  /// of the whole dataset. What it does not give, for any world:
  ///  - sequential reads: consecutive slots of a block come from 64 different lanes, so a
  ///    worker changes shard on nearly every sample;
  ///  - increasing offsets: a lane reads its records shuffled within windows of 16, the
  ///    workers sharing a lane take alternate rows of it, and every shard starts at a
  ///    per-epoch offset, so within one worker's stream a shard's offsets go up and down;
  ///  - few shards per worker: a worker touches about 64 shards in every 1024 samples
  ///    (more with tiny shards), and one shard may be read at the start and at the end of
  ///    the epoch (a shard crossing two of the worker's lanes).
  /// docs/SHARDS.md measures all of it next to sequential() and a full shuffle. O(1).
  [[nodiscard]] static constexpr ShardSamplerOptions mixed() noexcept { return ShardSamplerOptions(); }

  /// The preset that reads sequentially: canonical_streams 1, max_open_shards 1,
  /// run_length 1024, shuffle_window 1, rotate_shards false (the rest as the defaults).
  /// The shard order is still shuffled every epoch; the global order is the shuffled shard
  /// sequence itself (each shard from offset 0), and consumer k of K reads runs k, k + K,
  /// k + 2K, ... of 1024 consecutive records of it, then an equal contiguous share of the
  /// last partial round. Guarantees, for every layout, world, worker count, tail and
  /// segment (after set_epoch, and after resume from any state on any world):
  ///  - each worker's stream reads the shard sequence at strictly increasing positions,
  ///    so within one worker the offsets read from a shard strictly increase, over the
  ///    whole segment;
  ///  - each shard's reads are consecutive slots of the stream: one shard open at a time
  ///    (a shard is open from the slot of its first read to the slot of its last), and
  ///    the stream changes shard only to a shard it has not read yet, so at most once per
  ///    shard it touches;
  ///  - a run of 1024 slots reads consecutive offsets, crossing into the next shard of the
  ///    sequence when one ends.
  /// The one exception is the flagged padding duplicate of the tail slot (Tail::pad), which
  /// repeats one of the segment's last samples. The price is mixing: the whole job reads
  /// one stretch of about K runs of the shard sequence at a time, so a batch holds a few
  /// neighbouring shards (docs/SHARDS.md measures it). with_canonical_streams(K) for a
  /// job of exactly K = world_size * num_workers consumers keeps every guarantee above for
  /// an epoch after set_epoch (not for a segment resumed from a state) and has worker k
  /// read lane k, one contiguous 1/K of the shard sequence (whole runs), then a share of
  /// the fewer than K * 1024 positions left: a global batch then samples K places. O(1).
  [[nodiscard]] static constexpr ShardSamplerOptions sequential() noexcept {
    ShardSamplerOptions o;
    o.canonical_streams = 1;
    o.max_open_shards = 1;
    o.run_length = 1024;
    o.shuffle_window = 1;
    o.rotate_shards = false;
    return o;
  }

  /// max_open_shards * run_length (valid options only: validation rejects an overflow).
  [[nodiscard]] constexpr std::uint64_t block_size() const noexcept { return max_open_shards * run_length; }

  friend constexpr bool operator==(const ShardSamplerOptions& a, const ShardSamplerOptions& b) noexcept {
    return a.same_order_options(b) && a.canonical_streams == b.canonical_streams &&
           a.max_open_shards == b.max_open_shards && a.run_length == b.run_length &&
           a.shuffle_window == b.shuffle_window && a.rotate_shards == b.rotate_shards && a.num_workers == b.num_workers;
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
  (void)checked_mul(who, "max_open_shards", o.max_open_shards, "run_length", o.run_length);
}

/// Checks every option for a sampler on `world_size` ranks: num_workers at least 1 with
/// world_size * num_workers within 64 bits, a valid Tail, then validate_order_options.
/// Throws config_error as that does.
inline void validate_shard_options(const ShardSamplerOptions& o, std::uint64_t world_size, std::string_view who) {
  const std::string w = std::string(who) + ": ";
  if (o.num_workers == 0) throw_config_error(w + "num_workers is 0 (expected at least 1)");
  (void)checked_mul(who, "world_size", world_size, "num_workers", o.num_workers);
  if (o.tail != Tail::pad && o.tail != Tail::drop && o.tail != Tail::uneven) {
    throw_config_error(w + "tail " + std::to_string(static_cast<int>(o.tail)) +
                       " is not a Tail (expected pad, drop or uneven)");
  }
  validate_order_options(o, who);
}

}  // namespace detail

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARD_OPTIONS_HPP

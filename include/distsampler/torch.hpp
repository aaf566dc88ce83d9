// distsampler libtorch adapter (opt-in): the samplers as torch::data samplers, seeded, resumable and reshuffling through make_data_loader.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TORCH_HPP
#define DISTSAMPLER_TORCH_HPP

#include <torch/data/samplers/base.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "distsampler.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// How a TorchSampler's epoch moves.
enum class TorchEpochMode {
  /// Only set_epoch changes it (torch's behaviour, but set_epoch reaches the DataLoader's copy).
  manual,
  /// Every reset() after the first starts the next epoch, so a loop over
  /// `*loader` reshuffles each pass even when set_epoch is forgotten.
  advance_on_reset,
};

namespace detail {

// A SamplerState as an int64 tensor of its bytes under `key` in torch's archive.
inline void write_state(torch::serialize::OutputArchive& archive, const char* key, const SamplerState& state) {
  const auto bytes = state.to_bytes();
  std::vector<std::int64_t> values(bytes.begin(), bytes.end());
  archive.write(key, torch::tensor(values, torch::kInt64), /*is_buffer=*/true);
}

// Reads what write_state wrote; state_error (prefixed by `who`) for anything else.
inline SamplerState read_state(torch::serialize::InputArchive& archive, const char* key, const char* who) {
  torch::Tensor tensor = torch::empty({static_cast<std::int64_t>(SamplerState::byte_size)}, torch::kInt64);
  archive.read(key, tensor, /*is_buffer=*/true);
  if (tensor.dim() != 1 || tensor.scalar_type() != torch::kInt64) {
    throw_state_error(std::string(who) + ": '" + key + "' is not a 1-d int64 tensor");
  }
  tensor = tensor.contiguous();
  const auto* values = tensor.data_ptr<std::int64_t>();
  std::vector<std::uint8_t> bytes;
  for (std::int64_t i = 0; i < tensor.numel(); ++i) {
    if (values[i] < 0 || values[i] > 255) {
      throw_state_error(std::string(who) + ": '" + key + "' holds " + std::to_string(values[i]) +
                        " (expected bytes 0..255)");
    }
    bytes.push_back(static_cast<std::uint8_t>(values[i]));
  }
  return SamplerState::from_bytes(bytes.data(), bytes.size());
}

// The epoch that a sampler and its copies (the DataLoader's among them) share.
struct SharedEpoch {
  std::atomic<std::uint64_t> epoch{0};
  std::atomic<bool> started{false};

  // The epoch a new pass reads: in advance_on_reset mode every pass after the first
  // advances it.
  std::uint64_t begin_pass(TorchEpochMode mode) {
    if (mode == TorchEpochMode::advance_on_reset && started.exchange(true)) ++epoch;
    return epoch.load();
  }
};

// What every libtorch adapter keeps: the epoch its copies share, how passes move it,
// the read position of this copy, and whether load() left a pass for the next reset().
class TorchAdapter : public torch::data::samplers::Sampler<std::vector<std::size_t>> {
 public:
  using BatchRequestType = std::vector<std::size_t>;

  /// The epoch this object and its copies read.
  [[nodiscard]] std::uint64_t epoch() const noexcept { return shared_->epoch.load(); }

 protected:
  explicit TorchAdapter(TorchEpochMode mode, std::uint64_t epoch = 0)
      : shared_(std::make_shared<SharedEpoch>()), mode_(mode) {
    shared_->epoch.store(epoch);
  }

  // set_epoch: every copy takes `epoch` up at its next reset(); this one rewinds now.
  void share_epoch(std::uint64_t epoch) {
    shared_->epoch.store(epoch);
    position_ = 0;
  }
  // True (once) when load() left a pass that the loader's first reset() must continue.
  bool continue_loaded() {
    const bool was = resumed_;
    resumed_ = false;
    return was;
  }
  // The epoch of a new pass (see SharedEpoch::begin_pass); rewinds.
  std::uint64_t begin_pass() {
    position_ = 0;
    return shared_->begin_pass(mode_);
  }
  // True when another copy moved the shared epoch away from `current` before this copy
  // started reading: the caller switches to epoch().
  [[nodiscard]] bool epoch_moved(std::uint64_t current) const noexcept {
    return position_ == 0 && epoch() != current;
  }
  // After load(): the loaded epoch is shared and the next reset() continues at `position`.
  void loaded(std::uint64_t epoch, std::uint64_t position) {
    shared_->epoch.store(epoch);
    shared_->started.store(true);
    position_ = position;
    resumed_ = true;
  }

  std::shared_ptr<SharedEpoch> shared_;
  TorchEpochMode mode_;
  std::uint64_t position_ = 0;
  bool resumed_ = false;
};

}  // namespace detail

/// A libtorch sampler (`torch::data::samplers::Sampler<std::vector<size_t>>`) over
/// `DistributedSampler<Permutation>`: a drop-in for `DistributedRandomSampler` with a
/// seed, a platform-independent order (torch's own with `TorchRandperm`), every tail
/// policy, O(1) memory with the default Feistel permutation, and an epoch that copies
/// share.
///
/// `torch::data::make_data_loader` copies its sampler, so with libtorch's own samplers
/// `set_epoch` on the caller's object no longer reaches the loader. Copies of a
/// TorchSampler share one epoch counter: `sampler.set_epoch(e)` before `loader->begin()`
/// takes effect in the loader's copy at its next reset(). Each copy keeps its own read
/// position.
///
/// `next(k)` returns up to k indices of this rank (nullopt once the epoch is done).
/// `save`/`load` write and read the epoch and position through torch's archives, with
/// the dataset size, seed, options and world, and `load` throws state_error when they
/// differ from this sampler's. Load before `make_data_loader` (which copies the sampler):
/// the loader's first reset() then continues the loaded pass instead of rewinding. Throws config_error from the constructor as
/// DistributedSampler does. Not thread-safe per object (the loader calls it from one
/// thread); the shared epoch is atomic.
template <class Permutation = FeistelPermutation>
class TorchSampler : public detail::TorchAdapter {
 public:
  TorchSampler(std::uint64_t dataset_size, World world, SamplerOptions options = {},
               TorchEpochMode mode = TorchEpochMode::manual, typename Permutation::options_type permutation = {})
      : TorchAdapter(mode), sampler_(dataset_size, world, options, permutation) {}

  /// Selects the epoch for this object and every copy (the DataLoader's included); a copy
  /// switches at its next reset(). Resets this object's position.
  void set_epoch(std::uint64_t epoch) {
    share_epoch(epoch);
    sampler_.set_epoch(epoch);
  }
  /// Indices of this rank already returned by next() in this epoch.
  [[nodiscard]] std::uint64_t position() const noexcept { return position_; }
  [[nodiscard]] const DistributedSampler<Permutation>& sampler() const noexcept { return sampler_; }

  /// Starts a pass: picks up the shared epoch (advancing it first in advance_on_reset
  /// mode, except on the very first reset) and rewinds. A new size rebuilds the sampler
  /// for the same world and options.
  void reset(torch::optional<std::size_t> new_size = torch::nullopt) override {
    if (!new_size && continue_loaded()) return;  // the loader's first reset after load()
    resumed_ = false;
    const std::uint64_t epoch = begin_pass();
    if (new_size && static_cast<std::uint64_t>(*new_size) != sampler_.dataset_size()) {
      sampler_ = DistributedSampler<Permutation>(*new_size, sampler_.world(), sampler_.options(),
                                                 sampler_.permutation_settings());
    }
    sampler_.set_epoch(epoch);
  }

  torch::optional<BatchRequestType> next(std::size_t batch_size) override {
    if (epoch_moved(sampler_.epoch())) sampler_.set_epoch(epoch());
    if (position_ >= sampler_.size()) return torch::nullopt;
    const std::uint64_t end = std::min<std::uint64_t>(sampler_.size(), position_ + batch_size);
    BatchRequestType batch;
    batch.reserve(static_cast<std::size_t>(end - position_));
    for (; position_ < end; ++position_) batch.push_back(static_cast<std::size_t>(sampler_.get(position_)));
    return batch;
  }

  void save(torch::serialize::OutputArchive& archive) const override {
    const std::vector<std::uint64_t> fields = record(shared_->epoch.load(), position_);
    std::vector<std::int64_t> words(fields.size());
    std::memcpy(words.data(), fields.data(), fields.size() * sizeof(std::uint64_t));
    archive.write(key, torch::tensor(words, torch::kInt64), /*is_buffer=*/true);
  }

  void load(torch::serialize::InputArchive& archive) override {
    torch::Tensor tensor = torch::empty({static_cast<std::int64_t>(field_count)}, torch::kInt64);
    archive.read(key, tensor, /*is_buffer=*/true);
    if (tensor.dim() != 1 || tensor.numel() != static_cast<std::int64_t>(field_count) ||
        tensor.scalar_type() != torch::kInt64) {
      detail::throw_state_error("TorchSampler::load: '" + std::string(key) + "' has " +
                                std::to_string(tensor.numel()) + " values (expected " +
                                std::to_string(field_count) + " int64 values)");
    }
    tensor = tensor.contiguous();
    std::vector<std::uint64_t> saved(field_count);
    std::memcpy(saved.data(), tensor.data_ptr<std::int64_t>(), field_count * sizeof(std::uint64_t));
    const std::vector<std::uint64_t> mine = record(saved[7], saved[8]);
    static const char* const names[7] = {"format version", "dataset_size", "seed", "shuffle", "tail", "world_size",
                                         "rank"};
    for (std::size_t f = 0; f < 7; ++f) {
      if (saved[f] != mine[f]) {
        detail::throw_state_error("TorchSampler::load: saved " + std::string(names[f]) + " " +
                                  std::to_string(saved[f]) + " differs from this sampler's " +
                                  std::to_string(mine[f]) + " (expected the same dataset, options and world)");
      }
    }
    // The rank's share has the same size in every epoch (the sampler is never resumed here).
    if (saved[8] > sampler_.size()) {
      detail::throw_state_error("TorchSampler::load: saved position " + std::to_string(saved[8]) +
                                " exceeds this rank's " + std::to_string(sampler_.size()) + " samples per epoch");
    }
    sampler_.set_epoch(saved[7]);
    loaded(saved[7], saved[8]);
  }

 private:
  static constexpr const char* key = "distsampler_state";
  static constexpr std::size_t field_count = 9;
  static constexpr std::uint64_t format_version = 1;


  std::vector<std::uint64_t> record(std::uint64_t epoch, std::uint64_t position) const {
    const SamplerOptions& o = sampler_.options();
    return {format_version,       sampler_.dataset_size(), o.seed, o.shuffle ? 1u : 0u,
            static_cast<std::uint64_t>(o.tail), sampler_.world_size(), sampler_.rank(), epoch, position};
  }

  DistributedSampler<Permutation> sampler_;
};

/// A libtorch sampler over DistributedBatchSampler: each `next()` returns this rank's next
/// micro-batch (micro_batch_size indices, whatever batch size the loader asks for; set
/// the DataLoader's batch_size to the micro-batch size), step by step, accumulation round
/// by round. Every rank yields the same number of micro-batches per epoch.
///
/// `save` writes the batch sampler's SamplerState (bytes) into torch's archive; `load`
/// resumes it with this sampler's world size and accumulation, which may differ from the
/// saving run's (elastic resume): the rest of the epoch is read exactly once. Load before
/// `make_data_loader`. Copies share the epoch as TorchSampler's do. Throws config_error
/// from the constructor as DistributedBatchSampler does, state_error from load.
template <class Permutation = FeistelPermutation>
class TorchBatchSampler : public detail::TorchAdapter {
 public:
  TorchBatchSampler(DistributedBatchSampler<Permutation> batches, TorchEpochMode mode = TorchEpochMode::manual)
      : TorchAdapter(mode, batches.epoch()), batches_(std::move(batches)) {}

  /// As TorchSampler::set_epoch: reaches every copy at its next reset().
  void set_epoch(std::uint64_t epoch) {
    share_epoch(epoch);
    batches_.set_epoch(epoch);
  }
  /// Micro-batches of this rank returned since the epoch (or the resumed part) began.
  [[nodiscard]] std::uint64_t micro_batches_done() const noexcept { return position_; }
  [[nodiscard]] const DistributedBatchSampler<Permutation>& batches() const noexcept { return batches_; }

  void reset(torch::optional<std::size_t> /*new_size*/ = torch::nullopt) override {
    if (continue_loaded()) return;
    batches_.set_epoch(begin_pass());
  }

  torch::optional<BatchRequestType> next(std::size_t /*batch_size*/) override {
    const std::uint64_t k = batches_.micro_batches_per_step();
    if (position_ >= batches_.num_steps() * k) return torch::nullopt;
    const auto indices = batches_.micro_batch(position_ / k, position_ % k);
    ++position_;
    return BatchRequestType(indices.begin(), indices.end());
  }

  void save(torch::serialize::OutputArchive& archive) const override {
    const std::uint64_t k = batches_.micro_batches_per_step();
    detail::write_state(archive, key, batches_.state(position_ / k, position_ % k));
  }

  void load(torch::serialize::InputArchive& archive) override {
    const SamplerState state = detail::read_state(archive, key, "TorchBatchSampler::load");
    batches_.resume(state);
    loaded(state.epoch, 0);
  }

 private:
  static constexpr const char* key = "distsampler_batch_state";

  DistributedBatchSampler<Permutation> batches_;
};

/// A libtorch sampler over one rank's StreamingShardSampler stream: `next(k)` returns the
/// global indices of the rank's next k samples, in the shard-local order (a few shards at
/// a time, runs of consecutive records), for a map-style dataset that reads sample i of
/// the concatenated shards. libtorch's DataLoader asks its sampler from one thread and
/// lets its workers fetch the batches, so the rank has one stream (num_workers = 1).
/// Under Tail::pad the last batch may repeat one sample to keep ranks equal (libtorch
/// requests cannot carry a padding flag; use drop or uneven for exact evaluation).
///
/// `save` writes the job's SamplerState (bytes) assuming every rank has returned the
/// same number of samples, as lockstep training does; `load` resumes it on this sampler's
/// world size, which may differ (elastic): the rest of the epoch is read exactly once,
/// and on the same world size every rank continues exactly where it stopped. Load before
/// `make_data_loader`. Copies share the epoch as TorchSampler's do. Throws config_error
/// from the constructor as StreamingShardSampler does (options.num_workers is ignored: one
/// stream), and from reset() for a new dataset
/// size other than the shards' total; state_error from load.
class TorchShardSampler : public detail::TorchAdapter {
 public:
  TorchShardSampler(std::vector<std::uint64_t> shard_sizes, World world, ShardSamplerOptions options = {},
                    TorchEpochMode mode = TorchEpochMode::manual)
      : TorchAdapter(mode), sampler_(std::move(shard_sizes), world, ShardSamplerOptions(options).with_num_workers(1)) {}

  /// As TorchSampler::set_epoch: reaches every copy at its next reset().
  void set_epoch(std::uint64_t epoch) {
    share_epoch(epoch);
    sampler_.set_epoch(epoch);
  }
  /// Samples of this rank returned since the epoch (or the resumed segment) began.
  [[nodiscard]] std::uint64_t position() const noexcept { return position_; }
  [[nodiscard]] const StreamingShardSampler& sampler() const noexcept { return sampler_; }

  void reset(torch::optional<std::size_t> new_size = torch::nullopt) override {
    if (new_size && static_cast<std::uint64_t>(*new_size) != sampler_.dataset_size()) {
      detail::throw_config_error("TorchShardSampler::reset: the dataset has " + std::to_string(*new_size) +
                                 " samples but the shards hold " + std::to_string(sampler_.dataset_size()) +
                                 " (expected the shard sizes to describe the dataset)");
    }
    if (continue_loaded()) return;  // the loader's first reset after load() continues the segment
    sampler_.set_epoch(begin_pass());
  }

  torch::optional<BatchRequestType> next(std::size_t batch_size) override {
    if (epoch_moved(sampler_.epoch())) sampler_.set_epoch(epoch());
    const std::uint64_t size = sampler_.worker_size(0);
    if (position_ >= size) return torch::nullopt;
    const std::uint64_t count = std::min<std::uint64_t>(size - position_, batch_size);
    BatchRequestType batch;
    batch.reserve(static_cast<std::size_t>(count));
    sampler_.for_each(0, [&](const ShardSample& x) { batch.push_back(static_cast<std::size_t>(x.index)); },
                      position_, count);
    position_ += count;
    return batch;
  }

  void save(torch::serialize::OutputArchive& archive) const override {
    detail::write_state(archive, key, sampler_.state(position_));
  }

  void load(torch::serialize::InputArchive& archive) override {
    const SamplerState state = detail::read_state(archive, key, "TorchShardSampler::load");
    sampler_.resume(state);
    loaded(state.epoch, 0);
  }

 private:
  static constexpr const char* key = "distsampler_shard_state";

  StreamingShardSampler sampler_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_TORCH_HPP

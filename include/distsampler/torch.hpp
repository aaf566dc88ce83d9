// distsampler libtorch adapter (opt-in): the samplers as torch::data samplers, checkpoints exact through loaders.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TORCH_HPP
#define DISTSAMPLER_TORCH_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "distsampler.hpp"
#include "torch/pass.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// How the libtorch adapters share one pass with their copies, and how checkpoints stay exact.
///
/// `torch::data::make_data_loader` copies its sampler and keeps the copy. Copies of a
/// distsampler adapter are handles to one shared sampler: the loader's copy reads the
/// pass, the caller's object sets the epoch, saves and resumes it. The pattern:
///
///     distsampler::TorchSampler<> sampler(n, world, options);
///     if (resuming) torch::load(sampler, path);               // before the loader iterates
///     auto loader = torch::data::make_data_loader(dataset, sampler, opts.batch_size(32).workers(2));
///     for (std::uint64_t epoch = sampler.epoch(); epoch < epochs; ++epoch) {
///       sampler.set_epoch(epoch);                             // keeps a resumed position in its epoch
///       std::uint64_t consumed = 0;
///       for (auto& batch : *loader) {
///         train(batch);
///         ++consumed;                                         // batches the loop received
///         if (consumed % 100 == 0) {
///           torch::serialize::OutputArchive archive;
///           sampler.save(archive, consumed);                  // not what the workers prefetched
///           archive.save_to(path);
///         }
///       }
///     }
///
/// The loader's workers fetch ahead of the loop, so a checkpoint names the batches the
/// loop consumed: `save(archive, batches_consumed)` or `state_after(batches_consumed)`
/// (a SamplerState, e.g. for a text checkpoint). torch's own `save(archive)` (what
/// `torch::save(sampler, ...)` calls) throws state_error while a loader reads the pass.
/// The loader must keep its default `enforce_ordering(true)`, so batch j of a pass is
/// the j-th the loop receives.
///
/// Misuse is loud: load/resume while a pass runs, set_epoch that would discard a resumed
/// position, a consumed count beyond what was handed out, two loaders over copies of one
/// sampler, and an archive without the sampler's key throw state_error or config_error
/// saying what to do instead.
///
/// Epochs: under EpochMode::manual a pass rewinds to the start of the epoch unless
/// set_epoch selected another (torch's behaviour); under EpochMode::auto_advance every
/// pass after the first reads the next epoch unless set_epoch, resume or load selected
/// what it reads. Thread-safety: every member locks the shared state, so copies may be
/// used from different threads; a pass has one reader.

/// A libtorch sampler over `DistributedSampler<Permutation>`: a drop-in for
/// `DistributedRandomSampler` with a seed, a platform-independent order (torch's own with
/// `TorchRandperm`), every tail policy and O(1) memory with the default FeistelPermutation.
///
/// `next(k)` returns up to k indices of this rank's share (nullopt once the pass is done).
/// States are SamplerStates, so `load`/`resume` continue on another world size (elastic):
/// the rest of the epoch is read exactly once; on the same world, save/load continues the
/// uninterrupted pass index for index (Tail::pad's duplicates repeat the epoch's first
/// positions, as without the stop). `reset(new_size)` with another size rebuilds
/// the share for the same world and options. Throws config_error from the constructor as
/// DistributedSampler does; see above for the rest.
template <class Permutation = FeistelPermutation>
class TorchSampler : public detail::SharedPassSampler<TorchSampler<Permutation>, DistributedSampler<Permutation>,
                                                      std::vector<std::pair<std::uint64_t, std::uint64_t>>> {
  using Core = DistributedSampler<Permutation>;
  // Batches handed out in this pass, run-length coded: (samples per batch, batches).
  using Progress = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  using Base = detail::SharedPassSampler<TorchSampler<Permutation>, Core, Progress>;
  friend Base;

 public:
  using typename Base::BatchRequestType;

  TorchSampler(std::uint64_t dataset_size, World world, SamplerOptions options = {}, EpochMode mode = EpochMode::manual,
               typename Permutation::options_type permutation = {})
      : Base(Core(dataset_size, world, options, permutation), mode) {}

  /// The sampler the current pass reads (or the next one, when set_epoch or resume is pending).
  [[nodiscard]] Core sampler() const { return this->snapshot(); }

  /// Begins a pass (see the class comment for the epoch it reads).
  void reset(torch::optional<std::size_t> new_size = torch::nullopt) override {
    this->reset_pass([&](Core& core) {
      if (new_size && static_cast<std::uint64_t>(*new_size) != core.dataset_size()) {
        core = Core(*new_size, core.world(), core.options(), core.permutation_settings());
      }
    });
  }

 private:
  static constexpr const char* name = "TorchSampler";
  static constexpr const char* key = "distsampler_state";

  static void begin(Core& /*core*/, Progress& progress) { progress.clear(); }

  static torch::optional<BatchRequestType> take(Core& core, Progress& progress, std::size_t batch_size,
                                                std::uint64_t /*handed*/) {
    std::uint64_t position = 0;
    for (const auto& run : progress) position += run.first * run.second;
    if (batch_size == 0) detail::throw_config_error("TorchSampler::next: batch_size is 0 (expected at least 1)");
    if (position >= core.size()) return torch::nullopt;
    const std::uint64_t count = std::min<std::uint64_t>(core.size() - position, batch_size);
    std::vector<std::uint64_t> indices(static_cast<std::size_t>(count));
    core.fill(position, count, indices.data());
    if (!progress.empty() && progress.back().first == count) {
      ++progress.back().second;
    } else {
      progress.emplace_back(count, 1);
    }
    return BatchRequestType(indices.begin(), indices.end());
  }

  static SamplerState state_at(const Core& core, const Progress& progress, std::uint64_t batches) {
    std::uint64_t samples = 0;
    for (const auto& run : progress) {
      const std::uint64_t take_runs = std::min(batches, run.second);
      samples += run.first * take_runs;
      batches -= take_runs;
    }
    return core.state(samples);
  }

  // States are SamplerState bytes. Archives of the first release hold 9 int64 fields
  // (format 1, dataset_size, seed, shuffle, tail, world_size, rank, epoch, position): the
  // strided position they name is converted, so they resume on any world size too.
  static SamplerState decode(const torch::Tensor& tensor, const std::string& who, const Core& core) {
    const auto* v = tensor.data_ptr<std::int64_t>();
    if (tensor.numel() != 9 || v[0] != 1 || v[1] <= 0 || v[5] <= 0 || v[7] < 0 || v[8] < 0) {
      return detail::state_from_tensor(tensor, key, who);
    }
    if (v[3] < 0 || v[3] > 1 || v[4] < 0 || v[4] > 2) {
      detail::throw_state_error(who + ": '" + key + "' holds shuffle " + std::to_string(v[3]) + " and tail " +
                                std::to_string(v[4]) + " (expected 0..1 and 0..2 in a first-release record)");
    }
    const auto n = static_cast<std::uint64_t>(v[1]), w = static_cast<std::uint64_t>(v[5]);
    const auto position = static_cast<std::uint64_t>(v[8]);
    StateKey saved = core.key();
    saved.dataset_size = n;
    saved.seed = static_cast<std::uint64_t>(v[2]);
    saved.shuffle = v[3] == 1;
    saved.tail = static_cast<Tail>(v[4]);
    // Every rank of w had read `position` slots of the strided split: consumed = position * w
    // (all of the epoch once a rank passed the full rounds).
    const std::uint64_t full_rounds = w == 0 ? 0 : n / w;
    const std::uint64_t max_size = full_rounds + (w != 0 && n % w != 0 && saved.tail != Tail::drop ? 1 : 0);
    if (w == 0 || position > max_size) {
      detail::throw_state_error(who + ": '" + key + "' holds position " + std::to_string(position) +
                                ", past the end of a rank's share of " + std::to_string(n) + " samples over " +
                                std::to_string(w) + " ranks (expected a first-release record)");
    }
    SamplerState state;
    state.dataset_size = n;
    state.seed = saved.seed;
    state.epoch = static_cast<std::uint64_t>(v[7]);
    state.consumed = position > full_rounds ? n : position * w;
    state.set_key(saved);
    return state;
  }

  static void resume_core(Core& core, const SamplerState& state) { core.resume(state); }
  static void set_core_epoch(Core& core, std::uint64_t epoch) { core.set_epoch(epoch); }
  static bool segment_empty(const Core& core) {
    const std::uint64_t remaining = core.dataset_size() - core.start();
    return remaining == 0 || (core.options().tail == Tail::drop && remaining < core.world_size());
  }
};

/// A libtorch sampler over DistributedBatchSampler: each `next()` returns this rank's next
/// micro-batch (micro_batch_size indices, whatever batch size the loader asks for: set the
/// DataLoader's batch_size to the micro-batch size), step by step, accumulation round by
/// round. Every rank yields the same number of micro-batches per pass; batch j of a pass
/// is the batch sampler's micro_batch_id(j) (micro-batch j % accumulation_steps of step
/// j / accumulation_steps, unless a mid-step resume left its step 0 shorter).
///
/// The batch sampler is taken as it is: one already resumed continues its resumed
/// position in the first pass. Its `epoch_mode` option is the adapter's EpochMode. States
/// resume on any world size, accumulation and micro-batch size (elastic). Throws
/// config_error for Tail::uneven (its last step can hold empty micro-batches, which a
/// DataLoader cannot carry) and from reset() for a new dataset size.
template <class Permutation = FeistelPermutation>
class TorchBatchSampler
    : public detail::SharedPassSampler<TorchBatchSampler<Permutation>, DistributedBatchSampler<Permutation>, char> {
  using Core = DistributedBatchSampler<Permutation>;
  using Base = detail::SharedPassSampler<TorchBatchSampler<Permutation>, Core, char>;
  friend Base;

 public:
  using typename Base::BatchRequestType;

  explicit TorchBatchSampler(const Core& batches) : Base(checked(batches), batches.options().epoch_mode) {}

  /// The batch sampler the current pass reads (or the next one, when set_epoch or resume is pending).
  [[nodiscard]] Core batches() const { return this->snapshot(); }

  /// Begins a pass. Throws config_error for a new size other than the batch sampler's dataset size.
  void reset(torch::optional<std::size_t> new_size = torch::nullopt) override {
    this->reset_pass([&](Core& core) {
      if (new_size && static_cast<std::uint64_t>(*new_size) != core.dataset_size()) {
        detail::throw_config_error("TorchBatchSampler::reset: the dataset has " + std::to_string(*new_size) +
                                   " samples but the batch sampler was built for " +
                                   std::to_string(core.dataset_size()) + " (expected the same dataset size)");
      }
    });
  }

 private:
  static constexpr const char* name = "TorchBatchSampler";
  static constexpr const char* key = "distsampler_batch_state";

  static const Core& checked(const Core& batches) {
    if (batches.options().tail == Tail::uneven) {
      detail::throw_config_error(
          "TorchBatchSampler: tail uneven can leave micro-batches of the last step empty, "
          "which a libtorch DataLoader cannot carry (expected Tail::drop or Tail::pad)");
    }
    return batches;
  }

  static void begin(Core& /*core*/, char& /*progress*/) {}

  static torch::optional<BatchRequestType> take(Core& core, char& /*progress*/, std::size_t /*batch_size*/,
                                                std::uint64_t handed) {
    if (handed >= core.micro_batch_count()) return torch::nullopt;
    const MicroBatchId id = core.micro_batch_id(handed);
    const auto indices = core.micro_batch(id.step, id.micro_batch);
    return BatchRequestType(indices.begin(), indices.end());
  }

  static SamplerState state_at(const Core& core, const char& /*progress*/, std::uint64_t batches) {
    return core.state_after_micro_batches(batches);
  }

  static SamplerState decode(const torch::Tensor& tensor, const std::string& who, const Core& /*core*/) {
    return detail::state_from_tensor(tensor, key, who);
  }
  static void resume_core(Core& core, const SamplerState& state) { core.resume(state); }
  static void set_core_epoch(Core& core, std::uint64_t epoch) { core.set_epoch(epoch); }
  static bool segment_empty(const Core& core) { return core.num_steps() == 0; }
};

DISTSAMPLER_NAMESPACE_END

// Family adapters: one line per family whose libtorch adapter lives in its folder.
#include "torch/shards.hpp"

#endif  // DISTSAMPLER_TORCH_HPP

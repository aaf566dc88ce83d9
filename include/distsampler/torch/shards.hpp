// distsampler shard family's libtorch adapter (opt-in, included by torch.hpp): TorchShardSampler over worker streams.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARDS_TORCH_HPP
#define DISTSAMPLER_SHARDS_TORCH_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../state.hpp"
#include "pass.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "../shards/loader_round_robin.hpp"
#include "../shards/options.hpp"
#include "../shards/streaming_shard_sampler.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

namespace detail {

// Where a TorchShardSampler's pass stands: the loader's batch size, each worker stream's
// read position, and whose turn it is.
struct ShardPassProgress {
  std::uint64_t batch_size = 0;  // the first batch's size (0 before it)
  bool varying = false;          // a later batch asked for another size
  std::vector<std::uint64_t> done;
  std::uint64_t turn = 0;
};

}  // namespace detail

/// A libtorch sampler over one rank's StreamingShardSampler streams: `next(k)` returns the
/// global indices of the next k samples of one worker stream, for a map-style dataset that
/// reads sample i of the concatenated shards. The rank's num_workers streams take turns,
/// batch by batch (worker 0, 1, ..., skipping streams that ran out, each stream ending with
/// its own short batch), as torch's Python DataLoader takes batches from its workers: each
/// batch reads the stream's shards (with the default options about 64 shards per micro-batch
/// of 64, runs of 1; with ShardSamplerOptions::sequential() one shard at a time, in increasing
/// offsets). Build
/// it with num_workers equal to the DataLoader's workers so each worker thread fetches
/// batches of one stream at a time. Under Tail::pad a stream may end with a flagged
/// duplicate (libtorch requests cannot carry the flag; use drop or uneven for exact
/// evaluation).
///
/// The DataLoader asks for a constant batch size; state_after throws config_error when it
/// changed within the pass. state_after(b) is `StreamingShardSampler::state_after_batches(b,
/// batch_size)`: the job's exact consumed positions when every rank's loop received b
/// batches. States resume on any world size and worker count (elastic); on the same world
/// every stream continues where it stopped. Throws config_error from the constructor as
/// StreamingShardSampler does and from reset() for a dataset size other than the shards'.
class TorchShardSampler
    : public detail::SharedPassSampler<TorchShardSampler, StreamingShardSampler, detail::ShardPassProgress> {
  using Core = StreamingShardSampler;
  using Progress = detail::ShardPassProgress;
  using Base = detail::SharedPassSampler<TorchShardSampler, Core, Progress>;
  friend Base;

 public:
  /// Takes the shard sampler as it is (a resumed one continues in the first pass).
  explicit TorchShardSampler(StreamingShardSampler sampler, EpochMode mode = EpochMode::manual)
      : Base(std::move(sampler), mode) {}

  /// One stream per rank (num_workers 1).
  TorchShardSampler(std::vector<std::uint64_t> shard_sizes, World world, ShardSamplerOptions options = {},
                    EpochMode mode = EpochMode::manual)
      : Base(make_core(std::move(shard_sizes), world, options), mode) {}

  /// The shard sampler the current pass reads (or the next one, when set_epoch or resume is pending).
  [[nodiscard]] Core sampler() const { return this->snapshot(); }

  /// Begins a pass. Throws config_error for a new size other than the shards' total.
  void reset(torch::optional<std::size_t> new_size = torch::nullopt) override {
    this->reset_pass([&](Core& core) {
      if (new_size && static_cast<std::uint64_t>(*new_size) != core.dataset_size()) {
        detail::throw_config_error("TorchShardSampler::reset: the dataset has " + std::to_string(*new_size) +
                                   " samples but the shards hold " + std::to_string(core.dataset_size()) +
                                   " (expected the shard sizes to describe the dataset)");
      }
    });
  }

 private:
  static constexpr const char* name = "TorchShardSampler";
  static constexpr const char* key = "distsampler_shard_state";

  static Core make_core(std::vector<std::uint64_t> shard_sizes, World world, const ShardSamplerOptions& options) {
    return Core(std::move(shard_sizes), world, ShardSamplerOptions(options).with_num_workers(1));
  }

  static void begin(Core& core, Progress& progress) {
    progress.batch_size = 0;
    progress.varying = false;
    progress.done.assign(static_cast<std::size_t>(core.num_workers()), 0);
    progress.turn = 0;
  }

  static torch::optional<BatchRequestType> take(Core& core, Progress& progress, std::size_t batch_size,
                                                std::uint64_t /*handed*/) {
    if (batch_size == 0) detail::throw_config_error("TorchShardSampler::next: batch_size is 0 (expected at least 1)");
    if (progress.batch_size != 0 && progress.batch_size != batch_size) progress.varying = true;
    const std::uint64_t workers = core.num_workers();
    for (std::uint64_t tried = 0; tried < workers; ++tried) {
      const std::uint64_t w = (progress.turn + tried) % workers;
      std::uint64_t& done = progress.done[static_cast<std::size_t>(w)];
      const std::uint64_t size = core.worker_size(w);
      if (done >= size) continue;
      const std::uint64_t count = std::min<std::uint64_t>(size - done, batch_size);
      BatchRequestType batch;
      batch.reserve(static_cast<std::size_t>(count));
      core.for_each(
          w, [&](const ShardSample& x) { batch.push_back(static_cast<std::size_t>(x.index)); }, done, count);
      done += count;
      progress.turn = (w + 1) % workers;
      if (progress.batch_size == 0) progress.batch_size = batch_size;
      return batch;
    }
    return torch::nullopt;
  }

  static SamplerState state_at(const Core& core, const Progress& progress, std::uint64_t batches) {
    if (batches == 0) return core.state(0);
    if (progress.varying) {
      detail::throw_config_error(
          "TorchShardSampler::state_after: the batch size changed within this pass (expected "
          "a constant batch_size, as a DataLoader asks, for a state after " +
          std::to_string(batches) + " batches)");
    }
    return distsampler::state_after_batches(core, batches, progress.batch_size);
  }

  static SamplerState decode(const torch::Tensor& tensor, const std::string& who, const Core& /*core*/) {
    return detail::state_from_tensor(tensor, key, who);
  }
  static void resume_core(Core& core, const SamplerState& state) { core.resume(state); }
  static void set_core_epoch(Core& core, std::uint64_t epoch) { core.set_epoch(epoch); }
  static bool segment_empty(const Core& core) { return core.consumer_size(0) == 0; }
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARDS_TORCH_HPP

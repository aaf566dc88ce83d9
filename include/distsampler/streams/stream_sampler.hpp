// distsampler streams family: StreamSampler, one rank's loader workers reading passes over shards of unknown size.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STREAMS_STREAM_SAMPLER_HPP
#define DISTSAMPLER_STREAMS_STREAM_SAMPLER_HPP

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "cursor.hpp"
#include "job_state.hpp"
#include "packer.hpp"
#include "plan.hpp"
#include "progress.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// One rank's consumers of a stream of passes (docs/STREAMS.md): `num_workers` cursors, the
/// consumers rank * num_workers + w of a StreamPlan over world.world_size * num_workers
/// consumers. Every rank builds its own from the same (shards, byte_sizes, seed, state) and
/// reads without talking to the others: each worker emits exactly the capacity asked per
/// micro-batch, so every rank has the same steps. A job state is assembled from every
/// consumer's progress (progress(w) on each rank, gathered; assemble_stream_state) and
/// resumes on any world size and worker count.
///
/// `options` set the seed and the share (StreamOptions); a state saved under another share
/// resumes, its open runs dealt as they were cut. Throws config_error for a bad world,
/// num_workers 0, shards 0, byte_sizes of the wrong length or a share above the consumers;
/// state_error for a state of another dataset. Deterministic. Not thread-safe: one
/// sampler per loader worker process (each reads only its own cursor). Copying shares the plan.
class StreamSampler {
 public:
  using options_type = StreamOptions;  ///< the options type it is built from
  StreamSampler(std::uint64_t shards, std::vector<std::uint64_t> byte_sizes, World world, std::uint64_t num_workers,
                const StreamOptions& options, const std::optional<StreamJobState>& state = std::nullopt)
      : world_(world), num_workers_(num_workers) {
    world_.validate("StreamSampler");
    if (num_workers_ == 0) detail::throw_config_error("StreamSampler: num_workers 0 is too few (expected at least 1)");
    if (world_.world_size > UINT64_MAX / num_workers_) {
      detail::throw_config_error("StreamSampler: world_size " + std::to_string(world_.world_size) + " x num_workers " +
                                 std::to_string(num_workers_) + " overflows 64 bits");
    }
    plan_ = std::make_shared<StreamPlan>(shards, std::move(byte_sizes), world_.world_size * num_workers_, options);
    std::vector<StreamProgress> start(static_cast<std::size_t>(plan_->consumers()));
    if (state) start = resume_stream(*plan_, *state);
    for (std::uint64_t w = 0; w < num_workers_; ++w) {
      const std::uint64_t c = world_.rank * num_workers_ + w;
      cursors_.emplace_back(plan_, c, start[static_cast<std::size_t>(c)]);
    }
  }
  /// The sampler of StreamOptions{seed} (share 1).
  StreamSampler(std::uint64_t shards, std::vector<std::uint64_t> byte_sizes, std::uint64_t seed, World world,
                std::uint64_t num_workers, const std::optional<StreamJobState>& state = std::nullopt)
      : StreamSampler(shards, std::move(byte_sizes), world, num_workers, StreamOptions{seed, 1}, state) {}

  /// The key a guard compares across ranks and a saved state records (StreamJobState::key):
  /// family "stream", dataset_size = shards, the seed, layout = the shard count and byte
  /// hints' hash.
  [[nodiscard]] StateKey key() const noexcept {
    return StreamJobState::key(plan_->shards(), plan_->seed(), plan_->layout());
  }

  [[nodiscard]] std::uint64_t rank() const noexcept { return world_.rank; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return world_.world_size; }
  [[nodiscard]] std::uint64_t num_workers() const noexcept { return num_workers_; }
  [[nodiscard]] std::uint64_t seed() const noexcept { return plan_->seed(); }
  [[nodiscard]] std::uint64_t shards() const noexcept { return plan_->shards(); }
  [[nodiscard]] std::uint64_t share() const noexcept { return plan_->share(); }
  [[nodiscard]] StreamPlan& plan() noexcept { return *plan_; }
  [[nodiscard]] const StreamPlan& plan() const noexcept { return *plan_; }
  /// The key's dataset size: the shard count (record counts are unknown).
  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return plan_->shards(); }
  /// Passes replace epochs: the first pass this sampler's plan deals in full on its
  /// consumers (0, or a resumed state's next_pass; the passes before it hold only what the
  /// state left unread). What the guards compare as the epoch.
  [[nodiscard]] std::uint64_t epoch() const noexcept { return plan_->first_fresh_pass(); }
  /// Where the pass epoch() starts: 0, a fresh pass is read from its beginning (the guards'
  /// "consumed"; what a resumed state left unread is in the passes before epoch()).
  [[nodiscard]] std::uint64_t start() const noexcept { return 0; }
  /// Worker w's cursor (w < num_workers(), else config_error).
  [[nodiscard]] StreamCursor& cursor(std::uint64_t w) {
    if (w >= num_workers_)
      detail::throw_out_of_range("StreamSampler::cursor", "worker", w, "num_workers", num_workers_);
    return cursors_[static_cast<std::size_t>(w)];
  }
  /// Worker w's progress after its last micro-batch.
  [[nodiscard]] const StreamProgress& progress(std::uint64_t w) { return cursor(w).progress(); }
  /// Worker w's next micro-batch of `capacity` outputs (StreamCursor::next).
  template <class Read>
  [[nodiscard]] std::vector<StreamEmit> next(std::uint64_t w, std::uint64_t capacity, Read&& read) {
    return cursor(w).next(capacity, std::forward<Read>(read));
  }

 private:
  World world_;
  std::uint64_t num_workers_;
  std::shared_ptr<StreamPlan> plan_;
  std::vector<StreamCursor> cursors_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STREAMS_STREAM_SAMPLER_HPP

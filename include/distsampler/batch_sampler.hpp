// distsampler DistributedBatchSampler: each optimizer step's global batch, split into per-rank micro-batches, resumable and elastic.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_BATCH_SAMPLER_HPP
#define DISTSAMPLER_BATCH_SAMPLER_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "error.hpp"
#include "feistel.hpp"
#include "partition.hpp"
#include "permutation.hpp"
#include "permutation_traits.hpp"
#include "resume.hpp"
#include "state.hpp"
#include "version.hpp"
#include "world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// When a batch sampler's epoch changes.
enum class EpochMode {
  /// Only set_epoch(), next_epoch() and resume() change the epoch (torch's behaviour:
  /// forgetting set_epoch repeats the order).
  manual,
  /// As manual, and additionally every pass after the first started with the non-const
  /// begin() (a range-for over a non-const sampler) first calls next_epoch(): pass p of
  /// a sampler set to epoch e reads epoch e + p. set_epoch() and resume() make the next
  /// begin() read exactly the epoch (and remainder) they selected.
  auto_advance,
};

/// DistributedBatchSampler's options; the tail defaults to drop (the last partial global
/// batch is not read this epoch), as is usual for training.
///
/// Tail, for the last R mod G positions of the epoch (R = positions remaining, G = global batch):
///  - drop: not read; every step is a full global batch.
///  - pad: one more step; its slots past the real positions repeat the epoch's order from
///    its start (position (j - (R mod G)) mod N for the j-th slot of the step, as torch
///    pads) and are flagged by is_padding.
///  - uneven: one more step holding exactly the remaining positions, spread over the
///    W * K micro-batch slots of the step as evenly as possible (sizes differ by at most
///    1; a micro-batch is empty when fewer than W * K positions remain). Every rank still
///    runs the same number of steps and micro-batches; every position is read exactly once.
struct BatchSamplerOptions {
  bool shuffle = true;
  std::uint64_t seed = 0;
  Tail tail = Tail::drop;
  EpochMode epoch_mode = EpochMode::manual;
};

/// Names one micro-batch of a rank: `micro_batch` (0..accumulation_steps-1) of `step`.
struct MicroBatchId {
  std::uint64_t step = 0;
  std::uint64_t micro_batch = 0;
  friend constexpr bool operator==(const MicroBatchId& a, const MicroBatchId& b) noexcept {
    return a.step == b.step && a.micro_batch == b.micro_batch;
  }
  friend constexpr bool operator!=(const MicroBatchId& a, const MicroBatchId& b) noexcept { return !(a == b); }
};

/// Which samples each rank reads in each micro-batch of each optimizer step.
///
/// The global batch is G = micro_batch_size (m) x world_size (W) x accumulation_steps (K).
/// Optimizer step s consumes positions [start + s*G, start + (s+1)*G) of the epoch's
/// global order (`Permutation(N, seed, epoch)`, or the identity without shuffle; `start`
/// is 0 unless resumed). Within a step, micro-batch round k (0..K-1) consumes the next
/// m*W positions and rank r takes the r-th run of m of them (Megatron's layout):
///
///     position(s, k, r, e) = start + s*G + (k*W + r)*m + e,   e < m
///
/// So the set of samples of step s depends only on G, never on how G factors into W and
/// K: 8 ranks x 1, 4 x 2, 2 x 4 and 1 x 8 read identical global batches (elastic
/// determinism), and after k micro-batch rounds the consumed positions are a prefix of
/// the order, which makes mid-step states exact.
///
/// Every rank has the same num_steps() and K micro-batches per step. A rank's
/// micro-batches, numbered s*K + k, go round-robin to its DataLoader workers (worker w of
/// n gets numbers w, w + n, ...; torch's dispatch order), so each worker slot has the same
/// count on every rank.
///
/// State and resume: `state(steps_done)` records consumed positions; `resume(state)`
/// continues at exactly that position, with any world size, accumulation, micro-batch
/// size or worker count: nothing of the epoch is repeated or skipped. Steps are numbered
/// from the resume point. When G is unchanged and the state was saved at a step
/// boundary, resumed step s equals step s + consumed / G of the uninterrupted run.
///
/// Example:
///     distsampler::DistributedBatchSampler<> batches(n, 4, distsampler::World::from_env(), 8, {true, 42});
///     if (have_checkpoint) batches.resume(distsampler::SamplerState::from_text(saved));
///     for (std::uint64_t s = 0; s < batches.num_steps(); ++s) {
///       for (std::uint64_t k = 0; k < batches.micro_batches_per_step(); ++k) forward_backward(batches.micro_batch(s, k));
///       optimizer_step();
///       saved = batches.state(s + 1).to_text();
///     }
///
/// Throws config_error from the constructors (bad World, zero sizes, G overflowing 64
/// bits, a global batch size not divisible by m*W, unknown tail or epoch mode);
/// state_error from resume() for a state of another dataset size, seed or option set.
/// Deterministic: a pure function of (N, m, W, K, options, epoch, start). O(1) per index
/// and O(1) memory with the default FeistelPermutation. Thread-safety: const members may
/// run concurrently; set_epoch, next_epoch, resume and the non-const begin() must not race.
template <class Permutation = FeistelPermutation>
class DistributedBatchSampler {
  static_assert(check_permutation<Permutation>(), "see permutation_traits.hpp");

 public:
  using permutation_type = Permutation;
  using permutation_options = typename Permutation::options_type;
  class StepView;
  class iterator;

  /// A sampler with `accumulation_steps` micro-batches per rank per step.
  DistributedBatchSampler(std::uint64_t dataset_size, std::uint64_t micro_batch_size, World world,
                          std::uint64_t accumulation_steps = 1, BatchSamplerOptions options = {},
                          permutation_options permutation = {})
      : n_(dataset_size),
        m_(micro_batch_size),
        world_(world),
        k_(accumulation_steps),
        options_(options),
        permutation_options_(permutation) {
    world_.validate("DistributedBatchSampler");
    check_micro_batch_size(m_);
    if (k_ == 0) detail::throw_config_error("DistributedBatchSampler: accumulation_steps is 0 (expected at least 1)");
    const std::uint64_t per_round = micro_times_world(m_, world_.world_size);
    if (k_ > UINT64_MAX / per_round) {
      detail::throw_config_error("DistributedBatchSampler: global batch micro_batch_size " + std::to_string(m_) +
                                 " x world_size " + std::to_string(world_.world_size) + " x accumulation_steps " +
                                 std::to_string(k_) + " overflows 64 bits");
    }
    g_ = per_round * k_;
    const Tail t = options_.tail;
    if (t != Tail::pad && t != Tail::drop && t != Tail::uneven) {
      detail::throw_config_error("DistributedBatchSampler: tail " + std::to_string(static_cast<int>(t)) +
                                 " is not a Tail (expected pad, drop or uneven)");
    }
    if (options_.epoch_mode != EpochMode::manual && options_.epoch_mode != EpochMode::auto_advance) {
      detail::throw_config_error("DistributedBatchSampler: epoch_mode " +
                                 std::to_string(static_cast<int>(options_.epoch_mode)) +
                                 " is not an EpochMode (expected manual or auto_advance)");
    }
    rebuild_permutation();
    recompute();
  }

  /// A sampler whose accumulation steps follow from `global_batch_size` =
  /// micro_batch_size x world_size x accumulation_steps. Throws config_error when
  /// global_batch_size is 0 or not a multiple of micro_batch_size x world_size.
  [[nodiscard]] static DistributedBatchSampler with_global_batch(std::uint64_t dataset_size,
                                                                 std::uint64_t micro_batch_size, World world,
                                                                 std::uint64_t global_batch_size,
                                                                 BatchSamplerOptions options = {},
                                                                 permutation_options permutation = {}) {
    world.validate("DistributedBatchSampler");
    check_micro_batch_size(micro_batch_size);
    const std::uint64_t per_round = micro_times_world(micro_batch_size, world.world_size);
    if (global_batch_size == 0 || global_batch_size % per_round != 0) {
      detail::throw_config_error("DistributedBatchSampler: global_batch_size " + std::to_string(global_batch_size) +
                                 " is not a multiple of micro_batch_size " + std::to_string(micro_batch_size) +
                                 " x world_size " + std::to_string(world.world_size) +
                                 " (expected a positive multiple of " + std::to_string(per_round) + ")");
    }
    return DistributedBatchSampler(dataset_size, micro_batch_size, world, global_batch_size / per_round, options,
                                   permutation);
  }

  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return n_; }
  [[nodiscard]] std::uint64_t micro_batch_size() const noexcept { return m_; }
  [[nodiscard]] const World& world() const noexcept { return world_; }
  [[nodiscard]] std::uint64_t rank() const noexcept { return world_.rank; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return world_.world_size; }
  [[nodiscard]] std::uint64_t accumulation_steps() const noexcept { return k_; }
  /// G = micro_batch_size x world_size x accumulation_steps.
  [[nodiscard]] std::uint64_t global_batch_size() const noexcept { return g_; }
  [[nodiscard]] const BatchSamplerOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// Positions of this epoch consumed before step 0 (the resumed state's `consumed`; 0 otherwise).
  [[nodiscard]] std::uint64_t start() const noexcept { return start_; }

  /// Steps (optimizer steps) left in this epoch; the same on every rank.
  [[nodiscard]] std::uint64_t num_steps() const noexcept { return num_steps_; }
  /// Micro-batches per rank per step (= accumulation_steps).
  [[nodiscard]] std::uint64_t micro_batches_per_step() const noexcept { return k_; }

  /// Selects `epoch` from its beginning. O(1), or O(N) for a materialising permutation
  /// when the epoch changes.
  void set_epoch(std::uint64_t epoch) {
    if (epoch != epoch_) {
      epoch_ = epoch;
      rebuild_permutation();
    }
    start_ = 0;
    pass_started_ = false;
    recompute();
  }

  /// set_epoch(epoch() + 1). Throws config_error when the epoch would overflow 64 bits.
  void next_epoch() {
    if (epoch_ == UINT64_MAX) {
      detail::throw_config_error("DistributedBatchSampler: epoch " + std::to_string(epoch_) +
                                 " cannot advance (expected an epoch below 18446744073709551615)");
    }
    set_epoch(epoch_ + 1);
  }

  /// What saved states must match (see StateKey); its names are static strings.
  [[nodiscard]] StateKey key() const noexcept {
    const EngineIdentity engine = engine_identity<Permutation>(permutation_options_);
    return StateKey{"batch", n_, options_.seed, options_.shuffle, options_.tail, engine.name,
                    engine.format_version, 0, {}, false};
  }

  /// The state after every rank finished `steps_done` steps of this sampler and, within
  /// the next step, `micro_batches_done` micro-batch rounds. Save it on any rank (all
  /// ranks produce the same state). Throws config_error when steps_done > num_steps(),
  /// micro_batches_done >= accumulation_steps, or micro_batches_done > 0 at the end. O(1).
  [[nodiscard]] SamplerState state(std::uint64_t steps_done, std::uint64_t micro_batches_done = 0) const {
    if (steps_done > num_steps_) {
      detail::throw_config_error("DistributedBatchSampler::state: steps_done " + std::to_string(steps_done) +
                                 " exceeds num_steps " + std::to_string(num_steps_) + " (expected 0.." +
                                 std::to_string(num_steps_) + ")");
    }
    if (micro_batches_done >= k_ || (micro_batches_done != 0 && steps_done == num_steps_)) {
      detail::throw_config_error("DistributedBatchSampler::state: micro_batches_done " +
                                 std::to_string(micro_batches_done) + " is out of range (expected 0.." +
                                 std::to_string(steps_done == num_steps_ ? 0 : k_ - 1) + ")");
    }
    SamplerState s;
    s.dataset_size = n_;
    s.seed = options_.seed;
    s.epoch = epoch_;
    s.set_key(key());
    const std::uint64_t round = m_ * world_.world_size;  // no overflow: divides g_
    if (steps_done < full_steps_ || (steps_done == full_steps_ && micro_batches_done == 0)) {
      s.consumed = start_ + steps_done * g_ + micro_batches_done * round;
    } else if (steps_done == full_steps_) {  // inside the partial last step
      const std::uint64_t base = start_ + full_steps_ * g_;
      if (options_.tail == Tail::pad) {
        const std::uint64_t done = micro_batches_done * round;
        s.consumed = done >= rem_ ? n_ : base + done;
      } else {
        const std::uint64_t slots = micro_batches_done * world_.world_size, all = k_ * world_.world_size;
        s.consumed = base + slots * (rem_ / all) + std::min(slots, rem_ % all);
      }
    } else {
      s.consumed = n_;
    }
    return s;
  }

  /// Validates `state` (dataset size, seed, options: see StateKey) and continues its
  /// epoch at its consumed position: step 0 now starts there. World size, accumulation,
  /// micro-batch size and workers may differ from the saving run. Throws state_error
  /// naming the mismatch; on throw the sampler is unchanged.
  void resume(const SamplerState& state) {
    state.validate(key(), "DistributedBatchSampler");
    if (state.epoch != epoch_) {
      epoch_ = state.epoch;
      rebuild_permutation();
    }
    start_ = state.consumed;
    pass_started_ = false;
    recompute();
  }

  /// Number of samples in micro-batch k of step s for this rank: micro_batch_size,
  /// except in the last step under Tail::uneven. Throws std::out_of_range for a bad step or k.
  [[nodiscard]] std::uint64_t micro_batch_length(std::uint64_t step, std::uint64_t k) const {
    check(step, k, "micro_batch_length");
    return length(step, k, world_.rank);
  }

  /// The dataset indices of this rank's micro-batch k of step s. O(length).
  /// Throws std::out_of_range for a bad step or k.
  [[nodiscard]] std::vector<std::uint64_t> micro_batch(std::uint64_t step, std::uint64_t k) const {
    check(step, k, "micro_batch");
    std::vector<std::uint64_t> out(static_cast<std::size_t>(length(step, k, world_.rank)));
    for (std::size_t e = 0; e < out.size(); ++e) out[e] = index_at(step, k, world_.rank, e);
    return out;
  }

  /// Writes micro-batch k of step s into out[0 .. length) and returns the length; `out`
  /// must hold micro_batch_size values. Throws std::out_of_range for a bad step or k.
  std::uint64_t fill_micro_batch(std::uint64_t step, std::uint64_t k, std::uint64_t* out) const {
    check(step, k, "fill_micro_batch");
    const std::uint64_t len = length(step, k, world_.rank);
    for (std::uint64_t e = 0; e < len; ++e) out[e] = index_at(step, k, world_.rank, e);
    return len;
  }

  /// True when element e of micro-batch k of step s is padding (Tail::pad's last step).
  /// Throws std::out_of_range for a bad step, k or e.
  [[nodiscard]] bool is_padding(std::uint64_t step, std::uint64_t k, std::uint64_t e) const {
    check(step, k, "is_padding");
    check_element(step, k, e);
    return padding_at(step, k, world_.rank, e);
  }

  /// The epoch-order position of element e of micro-batch k of step s (before the permutation).
  [[nodiscard]] std::uint64_t position(std::uint64_t step, std::uint64_t k, std::uint64_t e) const {
    check(step, k, "position");
    check_element(step, k, e);
    return position_at(step, k, world_.rank, e);
  }

  /// The dataset index at `position` of this epoch's global order (position < N;
  /// unchecked): what position(step, k, e) resolves to, and what a Tail::drop epoch
  /// leaves unread past its last full step. O(1) with a random-access permutation.
  [[nodiscard]] std::uint64_t index_at_position(std::uint64_t position) const noexcept {
    return options_.shuffle ? permutation_(position) : position;
  }

  /// Every rank's indices of step s, in position order of the layout (round k, then rank,
  /// then element): what the whole job reads in that step. O(G); for checks and tools.
  [[nodiscard]] std::vector<std::uint64_t> global_batch(std::uint64_t step) const {
    check(step, 0, "global_batch");
    std::vector<std::uint64_t> out;
    for (std::uint64_t k = 0; k < k_; ++k) {
      for (std::uint64_t r = 0; r < world_.world_size; ++r) {
        const std::uint64_t len = length(step, k, r);
        for (std::uint64_t e = 0; e < len; ++e) out.push_back(index_at(step, k, r, e));
      }
    }
    return out;
  }

  /// This rank's micro-batches left in the epoch: num_steps() x accumulation_steps.
  /// Throws config_error when that overflows 64 bits.
  [[nodiscard]] std::uint64_t micro_batch_count() const {
    if (num_steps_ != 0 && k_ > UINT64_MAX / num_steps_) {
      detail::throw_config_error("DistributedBatchSampler: num_steps " + std::to_string(num_steps_) +
                                 " x accumulation_steps " + std::to_string(k_) + " overflows 64 bits");
    }
    return num_steps_ * k_;
  }

  /// How many of this rank's micro-batches worker `worker` of `num_workers` loads:
  /// the same for a given worker slot on every rank. Throws config_error for
  /// num_workers 0 or worker >= num_workers.
  [[nodiscard]] std::uint64_t worker_micro_batch_count(std::uint64_t num_workers, std::uint64_t worker) const {
    check_worker(num_workers, worker);
    const std::uint64_t total = micro_batch_count();
    return worker < total ? (total - worker - 1) / num_workers + 1 : 0;
  }

  /// The i-th micro-batch worker `worker` of `num_workers` loads: number worker + i *
  /// num_workers of this rank's sequence (step-major). Throws config_error for a bad
  /// worker, std::out_of_range when i >= worker_micro_batch_count.
  [[nodiscard]] MicroBatchId worker_micro_batch(std::uint64_t num_workers, std::uint64_t worker,
                                                std::uint64_t i) const {
    const std::uint64_t count = worker_micro_batch_count(num_workers, worker);
    if (i >= count) {
      throw std::out_of_range("DistributedBatchSampler::worker_micro_batch: i " + std::to_string(i) +
                              " is out of range for worker " + std::to_string(worker) + "'s count " +
                              std::to_string(count));
    }
    const std::uint64_t j = worker + i * num_workers;
    return MicroBatchId{j / k_, j % k_};
  }

  /// Every micro-batch worker `worker` of `num_workers` loads, in order. O(count).
  [[nodiscard]] std::vector<MicroBatchId> worker_schedule(std::uint64_t num_workers, std::uint64_t worker) const {
    const std::uint64_t count = worker_micro_batch_count(num_workers, worker);
    std::vector<MicroBatchId> out;
    out.reserve(static_cast<std::size_t>(count));
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t j = worker + i * num_workers;
      out.push_back(MicroBatchId{j / k_, j % k_});
    }
    return out;
  }

  /// One step of this rank, as the step iteration yields it.
  class StepView {
   public:
    [[nodiscard]] std::uint64_t step() const noexcept { return step_; }
    [[nodiscard]] std::uint64_t micro_batches() const noexcept { return sampler_->k_; }
    [[nodiscard]] std::vector<std::uint64_t> micro_batch(std::uint64_t k) const { return sampler_->micro_batch(step_, k); }
    [[nodiscard]] bool is_padding(std::uint64_t k, std::uint64_t e) const { return sampler_->is_padding(step_, k, e); }

   private:
    friend class DistributedBatchSampler;
    StepView(const DistributedBatchSampler* sampler, std::uint64_t step) noexcept : sampler_(sampler), step_(step) {}
    const DistributedBatchSampler* sampler_;
    std::uint64_t step_;
  };

  /// A forward iterator over this rank's steps, yielding StepView.
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = StepView;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = StepView;

    iterator() noexcept = default;
    [[nodiscard]] StepView operator*() const noexcept { return StepView(sampler_, step_); }
    iterator& operator++() noexcept { ++step_; return *this; }
    iterator operator++(int) noexcept { iterator old = *this; ++step_; return old; }
    [[nodiscard]] friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.step_ == b.step_; }
    [[nodiscard]] friend bool operator!=(const iterator& a, const iterator& b) noexcept { return a.step_ != b.step_; }

   private:
    friend class DistributedBatchSampler;
    iterator(const DistributedBatchSampler* sampler, std::uint64_t step) noexcept : sampler_(sampler), step_(step) {}
    const DistributedBatchSampler* sampler_ = nullptr;
    std::uint64_t step_ = 0;
  };

  /// Starts a pass over the steps. Under EpochMode::auto_advance, every call after the
  /// first since construction, set_epoch, next_epoch or resume first advances the epoch.
  [[nodiscard]] iterator begin() {
    if (options_.epoch_mode == EpochMode::auto_advance) {
      if (pass_started_) next_epoch();
      pass_started_ = true;
    }
    return iterator(this, 0);
  }
  /// A pass over the steps that never changes the epoch.
  [[nodiscard]] iterator begin() const noexcept { return iterator(this, 0); }
  [[nodiscard]] iterator end() const noexcept { return iterator(this, num_steps_); }

 private:
  static void check_micro_batch_size(std::uint64_t m) {
    if (m == 0) detail::throw_config_error("DistributedBatchSampler: micro_batch_size is 0 (expected at least 1)");
  }
  static std::uint64_t micro_times_world(std::uint64_t m, std::uint64_t w) {
    if (m > UINT64_MAX / w) {
      detail::throw_config_error("DistributedBatchSampler: micro_batch_size " + std::to_string(m) + " x world_size " +
                                 std::to_string(w) + " overflows 64 bits");
    }
    return m * w;
  }

  void rebuild_permutation() {
    if (options_.shuffle) permutation_ = Permutation(n_, options_.seed, epoch_, permutation_options_);
  }

  void recompute() noexcept {
    const std::uint64_t remaining = n_ - start_;
    full_steps_ = remaining / g_;
    rem_ = remaining % g_;
    num_steps_ = full_steps_ + (rem_ != 0 && options_.tail != Tail::drop ? 1 : 0);
  }

  void check(std::uint64_t step, std::uint64_t k, const char* what) const {
    if (step >= num_steps_) {
      throw std::out_of_range("DistributedBatchSampler::" + std::string(what) + ": step " + std::to_string(step) +
                              " is out of range for num_steps " + std::to_string(num_steps_));
    }
    if (k >= k_) {
      throw std::out_of_range("DistributedBatchSampler::" + std::string(what) + ": micro-batch " + std::to_string(k) +
                              " is out of range for accumulation_steps " + std::to_string(k_));
    }
  }
  void check_element(std::uint64_t step, std::uint64_t k, std::uint64_t e) const {
    const std::uint64_t len = length(step, k, world_.rank);
    if (e >= len) {
      throw std::out_of_range("DistributedBatchSampler: element " + std::to_string(e) +
                              " is out of range for micro-batch length " + std::to_string(len));
    }
  }
  static void check_worker(std::uint64_t num_workers, std::uint64_t worker) {
    if (num_workers == 0) detail::throw_config_error("DistributedBatchSampler: num_workers is 0 (expected at least 1)");
    if (worker >= num_workers) {
      detail::throw_config_error("DistributedBatchSampler: worker " + std::to_string(worker) +
                                 " is out of range for num_workers " + std::to_string(num_workers) + " (expected 0.." +
                                 std::to_string(num_workers - 1) + ")");
    }
  }

  [[nodiscard]] bool uneven_last(std::uint64_t step) const noexcept {
    return step == full_steps_ && options_.tail == Tail::uneven;
  }

  // Preconditions for the *_at helpers: step < num_steps_, k < k_, r < W, e < length.
  [[nodiscard]] std::uint64_t length(std::uint64_t step, std::uint64_t k, std::uint64_t r) const noexcept {
    if (!uneven_last(step)) return m_;
    const std::uint64_t slot = k * world_.world_size + r, all = k_ * world_.world_size;
    return rem_ / all + (slot < rem_ % all ? 1 : 0);
  }

  [[nodiscard]] std::uint64_t position_at(std::uint64_t step, std::uint64_t k, std::uint64_t r,
                                          std::uint64_t e) const noexcept {
    const std::uint64_t base = start_ + step * g_;
    if (uneven_last(step)) {
      const std::uint64_t slot = k * world_.world_size + r, all = k_ * world_.world_size;
      return base + slot * (rem_ / all) + std::min(slot, rem_ % all) + e;
    }
    const std::uint64_t j = (k * world_.world_size + r) * m_ + e;
    if (step < full_steps_ || j < rem_) return base + j;
    return (j - rem_) % n_;  // Tail::pad: wrap around to the start of the epoch's order
  }

  [[nodiscard]] bool padding_at(std::uint64_t step, std::uint64_t k, std::uint64_t r, std::uint64_t e) const noexcept {
    if (step < full_steps_ || options_.tail != Tail::pad) return false;
    return (k * world_.world_size + r) * m_ + e >= rem_;
  }

  [[nodiscard]] std::uint64_t index_at(std::uint64_t step, std::uint64_t k, std::uint64_t r,
                                       std::uint64_t e) const noexcept {
    const std::uint64_t p = position_at(step, k, r, e);
    return options_.shuffle ? permutation_(p) : p;
  }

  std::uint64_t n_ = 0;
  std::uint64_t m_ = 1;
  World world_;
  std::uint64_t k_ = 1;
  std::uint64_t g_ = 1;
  BatchSamplerOptions options_;
  permutation_options permutation_options_;
  std::uint64_t epoch_ = 0;
  std::uint64_t start_ = 0;
  std::uint64_t full_steps_ = 0;
  std::uint64_t rem_ = 0;
  std::uint64_t num_steps_ = 0;
  bool pass_started_ = false;
  Permutation permutation_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_BATCH_SAMPLER_HPP

// distsampler DistributedBatchSampler: each step's global batch split into per-rank micro-batches, resumable.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_BATCH_SAMPLER_HPP
#define DISTSAMPLER_BATCH_SAMPLER_HPP

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "../batch_layout.hpp"
#include "../epoch_order.hpp"
#include "../error.hpp"
#include "../feistel.hpp"
#include "../options.hpp"
#include "../permutation.hpp"
#include "../permutation_traits.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "../worker_schedule.hpp"
#include "../world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

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
/// State and resume: `state(steps_done, micro_batches_done)` records the consumed prefix;
/// `resume(state)` continues at exactly that position, with any world size, accumulation,
/// micro-batch size or worker count: nothing of the epoch is repeated or skipped (drop:
/// minus its tail; pad: plus flagged padding). Steps are numbered from the resume point,
/// and the epoch keeps its grid of G from position 0 whenever the saved position is the
/// end of a micro-batch round of the resuming shape (always so when the shape is
/// unchanged): resumed step 0 is then the rest of the interrupted step, its last K - k0
/// micro-batches (k0 = layout().lead(), every rank alike; micro_batches_in_step(0) says
/// how many), and resumed step i equals step s0 + i of the run that never stopped: the
/// same micro-batches, the same tail (drop drops exactly the uninterrupted epoch's last
/// N mod G positions; pad pads exactly as it does, from the start of the epoch; uneven
/// spreads its remainder as it does). So with the same G and the same micro-batch round
/// m*W, stop + resume yields the uninterrupted per-rank sequence, padding flags included.
/// When the saved position is not a round end of the new shape (an elastic resume with
/// another m*W), a new grid of G starts there: steps of G from the resume point, the
/// tail the last (N - consumed) mod G positions, padding wrapping to the epoch's start;
/// every step still has K micro-batches on every rank. One state cannot say more than
/// its prefix: a state saved inside pad's last step after its last real position (only
/// padding rounds left) or inside uneven's last step when only empty micro-batches are
/// left records the end of the epoch, so the resumed run has no step left (the
/// uninterrupted run would still read those padding or empty rounds of that step).
///
/// This class composes three parts: the epoch's global order (EpochOrder, shared with
/// DistributedSampler), the layout above (BatchLayout) and the worker deal (WorkerSchedule).
///
/// Example:
///     namespace ds = distsampler;
///     ds::DistributedBatchSampler<> batches(n, ds::World::from_env(),
///                                           ds::BatchSamplerOptions().with_micro_batch_size(4)
///                                               .with_global_batch_size(256).with_seed(42));
///     if (have_checkpoint) batches.resume(ds::SamplerState::from_text(saved));
///     for (std::uint64_t s = 0; s < batches.num_steps(); ++s) {
///       for (std::uint64_t k = 0; k < batches.micro_batches_in_step(s); ++k) {
///         forward_backward(batches.micro_batch(s, k));
///       }
///       optimizer_step();
///       saved = batches.state(s + 1).to_text();
///     }
///
/// Throws config_error from the constructors (bad World, micro_batch_size 0, zero
/// accumulation steps, G overflowing 64 bits, a global batch size not a multiple of m*W or
/// disagreeing with accumulation_steps, unknown tail or epoch mode); state_error from
/// resume() for a state of another dataset size, seed or option set. Strong exception
/// guarantee: set_epoch, next_epoch, resume and the non-const begin() build the new
/// epoch's order first and change nothing when that throws. Deterministic: a pure
/// function of (N, m, W, K, options, epoch, start). O(1) per index and O(1) memory with
/// the default FeistelPermutation. Thread-safety: const members may run concurrently;
/// set_epoch, next_epoch, resume and the non-const begin() must not race.
///
/// Iterator invalidation: set_epoch, next_epoch, resume, assignment and the non-const
/// begin() under EpochMode::auto_advance invalidate every iterator and StepView (as
/// reallocation does for std::vector); destroying or moving from the sampler leaves them
/// dangling. Unlike a std::vector's, an invalidated iterator or StepView is safe while the
/// sampler lives: it reads the current segment's step of its number, and its reads throw
/// std::out_of_range past the current num_steps(), so a loop up to an old end() stops.
template <class Permutation = FeistelPermutation>
class DistributedBatchSampler {
  static_assert(check_permutation<Permutation>(), "see permutation_traits.hpp");

 public:
  using options_type = BatchSamplerOptions;  ///< the options type it is built from
  using permutation_type = Permutation;
  using permutation_options = typename Permutation::options_type;
  class StepView;
  class iterator;

  /// Epoch 0 from its start. `options.micro_batch_size` is required; the global batch
  /// comes from accumulation_steps or global_batch_size (see BatchSamplerOptions).
  DistributedBatchSampler(std::uint64_t dataset_size, World world, BatchSamplerOptions options,
                          permutation_options permutation = {})
      : world_(checked(world)),
        options_(resolved(options, world)),
        order_(dataset_size, options.shuffle, options.seed, permutation),
        layout_(make_layout(dataset_size, 0)) {}

  /// Continues `state`'s epoch at its consumed position (see resume), building only that
  /// epoch's order. Throws config_error as the other constructor, state_error as resume.
  DistributedBatchSampler(std::uint64_t dataset_size, World world, BatchSamplerOptions options,
                          const SamplerState& state, permutation_options permutation = {})
      : world_(checked(world)),
        options_(resolved(options, world)),
        order_(EpochOrder<Permutation>::from_state(state, family, options_.tail, who, dataset_size, options.shuffle,
                                                   options.seed, permutation)),
        layout_(make_layout(dataset_size, order_.start())) {}

  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return order_.dataset_size(); }
  [[nodiscard]] std::uint64_t micro_batch_size() const noexcept { return layout_.micro_batch_size(); }
  [[nodiscard]] const World& world() const noexcept { return world_; }
  [[nodiscard]] std::uint64_t rank() const noexcept { return world_.rank; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return world_.world_size; }
  [[nodiscard]] std::uint64_t accumulation_steps() const noexcept { return layout_.accumulation_steps(); }
  /// G = micro_batch_size x world_size x accumulation_steps.
  [[nodiscard]] std::uint64_t global_batch_size() const noexcept { return layout_.global_batch_size(); }
  /// The options, resolved: accumulation_steps and global_batch_size both filled in.
  [[nodiscard]] const BatchSamplerOptions& options() const noexcept { return options_; }
  [[nodiscard]] const permutation_options& permutation_settings() const noexcept {
    return order_.permutation_settings();
  }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return order_.epoch(); }
  /// Positions of this epoch consumed before step 0 (the resumed state's `consumed`; 0 otherwise).
  [[nodiscard]] std::uint64_t start() const noexcept { return order_.start(); }
  /// The epoch's global order (shared with every rank) and this sampler's layout of it.
  [[nodiscard]] const EpochOrder<Permutation>& order() const noexcept { return order_; }
  [[nodiscard]] const BatchLayout& layout() const noexcept { return layout_; }

  /// Steps (optimizer steps) left in this epoch; the same on every rank.
  [[nodiscard]] std::uint64_t num_steps() const noexcept { return layout_.num_steps(); }
  /// num_steps(), the size of the step range.
  [[nodiscard]] std::uint64_t size() const noexcept { return layout_.num_steps(); }
  /// Micro-batches per rank per step (= accumulation_steps); step 0 of a resumed epoch
  /// may have fewer (micro_batches_in_step).
  [[nodiscard]] std::uint64_t micro_batches_per_step() const noexcept { return layout_.accumulation_steps(); }
  /// Micro-batches of `step` on every rank: accumulation_steps, less the rounds of an
  /// interrupted step read before the resume point in step 0 (see the class comment).
  /// Throws std::out_of_range when step >= num_steps().
  [[nodiscard]] std::uint64_t micro_batches_in_step(std::uint64_t step) const {
    check(step, 0, "micro_batches_in_step");
    return layout_.micro_batches(step);
  }

  /// Selects `epoch` from its beginning. O(1), or O(N) for a materialising permutation
  /// when the epoch changes. Strong guarantee: on throw nothing changed; a retry rebuilds.
  void set_epoch(std::uint64_t epoch) {
    EpochOrder<Permutation> next = order_.at(epoch, 0);
    commit(std::move(next));
  }

  /// set_epoch(epoch() + 1). Throws config_error when the epoch would overflow 64 bits.
  void next_epoch() {
    if (epoch() == UINT64_MAX) {
      detail::throw_config_error("DistributedBatchSampler: epoch " + std::to_string(epoch()) +
                                 " cannot advance (expected an epoch below 18446744073709551615)");
    }
    set_epoch(epoch() + 1);
  }

  /// What saved states must match (see StateKey); its names are static strings.
  [[nodiscard]] StateKey key() const noexcept { return order_.key(family, options_.tail); }

  /// The state after every rank finished `steps_done` steps of this sampler and, within
  /// the next step, `micro_batches_done` micro-batch rounds. Save it on any rank (all
  /// ranks produce the same state). Throws config_error when steps_done > num_steps(),
  /// micro_batches_done >= micro_batches_in_step(steps_done), or micro_batches_done > 0 at
  /// the end. O(1).
  [[nodiscard]] SamplerState state(std::uint64_t steps_done, std::uint64_t micro_batches_done = 0) const {
    return order_.state(family, options_.tail,
                        layout_.consumed(steps_done, micro_batches_done, "DistributedBatchSampler::state"));
  }

  /// Validates `state` (dataset size, seed, options: see StateKey) and continues its
  /// epoch at its consumed position: step 0 now starts there. World size, accumulation,
  /// micro-batch size and workers may differ from the saving run. Throws state_error
  /// naming the mismatch. Strong guarantee: on throw the sampler is unchanged.
  void resume(const SamplerState& state) {
    EpochOrder<Permutation> next = order_.resumed(state, family, options_.tail, who);
    commit(std::move(next));
  }

  /// Number of samples in micro-batch k of step s for this rank: micro_batch_size,
  /// except in the last step under Tail::uneven. Throws std::out_of_range for a bad step or k.
  [[nodiscard]] std::uint64_t micro_batch_length(std::uint64_t step, std::uint64_t k) const {
    check(step, k, "micro_batch_length");
    return layout_.length(step, k, world_.rank);
  }

  /// The dataset indices of this rank's micro-batch k of step s. O(length).
  /// Throws std::out_of_range for a bad step or k.
  [[nodiscard]] std::vector<std::uint64_t> micro_batch(std::uint64_t step, std::uint64_t k) const {
    check(step, k, "micro_batch");
    std::vector<std::uint64_t> out(static_cast<std::size_t>(layout_.length(step, k, world_.rank)));
    fill_indices(step, k, out.size(), out.data());
    return out;
  }

  /// Writes micro-batch k of step s into out[0 .. length) and returns the length; `out`
  /// must hold micro_batch_size values. Throws std::out_of_range for a bad step or k.
  std::uint64_t fill_micro_batch(std::uint64_t step, std::uint64_t k, std::uint64_t* out) const {
    check(step, k, "fill_micro_batch");
    const std::uint64_t len = layout_.length(step, k, world_.rank);
    fill_indices(step, k, len, out);
    return len;
  }

  /// True when element e of micro-batch k of step s is padding (Tail::pad's last step).
  /// Throws std::out_of_range for a bad step, k or e.
  [[nodiscard]] bool is_padding(std::uint64_t step, std::uint64_t k, std::uint64_t e) const {
    check(step, k, "is_padding");
    check_element(step, k, e);
    return layout_.is_padding(step, k, world_.rank, e);
  }

  /// The epoch-order position of element e of micro-batch k of step s (before the permutation).
  [[nodiscard]] std::uint64_t position(std::uint64_t step, std::uint64_t k, std::uint64_t e) const {
    check(step, k, "position");
    check_element(step, k, e);
    return layout_.position(step, k, world_.rank, e);
  }

  /// The dataset index at `position` of this epoch's global order (position < N;
  /// unchecked): what position(step, k, e) resolves to, and what a Tail::drop epoch
  /// leaves unread past its last full step. O(1) with a random-access permutation.
  [[nodiscard]] std::uint64_t index_at_position(std::uint64_t position) const noexcept {
    return order_.index(position);
  }

  /// Every rank's indices of step s, in position order of the layout (round k, then rank,
  /// then element): what the whole job reads in that step. O(G); for checks and tools.
  [[nodiscard]] std::vector<std::uint64_t> global_batch(std::uint64_t step) const {
    check(step, 0, "global_batch");
    std::vector<std::uint64_t> out;
    for (std::uint64_t k = 0; k < layout_.micro_batches(step); ++k) {
      for (std::uint64_t r = 0; r < world_.world_size; ++r) {
        const std::uint64_t len = layout_.length(step, k, r);
        for (std::uint64_t e = 0; e < len; ++e) out.push_back(index_at(step, k, r, e));
      }
    }
    return out;
  }

  /// This rank's micro-batches left in the epoch: the sum of micro_batches_in_step.
  /// Throws config_error when that overflows 64 bits.
  [[nodiscard]] std::uint64_t micro_batch_count() const { return schedule(1).total(); }

  /// This rank's micro-batch number j (< micro_batch_count()) in step-major order: which
  /// step and micro-batch it is (see WorkerSchedule). Throws std::out_of_range past the count.
  [[nodiscard]] MicroBatchId micro_batch_id(std::uint64_t j) const { return schedule(1).at(0, j); }

  /// The state after this rank's first j micro-batches (every rank alike): state() of
  /// micro_batch_id(j), or the end for j = micro_batch_count(). Throws config_error past it.
  [[nodiscard]] SamplerState state_after_micro_batches(std::uint64_t j) const {
    const WorkerSchedule all = schedule(1);
    if (j > all.total()) {
      detail::throw_config_error("DistributedBatchSampler::state_after_micro_batches: j " + std::to_string(j) +
                                 " exceeds micro_batch_count " + std::to_string(all.total()) + " (expected 0.." +
                                 std::to_string(all.total()) + ")");
    }
    if (j == all.total()) return state(num_steps());
    const MicroBatchId id = all.at(0, j);
    return state(id.step, id.micro_batch);
  }

  /// How many of this rank's micro-batches worker `worker` of `num_workers` loads:
  /// the same for a given worker slot on every rank. Throws config_error for
  /// num_workers 0 or worker >= num_workers.
  [[nodiscard]] std::uint64_t worker_micro_batch_count(std::uint64_t num_workers, std::uint64_t worker) const {
    return schedule(num_workers).count(worker);
  }

  /// The i-th micro-batch worker `worker` of `num_workers` loads: number worker + i *
  /// num_workers of this rank's sequence (step-major; see WorkerSchedule). Throws
  /// config_error for a bad worker, std::out_of_range when i >= worker_micro_batch_count.
  [[nodiscard]] MicroBatchId worker_micro_batch(std::uint64_t num_workers, std::uint64_t worker,
                                                std::uint64_t i) const {
    return schedule(num_workers).at(worker, i);
  }

  /// Every micro-batch worker `worker` of `num_workers` loads, in order. O(count).
  [[nodiscard]] std::vector<MicroBatchId> worker_schedule(std::uint64_t num_workers, std::uint64_t worker) const {
    return schedule(num_workers).list(worker);
  }

  /// One step of this rank, as the step iteration yields it. Its reads check the step
  /// against the sampler's current num_steps() (std::out_of_range past it).
  class StepView {
   public:
    [[nodiscard]] std::uint64_t step() const noexcept { return step_; }
    /// This step's micro-batches (micro_batches_in_step). Throws std::out_of_range past num_steps().
    [[nodiscard]] std::uint64_t micro_batches() const { return sampler_->micro_batches_in_step(step_); }
    [[nodiscard]] std::vector<std::uint64_t> micro_batch(std::uint64_t k) const {
      return sampler_->micro_batch(step_, k);
    }
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
    iterator& operator++() noexcept {
      ++step_;
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator old = *this;
      ++step_;
      return old;
    }
    [[nodiscard]] friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.step_ == b.step_; }
    [[nodiscard]] friend bool operator!=(const iterator& a, const iterator& b) noexcept { return a.step_ != b.step_; }

   private:
    friend class DistributedBatchSampler;
    iterator(const DistributedBatchSampler* sampler, std::uint64_t step) noexcept : sampler_(sampler), step_(step) {}
    const DistributedBatchSampler* sampler_ = nullptr;
    std::uint64_t step_ = 0;
  };

  /// Starts a pass over the steps. Under EpochMode::auto_advance, every call after the
  /// first since construction, set_epoch, next_epoch or resume first advances the epoch
  /// (pass p of a sampler set to epoch e reads epoch e + p).
  [[nodiscard]] iterator begin() {
    if (options_.epoch_mode == EpochMode::auto_advance) {
      if (pass_started_) next_epoch();
      pass_started_ = true;
    }
    return iterator(this, 0);
  }
  /// A pass over the steps that never changes the epoch.
  [[nodiscard]] iterator begin() const noexcept { return iterator(this, 0); }
  [[nodiscard]] iterator end() const noexcept { return iterator(this, num_steps()); }

 private:
  static constexpr std::string_view family = "batch";
  static constexpr std::string_view who = "DistributedBatchSampler";

  static World checked(World world) {
    world.validate(who);
    return world;
  }

  // Validates the options and fills in accumulation_steps and global_batch_size.
  static BatchSamplerOptions resolved(BatchSamplerOptions options, const World& world) {
    detail::check_epoch_mode(options.epoch_mode, who);
    resolve_batch_shape(options, world.world_size, who, "BatchSamplerOptions");
    return options;
  }

  [[nodiscard]] BatchLayout make_layout(std::uint64_t dataset_size, std::uint64_t start) const {
    return BatchLayout(dataset_size, start, options_.micro_batch_size, world_.world_size, options_.accumulation_steps,
                       options_.tail, who);
  }

  void commit(EpochOrder<Permutation>&& next) noexcept {
    layout_ = layout_.from(next.start());
    order_ = std::move(next);
    pass_started_ = false;
  }

  [[nodiscard]] WorkerSchedule schedule(std::uint64_t num_workers) const {
    return WorkerSchedule(layout_.num_steps(), layout_.accumulation_steps(), num_workers, who, layout_.lead());
  }

  void check(std::uint64_t step, std::uint64_t k, const char* what) const {
    if (step >= layout_.num_steps()) {
      throw std::out_of_range("DistributedBatchSampler::" + std::string(what) + ": step " + std::to_string(step) +
                              " is out of range for num_steps " + std::to_string(layout_.num_steps()));
    }
    const std::uint64_t rounds = layout_.micro_batches(step);
    if (k >= rounds) {
      throw std::out_of_range("DistributedBatchSampler::" + std::string(what) + ": micro-batch " + std::to_string(k) +
                              " is out of range for " +
                              (rounds == layout_.accumulation_steps() ? "accumulation_steps "
                                                                      : "the resumed step 0's micro_batches_in_step ") +
                              std::to_string(rounds));
    }
  }
  void check_element(std::uint64_t step, std::uint64_t k, std::uint64_t e) const {
    const std::uint64_t len = layout_.length(step, k, world_.rank);
    if (e >= len) {
      throw std::out_of_range("DistributedBatchSampler: element " + std::to_string(e) +
                              " is out of range for micro-batch length " + std::to_string(len));
    }
  }

  // The len indices of this rank's micro-batch k of `step`. A micro-batch is a contiguous
  // run of positions unless Tail::pad wraps it around to the epoch's start, so all but
  // that one use the engine's batched fill (several times faster than index by index).
  void fill_indices(std::uint64_t step, std::uint64_t k, std::uint64_t len, std::uint64_t* out) const noexcept {
    if (len == 0) return;
    const std::uint64_t r = world_.rank;
    if (!layout_.is_padding(step, k, r, len - 1)) {
      order_.fill(layout_.position(step, k, r, 0), len, out, 1);
      return;
    }
    for (std::uint64_t e = 0; e < len; ++e) out[e] = index_at(step, k, r, e);
  }

  [[nodiscard]] std::uint64_t index_at(std::uint64_t step, std::uint64_t k, std::uint64_t r,
                                       std::uint64_t e) const noexcept {
    return order_.index(layout_.position(step, k, r, e));
  }

  World world_;
  BatchSamplerOptions options_;
  EpochOrder<Permutation> order_;
  BatchLayout layout_;
  bool pass_started_ = false;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_BATCH_SAMPLER_HPP

// distsampler MixtureSampler: batches drawn from K sources in exact proportions, per-source epochs, resumable.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_MIXTURE_HPP
#define DISTSAMPLER_MIXTURE_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../detail/checked.hpp"
#include "../batch_layout.hpp"
#include "../detail/bounded.hpp"
#include "../detail/mix.hpp"
#include "../error.hpp"
#include "../feistel.hpp"
#include "schedule.hpp"
#include "../options.hpp"
#include "../permutation_traits.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "../worker_schedule.hpp"
#include "../world.hpp"
#include "options.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// One sample of a mixture: `index` of source `source`.
struct MixtureIndex {
  std::uint64_t source = 0;
  std::uint64_t index = 0;
  friend constexpr bool operator==(const MixtureIndex& a, const MixtureIndex& b) noexcept {
    return a.source == b.source && a.index == b.index;
  }
  friend constexpr bool operator!=(const MixtureIndex& a, const MixtureIndex& b) noexcept { return !(a == b); }
};


/// A source's progress at a position of the mixture epoch: its pass (source epoch) and
/// the samples of that pass already taken.
struct SourceProgress {
  std::uint64_t epoch = 0;
  std::uint64_t cursor = 0;
};

/// The batches of a training run over K sources mixed by weight, split over ranks like
/// DistributedBatchSampler (BatchLayout: position(s, k, r, e) = start + s*G + (k*W + r)*m
/// + e; WorkerSchedule for loader workers).
///
/// The mixture epoch's stream: position p goes to a source by MixtureSchedule (every
/// block of G positions holds floor(G w_i) or ceil(G w_i) samples of source i; every
/// prefix is within a small bound of k w_i, see docs/MIXTURES.md; the slots of a source
/// within a block move from block to block). Source i's ordinal o (its o-th sample of the
/// epoch) is in its pass o / n_i and reads index FeistelPermutation(n_i, seed of source
/// i, (epoch, pass))(o mod n_i): each source walks its own permutation without
/// replacement and starts a new one, keyed by its pass, when exhausted, independently of
/// the others. With `replacement`, the index is a counter-based uniform draw instead.
/// Without shuffle, each source is read in order and slots are not moved.
///
/// Weight changes (options.schedule) apply from their step on; counts carry over, so a
/// change neither skips nor repeats a sample of any source's pass. The epoch length is
/// fixed by options.end. Every mixture epoch starts all sources at pass 0 with new orders.
///
/// State: `state(steps_done)` records the epoch and the consumed stream prefix (the
/// sources' passes and cursors follow from it: source_progress()); resume() continues
/// exactly there on any world size, micro-batch size or accumulation whose global batch
/// keeps the mixing block, with the batch layout's grid (see BatchLayout): a state saved
/// with the same shape, also mid-step (`state(steps_done, micro_batches_done)`), resumes
/// as the uninterrupted run, its step 0 holding the interrupted step's remaining
/// micro_batches_in_step(0) rounds. The key names family "mixture", the epoch length, seed,
/// shuffle, tail, engine and a hash of sizes, block, schedule and end ("mixture settings").
///
/// Throws config_error from the constructors (see MixtureSchedule for weights, sizes and
/// schedule; micro_batch_size 0; G not a multiple of m*W or disagreeing with
/// accumulation_steps; end_count 0 for samples or steps; an end past 2^64 positions;
/// all_seen with a source whose weight ends at 0). Strong guarantee for set_epoch and
/// resume. O(depth) per index (depth about log2 K) plus a Feistel evaluation; O(K)
/// memory per schedule segment. Deterministic. Thread-safety: const members may run
/// concurrently; set_epoch, next_epoch and resume must not race with anything.
class MixtureSampler {
 public:
  using options_type = MixtureOptions;  ///< the options type it is built from
  static constexpr std::string_view family = "mixture";

  /// Epoch 0 from its start.
  MixtureSampler(std::vector<std::uint64_t> source_sizes, const std::vector<double>& weights, World world,
                 MixtureOptions options)
      : world_(checked(world)),
        options_(resolved(std::move(options), world_)),
        schedule_(std::make_shared<const MixtureSchedule>(std::move(source_sizes), weights, options_.schedule,
                                                          options_.mixing_block, who)),
        epoch_(0),
        length_(epoch_length(0)),
        layout_(make_layout(length_, 0)) {}

  /// Continues `state` (see resume). Throws as the other constructor and as resume.
  MixtureSampler(std::vector<std::uint64_t> source_sizes, const std::vector<double>& weights, World world,
                 MixtureOptions options, const SamplerState& state)
      : MixtureSampler(std::move(source_sizes), weights, world, std::move(options)) {
    resume(state);
  }

  [[nodiscard]] std::size_t num_sources() const noexcept { return schedule_->num_sources(); }
  [[nodiscard]] const std::vector<std::uint64_t>& source_sizes() const noexcept { return schedule_->sizes(); }
  [[nodiscard]] const MixtureSchedule& schedule() const noexcept { return *schedule_; }
  [[nodiscard]] const World& world() const noexcept { return world_; }
  [[nodiscard]] std::uint64_t rank() const noexcept { return world_.rank; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return world_.world_size; }
  /// The options, resolved: accumulation_steps, global_batch_size and mixing_block filled in.
  [[nodiscard]] const MixtureOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// Positions of this mixture epoch (its stream length, set by options.end).
  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return length_; }
  /// Positions consumed before step 0 (the resumed state's; 0 otherwise).
  [[nodiscard]] std::uint64_t start() const noexcept { return layout_.start(); }
  [[nodiscard]] const BatchLayout& layout() const noexcept { return layout_; }
  [[nodiscard]] std::uint64_t micro_batch_size() const noexcept { return layout_.micro_batch_size(); }
  [[nodiscard]] std::uint64_t accumulation_steps() const noexcept { return layout_.accumulation_steps(); }
  [[nodiscard]] std::uint64_t global_batch_size() const noexcept { return layout_.global_batch_size(); }
  [[nodiscard]] std::uint64_t micro_batches_per_step() const noexcept { return layout_.accumulation_steps(); }
  /// Micro-batches of `step` on every rank: accumulation_steps, less in step 0 of a
  /// resumed epoch the rounds of the interrupted step read before (BatchLayout::lead).
  /// Throws std::out_of_range when step >= num_steps().
  [[nodiscard]] std::uint64_t micro_batches_in_step(std::uint64_t step) const {
    check(step, 0, "micro_batches_in_step");
    return layout_.micro_batches(step);
  }
  /// This rank's micro-batch number j in step-major order (see WorkerSchedule). Throws
  /// std::out_of_range when j >= the rank's micro-batch count.
  [[nodiscard]] MicroBatchId micro_batch_id(std::uint64_t j) const { return schedule(1).at(0, j); }
  /// This rank's micro-batches left in the epoch: the sum of micro_batches_in_step.
  [[nodiscard]] std::uint64_t micro_batch_count() const { return schedule(1).total(); }
  [[nodiscard]] std::uint64_t num_steps() const noexcept { return layout_.num_steps(); }
  [[nodiscard]] std::uint64_t size() const noexcept { return layout_.num_steps(); }

  /// Selects mixture epoch `epoch` from its start. O(K depth 64) for the ends that search.
  /// Strong guarantee.
  void set_epoch(std::uint64_t epoch) {
    const std::uint64_t length = epoch_length(epoch);
    BatchLayout layout = make_layout(length, 0);
    commit(epoch, length, layout);
  }

  void next_epoch() {
    if (epoch_ == UINT64_MAX) {
      detail::throw_config_error(std::string(who) + ": epoch " + std::to_string(epoch_) +
                                 " cannot advance (expected an epoch below 18446744073709551615)");
    }
    set_epoch(epoch_ + 1);
  }

  /// The sample at `position` of this epoch's stream (position < dataset_size(), unchecked).
  [[nodiscard]] MixtureIndex at(std::uint64_t position) const noexcept {
    const MixtureSlot slot = schedule_->locate(position, phase_key(), !options_.shuffle);
    return MixtureIndex{slot.source, source_index(slot.source, slot.ordinal)};
  }

  /// The source of `position` and its ordinal (its count of earlier samples of the epoch).
  [[nodiscard]] MixtureSlot slot(std::uint64_t position) const noexcept {
    return schedule_->locate(position, phase_key(), !options_.shuffle);
  }

  /// Samples of `source` among positions [0, position) of this epoch. Throws
  /// std::out_of_range for a bad source. O(depth).
  [[nodiscard]] std::uint64_t source_count(std::size_t source, std::uint64_t position) const {
    check_source(source);
    return schedule_->count(source, position, phase_key(), !options_.shuffle);
  }

  /// Every source's pass and cursor after positions [0, position) of this epoch. O(K depth).
  [[nodiscard]] std::vector<SourceProgress> source_progress(std::uint64_t position) const {
    std::vector<SourceProgress> out;
    for (std::size_t i = 0; i < num_sources(); ++i) {
      const std::uint64_t c = schedule_->count(i, position, phase_key(), !options_.shuffle);
      const std::uint64_t n = schedule_->sizes()[i];
      out.push_back(n == 0 ? SourceProgress{} : SourceProgress{c / n, c % n});
    }
    return out;
  }

  /// The dataset index (within its source) of ordinal `ordinal` of `source` this epoch.
  [[nodiscard]] std::uint64_t source_index(std::uint64_t source, std::uint64_t ordinal) const noexcept {
    const std::uint64_t n = schedule_->sizes()[static_cast<std::size_t>(source)];
    const std::uint64_t pass = ordinal / n, cursor = ordinal % n;
    const std::uint64_t source_seed = detail::splitmix64(options_.seed ^ detail::splitmix64(source));
    if (options_.replacement) {
      detail::SplitMix64 stream(detail::mix64(source_seed ^ detail::splitmix64(epoch_)) ^ ordinal);
      return detail::bounded_draw(stream, n);
    }
    if (!options_.shuffle) return cursor;
    return FeistelPermutation(n, source_seed, detail::mix64(epoch_ * detail::splitmix64_gamma) ^ pass)(cursor);
  }

  /// This rank's micro-batch k of `step`. Throws std::out_of_range for a bad step or k.
  [[nodiscard]] std::vector<MixtureIndex> micro_batch(std::uint64_t step, std::uint64_t k) const {
    check(step, k, "micro_batch");
    const std::uint64_t len = layout_.length(step, k, world_.rank);
    std::vector<MixtureIndex> out;
    out.reserve(static_cast<std::size_t>(len));
    for (std::uint64_t e = 0; e < len; ++e) out.push_back(at(layout_.position(step, k, world_.rank, e)));
    return out;
  }

  /// True when element e of micro-batch k of `step` is padding (Tail::pad's last step).
  [[nodiscard]] bool is_padding(std::uint64_t step, std::uint64_t k, std::uint64_t e) const {
    check(step, k, "is_padding");
    return layout_.is_padding(step, k, world_.rank, e);
  }

  /// Every rank's samples of `step` in layout order (round, rank, element). O(G).
  [[nodiscard]] std::vector<MixtureIndex> global_batch(std::uint64_t step) const {
    check(step, 0, "global_batch");
    std::vector<MixtureIndex> out;
    for (std::uint64_t k = 0; k < layout_.micro_batches(step); ++k) {
      for (std::uint64_t r = 0; r < world_.world_size; ++r) {
        const std::uint64_t len = layout_.length(step, k, r);
        for (std::uint64_t e = 0; e < len; ++e) out.push_back(at(layout_.position(step, k, r, e)));
      }
    }
    return out;
  }

  /// How many of this rank's micro-batches worker `worker` of `num_workers` loads, and
  /// which: the batch sampler's WorkerSchedule. Throws config_error for a bad worker.
  [[nodiscard]] std::uint64_t worker_micro_batch_count(std::uint64_t num_workers, std::uint64_t worker) const {
    return schedule(num_workers).count(worker);
  }
  [[nodiscard]] std::vector<MicroBatchId> worker_schedule(std::uint64_t num_workers, std::uint64_t worker) const {
    return schedule(num_workers).list(worker);
  }

  /// What saved states must match. O(1) (the layout hash is computed once).
  [[nodiscard]] StateKey key() const noexcept { return key_for(length_); }

  /// The state after every rank finished `steps_done` steps and `micro_batches_done`
  /// rounds of the next. Throws config_error as BatchLayout::consumed. O(1).
  [[nodiscard]] SamplerState state(std::uint64_t steps_done, std::uint64_t micro_batches_done = 0) const {
    SamplerState s;
    s.epoch = epoch_;
    s.consumed = layout_.consumed(steps_done, micro_batches_done, "MixtureSampler::state");
    s.set_key(key());
    return s;
  }

  /// The state after this rank's first j micro-batches (every rank alike; j up to
  /// micro_batch_count()). Throws config_error past it. O(1).
  [[nodiscard]] SamplerState state_after_micro_batches(std::uint64_t j) const {
    const WorkerSchedule all = schedule(1);
    if (j > all.total()) {
      detail::throw_config_error("MixtureSampler::state_after_micro_batches: j " + std::to_string(j) +
                                 " exceeds micro_batch_count " + std::to_string(all.total()) + " (expected 0.." +
                                 std::to_string(all.total()) + ")");
    }
    if (j == all.total()) return state(num_steps());
    const MicroBatchId id = all.at(0, j);
    return state(id.step, id.micro_batch);
  }

  /// Continues `state`'s epoch at its consumed position on this world and batch shape.
  /// Throws state_error naming what differs (family, epoch length, seed, shuffle, tail,
  /// engine, "mixture settings differ" for sizes, block, schedule or end). Strong guarantee.
  void resume(const SamplerState& state) {
    const std::uint64_t length = epoch_length(state.epoch);
    state.validate(key_for(length), who);
    BatchLayout layout = make_layout(length, state.consumed);
    commit(state.epoch, length, layout);
  }

 private:
  static constexpr std::string_view who = "MixtureSampler";

  static World checked(World world) {
    world.validate(who);
    return world;
  }

  static MixtureOptions resolved(MixtureOptions options, const World& world) {
    const std::string w(who);
    resolve_batch_shape(options, world.world_size, who, "MixtureOptions");
    if (options.mixing_block == 0) options.mixing_block = options.global_batch_size;
    if (options.end != MixtureEnd::first_exhausted && options.end != MixtureEnd::all_seen &&
        options.end != MixtureEnd::samples && options.end != MixtureEnd::steps) {
      detail::throw_config_error(w + ": end " + std::to_string(static_cast<int>(options.end)) +
                                 " is not a MixtureEnd (expected first_exhausted, all_seen, samples or steps)");
    }
    if ((options.end == MixtureEnd::samples || options.end == MixtureEnd::steps) && options.end_count == 0) {
      detail::throw_config_error(w + ": end_count is 0 (expected at least 1 " +
                                 (options.end == MixtureEnd::samples ? "sample" : "step") +
                                 "; set it with with_end(end, count))");
    }
    return options;
  }

  [[nodiscard]] std::uint64_t phase_key() const noexcept {
    return detail::mix64(options_.seed ^ detail::splitmix64(epoch_ ^ 0x6d697874u));
  }

  [[nodiscard]] std::uint64_t epoch_length(std::uint64_t epoch) const {
    const MixtureSchedule& s = *schedule_;
    switch (options_.end) {
      case MixtureEnd::samples:
        return options_.end_count;
      case MixtureEnd::steps:
        return detail::checked_mul(who, "end_count", options_.end_count, "mixing block", s.block());
      case MixtureEnd::first_exhausted:
      case MixtureEnd::all_seen:
        break;
    }
    const bool first = options_.end == MixtureEnd::first_exhausted;
    const std::uint64_t key = detail::mix64(options_.seed ^ detail::splitmix64(epoch ^ 0x6d697874u));
    std::uint64_t best = first ? UINT64_MAX : 0;
    for (std::size_t i = 0; i < s.num_sources(); ++i) {
      if (!s.used(i)) continue;
      const std::uint64_t p = s.first_reaching(i, s.sizes()[i], key, !options_.shuffle);
      if (!first && p == UINT64_MAX) {
        detail::throw_config_error(std::string(who) + ": source " + std::to_string(i) +
                                   " never finishes its first pass (its weight drops to 0 before it does; expected "
                                   "MixtureEnd::first_exhausted, samples or steps, or a positive final weight)");
      }
      best = first ? std::min(best, p) : std::max(best, p);
    }
    return best;  // some source finishes by position 2^64 - 1: the used sizes sum to at most that
  }

  [[nodiscard]] StateKey key_for(std::uint64_t length) const noexcept {
    StateKey k;
    k.sampler = family;
    k.dataset_size = length;
    k.seed = options_.seed;
    k.shuffle = options_.shuffle;
    k.tail = options_.tail;
    k.engine = options_.replacement ? std::string_view("with-replacement") : FeistelPermutation::name({});
    k.engine_version = options_.replacement ? 1 : FeistelPermutation::format_version;
    k.layout = layout_hash_;
    k.layout_name = "mixture settings";
    return k;
  }

  [[nodiscard]] std::uint64_t settings_hash() const noexcept {
    std::uint64_t h = schedule_->layout_hash();
    h = detail::hash_field(h, static_cast<std::uint64_t>(options_.end));
    h = detail::hash_field(h, options_.end_count);
    return detail::mix64(h);
  }

  [[nodiscard]] BatchLayout make_layout(std::uint64_t length, std::uint64_t start) const {
    return BatchLayout(length, start, options_.micro_batch_size, world_.world_size, options_.accumulation_steps,
                       options_.tail, who);
  }

  void commit(std::uint64_t epoch, std::uint64_t length, const BatchLayout& layout) noexcept {
    epoch_ = epoch;
    length_ = length;
    layout_ = layout;
  }

  [[nodiscard]] WorkerSchedule schedule(std::uint64_t num_workers) const {
    return WorkerSchedule(layout_.num_steps(), layout_.accumulation_steps(), num_workers, who, layout_.lead());
  }

  void check(std::uint64_t step, std::uint64_t k, const char* what) const {
    const std::string where = std::string(who) + "::" + what;
    if (step >= layout_.num_steps()) {
      throw std::out_of_range(detail::out_of_range_message(where, "step", step, "num_steps", layout_.num_steps()));
    }
    if (k >= layout_.micro_batches(step)) {
      throw std::out_of_range(detail::out_of_range_message(
          where, "micro-batch", k,
          layout_.lead() != 0 && step == 0 ? "the resumed step 0's micro_batches_in_step" : "accumulation_steps",
          layout_.micro_batches(step)));
    }
  }

  void check_source(std::size_t source) const {
    if (source >= num_sources()) {
      throw std::out_of_range(detail::out_of_range_message(who, "source", source, "num_sources", num_sources()));
    }
  }

  World world_;
  MixtureOptions options_;
  std::shared_ptr<const MixtureSchedule> schedule_;
  std::uint64_t epoch_ = 0;
  std::uint64_t length_ = 0;
  BatchLayout layout_;
  std::uint64_t layout_hash_ = settings_hash();
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_MIXTURE_HPP

// distsampler TokenBatchSampler: length-aware micro-batches under a token budget, equal steps on every rank.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TOKEN_BATCHES_HPP
#define DISTSAMPLER_TOKEN_BATCHES_HPP

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../detail/checked.hpp"
#include "../detail/mix.hpp"
#include "../state/format.hpp"
#include "../epoch_order.hpp"
#include "../error.hpp"
#include "../feistel.hpp"
#include "../options.hpp"
#include "../state.hpp"
#include "micro_batch.hpp"
#include "plan.hpp"
#include "../version.hpp"
#include "../world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The planned window that holds a range of steps: what a reader keeps while it walks them.
/// Holds its own copy of the epoch's order, so it stays valid whatever the sampler does.
class TokenWindow {
 public:
  /// Steps [first_step(), end_step()) of the sampler that planned it.
  [[nodiscard]] std::uint64_t first_step() const noexcept { return first_step_; }
  [[nodiscard]] std::uint64_t end_step() const noexcept { return first_step_ + plan_.steps(group()); }
  [[nodiscard]] const WindowPlan& plan() const noexcept { return plan_; }
  /// The dataset index of plan().samples[i] (the micro-batches' samples, then the skipped
  /// ones). Precondition: i < plan().samples.size(). O(1).
  [[nodiscard]] std::uint64_t index_of(std::uint64_t i) const {
    return order_.index(position_ + plan_.samples[static_cast<std::size_t>(i)]);
  }

  /// Micro-batch k of `step` for `rank`. Throws std::out_of_range outside the window,
  /// for k >= accumulation_steps or rank >= world_size. O(micro-batch size).
  [[nodiscard]] TokenMicroBatch micro_batch(std::uint64_t step, std::uint64_t k, std::uint64_t rank) const {
    if (step < first_step_ || step >= end_step() || k >= accumulation_ || rank >= world_size_) {
      throw std::out_of_range("TokenWindow::micro_batch: step " + std::to_string(step) + ", k " + std::to_string(k) +
                              " or rank " + std::to_string(rank) + " is out of range (expected steps " +
                              std::to_string(first_step_) + ".." + std::to_string(end_step()) + " exclusive, k < " +
                              std::to_string(accumulation_) + ", rank < " + std::to_string(world_size_) + ")");
    }
    const PlannedMicroBatch& b = plan_.batches[plan_.deal[static_cast<std::size_t>(
        ((step - first_step_) * accumulation_ + k) * world_size_ + rank)]];
    TokenMicroBatch out;
    out.indices.resize(static_cast<std::size_t>(b.size()));
    for (std::uint64_t i = 0; i < b.size(); ++i)
      out.indices[static_cast<std::size_t>(i)] =
          order_.index(position_ + plan_.samples[static_cast<std::size_t>(b.begin + i)]);
    out.tokens = b.tokens;
    out.padded = b.padded;
    out.oversize = b.oversize;
    return out;
  }

 private:
  friend class TokenBatchSampler;
  [[nodiscard]] std::uint64_t group() const noexcept { return world_size_ * accumulation_; }

  WindowPlan plan_;
  EpochOrder<FeistelPermutation> order_;
  std::uint64_t position_ = 0;  // the window's first position in the epoch's order
  std::uint64_t first_step_ = 0;
  std::uint64_t world_size_ = 1;
  std::uint64_t accumulation_ = 1;
};

/// Micro-batches under a token budget, with the same number of micro-batches on every rank
/// in every step, known up front on each rank without communication.
///
/// The epoch's order (FeistelPermutation(N, seed, epoch), shared with the other samplers
/// through EpochOrder; the identity without shuffle) is cut into windows of M = window
/// samples. Each window is planned alone (plan_window): sorted by length, cut by the
/// budget, its micro-batches shuffled, balanced to a multiple of G = world_size x
/// accumulation_steps by merging, splitting or, only when neither can, empty micro-batches
/// (never duplicated data), and dealt by cost. Step t of a window reads its micro-batches
/// [t*G, (t+1)*G), round k the W of them from t*G + k*W. Windows are read in order; with
/// `longest_first` the window holding the epoch's longest sample is read first and the
/// micro-batch holding it is its first.
///
/// States count consumed samples of the epoch's plan sequence (the windows' sample
/// sequences in reading order), which does not depend on W or K, so `state(steps, k)`
/// resumes exactly once on another world size or accumulation: the resumed sampler drops
/// the consumed samples of their window, plans the rest for its own G and numbers steps
/// from there. On the same world and accumulation, a state saved at a window's first
/// step (micro_batches_done 0) resumes as the uninterrupted run, micro-batch for
/// micro-batch; one saved inside a window reads the rest of that window's samples, each
/// once, cut and dealt anew (its step count may differ), and then every later window
/// exactly as the uninterrupted run does. The state key's layout hash covers the lengths and these options, so a
/// state of other lengths or budgets is refused.
///
/// Throws config_error from the constructors (bad World or options, world_size x
/// accumulation_steps over 64 bits or over max_group, lengths count != dataset_size, a
/// zero length, a sample over the budget under Oversize::error), naming the option or
/// sample; state_error from resume. Strong guarantee for set_epoch, next_epoch and
/// resume. Complexity: building an epoch plans every window once (O(N log M) time, O(M +
/// N/M) memory) to count its steps; micro_batch(s, k) plans one window (O(M log M)); a
/// TokenWindow from window(s) answers the steps of its window in O(micro-batch size).
/// Deterministic in (lengths, options, seed, epoch, start) and the world's shape.
/// Thread-safety: const members may run concurrently. Iterator invalidation: none (no
/// iterators; TokenWindow values hold their own plan).
class TokenBatchSampler {
 public:
  using options_type = TokenBatchOptions;  ///< the options type it is built from
  /// The family name in saved states.
  static constexpr std::string_view family = "tokens";

  /// Epoch 0 from its start. `lengths` must hold dataset_size values >= 1.
  TokenBatchSampler(std::uint64_t dataset_size, LengthView lengths, World world, TokenBatchOptions options)
      : lengths_(lengths), world_(checked(world)), options_(checked(options)) {
    check_group(world_, options_);
    scan(dataset_size);
    Epoch e = build(EpochOrder<FeistelPermutation>(dataset_size, options_.shuffle, options_.seed), 0);
    epoch_ = std::move(e);
  }

  /// Continues `state` (see resume). Throws as the other constructor and as resume.
  TokenBatchSampler(std::uint64_t dataset_size, LengthView lengths, World world, TokenBatchOptions options,
                    const SamplerState& state)
      : lengths_(lengths), world_(checked(world)), options_(checked(options)) {
    check_group(world_, options_);
    scan(dataset_size);
    state.validate(key(), who);
    Epoch e = build(EpochOrder<FeistelPermutation>(dataset_size, options_.shuffle, options_.seed, {}, state.epoch),
                    state.consumed);
    epoch_ = std::move(e);
  }

  /// The most micro-batches a step may have (G = world_size x accumulation_steps): every window plans
  /// at least G (empty ones when it has fewer samples), so G bounds a window plan whatever the dataset.
  static constexpr std::uint64_t max_group = std::uint64_t{1} << 20;

  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return epoch_.order.dataset_size(); }
  [[nodiscard]] const World& world() const noexcept { return world_; }
  [[nodiscard]] std::uint64_t rank() const noexcept { return world_.rank; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return world_.world_size; }
  [[nodiscard]] const TokenBatchOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::uint64_t accumulation_steps() const noexcept { return options_.accumulation_steps; }
  [[nodiscard]] std::uint64_t micro_batches_per_step() const noexcept { return options_.accumulation_steps; }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_.order.epoch(); }
  /// Samples of the epoch's plan sequence consumed before step 0 (the resumed state's).
  [[nodiscard]] std::uint64_t start() const noexcept { return epoch_.start; }
  /// Optimizer steps left in this epoch: the same on every rank.
  [[nodiscard]] std::uint64_t num_steps() const noexcept { return epoch_.step_start.back(); }
  [[nodiscard]] std::uint64_t size() const noexcept { return num_steps(); }
  /// The epoch's totals over every rank (computed when the epoch was built).
  [[nodiscard]] const TokenEpochStats& stats() const noexcept { return epoch_.stats; }
  /// The 64-bit hash of the lengths and the options that define the order (StateKey::layout).
  [[nodiscard]] std::uint64_t layout_hash() const noexcept { return layout_; }

  /// Selects `epoch` from its beginning. O(N log M). Strong guarantee.
  void set_epoch(std::uint64_t epoch) {
    Epoch e = build(epoch_.order.at(epoch), 0);
    epoch_ = std::move(e);
  }

  /// set_epoch(epoch() + 1); config_error when the epoch would overflow.
  void next_epoch() {
    if (epoch() == UINT64_MAX) {
      detail::throw_config_error(
          "TokenBatchSampler: epoch 18446744073709551615 cannot advance (expected a lower epoch)");
    }
    set_epoch(epoch() + 1);
  }

  /// What saved states must match: the order's key with this family, Tail::uneven and the
  /// layout hash of the lengths and options.
  [[nodiscard]] StateKey key() const noexcept {
    StateKey k =
        EpochOrder<FeistelPermutation>::make_key(family, Tail::uneven, n_, options_.shuffle, options_.seed, {});
    k.layout = layout_;
    k.layout_name = "token lengths or budget options";
    return k;
  }

  /// The state after every rank read `steps_done` steps and, in the next step, the first
  /// `micro_batches_done` rounds. Throws config_error when steps_done > num_steps(),
  /// micro_batches_done >= accumulation_steps, or micro_batches_done > 0 at the end.
  /// O(M log M) inside a window, O(log windows) at a window's start.
  [[nodiscard]] SamplerState state(std::uint64_t steps_done, std::uint64_t micro_batches_done = 0) const {
    const std::uint64_t steps = num_steps();
    if (steps_done > steps || micro_batches_done >= options_.accumulation_steps ||
        (steps_done == steps && micro_batches_done > 0)) {
      detail::throw_config_error(
          "TokenBatchSampler::state: steps_done " + std::to_string(steps_done) + " and micro_batches_done " +
          std::to_string(micro_batches_done) + " are out of range (expected steps_done <= " + std::to_string(steps) +
          ", micro_batches_done < " + std::to_string(options_.accumulation_steps) + " and 0 at the end)");
    }
    std::uint64_t consumed = n_;
    if (steps_done < steps) {
      const std::uint64_t v = visit_of_step(steps_done);
      consumed = epoch_.sample_start[static_cast<std::size_t>(v)] + (v == 0 ? epoch_.offset : 0);
      const std::uint64_t t = steps_done - epoch_.step_start[static_cast<std::size_t>(v)];
      if (t > 0 || micro_batches_done > 0) {
        const TokenWindow w = plan(v);
        consumed += w.plan_
                        .batches[static_cast<std::size_t>((t * options_.accumulation_steps + micro_batches_done) *
                                                          world_.world_size)]
                        .begin;
      }
    }
    SamplerState s = epoch_.order.state(family, Tail::uneven, consumed);
    s.set_key(key());
    return s;
  }

  /// Validates `state` (lengths, options, seed: state_error naming the field) and
  /// continues its epoch where it stopped: step 0 now starts there. World size and
  /// accumulation may differ. Strong guarantee.
  void resume(const SamplerState& state) {
    state.validate(key(), who);
    Epoch e = build(epoch_.order.at(state.epoch), state.consumed);
    epoch_ = std::move(e);
  }

  /// The planned window holding `step`. Throws std::out_of_range when step >= num_steps().
  [[nodiscard]] TokenWindow window(std::uint64_t step) const {
    if (step >= num_steps()) {
      throw std::out_of_range(
          detail::out_of_range_message("TokenBatchSampler::window", "step", step, "num_steps", num_steps()));
    }
    return plan(visit_of_step(step));
  }

  /// Calls f(const TokenWindow&) for every window the epoch (or what a resume left of it)
  /// still reads, in reading order, including windows without steps (all their samples
  /// skipped under Oversize::skip). Plans each: O(N log M) for an epoch.
  template <class F>
  void for_each_window(F&& f) const {
    for (std::uint64_t v = 0; v + 1 < epoch_.step_start.size(); ++v) f(static_cast<const TokenWindow&>(plan(v)));
  }

  /// Calls f(index) for every dataset index of this epoch consumed before start(): the
  /// windows read before it, then the first samples of the window it falls in. O(start())
  /// plus one window plan; nothing when start() is 0.
  template <class F>
  void for_each_consumed(F&& f) const {
    const EpochOrder<FeistelPermutation>& order = epoch_.order;
    for (std::uint64_t v = 0; v < epoch_.first_visit; ++v) {
      const std::uint64_t w = window_of(v, order), first = w * options_.window;
      for (std::uint64_t p = first; p < first + window_size(w); ++p) f(order.index(p));
    }
    if (epoch_.offset == 0) return;
    std::vector<std::uint64_t> positions;
    std::vector<std::uint32_t> lens;
    const TokenWindow whole = plan_visit(order, epoch_.first_visit, 0, positions, lens);
    for (std::uint64_t i = 0; i < epoch_.offset; ++i) f(whole.index_of(i));
  }

  /// This rank's micro-batch k of `step` (plans its window: O(M log M); walk a
  /// TokenWindow to read many). Throws std::out_of_range for a bad step or k.
  [[nodiscard]] TokenMicroBatch micro_batch(std::uint64_t step, std::uint64_t k) const {
    if (k >= options_.accumulation_steps) {
      throw std::out_of_range(detail::out_of_range_message("TokenBatchSampler::micro_batch", "k", k,
                                                           "accumulation_steps", options_.accumulation_steps));
    }
    return window(step).micro_batch(step, k, world_.rank);
  }

 private:
  static constexpr std::string_view who = "TokenBatchSampler";

  struct Epoch {
    EpochOrder<FeistelPermutation> order;
    std::uint64_t start = 0;
    std::uint64_t first_visit = 0;            // visits before it were consumed before the start
    std::uint64_t offset = 0;                 // samples of the first visit consumed before the start
    std::vector<std::uint64_t> sample_start;  // per visit from first_visit: plan-sequence start
    std::vector<std::uint64_t> step_start;    // per visit from first_visit, and the end
    TokenEpochStats stats;
  };

  static World checked(const World& w) {
    w.validate(who);
    return w;
  }
  // G = W x K within 64 bits and within max_group, refused before anything is planned.
  static void check_group(const World& w, const TokenBatchOptions& o) {
    const std::uint64_t g =
        detail::checked_mul(who, "world_size", w.world_size, "accumulation_steps", o.accumulation_steps);
    if (g > max_group) {
      detail::throw_config_error(std::string(who) + ": world_size " + std::to_string(w.world_size) +
                                 " x accumulation_steps " + std::to_string(o.accumulation_steps) + " = " +
                                 std::to_string(g) + " micro-batches per step exceeds max_group " +
                                 std::to_string(max_group) +
                                 " (expected at most that many: every window plans at least one step of them)");
    }
  }
  static TokenBatchOptions checked(const TokenBatchOptions& o) {
    o.validate("TokenBatchOptions");
    return o;
  }

  // One pass over the lengths: checks them, hashes them with the options, finds the longest.
  void scan(std::uint64_t dataset_size) {
    if (lengths_.size != dataset_size) {
      detail::throw_config_error("TokenBatchSampler: lengths has " + std::to_string(lengths_.size) +
                                 " values but dataset_size is " + std::to_string(dataset_size) +
                                 " (expected one length per sample)");
    }
    if (dataset_size > 0 && lengths_.data == nullptr) {
      detail::throw_config_error("TokenBatchSampler: lengths has no data for dataset_size " +
                                 std::to_string(dataset_size) + " (expected a pointer to the lengths)");
    }
    std::uint64_t h = 0x6a09e667f3bcc909u, longest = 0;
    for (std::uint64_t i = 0; i < dataset_size; ++i) {
      const std::uint64_t len = lengths_.data[i];
      if (len == 0) {
        detail::throw_config_error("TokenBatchSampler: sample " + std::to_string(i) +
                                   " has length 0 (expected at least 1 token per sample)");
      }
      if (options_.oversize == Oversize::error && options_.sample_cost(len) > options_.max_tokens) {
        detail::throw_config_error("TokenBatchSampler: sample " + std::to_string(i) + " has length " +
                                   std::to_string(len) + " costing " + std::to_string(options_.sample_cost(len)) +
                                   ", over max_tokens " + std::to_string(options_.max_tokens) +
                                   " (expected at most max_tokens; or choose Oversize::own_batch or Oversize::skip)");
      }
      if (len > longest) {
        longest = len;
        longest_index_ = i;
      }
      h = (h ^ len) * 0x9e3779b97f4a7c15u;
      h ^= h >> 29;
    }
    const TokenBatchOptions& o = options_;
    for (const std::uint64_t v :
         {o.max_tokens, static_cast<std::uint64_t>(o.cost), o.quadratic_q, o.max_samples, o.batch_multiple, o.window,
          std::uint64_t{o.longest_first}, static_cast<std::uint64_t>(o.oversize), dataset_size}) {
      h = detail::hash_field(h, v);
    }
    layout_ = detail::mix64(h);
    n_ = dataset_size;
  }

  [[nodiscard]] std::uint64_t windows() const noexcept { return (n_ + options_.window - 1) / options_.window; }

  // The window read at visit v (of the whole epoch) under `order`.
  [[nodiscard]] std::uint64_t window_of(std::uint64_t v, const EpochOrder<FeistelPermutation>& order) const noexcept {
    if (!options_.longest_first || n_ == 0) return v;
    const std::uint64_t p = order.shuffle() ? order.permutation().inverse(longest_index_) : longest_index_;
    const std::uint64_t first = p / options_.window;
    return v == 0 ? first : (v <= first ? v - 1 : v);
  }

  [[nodiscard]] std::uint64_t window_size(std::uint64_t w) const noexcept {
    return std::min(options_.window, n_ - w * options_.window);
  }

  [[nodiscard]] TokenWindow plan_visit(const EpochOrder<FeistelPermutation>& order, std::uint64_t v,
                                       std::uint64_t offset, std::vector<std::uint64_t>& positions,
                                       std::vector<std::uint32_t>& lens) const {
    const std::uint64_t w = window_of(v, order), size = window_size(w), first = w * options_.window;
    positions.resize(static_cast<std::size_t>(size));
    lens.resize(static_cast<std::size_t>(size));
    order.fill(first, size, positions.data(), 1);
    for (std::uint64_t i = 0; i < size; ++i)
      lens[static_cast<std::size_t>(i)] = lengths_.data[positions[static_cast<std::size_t>(i)]];
    TokenWindow out;
    out.plan_ = plan_window(lens.data(), size, options_, detail::splitmix64(options_.seed ^ detail::splitmix64(w)),
                            order.epoch(), options_.longest_first && v == 0, offset, world_.world_size);
    out.order_ = order;
    out.position_ = first;
    out.world_size_ = world_.world_size;
    out.accumulation_ = options_.accumulation_steps;
    return out;
  }

  [[nodiscard]] TokenWindow plan(std::uint64_t local_visit) const {
    std::vector<std::uint64_t> positions;
    std::vector<std::uint32_t> lens;
    TokenWindow w = plan_visit(epoch_.order, epoch_.first_visit + local_visit, local_visit == 0 ? epoch_.offset : 0,
                               positions, lens);
    w.first_step_ = epoch_.step_start[static_cast<std::size_t>(local_visit)];
    return w;
  }

  // The local visit whose steps hold `step` (< num_steps()).
  [[nodiscard]] std::uint64_t visit_of_step(std::uint64_t step) const noexcept {
    const auto it = std::upper_bound(epoch_.step_start.begin(), epoch_.step_start.end(), step);
    return static_cast<std::uint64_t>(it - epoch_.step_start.begin()) - 1;
  }

  // Plans every window of `order` from plan-sequence position `start` on: the step index and stats.
  [[nodiscard]] Epoch build(EpochOrder<FeistelPermutation> order, std::uint64_t start) const {
    Epoch e;
    e.start = start;
    const std::uint64_t visits = windows(), group = world_.world_size * options_.accumulation_steps;
    std::uint64_t at = 0, v = 0;
    for (; v < visits; ++v) {
      const std::uint64_t size = window_size(window_of(v, order));
      if (at + size > start) break;
      at += size;
    }
    e.first_visit = v;
    e.offset = start - at;
    e.step_start.push_back(0);
    std::vector<std::uint64_t> positions, rank_tokens(static_cast<std::size_t>(world_.world_size));
    std::vector<std::uint32_t> lens;
    double ratio_sum = 0;
    std::uint64_t ratio_steps = 0;
    TokenEpochStats& s = e.stats;
    for (; v < visits; ++v) {
      e.sample_start.push_back(at);
      const TokenWindow w = plan_visit(order, v, v == e.first_visit ? e.offset : 0, positions, lens);
      const WindowPlan& p = w.plan_;
      at += window_size(window_of(v, order));
      e.step_start.push_back(e.step_start.back() + p.steps(group));
      s.micro_batches += p.batches.size();
      s.empty_micro_batches += p.empties;
      s.splits += p.splits;
      s.merges += p.merges;
      s.skipped_samples += p.skipped;
      for (const PlannedMicroBatch& b : p.batches) {
        s.tokens += b.tokens;
        s.padded += b.padded;
        s.oversize_batches += b.oversize ? 1 : 0;
      }
      for (std::uint64_t first = 0; first < p.batches.size(); first += group) {
        std::fill(rank_tokens.begin(), rank_tokens.end(), 0);
        for (std::uint64_t i = 0; i < group; ++i)
          rank_tokens[static_cast<std::size_t>(i % world_.world_size)] +=
              p.batches[p.deal[static_cast<std::size_t>(first + i)]].tokens;
        const auto [lo, hi] = std::minmax_element(rank_tokens.begin(), rank_tokens.end());
        if (*lo == 0) {
          ++s.steps_with_empty_rank;
          continue;
        }
        const double ratio = static_cast<double>(*hi) / static_cast<double>(*lo);
        s.max_step_ratio = std::max(s.max_step_ratio, ratio);
        ratio_sum += ratio;
        ++ratio_steps;
      }
    }
    if (e.sample_start.empty()) e.sample_start.push_back(at);
    s.steps = e.step_start.back();
    s.mean_step_ratio = ratio_steps == 0 ? 1.0 : ratio_sum / static_cast<double>(ratio_steps);
    e.order = std::move(order);
    return e;
  }

  LengthView lengths_;
  World world_;
  TokenBatchOptions options_;
  std::uint64_t n_ = 0;
  std::uint64_t layout_ = 0;
  std::uint64_t longest_index_ = 0;
  Epoch epoch_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_TOKEN_BATCHES_HPP

// distsampler BlendSampler: sources packed on their own, pass after pass, blended by weight as whole sequences.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_BLEND_BLEND_SAMPLER_HPP
#define DISTSAMPLER_BLEND_BLEND_SAMPLER_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../batch_layout.hpp"
#include "../detail/checked.hpp"
#include "../detail/mix.hpp"
#include "../error.hpp"
#include "../feistel.hpp"
#include "../lengths.hpp"
#include "../mixture/schedule.hpp"
#include "../options.hpp"
#include "../packing/options.hpp"
#include "../packing/packed_sequence_sampler.hpp"
#include "../packing/window.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "../worker_schedule.hpp"
#include "../world.hpp"
#include "cache.hpp"
#include "options.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// A blend of K sources of documents, each packed into sequences of at most L tokens on
/// its own, pass after pass, and blended by weight as whole sequences (mix "sequences":
/// weights count sequences, so tokens), split over ranks in micro-batches of M sequences.
///
/// Source i is a PackedSequenceSampler of one rank over its lengths (PackOptions from
/// BlendOptions::pack_options) with its own seed splitmix64(seed ^ splitmix64(i + 1)); its
/// pass q is that sampler's epoch q (a packing plan keyed by (seed, source, q)), so each
/// source walks its passes independently of the others and a source that runs out starts
/// its next pass. The run's sequence order is a stream of positions p = 0, 1, ...,
/// end_steps x mixing_block - 1: position p goes to a source and to that source's ordinal
/// o by MixtureSchedule (every mixing block holds floor(B w_i) or ceil(B w_i) sequences
/// of source i, every prefix of k positions within 2 of k w_i, docs/MIXTURES.md); ordinal
/// o is sequence o - start(q) of the pass q holding it (concat: every pass has floor(T_i /
/// L) sequences; best-fit: each pass its own count). The order depends on the lengths,
/// the options' packing fields, seed, shuffle, weights, schedule and mixing block, never
/// on the world or the batch shape. Step s reads positions [start + s G, start + (s+1)
/// G) in BatchLayout's layout (round k: the k-th run of M x W positions, rank r its r-th
/// M of them). Where the positions left are not a multiple of G (a run resumed with
/// another G, or mid-step on a shape whose rounds end elsewhere), the last step spreads
/// them over every micro-batch as Tail::uneven does: micro-batches of that step hold M or
/// fewer sequences (counts differ by at most 1), and every position is read once.
///
/// State: state(steps_done[, micro_batches_done]) records the consumed prefix of the
/// order (each source's pass and cursor follow from it: source_sequences()); its family
/// words record the source count, L, the mode, the mixing block, end_steps, a hash of the
/// weights and schedule and, per source, its tokens and lengths hash, so resume() refuses
/// a state of another config naming the field. resume() continues on any world size,
/// micro-batch size or accumulation (the mixing block must stay: it defines the order).
///
/// Throws config_error from the constructor: bad World or options (BlendOptions::validate,
/// resolve_batch_shape), the weights and schedule as MixtureSchedule says, a source's
/// lengths as PackedSequenceSampler says (prefixed "sources[i]: "), a source with a
/// positive weight that packs into no sequence, a run of more than 2^64 - 1 positions.
/// Strong guarantee for resume. Memory per rank: each source's pass-0 plan (at most 16 x
/// (plan_limit + 1) bytes) and, per BlendCache, one more plan and one window per source:
/// O(window + sources), nothing O(N). Time: the constructor plans every source's pass 0
/// (O(N_i) each); a position is O(depth) to locate (depth about log2 K) plus, when its
/// pass is not the cache's, a plan of that pass (O(N_i)), and a window plan O(D) when its
/// window is not the cache's; in best-fit, reaching pass q plans passes 1..q once per
/// cache. Deterministic. Thread-safety: const members may run concurrently (each thread
/// with its own BlendCache); resume must not race with anything.
class BlendSampler {
 public:
  using options_type = BlendOptions;  ///< the options type it is built from
  /// The family name in saved states.
  static constexpr std::string_view family = "blend";

  /// Sources `sources` (each a view of its documents' token counts; the memory must
  /// outlive the sampler), weights `weights` (one per source, from step 0), from its start.
  BlendSampler(const std::vector<LengthView>& sources, const std::vector<double>& weights, World world,
               BlendOptions options)
      : world_(checked(world)),
        options_(resolved(std::move(options), world_)),
        schedule_(sizes_of(sources), weights, options_.schedule, options_.mixing_block, who),
        length_(detail::checked_mul(who, "end_steps", options_.end_steps, "mixing block", options_.mixing_block)) {
    passes_.reserve(sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i) {
      try {
        passes_.emplace_back(sources[i].size, sources[i], World(), options_.pack_options(source_seed(i)));
      } catch (const config_error& e) {
        detail::throw_config_error(std::string(who) + ": sources[" + std::to_string(i) + "]: " + e.what());
      }
      const PackedSequenceSampler& p = passes_.back();
      if (p.num_sequences() == 0 && schedule_.used(i)) {
        detail::throw_config_error(
            std::string(who) + ": sources[" + std::to_string(i) + "] packs into no sequence (" +
            std::to_string(p.stats().tokens) + " tokens, seq_len " + std::to_string(options_.seq_len) +
            "; expected at least seq_len tokens in concat, at least 1 in best-fit, for a source with a positive weight)");
      }
    }
    settings_ = settings_hash();
    // What a BlendCache's plans depend on: the settings, seed, shuffle and the lengths' memory
    // (a cached plan views it).
    identity_ = detail::mix64(settings_ ^ detail::splitmix64(options_.seed ^ (options_.shuffle ? 1u : 0u)));
    for (const LengthView& v : sources) {
      identity_ = detail::mix64(identity_ ^ static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(v.data)));
    }
    layout_ = make_layout(0);
  }

  /// Continues `state` (see resume). Throws as the other constructor and as resume.
  BlendSampler(const std::vector<LengthView>& sources, const std::vector<double>& weights, World world,
               BlendOptions options, const SamplerState& state)
      : BlendSampler(sources, weights, world, std::move(options)) {
    resume(state);
  }

  [[nodiscard]] std::size_t num_sources() const noexcept { return passes_.size(); }
  [[nodiscard]] const World& world() const noexcept { return world_; }
  [[nodiscard]] std::uint64_t rank() const noexcept { return world_.rank; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return world_.world_size; }
  /// The options, resolved: accumulation_steps, global_batch_size and mixing_block filled in.
  [[nodiscard]] const BlendOptions& options() const noexcept { return options_; }
  [[nodiscard]] const MixtureSchedule& schedule() const noexcept { return schedule_; }
  /// Always 0: a blend is one run, its sources' passes are its epochs.
  [[nodiscard]] std::uint64_t epoch() const noexcept { return 0; }
  /// Positions (sequences) of the run's order: end_steps x mixing_block.
  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return length_; }
  /// Positions consumed before step 0 (the resumed state's; 0 otherwise).
  [[nodiscard]] std::uint64_t start() const noexcept { return layout_.start(); }
  [[nodiscard]] const BatchLayout& layout() const noexcept { return layout_; }
  [[nodiscard]] std::uint64_t seq_len() const noexcept { return options_.seq_len; }
  [[nodiscard]] PackMode mode() const noexcept { return options_.mode; }
  [[nodiscard]] std::uint64_t micro_batch_size() const noexcept { return layout_.micro_batch_size(); }
  [[nodiscard]] std::uint64_t accumulation_steps() const noexcept { return layout_.accumulation_steps(); }
  [[nodiscard]] std::uint64_t global_batch_size() const noexcept { return layout_.global_batch_size(); }
  /// Optimizer steps left in the run: the same on every rank.
  [[nodiscard]] std::uint64_t num_steps() const noexcept { return layout_.num_steps(); }
  [[nodiscard]] std::uint64_t size() const noexcept { return layout_.num_steps(); }
  /// Micro-batches of `step` on every rank: accumulation_steps, less in step 0 of a
  /// resumed run the rounds of the interrupted step read before. Throws std::out_of_range
  /// when step >= num_steps().
  [[nodiscard]] std::uint64_t micro_batches_in_step(std::uint64_t step) const {
    check(step, 0, "micro_batches_in_step");
    return layout_.micro_batches(step);
  }
  /// This rank's micro-batches left in the run, and number j of them (step-major).
  [[nodiscard]] std::uint64_t micro_batch_count() const { return worker_schedule().total(); }
  [[nodiscard]] MicroBatchId micro_batch_id(std::uint64_t j) const { return worker_schedule().at(0, j); }

  /// Source i's packing (its pass 0): tokens, documents, sequences of pass 0. Throws
  /// std::out_of_range for a bad source.
  [[nodiscard]] const PackedSequenceSampler& source_packing(std::size_t source) const {
    check_source(source);
    return passes_[source];
  }

  /// Sequences of `source` among positions [0, position) of the order (its ordinal at
  /// `position`). Throws std::out_of_range for a bad source. O(depth).
  [[nodiscard]] std::uint64_t source_sequences(std::size_t source, std::uint64_t position) const {
    check_source(source);
    return schedule_.count(source, position, phase_key(), !options_.shuffle);
  }

  /// The source, ordinal, pass and index in its pass of `position` (< dataset_size()).
  /// Plans passes into `cache` as the class comment says. Throws std::out_of_range for a
  /// bad position.
  [[nodiscard]] BlendSequence locate(std::uint64_t position, BlendCache& cache) const {
    if (position >= length_) {
      throw std::out_of_range(
          detail::out_of_range_message("BlendSampler::locate", "position", position, "dataset_size", length_));
    }
    const MixtureSlot slot = schedule_.locate(position, phase_key(), !options_.shuffle);
    BlendSequence out{slot.source, slot.ordinal, 0, 0};
    const auto i = static_cast<std::size_t>(slot.source);
    if (options_.mode == PackMode::concat) {
      const std::uint64_t n = passes_[i].num_sequences();
      out.pass = slot.ordinal / n;
      out.index = slot.ordinal % n;
      return out;
    }
    BlendCache::Source& c = source_cache(cache, i);
    if (c.starts.empty()) c.starts = {0, passes_[i].num_sequences()};
    while (c.starts.back() <= slot.ordinal) {
      const std::uint64_t q = c.starts.size() - 1;
      c.starts.push_back(c.starts.back() + pass(c, i, q).num_sequences());
    }
    const auto at = std::upper_bound(c.starts.begin(), c.starts.end(), slot.ordinal) - 1;
    out.pass = static_cast<std::uint64_t>(at - c.starts.begin());
    out.index = slot.ordinal - *at;
    return out;
  }

  /// The sequence at `position` (< dataset_size()): its source, and its pieces appended to
  /// `out`. Throws std::out_of_range for a bad position.
  std::uint64_t append_sequence(std::uint64_t position, BlendCache& cache, std::vector<PackPiece>& out) const {
    const BlendSequence s = locate(position, cache);
    const auto i = static_cast<std::size_t>(s.source);
    BlendCache::Source& c = source_cache(cache, i);
    pass(c, i, s.pass).append_sequence(s.index, c.window, out);
    return s.source;
  }

  /// This rank's micro-batch k of `step`. Throws std::out_of_range for a bad step or k.
  [[nodiscard]] BlendMicroBatch micro_batch(std::uint64_t step, std::uint64_t k, BlendCache& cache) const {
    return micro_batch_of(step, k, world_.rank, cache);
  }
  [[nodiscard]] BlendMicroBatch micro_batch(std::uint64_t step, std::uint64_t k) const {
    BlendCache cache;
    return micro_batch_of(step, k, world_.rank, cache);
  }

  /// Micro-batch k of `step` of any `rank` of this world (for checks and tools). Throws
  /// std::out_of_range for a bad step, k or rank.
  [[nodiscard]] BlendMicroBatch micro_batch_of(std::uint64_t step, std::uint64_t k, std::uint64_t rank,
                                               BlendCache& cache) const {
    check(step, k, "micro_batch");
    if (rank >= world_.world_size) {
      throw std::out_of_range(
          detail::out_of_range_message("BlendSampler::micro_batch", "rank", rank, "world_size", world_.world_size));
    }
    BlendMicroBatch out;
    const std::uint64_t len = layout_.length(step, k, rank);
    for (std::uint64_t e = 0; e < len; ++e) {
      out.sources.push_back(append_sequence(layout_.position(step, k, rank, e), cache, out.pieces));
      out.sequence_begin.push_back(out.pieces.size());
    }
    return out;
  }

  /// StateKey::layout: a hash of the family words (sources' lengths, L, mode, weights,
  /// schedule, mixing block, end).
  [[nodiscard]] std::uint64_t layout_hash() const noexcept { return settings_; }

  /// Selects `epoch` from the run's start: only 0 exists (a blend is one run, its sources'
  /// passes are its epochs); config_error for another.
  void set_epoch(std::uint64_t epoch) {
    if (epoch != 0) {
      detail::throw_config_error(std::string(who) + ": epoch " + std::to_string(epoch) +
                                 " is out of range (expected 0: a blend is one run, its sources' passes are its epochs)");
    }
    layout_ = make_layout(0);
  }

  /// What saved states must match. O(1).
  [[nodiscard]] StateKey key() const noexcept {
    StateKey k;
    k.sampler = family;
    k.dataset_size = length_;
    k.seed = options_.seed;
    k.shuffle = options_.shuffle;
    k.tail = Tail::uneven;
    k.engine = FeistelPermutation::name({});
    k.engine_version = FeistelPermutation::format_version;
    k.layout = settings_;
    k.layout_name = "blend settings";
    k.accepts_extra = true;
    return k;
  }

  /// The state after every rank finished `steps_done` steps and `micro_batches_done`
  /// rounds of the next. Throws config_error as BatchLayout::consumed. O(K).
  [[nodiscard]] SamplerState state(std::uint64_t steps_done, std::uint64_t micro_batches_done = 0) const {
    SamplerState s;
    s.consumed = layout_.consumed(steps_done, micro_batches_done, "BlendSampler::state");
    s.set_key(key());
    s.extra = words();
    return s;
  }

  /// The state after this rank's first j micro-batches (every rank alike; j up to
  /// micro_batch_count()). Throws config_error past it. O(K).
  [[nodiscard]] SamplerState state_after_micro_batches(std::uint64_t j) const {
    const WorkerSchedule all = worker_schedule();
    if (j > all.total()) {
      detail::throw_config_error("BlendSampler::state_after_micro_batches: j " + std::to_string(j) +
                                 " exceeds micro_batch_count " + std::to_string(all.total()) + " (expected 0.." +
                                 std::to_string(all.total()) + ")");
    }
    if (j == all.total()) return state(num_steps());
    const MicroBatchId id = all.at(0, j);
    return state(id.step, id.micro_batch);
  }

  /// Continues `state` at its consumed position on this world and batch shape. Throws
  /// state_error naming what differs: the family, then (from the family words) the source
  /// count, seq_len, mode, mixing block, end_steps, a source's lengths, the weights or
  /// schedule, then the key's fields (seed, shuffle, ...), an epoch other than 0. Strong
  /// guarantee.
  void resume(const SamplerState& state) {
    check_words(state);
    state.validate(key(), who);
    if (state.epoch != 0) {
      detail::throw_state_error(std::string(who) + ": epoch " + std::to_string(state.epoch) +
                                " is out of range (expected 0: a blend is one run)");
    }
    layout_ = make_layout(state.consumed);
  }

 private:
  static constexpr std::string_view who = "BlendSampler";
  static constexpr std::size_t fixed_words = 6;

  static World checked(World world) {
    world.validate(who);
    return world;
  }

  static BlendOptions resolved(BlendOptions options, const World& world) {
    options.validate("BlendOptions");
    resolve_batch_shape(options, world.world_size, "BlendOptions", "BlendOptions");
    if (options.mixing_block == 0) options.mixing_block = options.global_batch_size;
    return options;
  }

  static std::vector<std::uint64_t> sizes_of(const std::vector<LengthView>& sources) {
    std::vector<std::uint64_t> out;
    out.reserve(sources.size());
    for (const LengthView& s : sources) out.push_back(s.size);
    return out;
  }

  [[nodiscard]] std::uint64_t source_seed(std::size_t i) const noexcept {
    return detail::splitmix64(options_.seed ^ detail::splitmix64(static_cast<std::uint64_t>(i) + 1));
  }

  [[nodiscard]] std::uint64_t phase_key() const noexcept {
    return detail::mix64(options_.seed ^ detail::splitmix64(0x626c656e64u));
  }

  [[nodiscard]] std::uint64_t settings_hash() const noexcept {
    std::uint64_t h = detail::hash_field(0xcbf29ce484222325u, "distsampler-blend-v1");
    for (const std::uint64_t w : words()) h = detail::hash_field(h, w);
    return detail::mix64(h);
  }

  // The family words: K, L, mode, mixing block, end_steps, the weights' hash, then per
  // source its tokens and lengths hash.
  [[nodiscard]] std::vector<std::uint64_t> words() const {
    std::vector<std::uint64_t> w = {static_cast<std::uint64_t>(passes_.size()), options_.seq_len,
                                    static_cast<std::uint64_t>(options_.mode), options_.mixing_block,
                                    options_.end_steps, schedule_.layout_hash()};
    for (const PackedSequenceSampler& p : passes_) {
      w.push_back(p.stats().tokens);
      w.push_back(p.layout_hash());
    }
    return w;
  }

  void check_words(const SamplerState& state) const {
    if (!state.has_key() || state.sampler != family) return;  // validate names the family
    const std::string prefix = std::string(who) + ": ";
    const std::vector<std::uint64_t>& s = state.extra;
    const std::vector<std::uint64_t> mine = words();
    if (s.size() < fixed_words || (s.size() - fixed_words) % 2 != 0 || (s.size() - fixed_words) / 2 != s[0]) {
      detail::throw_state_error(prefix + "the state has " + std::to_string(s.size()) +
                                " family words (expected 6 + 2 per source)");
    }
    auto differs = [&](const std::string& what, const std::string& a, const std::string& b) {
      detail::throw_state_error(prefix + what + " differs (state " + a + ", sampler " + b + ")");
    };
    if (s[0] != mine[0]) differs("the number of sources", std::to_string(s[0]), std::to_string(mine[0]));
    if (s[1] != mine[1]) differs("seq_len", std::to_string(s[1]), std::to_string(mine[1]));
    if (s[2] != mine[2]) {
      differs("mode", s[2] <= 1 ? std::string(to_string(static_cast<PackMode>(s[2]))) : std::to_string(s[2]),
              std::string(to_string(options_.mode)));
    }
    if (s[3] != mine[3]) {
      detail::throw_state_error(prefix + "mixing block differs (state " + std::to_string(s[3]) + ", sampler " +
                                std::to_string(mine[3]) +
                                "; expected the run's: keep its global batch size, or set mixing_block to the state's)");
    }
    if (s[4] != mine[4]) differs("end_steps", std::to_string(s[4]), std::to_string(mine[4]));
    for (std::size_t i = 0; i < passes_.size(); ++i) {
      const std::size_t at = fixed_words + 2 * i;
      const std::string name = "sources[" + std::to_string(i) + "]";
      if (s[at] != mine[at]) {
        differs(name + " lengths", std::to_string(s[at]) + " tokens", std::to_string(mine[at]) + " tokens");
      }
      if (s[at + 1] != mine[at + 1]) {
        detail::throw_state_error(prefix + name + " lengths or window options differ (state hash " +
                                  detail::hex64(s[at + 1]) + ", sampler " + detail::hex64(mine[at + 1]) + ")");
      }
    }
    if (s[5] != mine[5]) {
      detail::throw_state_error(prefix + "weights or schedule differ (state hash " + detail::hex64(s[5]) +
                                ", sampler " + detail::hex64(mine[5]) + ")");
    }
  }

  [[nodiscard]] BatchLayout make_layout(std::uint64_t start) const {
    return BatchLayout(length_, start, options_.micro_batch_size, world_.world_size, options_.accumulation_steps,
                       Tail::uneven, who);
  }

  [[nodiscard]] WorkerSchedule worker_schedule() const {
    return WorkerSchedule(layout_.num_steps(), layout_.accumulation_steps(), 1, who, layout_.lead());
  }

  // The cache's record of source i, clearing a cache of another blend.
  BlendCache::Source& source_cache(BlendCache& cache, std::size_t i) const {
    if (cache.identity_ != identity_ || cache.sources_.size() != passes_.size()) {
      cache.sources_.clear();
      cache.sources_.resize(passes_.size());
      cache.identity_ = identity_;
    }
    return cache.sources_[i];
  }

  // Source i's plan of pass q, in the cache (planned when it holds another pass).
  const PackedSequenceSampler& pass(BlendCache::Source& c, std::size_t i, std::uint64_t q) const {
    if (q == 0) return passes_[i];
    if (!c.pass.has_value()) c.pass.emplace(passes_[i]);
    if (c.pass->epoch() != q) c.pass->set_epoch(q);
    return *c.pass;
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
    if (source >= passes_.size()) {
      throw std::out_of_range(detail::out_of_range_message(who, "source", source, "num_sources", passes_.size()));
    }
  }

  World world_;
  BlendOptions options_;
  MixtureSchedule schedule_;
  std::uint64_t length_ = 0;
  std::vector<PackedSequenceSampler> passes_;  // source i at pass 0
  std::uint64_t settings_ = 0;
  std::uint64_t identity_ = 0;  // what a BlendCache's content depends on
  BatchLayout layout_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_BLEND_BLEND_SAMPLER_HPP

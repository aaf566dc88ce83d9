// distsampler PackedSequenceSampler: documents packed into fixed-length sequences, equal steps, exact elastic resume.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PACKING_PACKED_SEQUENCE_SAMPLER_HPP
#define DISTSAMPLER_PACKING_PACKED_SEQUENCE_SAMPLER_HPP

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../batch_layout.hpp"
#include "../detail/mix.hpp"
#include "../epoch_order.hpp"
#include "../error.hpp"
#include "../feistel.hpp"
#include "../options.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "../worker_schedule.hpp"
#include "../world.hpp"
#include "detail/best_fit.hpp"
#include "detail/epoch.hpp"
#include "detail/plan.hpp"
#include "detail/scan.hpp"
#include "options.hpp"
#include "window.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Sequences of at most seq_len L tokens packed from variable-length documents, with the
/// same number of micro-batches of M sequences on every rank in every step, known on each
/// rank without communication, and no index files.
///
/// The epoch's document order: chunks of C consecutive documents in the order
/// FeistelPermutation(chunks, seed, epoch) (EpochOrder), every D / C of them a window,
/// whose documents are shuffled by FeistelPermutation(window size, a key of (seed, window),
/// epoch); without shuffle, the documents in index order. PackMode::concat reads that
/// order as one token stream cut into sequences of exactly L tokens (sequence j holds
/// tokens [j*L, (j+1)*L)); PackMode::best_fit packs each window's documents (pieces of at
/// most L tokens: longer documents are split) by best-fit decreasing and shuffles the
/// window's sequences. Either way the epoch has one sequence order, independent of the
/// world and the batch shape. Step s reads sequences [start + s*G, start + (s+1)*G), G =
/// M x world_size x accumulation_steps, rank r its micro-batches in BatchLayout's layout:
/// concat drops the last partial step (fewer than (G + 1) x L tokens an epoch), best-fit
/// spreads it over every micro-batch (counts differ by at most 1), filled with empty
/// sequences to M. Documents of 0 tokens are skipped and counted.
///
/// States count consumed sequences of the epoch's order, so state(steps, k) resumes on any
/// world size, micro-batch size or accumulation with every token read exactly once, and,
/// with the same G, exactly the sequences of the uninterrupted run. A concat document cut
/// at the stop continues at its offset. The state key records the mode and L in clear
/// (refused naming the field), the epoch's token count and a hash of the lengths and the
/// window options.
///
/// Throws config_error from the constructors (bad World or options, lengths count !=
/// dataset_size, a document over L in best_fit without split_long); state_error from
/// resume. Strong guarantee for set_epoch, next_epoch and resume. Complexity: an epoch
/// plan reads the lengths once, chunk after chunk in the epoch's order (O(N); the
/// constructor's plan also checks and hashes them), sums each window's tokens and, in
/// best_fit, counts its sequences without placing a piece; it keeps 16 bytes per window,
/// at most plan_limit + 1 records whatever N (above plan_limit windows, every k-th).
/// A micro-batch plans its window: O(D), plus a walk of up to k - 1 windows' counts when
/// the plan records every k-th (a PackWindow reused over calls plans each window once and
/// walks on from it). Deterministic in (lengths, options, seed, epoch, start)
/// and the world's shape. Thread-safety: const members may run concurrently (each thread
/// with its own PackWindow). Iterator invalidation: none (no iterators).
class PackedSequenceSampler {
 public:
  using options_type = PackOptions;  ///< the options type it is built from
  /// The family name in saved states.
  static constexpr std::string_view family = "pack";

  /// Epoch 0 from its start. `lengths` must hold dataset_size token counts.
  PackedSequenceSampler(std::uint64_t dataset_size, LengthView lengths, World world, PackOptions options)
      : lengths_(lengths), world_(checked(world)), options_(checked(options, world_)) {
    Epoch e = first_plan(dataset_size, 0);
    finish(e, 0);
    epoch_ = std::move(e);
  }

  /// Continues `state` (see resume). Throws as the other constructor and as resume.
  PackedSequenceSampler(std::uint64_t dataset_size, LengthView lengths, World world, PackOptions options,
                        const SamplerState& state)
      : lengths_(lengths), world_(checked(world)), options_(checked(options, world_)) {
    Epoch e = first_plan(dataset_size, state.epoch);
    check_state(state);
    finish(e, state.consumed);
    epoch_ = std::move(e);
  }

  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return n_; }
  [[nodiscard]] const World& world() const noexcept { return world_; }
  [[nodiscard]] std::uint64_t rank() const noexcept { return world_.rank; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return world_.world_size; }
  /// The options, with accumulation_steps and global_batch_size resolved.
  [[nodiscard]] const PackOptions& options() const noexcept { return options_; }
  [[nodiscard]] PackMode mode() const noexcept { return options_.mode; }
  [[nodiscard]] std::uint64_t seq_len() const noexcept { return options_.seq_len; }
  [[nodiscard]] std::uint64_t micro_batch_size() const noexcept { return options_.micro_batch_size; }
  [[nodiscard]] std::uint64_t accumulation_steps() const noexcept { return options_.accumulation_steps; }
  [[nodiscard]] std::uint64_t global_batch_size() const noexcept { return options_.global_batch_size; }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_.epoch; }
  /// Sequences of the epoch's order consumed before step 0 (the resumed state's).
  [[nodiscard]] std::uint64_t start() const noexcept { return epoch_.layout.start(); }
  /// The epoch's sequence order's length.
  [[nodiscard]] std::uint64_t num_sequences() const noexcept { return epoch_.layout.dataset_size(); }
  /// Optimizer steps left in this epoch: the same on every rank.
  [[nodiscard]] std::uint64_t num_steps() const noexcept { return epoch_.layout.num_steps(); }
  [[nodiscard]] std::uint64_t size() const noexcept { return num_steps(); }
  /// Micro-batches of `step` on every rank: accumulation_steps, less in step 0 of a
  /// resumed epoch the rounds of the interrupted step read before (BatchLayout::lead).
  [[nodiscard]] std::uint64_t micro_batches_in_step(std::uint64_t step) const noexcept {
    return epoch_.layout.micro_batches(step);
  }
  /// This rank's micro-batches left in the epoch, and number j of them (step-major).
  [[nodiscard]] std::uint64_t micro_batch_count() const { return schedule().total(); }
  [[nodiscard]] MicroBatchId micro_batch_id(std::uint64_t j) const { return schedule().at(0, j); }
  /// The step layout over the epoch's sequence order (positions are sequence numbers).
  [[nodiscard]] const BatchLayout& layout() const noexcept { return epoch_.layout; }
  [[nodiscard]] const PackEpochStats& stats() const noexcept { return epoch_.stats; }
  /// Bytes the epoch plan keeps: its window records, at most 16 x (plan_limit + 1).
  [[nodiscard]] std::uint64_t plan_bytes() const noexcept { return epoch_.records.bytes(); }
  /// Windows per record of the epoch plan (1 up to plan_limit windows).
  [[nodiscard]] std::uint64_t plan_stride() const noexcept { return epoch_.records.stride; }
  /// StateKey::layout: a 40-bit hash of the lengths and window options, then L (23 bits) and the mode (1 bit).
  [[nodiscard]] std::uint64_t layout_hash() const noexcept { return layout_; }

  /// What saved states must match.
  [[nodiscard]] StateKey key() const noexcept {
    StateKey k = EpochOrder<FeistelPermutation>::make_key(family, mode_tail(), tokens_, options_.shuffle,
                                                          options_.seed, {});
    k.layout = layout_;
    k.layout_name = "document lengths or window options";
    return k;
  }

  /// Selects `epoch` from its beginning. Strong guarantee.
  void set_epoch(std::uint64_t epoch) {
    Epoch e = plan_epoch(epoch, nullptr);
    finish(e, 0);
    epoch_ = std::move(e);
  }

  /// set_epoch(epoch() + 1); config_error when the epoch would overflow.
  void next_epoch() {
    if (epoch() == UINT64_MAX) {
      detail::throw_config_error(std::string(who) +
                                 ": epoch 18446744073709551615 cannot advance (expected a lower epoch)");
    }
    set_epoch(epoch() + 1);
  }

  /// The state after every rank read `steps_done` steps and, in the next step, the first
  /// `micro_batches_done` micro-batches. Throws config_error when steps_done > num_steps(),
  /// micro_batches_done >= micro_batches_in_step(steps_done), or micro_batches_done > 0 at
  /// the end. O(1). A mid-step state resumes as DistributedBatchSampler's (BatchLayout).
  [[nodiscard]] SamplerState state(std::uint64_t steps_done, std::uint64_t micro_batches_done = 0) const {
    SamplerState s;
    s.epoch = epoch_.epoch;
    s.consumed = epoch_.layout.consumed(steps_done, micro_batches_done, "PackedSequenceSampler::state");
    s.set_key(key());
    return s;
  }
  /// The state after this rank's first j micro-batches (j up to micro_batch_count()).
  [[nodiscard]] SamplerState state_after_micro_batches(std::uint64_t j) const {
    if (j >= micro_batch_count()) return state(num_steps());
    const MicroBatchId id = micro_batch_id(j);
    return state(id.step, id.micro_batch);
  }

  /// Validates `state` (mode, seq_len, lengths, options, seed: state_error naming the
  /// field) and continues its epoch where it stopped: step 0 now starts there. World size,
  /// micro-batch size and accumulation may differ. Strong guarantee.
  void resume(const SamplerState& state) {
    check_state(state);
    Epoch e = state.epoch == epoch_.epoch ? epoch_ : plan_epoch(state.epoch, nullptr);
    finish(e, state.consumed);
    epoch_ = std::move(e);
  }

  /// Sequence j (< num_sequences()) of the epoch's order, appended to `out` as pieces.
  /// Plans the windows it needs into `cache`. Throws std::out_of_range for a bad j.
  void append_sequence(std::uint64_t j, PackWindow& cache, std::vector<PackPiece>& out) const {
    if (j >= num_sequences()) {
      throw std::out_of_range(
          detail::out_of_range_message("PackedSequenceSampler::sequence", "j", j, "num_sequences", num_sequences()));
    }
    if (options_.mode == PackMode::best_fit) {
      plan_at(epoch_, j, cache);
      const std::uint64_t local = j - cache.begin_;
      out.insert(
          out.end(), cache.pieces_.begin() + static_cast<std::ptrdiff_t>(cache.piece_begin_[static_cast<std::size_t>(local)]),
          cache.pieces_.begin() + static_cast<std::ptrdiff_t>(cache.piece_begin_[static_cast<std::size_t>(local + 1)]));
      return;
    }
    std::uint64_t t = j * options_.seq_len, need = options_.seq_len;
    while (need > 0) {
      plan_at(epoch_, t, cache);
      const std::uint64_t local = t - cache.begin_;
      const auto at = std::upper_bound(cache.prefix_.begin(), cache.prefix_.end(), local) - 1;
      const std::uint64_t i = static_cast<std::uint64_t>(at - cache.prefix_.begin());
      const std::uint64_t take = std::min(cache.prefix_[static_cast<std::size_t>(i + 1)] - local, need);
      out.push_back(PackPiece{cache.documents_[static_cast<std::size_t>(i)],
                              local - cache.prefix_[static_cast<std::size_t>(i)], take});
      t += take;
      need -= take;
    }
  }

  /// Sequence j of the epoch's order as pieces. Throws as append_sequence.
  [[nodiscard]] std::vector<PackPiece> sequence(std::uint64_t j) const {
    PackWindow cache;
    std::vector<PackPiece> out;
    append_sequence(j, cache, out);
    return out;
  }

  /// This rank's micro-batch k of `step`: M sequences, the real ones first, then empty
  /// markers. Throws std::out_of_range for a bad step or k. O(D) per window planned.
  [[nodiscard]] PackMicroBatch micro_batch(std::uint64_t step, std::uint64_t k, PackWindow& cache) const {
    return micro_batch_of(step, k, world_.rank, cache);
  }
  [[nodiscard]] PackMicroBatch micro_batch(std::uint64_t step, std::uint64_t k) const {
    PackWindow cache;
    return micro_batch_of(step, k, world_.rank, cache);
  }

  /// Micro-batch k of `step` of any `rank` of this world (for checks and tools).
  [[nodiscard]] PackMicroBatch micro_batch_of(std::uint64_t step, std::uint64_t k, std::uint64_t rank,
                                              PackWindow& cache) const {
    const BatchLayout& l = epoch_.layout;
    if (step >= l.num_steps() || k >= l.micro_batches(step) || rank >= l.world_size()) {
      throw std::out_of_range("PackedSequenceSampler::micro_batch: step " + std::to_string(step) + ", k " +
                              std::to_string(k) + " or rank " + std::to_string(rank) +
                              " is out of range (expected step < " + std::to_string(l.num_steps()) + ", k < " +
                              std::to_string(step < l.num_steps() ? l.micro_batches(step) : l.accumulation_steps()) +
                              ", rank < " + std::to_string(l.world_size()) + ")");
    }
    PackMicroBatch out;
    const std::uint64_t real = l.length(step, k, rank);
    const std::uint64_t first = real == 0 ? 0 : l.position(step, k, rank, 0);
    for (std::uint64_t e = 0; e < l.micro_batch_size(); ++e) {
      if (e < real) append_sequence(first + e, cache, out.pieces);
      out.sequence_begin.push_back(out.pieces.size());
    }
    return out;
  }

  /// Calls f(document) for every document no sequence of the epoch starts: those of 0
  /// tokens and, in concat, those starting in the last partial sequence. O(N) for the
  /// first kind (a scan of the lengths), O(D) for the second.
  template <class F>
  void for_each_unsequenced(PackWindow& cache, F&& f) const {
    for (std::uint64_t d = 0; d < n_; ++d) {
      if (lengths_.data[d] == 0) f(d);
    }
    if (options_.mode != PackMode::concat) return;
    for (std::uint64_t t = num_sequences() * options_.seq_len; t < tokens_;) {
      plan_at(epoch_, t, cache);
      const std::uint64_t local = t - cache.begin_;
      std::uint64_t i = static_cast<std::uint64_t>(std::upper_bound(cache.prefix_.begin(), cache.prefix_.end(), local) -
                                                   cache.prefix_.begin()) - 1;
      for (; i < cache.documents_.size(); ++i) {
        if (cache.prefix_[static_cast<std::size_t>(i)] >= local &&
            cache.prefix_[static_cast<std::size_t>(i + 1)] > cache.prefix_[static_cast<std::size_t>(i)])
          f(cache.documents_[static_cast<std::size_t>(i)]);
      }
      t = cache.end_;
    }
  }

 private:
  static constexpr std::string_view who = "PackedSequenceSampler";

  using Epoch = detail::PackEpoch;

  static World checked(const World& w) {
    w.validate(who);
    return w;
  }
  static PackOptions checked(PackOptions o, const World& w) {
    o.validate("PackOptions");
    resolve_batch_shape(o, w.world_size, "PackOptions", "PackOptions");
    return o;
  }

  [[nodiscard]] Tail mode_tail() const noexcept { return options_.mode == PackMode::concat ? Tail::drop : Tail::uneven; }

  // The constructor's plan of `epoch`: checks the lengths and, in the same pass, sums,
  // counts and hashes them.
  [[nodiscard]] Epoch first_plan(std::uint64_t dataset_size, std::uint64_t epoch) {
    detail::check_lengths(lengths_, dataset_size, who);
    n_ = dataset_size;
    geometry_ = detail::PackGeometry(n_, options_);
    detail::LengthDigest digest(options_.seq_len);
    Epoch e = plan_epoch(epoch, &digest);
    tokens_ = digest.tokens();
    zeros_ = digest.zeros();
    longer_ = options_.mode == PackMode::best_fit ? digest.longer() : 0;
    layout_ = digest.layout(n_, options_);
    identity_ = detail::splitmix64(layout_ ^ detail::splitmix64(options_.seed + (options_.shuffle ? 1u : 0u)));
    if (longer_ != 0 && !options_.split_long) detail::refuse_longer(lengths_, options_.seq_len, who);
    return e;
  }

  [[nodiscard]] WorkerSchedule schedule() const {
    const BatchLayout& l = epoch_.layout;
    return WorkerSchedule(l.num_steps(), l.accumulation_steps(), 1, "PackedSequenceSampler", l.lead());
  }

  void check_state(const SamplerState& state) const {
    detail::check_pack_state(state, family, layout_, tokens_, who);
    state.validate(key(), who);
  }

  // Window v's tokens (concat) or best-fit sequences, from its lengths: O(D).
  [[nodiscard]] std::uint64_t window_size(const Epoch& e, std::uint64_t v, detail::BestFitCounter* counter) const {
    std::uint64_t tokens = 0;
    geometry_.for_each_chunk(e.chunks, v, [&](std::uint64_t begin, std::uint64_t end, std::uint64_t) {
      const std::uint32_t* p = lengths_.data + begin;
      const auto k = static_cast<std::size_t>(end - begin);
      if (counter != nullptr) counter->add_documents(p, k);
      else tokens += detail::sum_lengths(p, k);
    });
    return counter != nullptr ? counter->count() : tokens;
  }

  // Plans into `cache` the window of epoch e holding stream position x (< the stream's end):
  // token x in concat, sequence x in best-fit. A binary search finds x's record, then the
  // window is found by counting the record's windows from its first (or from the cached
  // window, when x lies after it in the same record).
  void plan_at(const Epoch& e, std::uint64_t x, PackWindow& cache) const {
    const bool same = cache.identity_ == identity_ && cache.epoch_ == e.epoch && cache.visit_ != UINT64_MAX;
    if (same && cache.begin_ <= x && x < cache.end_) return;
    const bool fit = options_.mode == PackMode::best_fit;
    const std::vector<std::uint64_t>& starts = fit ? e.records.sequences : e.records.tokens;
    const std::uint64_t stride = e.records.stride, r = detail::EpochRecords::record_of(starts, x);
    std::uint64_t v = r * stride, begin = starts[static_cast<std::size_t>(r)];
    if (same && cache.visit_ / stride == r && cache.end_ <= x) {
      v = cache.visit_ + 1;
      begin = cache.end_;
    }
    const std::uint64_t last = std::min(geometry_.windows, (r + 1) * stride) - 1;
    if (v < last) {
      detail::BestFitCounter counter(fit ? options_.seq_len : 1);
      for (; v < last; ++v) {
        const std::uint64_t end = begin + window_size(e, v, fit ? &counter : nullptr);
        if (x < end) break;
        begin = end;
      }
    }
    plan_in(e, v, cache);
    cache.begin_ = begin;
    cache.end_ = begin + (fit ? cache.sequences() : cache.prefix_.back());
  }

  // The tokens of epoch e's stream before window v.
  [[nodiscard]] std::uint64_t tokens_before(const Epoch& e, std::uint64_t v) const {
    const std::uint64_t r = v / e.records.stride;
    std::uint64_t t = e.records.tokens[static_cast<std::size_t>(r)];
    for (std::uint64_t w = r * e.records.stride; w < v; ++w) t += window_size(e, w, nullptr);
    return t;
  }

  [[nodiscard]] std::uint64_t window_key(std::uint64_t v, std::uint64_t salt) const noexcept {
    return detail::splitmix64(options_.seed ^ detail::splitmix64(v * 2 + salt));
  }

  // Plans window v of epoch `e` into `out` unless it holds it already (its content depends
  // only on the epoch number and this sampler's lengths and options).
  void plan_in(const Epoch& e, std::uint64_t v, PackWindow& out) const {
    if (out.visit_ == v && out.identity_ == identity_ && out.epoch_ == e.epoch) return;
    out.visit_ = UINT64_MAX;  // invalid until planned
    std::vector<std::uint64_t> docs;  // chunk after chunk, each in index order
    geometry_.for_each_chunk(e.chunks, v, [&docs](std::uint64_t begin, std::uint64_t end, std::uint64_t) {
      for (std::uint64_t d = begin; d < end; ++d) docs.push_back(d);
    });
    if (options_.shuffle) detail::shuffle_documents(docs, window_key(v, 0), e.epoch);
    if (options_.mode == PackMode::concat) {
      out.prefix_.assign(1, 0);
      for (const std::uint64_t d : docs) out.prefix_.push_back(out.prefix_.back() + lengths_.data[d]);
      out.documents_ = std::move(docs);
      out.pieces_.clear();
      out.piece_begin_.clear();
    } else {
      std::vector<detail::PackItem> items, scratch;
      detail::cut_pieces(lengths_.data, docs, options_.seq_len, items);
      detail::sort_longest_first(items, scratch);
      std::vector<std::uint32_t> bin_of;
      detail::BestFitPacker packer(options_.seq_len);
      const std::uint64_t bins = packer.pack(items, bin_of);
      const std::vector<std::uint64_t> pos = detail::bin_places(bins, options_.shuffle, window_key(v, 1), e.epoch);
      detail::lay_out_bins(items, bin_of, pos, out.pieces_, out.piece_begin_);
      out.documents_ = std::move(docs);
      out.prefix_.clear();
    }
    out.identity_ = identity_;
    out.epoch_ = e.epoch;
    out.visit_ = v;
  }

  // Epoch `epoch`'s records: one pass over the lengths in its chunk order, each window's
  // tokens summed (by `digest`, which also counts and hashes, when given) and, in
  // best-fit, its sequences counted without placing a piece.
  [[nodiscard]] Epoch plan_epoch(std::uint64_t epoch, detail::LengthDigest* digest) const {
    Epoch e;
    e.epoch = epoch;
    e.chunks = EpochOrder<FeistelPermutation>(geometry_.chunks, options_.shuffle, options_.seed, {}, epoch);
    const bool fit = options_.mode == PackMode::best_fit;
    detail::EpochRecords& rec = e.records;
    rec.stride = detail::EpochRecords::stride_for(geometry_.windows, options_.plan_limit);
    const std::uint64_t records = (geometry_.windows + rec.stride - 1) / rec.stride + 1;
    rec.tokens.reserve(static_cast<std::size_t>(records));
    if (fit) rec.sequences.reserve(static_cast<std::size_t>(records));
    detail::BestFitCounter counter(fit ? options_.seq_len : 1);
    std::uint64_t tokens = 0, sequences = 0;
    for (std::uint64_t v = 0; v < geometry_.windows; ++v) {
      if (v % rec.stride == 0) {
        rec.tokens.push_back(tokens);
        if (fit) rec.sequences.push_back(sequences);
      }
      geometry_.for_each_chunk(e.chunks, v, [&](std::uint64_t begin, std::uint64_t end, std::uint64_t c) {
        const std::uint32_t* p = lengths_.data + begin;
        const auto k = static_cast<std::size_t>(end - begin);
        tokens += digest != nullptr ? digest->add_chunk(p, k, c) : detail::sum_lengths(p, k);
        if (fit) counter.add_documents(p, k);
      });
      if (fit) {
        // A best-fit window is packed in memory: its pieces are bounded before any is made.
        if (counter.pieces() > PackOptions::max_window_pieces) {
          detail::throw_config_error(
              "PackedSequenceSampler: window " + std::to_string(v) + " of epoch " + std::to_string(epoch) +
              " holds " + std::to_string(counter.pieces()) + " pieces (its documents cut at seq_len " +
              std::to_string(options_.seq_len) + "), more than the " +
              std::to_string(PackOptions::max_window_pieces) +
              " best-fit packs at once (expected a larger seq_len, a smaller window, or mode concat)");
        }
        sequences += counter.count();
      }
    }
    rec.tokens.push_back(tokens);
    if (fit) rec.sequences.push_back(sequences);
    return e;
  }

  // Epoch e from sequence `start` on: its layout and totals.
  void finish(Epoch& e, std::uint64_t start) const {
    const std::uint64_t l = options_.seq_len;
    const std::uint64_t sequences = options_.mode == PackMode::best_fit ? e.records.sequences.back() : tokens_ / l;
    if (start > sequences) {
      detail::throw_state_error(std::string(who) + ": consumed " + std::to_string(start) +
                                " exceeds the epoch's " + std::to_string(sequences) +
                                " sequences (expected a state of this sampler's epoch)");
    }
    e.layout = BatchLayout(sequences, start, options_.micro_batch_size, world_.world_size, options_.accumulation_steps,
                           mode_tail(), who);
    PackEpochStats& s = e.stats;
    detail::set_epoch_counts(s, n_, tokens_, sequences, e.layout.num_steps(), zeros_, longer_, l, start);
    if (options_.mode == PackMode::concat) {
      s.read_sequences = e.layout.read_end() - start;
      s.read_tokens = s.read_sequences * l;
      s.dropped_tokens = tokens_ - start * l - s.read_tokens;
    } else {
      // The tokens before `start`: the windows before its window, then its first sequences.
      s.read_tokens = tokens_;
      if (start != 0 && start < sequences) {
        PackWindow cache;
        plan_at(e, start, cache);
        std::uint64_t before = tokens_before(e, cache.visit_);
        for (std::uint64_t p = 0; p < cache.piece_begin_[static_cast<std::size_t>(start - cache.begin_)]; ++p)
          before += cache.pieces_[static_cast<std::size_t>(p)].length;
        s.read_tokens -= before;
      } else if (start == sequences) {
        s.read_tokens = 0;
      }
      s.empty_sequences = e.layout.remainder() == 0 ? 0 : e.layout.global_batch_size() - e.layout.remainder();
    }
  }

  LengthView lengths_;
  World world_;
  PackOptions options_;
  std::uint64_t n_ = 0;
  std::uint64_t tokens_ = 0;
  std::uint64_t zeros_ = 0;
  std::uint64_t longer_ = 0;
  std::uint64_t layout_ = 0;
  std::uint64_t identity_ = 0;  // layout_, seed and shuffle: what a PackWindow's content depends on besides the epoch
  detail::PackGeometry geometry_;
  Epoch epoch_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PACKING_PACKED_SEQUENCE_SAMPLER_HPP

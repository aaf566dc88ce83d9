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
/// spreads it over every micro-batch (counts differ by at most 1) and fills each with
/// empty sequences to M. Documents of 0 tokens are skipped and counted.
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
/// resume. Strong guarantee for set_epoch, next_epoch and resume. Complexity: the
/// constructor reads the lengths once, sequentially (O(N)); an epoch plan is O(N / C) time
/// (concat) or counts every window's best-fit sequences (best_fit, O(N) sequential reads, no
/// piece placed), and keeps 8 bytes per
/// chunk and 16 per window; a micro-batch plans one window: O(D) (a PackWindow reused over
/// calls plans each window once). Deterministic in (lengths, options, seed, epoch, start)
/// and the world's shape. Thread-safety: const members may run concurrently (each thread
/// with its own PackWindow). Iterator invalidation: none (no iterators).
class PackedSequenceSampler {
 public:
  /// The family name in saved states.
  static constexpr std::string_view family = "pack";

  /// Epoch 0 from its start. `lengths` must hold dataset_size token counts.
  PackedSequenceSampler(std::uint64_t dataset_size, DocumentLengths lengths, World world, PackOptions options)
      : lengths_(lengths), world_(checked(world)), options_(checked(options, world_)) {
    scan(dataset_size);
    Epoch e = build(0, 0);
    epoch_ = std::move(e);
  }

  /// Continues `state` (see resume). Throws as the other constructor and as resume.
  PackedSequenceSampler(std::uint64_t dataset_size, DocumentLengths lengths, World world, PackOptions options,
                        const SamplerState& state)
      : lengths_(lengths), world_(checked(world)), options_(checked(options, world_)) {
    scan(dataset_size);
    check_state(state);
    Epoch e = build(state.epoch, state.consumed);
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
  /// Bytes the epoch plan keeps (chunk token counts and the per-window index).
  [[nodiscard]] std::uint64_t plan_bytes() const noexcept {
    return 8 * (chunk_tokens_.size() + epoch_.token_start.size() + epoch_.sequence_start.size());
  }
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
    Epoch e = build(epoch, 0);
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
    Epoch e = build(state.epoch, state.consumed);
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
      const std::uint64_t v = window_of(epoch_.sequence_start, j);
      plan(v, cache);
      const std::uint64_t local = j - epoch_.sequence_start[static_cast<std::size_t>(v)];
      out.insert(
          out.end(), cache.pieces_.begin() + static_cast<std::ptrdiff_t>(cache.begin_[static_cast<std::size_t>(local)]),
          cache.pieces_.begin() + static_cast<std::ptrdiff_t>(cache.begin_[static_cast<std::size_t>(local + 1)]));
      return;
    }
    std::uint64_t t = j * options_.seq_len, need = options_.seq_len;
    while (need > 0) {
      const std::uint64_t v = window_of(epoch_.token_start, t);
      plan(v, cache);
      const std::uint64_t local = t - epoch_.token_start[static_cast<std::size_t>(v)];
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
                              ", rank < " + std::to_string(l.world_size()) +
                              ")");
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
      const std::uint64_t v = window_of(epoch_.token_start, t);
      plan(v, cache);
      const std::uint64_t local = t - epoch_.token_start[static_cast<std::size_t>(v)];
      std::uint64_t i = static_cast<std::uint64_t>(std::upper_bound(cache.prefix_.begin(), cache.prefix_.end(), local) -
                                                   cache.prefix_.begin()) - 1;
      for (; i < cache.documents_.size(); ++i) {
        if (cache.prefix_[static_cast<std::size_t>(i)] >= local &&
            cache.prefix_[static_cast<std::size_t>(i + 1)] > cache.prefix_[static_cast<std::size_t>(i)])
          f(cache.documents_[static_cast<std::size_t>(i)]);
      }
      t = epoch_.token_start[static_cast<std::size_t>(v + 1)];
    }
  }

 private:
  static constexpr std::string_view who = "PackedSequenceSampler";

  struct Epoch {
    std::uint64_t epoch = 0;
    EpochOrder<FeistelPermutation> chunks;     // the chunk order
    std::vector<std::uint64_t> token_start;    // per window, and the end: stream tokens before it
    std::vector<std::uint64_t> sequence_start; // best-fit: per window, and the end
    BatchLayout layout;
    PackEpochStats stats;
  };

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

  void scan(std::uint64_t dataset_size) {
    detail::LengthScan found = detail::scan_lengths(lengths_, dataset_size, options_, who);
    chunk_tokens_.swap(found.chunk_tokens);
    n_ = dataset_size;
    tokens_ = found.tokens;
    zeros_ = found.zeros;
    longer_ = found.longer;
    layout_ = found.layout;
  }

  [[nodiscard]] WorkerSchedule schedule() const {
    const BatchLayout& l = epoch_.layout;
    return WorkerSchedule(l.num_steps(), l.accumulation_steps(), 1, "PackedSequenceSampler", l.lead());
  }

  void check_state(const SamplerState& state) const {
    detail::check_pack_state(state, family, layout_, tokens_, who);
    state.validate(key(), who);
  }

  [[nodiscard]] std::uint64_t chunks_per_window() const noexcept { return options_.window / options_.chunk; }
  [[nodiscard]] std::uint64_t num_chunks() const noexcept { return chunk_tokens_.size(); }
  [[nodiscard]] std::uint64_t num_windows() const noexcept {
    return (num_chunks() + chunks_per_window() - 1) / chunks_per_window();
  }

  // The window holding stream position x: the last window starting at or before x.
  [[nodiscard]] static std::uint64_t window_of(const std::vector<std::uint64_t>& starts, std::uint64_t x) noexcept {
    return static_cast<std::uint64_t>(std::upper_bound(starts.begin(), starts.end(), x) - starts.begin()) - 1;
  }

  // The documents of window v under `chunks`, chunk after chunk, each chunk in index order.
  void window_documents(const EpochOrder<FeistelPermutation>& chunks, std::uint64_t v,
                        std::vector<std::uint64_t>& out) const {
    out.clear();
    const std::uint64_t first = v * chunks_per_window(), end = std::min(num_chunks(), first + chunks_per_window());
    for (std::uint64_t p = first; p < end; ++p) {
      const std::uint64_t c = chunks.index(p), begin = c * options_.chunk;
      const std::uint64_t stop = std::min(n_, begin + options_.chunk);
      for (std::uint64_t d = begin; d < stop; ++d) out.push_back(d);
    }
  }

  // The pieces of documents `docs` (in order) to pack: 0-token documents left out, longer
  // ones split into L-token pieces and a remainder.
  void items_of(const std::vector<std::uint64_t>& docs, std::vector<detail::PackItem>& items) const {
    items.clear();
    const std::uint64_t l = options_.seq_len;
    for (const std::uint64_t d : docs) {
      const std::uint64_t len = lengths_.data[d];
      for (std::uint64_t off = 0; off < len; off += l) {
        items.push_back(detail::PackItem{d, off, static_cast<std::uint32_t>(std::min(l, len - off))});
      }
    }
  }

  [[nodiscard]] std::uint64_t window_key(std::uint64_t v, std::uint64_t salt) const noexcept {
    return detail::splitmix64(options_.seed ^ detail::splitmix64(v * 2 + salt));
  }

  void plan(std::uint64_t v, PackWindow& out) const { plan_in(epoch_, v, out); }

  // Plans window v of epoch `e` into `out` unless it holds it already (its content depends
  // only on the epoch number and this sampler's lengths and options).
  void plan_in(const Epoch& e, std::uint64_t v, PackWindow& out) const {
    if (out.visit_ == v && out.layout_ == layout_ && out.epoch_ == e.epoch) return;
    out.visit_ = UINT64_MAX;  // invalid until planned
    std::vector<std::uint64_t> docs;
    window_documents(e.chunks, v, docs);
    if (options_.shuffle && docs.size() > 1) {
      const FeistelPermutation shuffle(docs.size(), window_key(v, 0), e.epoch);
      std::vector<std::uint64_t> shuffled(docs.size());
      for (std::uint64_t i = 0; i < docs.size(); ++i)
        shuffled[static_cast<std::size_t>(i)] = docs[static_cast<std::size_t>(shuffle(i))];
      docs.swap(shuffled);
    }
    if (options_.mode == PackMode::concat) {
      out.prefix_.assign(1, 0);
      for (const std::uint64_t d : docs) out.prefix_.push_back(out.prefix_.back() + lengths_.data[d]);
      out.documents_ = std::move(docs);
      out.pieces_.clear();
      out.begin_.clear();
    } else {
      std::vector<detail::PackItem> items, scratch;
      items_of(docs, items);
      detail::sort_longest_first(items, scratch);
      std::vector<std::uint32_t> bin_of;
      detail::BestFitPacker packer(options_.seq_len);
      const std::uint64_t bins = packer.pack(items, bin_of);
      std::vector<std::uint64_t> at(static_cast<std::size_t>(bins) + 1, 0);
      for (const std::uint32_t b : bin_of) ++at[b + 1];
      std::vector<std::uint64_t> pos(static_cast<std::size_t>(bins));  // bin -> its place in the window's order
      const bool shuffled = options_.shuffle && bins > 1;
      const FeistelPermutation shuffle = shuffled ? FeistelPermutation(bins, window_key(v, 1), e.epoch) : FeistelPermutation();
      for (std::uint64_t i = 0; i < bins; ++i) pos[static_cast<std::size_t>(shuffled ? shuffle(i) : i)] = i;
      out.begin_.assign(static_cast<std::size_t>(bins) + 1, 0);
      for (std::uint64_t b = 0; b < bins; ++b)
        out.begin_[static_cast<std::size_t>(pos[static_cast<std::size_t>(b)] + 1)] =
            at[static_cast<std::size_t>(b + 1)];
      for (std::uint64_t i = 0; i < bins; ++i)
        out.begin_[static_cast<std::size_t>(i + 1)] += out.begin_[static_cast<std::size_t>(i)];
      std::vector<std::uint64_t> fill(out.begin_.begin(), out.begin_.end() - 1);
      out.pieces_.resize(items.size());
      for (std::size_t i = 0; i < items.size(); ++i) {
        const detail::PackItem& it = items[i];
        out.pieces_[static_cast<std::size_t>(
            fill[static_cast<std::size_t>(pos[static_cast<std::size_t>(bin_of[static_cast<std::size_t>(i)])])]++)] =
            PackPiece{it.document, it.offset, it.length};
      }
      out.documents_ = std::move(docs);
      out.prefix_.clear();
    }
    out.layout_ = layout_;
    out.epoch_ = e.epoch;
    out.visit_ = v;
  }

  // The epoch's plan from sequence `start` on: the window index, the layout and the totals.
  [[nodiscard]] Epoch build(std::uint64_t epoch, std::uint64_t start) const {
    Epoch e;
    e.epoch = epoch;
    e.chunks = EpochOrder<FeistelPermutation>(num_chunks(), options_.shuffle, options_.seed, {}, epoch);
    const std::uint64_t windows = num_windows(), per = chunks_per_window();
    e.token_start.assign(static_cast<std::size_t>(windows) + 1, 0);
    for (std::uint64_t v = 0; v < windows; ++v) {
      std::uint64_t sum = 0;
      for (std::uint64_t p = v * per; p < std::min(num_chunks(), (v + 1) * per); ++p)
        sum += chunk_tokens_[static_cast<std::size_t>(e.chunks.index(p))];
      e.token_start[static_cast<std::size_t>(v + 1)] = e.token_start[static_cast<std::size_t>(v)] + sum;
    }
    const std::uint64_t l = options_.seq_len;
    std::uint64_t sequences = tokens_ / l;
    if (options_.mode == PackMode::best_fit) {
      e.sequence_start.assign(static_cast<std::size_t>(windows) + 1, 0);
      // Each window's sequence count, without placing its pieces (chunk after chunk).
      detail::BestFitCounter counter(l);
      for (std::uint64_t v = 0; v < windows; ++v) {
        for (std::uint64_t p = v * per; p < std::min(num_chunks(), (v + 1) * per); ++p) {
          const std::uint64_t begin = e.chunks.index(p) * options_.chunk;
          const std::uint64_t stop = std::min(n_, begin + options_.chunk);
          for (std::uint64_t d = begin; d < stop; ++d) counter.add_document(lengths_.data[d]);
        }
        const auto at = static_cast<std::size_t>(v);
        e.sequence_start[at + 1] = e.sequence_start[at] + counter.count();
      }
      sequences = e.sequence_start.back();
    }
    if (start > sequences) {
      detail::throw_state_error(std::string(who) + ": consumed " + std::to_string(start) +
                                " exceeds the epoch's " + std::to_string(sequences) +
                                " sequences (expected a state of this sampler's epoch)");
    }
    e.layout = BatchLayout(sequences, start, options_.micro_batch_size, world_.world_size, options_.accumulation_steps,
                           mode_tail(), who);
    PackEpochStats& s = e.stats;
    s.documents = n_;
    s.tokens = tokens_;
    s.sequences = sequences;
    s.steps = e.layout.num_steps();
    s.skipped_documents = zeros_;
    s.split_documents = longer_;
    s.seq_len = l;
    s.read_sequences = sequences - start;
    if (options_.mode == PackMode::concat) {
      s.read_sequences = e.layout.read_end() - start;
      s.read_tokens = s.read_sequences * l;
      s.dropped_tokens = tokens_ - start * l - s.read_tokens;
    } else {
      // The tokens before `start`: the windows before its window, then its first sequences.
      s.read_tokens = tokens_;
      if (start != 0 && start < sequences) {
        const std::uint64_t v = window_of(e.sequence_start, start);
        PackWindow cache;
        plan_in(e, v, cache);
        std::uint64_t before = e.token_start[static_cast<std::size_t>(v)];
        for (std::uint64_t p = 0;
             p < cache.begin_[static_cast<std::size_t>(start - e.sequence_start[static_cast<std::size_t>(v)])]; ++p)
          before += cache.pieces_[static_cast<std::size_t>(p)].length;
        s.read_tokens -= before;
      } else if (start == sequences) {
        s.read_tokens = 0;
      }
      s.empty_sequences = e.layout.remainder() == 0 ? 0 : e.layout.global_batch_size() - e.layout.remainder();
    }
    return e;
  }

  DocumentLengths lengths_;
  World world_;
  PackOptions options_;
  std::uint64_t n_ = 0;
  std::uint64_t tokens_ = 0;
  std::uint64_t zeros_ = 0;
  std::uint64_t longer_ = 0;
  std::uint64_t layout_ = 0;
  std::vector<std::uint64_t> chunk_tokens_;
  Epoch epoch_;
};

DISTSAMPLER_NAMESPACE_END

#include "guard.hpp"  // the guards' customisation points for this family

#endif  // DISTSAMPLER_PACKING_PACKED_SEQUENCE_SAMPLER_HPP

// distsampler token budgets: the cost model, the token sampler's options and the pure planner of one window.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TOKEN_PLAN_HPP
#define DISTSAMPLER_TOKEN_PLAN_HPP

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../detail/checked.hpp"
#include "../detail/mix.hpp"
#include "../error.hpp"
#include "../feistel.hpp"
#include "../options.hpp"
#include "../version.hpp"
#include "options.hpp"

DISTSAMPLER_NAMESPACE_BEGIN


/// One micro-batch of a window plan: samples [begin, end) of WindowPlan::samples.
struct PlannedMicroBatch {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t tokens = 0;  ///< sum of the lengths
  std::uint64_t padded = 0;  ///< count x longest
  std::uint64_t cost = 0;    ///< under the options' cost model
  bool oversize = false;     ///< a lone sample over the budget (Oversize::own_batch)

  [[nodiscard]] constexpr std::uint64_t size() const noexcept { return end - begin; }
  [[nodiscard]] constexpr bool empty() const noexcept { return begin == end; }
};

/// The micro-batches of one window, in the order its steps read them, and their deal.
///
/// `samples` holds window offsets (0..window size) in plan order: the micro-batches'
/// samples, each micro-batch contiguous, then the skipped samples. `batches.size()` is a
/// multiple of the group G = world_size x accumulation_steps; step t of the window reads
/// batches [t*G, (t+1)*G), round k of it the W batches from t*G + k*W, and `deal[t*G + k*W +
/// r]` is the batch rank r reads in round k. The sample sequence (without its cuts) does
/// not depend on G, so a prefix of it is a state every world size can continue.
struct WindowPlan {
  std::vector<std::uint32_t> samples;
  std::vector<PlannedMicroBatch> batches;
  std::vector<std::uint32_t> deal;
  std::uint64_t planned = 0;  ///< samples in micro-batches (the rest of `samples` is skipped)
  std::uint64_t skipped = 0;  ///< samples over the budget under Oversize::skip
  std::uint64_t empties = 0;  ///< empty micro-batches added so every rank has one per round
  std::uint64_t splits = 0;   ///< micro-batches added by splitting
  std::uint64_t merges = 0;   ///< micro-batches removed by merging

  [[nodiscard]] std::uint64_t steps(std::uint64_t group) const noexcept { return batches.size() / group; }
};

namespace detail {

[[nodiscard]] constexpr std::uint64_t add_saturating(std::uint64_t a, std::uint64_t b) noexcept {
  return a + b < a ? UINT64_MAX : a + b;
}

// Cost of adding a sample of length `len` to a micro-batch of `count` samples whose cost
// summed `sum` (linear, quadratic) and whose longest is at most `len` (padded, sorted input).
[[nodiscard]] constexpr std::uint64_t cost_with(const TokenBatchOptions& o, std::uint64_t count, std::uint64_t sum,
                                                std::uint64_t len) noexcept {
  return o.cost == TokenCost::padded ? (count + 1) * len : add_saturating(sum, o.sample_cost(len));
}

// Fills tokens, padded and cost of b from its samples.
inline void measure(PlannedMicroBatch& b, const TokenBatchOptions& o, const std::vector<std::uint32_t>& samples,
                    const std::uint32_t* lengths) noexcept {
  std::uint64_t tokens = 0, longest = 0, sum = 0;
  for (std::uint64_t i = b.begin; i < b.end; ++i) {
    const std::uint64_t len = lengths[samples[static_cast<std::size_t>(i)]];
    tokens += len;
    longest = std::max(longest, len);
    sum = add_saturating(sum, o.sample_cost(len));
  }
  b.tokens = tokens;
  b.padded = longest * b.size();
  b.cost = o.cost == TokenCost::padded ? b.padded : sum;
}

// The greedy cut leaves the window's last micro-batch (its longest samples) with whatever
// remained: moves the longest samples of the one before into it while it stays within the
// budget and holds fewer tokens, so a step does not pair a full micro-batch with a sliver.
inline void even_tail(const std::vector<std::uint64_t>& sorted, const TokenBatchOptions& o,
                      std::vector<std::pair<std::uint64_t, bool>>& ends) noexcept {
  std::size_t last = ends.size();
  while (last > 0 && ends[last - 1].second) --last;  // lone oversize samples sort after every other
  if (last < 2 || ends[last - 2].second) return;
  const std::uint64_t begin = last >= 3 ? ends[last - 3].first : 0, end = ends[last - 1].first;
  std::uint64_t cut = ends[last - 2].first, before = 0, after = 0, after_cost = 0;
  for (std::uint64_t i = begin; i < cut; ++i) before += sorted[static_cast<std::size_t>(i)] >> 32;
  for (std::uint64_t i = cut; i < end; ++i) {
    after += sorted[static_cast<std::size_t>(i)] >> 32;
    after_cost = add_saturating(after_cost, o.sample_cost(sorted[static_cast<std::size_t>(i)] >> 32));
  }
  const std::uint64_t longest = sorted[static_cast<std::size_t>(end - 1)] >> 32;
  while (cut - begin > 1) {
    const std::uint64_t d = sorted[static_cast<std::size_t>(cut - 1)] >> 32, count = end - cut + 1;
    const std::uint64_t cost =
        o.cost == TokenCost::padded ? count * longest : add_saturating(after_cost, o.sample_cost(d));
    if (cost > o.max_tokens || (o.max_samples != 0 && count > o.max_samples) || after + d > before - d) break;
    after += d;
    before -= d;
    after_cost = add_saturating(after_cost, o.sample_cost(d));
    --cut;
  }
  ends[last - 2].first = cut;
}

// The natural cut of sorted keys (length << 32 | offset) into micro-batches under the
// budget; appends [begin, end) ranges of `sorted` and oversize flags. Skipped samples are
// appended to `skipped`.
inline void cut_sorted(const std::vector<std::uint64_t>& sorted, const TokenBatchOptions& o,
                       std::vector<std::pair<std::uint64_t, bool>>& ends, std::vector<std::uint32_t>& skipped) {
  const std::uint64_t b = o.batch_multiple;
  std::uint64_t begin = 0, count = 0, sum = 0;
  auto emit = [&](std::uint64_t len) {
    ends.emplace_back(begin + len, false);
    begin += len;
    count -= len;
    sum = 0;
    for (std::uint64_t i = begin; i < begin + count; ++i)
      sum = add_saturating(sum, o.sample_cost(sorted[static_cast<std::size_t>(i)] >> 32));
  };
  for (std::uint64_t i = 0; i < sorted.size();) {
    const std::uint64_t len = sorted[static_cast<std::size_t>(i)] >> 32;
    if (o.sample_cost(len) > o.max_tokens) {
      while (count > 0) emit(count);
      if (o.oversize == Oversize::skip) {
        skipped.push_back(static_cast<std::uint32_t>(sorted[static_cast<std::size_t>(i)]));
      } else {
        ends.emplace_back(i + 1, true);
      }
      begin = ++i;
      continue;
    }
    const bool full = o.max_samples != 0 && count >= o.max_samples;
    if (!full && cost_with(o, count, sum, len) <= o.max_tokens) {
      ++count;
      sum = add_saturating(sum, o.sample_cost(len));
      ++i;
      continue;
    }
    emit(count >= b ? b * (count / b) : count);  // the remainder (< b) carries over, as fairseq's rounding does
  }
  while (count > 0) emit(count);
  even_tail(sorted, o, ends);
}

// Number of micro-batches to cut a micro-batch of `size` samples into.
// A micro-batch that may be cut into one more piece.
struct SplitCandidate {
  std::uint64_t tokens;
  std::uint64_t size;
  std::uint64_t pieces;
  std::uint64_t id;
  // The next piece goes where the pieces hold the most tokens (so the pieces stay as close
  // to the others of their step as they can); ties: the earlier micro-batch.
  friend bool operator<(const SplitCandidate& a, const SplitCandidate& b) noexcept {
    const std::uint64_t pa = a.tokens / a.pieces, pb = b.tokens / b.pieces;
    return pa != pb ? pa < pb : a.id > b.id;
  }
};

// Cuts samples [b.begin, b.end) into `pieces` contiguous non-empty pieces of near-equal tokens.
inline void cut_pieces(const PlannedMicroBatch& b, std::uint64_t pieces, const TokenBatchOptions& o,
                       const std::vector<std::uint32_t>& samples, const std::uint32_t* lengths,
                       std::vector<PlannedMicroBatch>& out) {
  std::uint64_t at = b.begin, seen = 0;
  for (std::uint64_t p = 1; p <= pieces; ++p) {
    PlannedMicroBatch piece;
    piece.begin = at;
    piece.oversize = b.oversize;
    const std::uint64_t target = p == pieces ? b.tokens : b.tokens / pieces * p;
    // Each piece takes at least one sample and leaves one for every later piece.
    while (at < b.end - (pieces - p) &&
           (at == piece.begin || seen + lengths[samples[static_cast<std::size_t>(at)]] <= target)) {
      seen += lengths[samples[static_cast<std::size_t>(at++)]];
    }
    piece.end = at;
    measure(piece, o, samples, lengths);
    out.push_back(piece);
  }
}

}  // namespace detail

/// Plans one window. `lengths[i]` is the length of the window's i-th sample (i < size, in
/// the epoch order). The window is sorted by (length, offset) and cut greedily by the budget
/// (the last two micro-batches then evened: the longest samples of the one before move into
/// the last while it fits and holds fewer tokens); its micro-batches are shuffled by
/// FeistelPermutation(count, shuffle_seed, epoch) when `shuffle`, and, when
/// `longest_to_front`, the one holding the window's longest sample is moved first. Up to
/// here nothing depends on the world. Then `resume_offset` samples of that sequence are
/// dropped as consumed (cutting the micro-batch they end in), and the rest is balanced to a
/// multiple of G = world_size x accumulation_steps micro-batches: by merging adjacent
/// micro-batches within the budget when that reaches the lower multiple, else by cutting
/// the micro-batches whose pieces hold the most tokens into contiguous pieces of near-equal
/// tokens (within the budget: every cost model is monotone), else by empty micro-batches.
/// Last, each round's micro-batches are dealt to ranks by cost: the costliest to the rank
/// with the least cost so far in the step.
///
/// Pure: deterministic in its arguments. O(size log size + G log W) time, O(size + G) memory.
/// Precondition: lengths are >= 1, size < 2^32, world_size >= 1. Throws config_error when
/// world_size x accumulation_steps overflows 64 bits.
[[nodiscard]] inline WindowPlan plan_window(const std::uint32_t* lengths, std::uint64_t size,
                                            const TokenBatchOptions& o, std::uint64_t shuffle_seed, std::uint64_t epoch,
                                            bool longest_to_front, std::uint64_t resume_offset,
                                            std::uint64_t world_size) {
  WindowPlan plan;
  std::vector<std::uint64_t> sorted(static_cast<std::size_t>(size));
  for (std::uint64_t i = 0; i < size; ++i) sorted[static_cast<std::size_t>(i)] = (std::uint64_t{lengths[i]} << 32) | i;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<std::uint64_t, bool>> ends;
  std::vector<std::uint32_t> skipped;
  detail::cut_sorted(sorted, o, ends, skipped);

  const std::uint64_t natural = ends.size();
  std::vector<std::uint64_t> order(static_cast<std::size_t>(natural));
  const FeistelPermutation shuffle(natural, shuffle_seed, epoch);
  for (std::uint64_t i = 0; i < natural; ++i) order[static_cast<std::size_t>(i)] = o.shuffle ? shuffle(i) : i;
  if (longest_to_front && natural > 0) {
    std::swap(order[0], *std::find(order.begin(), order.end(), natural - 1));
  }

  // The sample sequence and its natural cuts, with the first resume_offset samples dropped.
  std::vector<PlannedMicroBatch> batches;
  plan.samples.reserve(static_cast<std::size_t>(size));
  std::uint64_t seen = 0;
  for (const std::uint64_t id : order) {
    const std::uint64_t b = id == 0 ? 0 : ends[static_cast<std::size_t>(id - 1)].first,
                        e = ends[static_cast<std::size_t>(id)].first;
    const std::uint64_t drop = resume_offset > seen ? std::min(resume_offset - seen, e - b) : 0;
    seen += e - b;
    if (drop == e - b) continue;
    PlannedMicroBatch mb;
    mb.begin = plan.samples.size();
    for (std::uint64_t i = b + drop; i < e; ++i)
      plan.samples.push_back(static_cast<std::uint32_t>(sorted[static_cast<std::size_t>(i)]));
    mb.end = plan.samples.size();
    mb.oversize = ends[static_cast<std::size_t>(id)].second;
    detail::measure(mb, o, plan.samples, lengths);
    batches.push_back(mb);
  }
  plan.planned = plan.samples.size();
  plan.skipped = skipped.size();
  plan.samples.insert(plan.samples.end(), skipped.begin(), skipped.end());

  const std::uint64_t group =
      detail::checked_mul("plan_window", "world_size", world_size, "accumulation_steps", o.accumulation_steps);
  const std::uint64_t c = batches.size(), r = c % group;
  const std::size_t protect = longest_to_front && resume_offset == 0 ? 1 : 0;
  if (r != 0) {
    // Merging r adjacent pairs reaches the lower multiple; only worth it when all r fit.
    std::vector<std::uint64_t> merge_at;
    for (std::uint64_t i = 0; i + 1 < c && merge_at.size() < r; ++i) {
      const PlannedMicroBatch &a = batches[static_cast<std::size_t>(i)], &b = batches[static_cast<std::size_t>(i + 1)];
      if (a.oversize || b.oversize) continue;
      const std::uint64_t n = a.size() + b.size();
      const std::uint64_t cost = o.cost == TokenCost::padded ? n * std::max(a.padded / a.size(), b.padded / b.size())
                                                             : detail::add_saturating(a.cost, b.cost);
      if (cost > o.max_tokens || (o.max_samples != 0 && n > o.max_samples)) continue;
      merge_at.push_back(i++);
    }
    std::vector<PlannedMicroBatch> next;
    if (merge_at.size() == r) {
      std::size_t m = 0;
      for (std::uint64_t i = 0; i < c; ++i) {
        PlannedMicroBatch mb = batches[static_cast<std::size_t>(i)];
        if (m < merge_at.size() && merge_at[m] == i) {
          mb.end = batches[static_cast<std::size_t>(++i)].end;
          ++m;
        }
        detail::measure(mb, o, plan.samples, lengths);
        next.push_back(mb);
      }
      plan.merges = r;
    } else {
      std::uint64_t want = group - r;
      std::vector<std::uint64_t> pieces(static_cast<std::size_t>(c), 1);
      std::vector<detail::SplitCandidate> heap;
      for (std::uint64_t i = protect; i < c; ++i) {
        if (batches[static_cast<std::size_t>(i)].size() >= 2)
          heap.push_back(
              {batches[static_cast<std::size_t>(i)].tokens, batches[static_cast<std::size_t>(i)].size(), 1, i});
      }
      std::make_heap(heap.begin(), heap.end());
      while (want > 0 && !heap.empty()) {
        std::pop_heap(heap.begin(), heap.end());
        detail::SplitCandidate top = heap.back();
        heap.pop_back();
        ++top.pieces;
        pieces[static_cast<std::size_t>(top.id)] = top.pieces;
        --want;
        ++plan.splits;
        if (top.pieces < top.size) {
          heap.push_back(top);
          std::push_heap(heap.begin(), heap.end());
        }
      }
      for (std::uint64_t i = 0; i < c; ++i) {
        if (pieces[static_cast<std::size_t>(i)] == 1) {
          next.push_back(batches[static_cast<std::size_t>(i)]);
        } else {
          detail::cut_pieces(batches[static_cast<std::size_t>(i)], pieces[static_cast<std::size_t>(i)], o, plan.samples,
                             lengths, next);
        }
      }
      plan.empties = want;
      for (; want > 0; --want) {
        PlannedMicroBatch empty;
        empty.begin = empty.end = plan.planned;
        next.push_back(empty);
      }
    }
    batches.swap(next);
  }
  plan.batches = std::move(batches);

  // Deal each round by cost: the costliest micro-batch to the rank with the least so far.
  plan.deal.resize(plan.batches.size());
  std::vector<std::uint64_t> total(static_cast<std::size_t>(world_size));
  std::vector<std::uint32_t> ids(static_cast<std::size_t>(world_size)), ranks(ids.size());
  for (std::uint64_t first = 0; first < plan.batches.size(); first += world_size) {
    if ((first / world_size) % o.accumulation_steps == 0) std::fill(total.begin(), total.end(), 0);
    for (std::uint64_t i = 0; i < world_size; ++i)
      ids[static_cast<std::size_t>(i)] = ranks[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(i);
    std::stable_sort(ids.begin(), ids.end(), [&](std::uint32_t a, std::uint32_t b) {
      return plan.batches[static_cast<std::size_t>(first + a)].cost >
             plan.batches[static_cast<std::size_t>(first + b)].cost;
    });
    std::stable_sort(ranks.begin(), ranks.end(), [&](std::uint32_t a, std::uint32_t b) { return total[a] < total[b]; });
    for (std::uint64_t i = 0; i < world_size; ++i) {
      plan.deal[static_cast<std::size_t>(first + ranks[static_cast<std::size_t>(i)])] =
          static_cast<std::uint32_t>(first + ids[static_cast<std::size_t>(i)]);
      total[ranks[static_cast<std::size_t>(i)]] +=
          plan.batches[static_cast<std::size_t>(first + ids[static_cast<std::size_t>(i)])].cost;
    }
  }
  return plan;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_TOKEN_PLAN_HPP

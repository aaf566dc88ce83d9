// distsampler packing internals: the chunks of a window, an epoch plan's window records (at most a fixed number of them) and a packed window's pieces.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PACKING_DETAIL_PLAN_HPP
#define DISTSAMPLER_PACKING_DETAIL_PLAN_HPP

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../../feistel.hpp"
#include "../../version.hpp"
#include "../options.hpp"
#include "best_fit.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

// N documents in chunks of C consecutive ones, windows of floor(D / C) chunks of an
// epoch's chunk order.
struct PackGeometry {
  std::uint64_t documents = 0;
  std::uint64_t chunk = 1;
  std::uint64_t per = 1;  // chunks per window
  std::uint64_t chunks = 0;
  std::uint64_t windows = 0;

  PackGeometry() = default;
  PackGeometry(std::uint64_t n, const PackOptions& o) noexcept
      : documents(n), chunk(o.chunk), per(o.window / o.chunk), chunks((n + o.chunk - 1) / o.chunk),
        windows((chunks + per - 1) / per) {}

  // Calls f(first document, end document, chunk number) for each chunk of window v under
  // the chunk order `order`, in that order.
  template <class Order, class F>
  void for_each_chunk(const Order& order, std::uint64_t v, F&& f) const {
    const std::uint64_t first = v * per, end = std::min(chunks, first + per);
    for (std::uint64_t p = first; p < end; ++p) {
      const std::uint64_t c = order.index(p), begin = c * chunk;
      f(begin, std::min(documents, begin + chunk), c);
    }
  }
};

// The tokens in lengths[0..n).
[[nodiscard]] inline std::uint64_t sum_lengths(const std::uint32_t* lengths, std::size_t n) noexcept {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += lengths[i];
  return sum;
}

// Where every stride-th window of an epoch starts in its stream: the tokens (and, in
// best-fit, the sequences) before window r x stride, then the totals. stride is the least
// that keeps the records at most PackOptions::plan_limit, so the plan has a fixed bound
// whatever N; a position is found by a binary search over the records, then a walk of
// fewer than stride windows (none when stride is 1).
struct EpochRecords {
  std::uint64_t stride = 1;
  std::vector<std::uint64_t> tokens;     // record r: tokens before window r x stride; last: all
  std::vector<std::uint64_t> sequences;  // best-fit: the same in sequences; empty in concat

  [[nodiscard]] static std::uint64_t stride_for(std::uint64_t windows, std::uint64_t limit) noexcept {
    return windows <= limit ? 1 : (windows - 1) / limit + 1;
  }
  // The last record starting at or before x in `starts` (x below its last value).
  [[nodiscard]] static std::uint64_t record_of(const std::vector<std::uint64_t>& starts, std::uint64_t x) noexcept {
    return static_cast<std::uint64_t>(std::upper_bound(starts.begin(), starts.end(), x) - starts.begin()) - 1;
  }
  [[nodiscard]] std::uint64_t bytes() const noexcept { return 8 * (tokens.size() + sequences.size()); }
};

// v[i] becomes v[FeistelPermutation(v.size(), key, epoch)(i)].
inline void shuffle_documents(std::vector<std::uint64_t>& v, std::uint64_t key, std::uint64_t epoch) {
  if (v.size() < 2) return;
  const FeistelPermutation shuffle(v.size(), key, epoch);
  std::vector<std::uint64_t> out(v.size());
  for (std::uint64_t i = 0; i < v.size(); ++i) out[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>(shuffle(i))];
  v.swap(out);
}

// Each bin's place in its window's sequence order: bin FeistelPermutation(bins, key,
// epoch)(i) at place i when shuffled, else bin i at place i.
[[nodiscard]] inline std::vector<std::uint64_t> bin_places(std::uint64_t bins, bool shuffle, std::uint64_t key,
                                                          std::uint64_t epoch) {
  std::vector<std::uint64_t> pos(static_cast<std::size_t>(bins));
  const bool shuffled = shuffle && bins > 1;
  const FeistelPermutation order = shuffled ? FeistelPermutation(bins, key, epoch) : FeistelPermutation();
  for (std::uint64_t i = 0; i < bins; ++i) pos[static_cast<std::size_t>(shuffled ? order(i) : i)] = i;
  return pos;
}

// The pieces of documents `docs` (in order) to pack: 0-token documents left out, longer
// ones cut into pieces of seq_len tokens and a rest.
inline void cut_pieces(const std::uint32_t* lengths, const std::vector<std::uint64_t>& docs, std::uint64_t seq_len,
                       std::vector<PackItem>& items) {
  items.clear();
  for (const std::uint64_t d : docs) {
    const std::uint64_t len = lengths[d];
    for (std::uint64_t off = 0; off < len; off += seq_len) {
      items.push_back(PackItem{d, off, static_cast<std::uint32_t>(std::min(seq_len, len - off))});
    }
  }
}

// The packed window as pieces, sequence after sequence: bin b (of items[i]'s bin_of[i]) is
// sequence pos[b], its pieces in the items' order; sequence j is pieces[begin[j], begin[j + 1]).
template <class Piece>
void lay_out_bins(const std::vector<PackItem>& items, const std::vector<std::uint32_t>& bin_of,
                  const std::vector<std::uint64_t>& pos, std::vector<Piece>& pieces, std::vector<std::uint64_t>& begin) {
  const std::size_t bins = pos.size();
  begin.assign(bins + 1, 0);
  for (const std::uint32_t b : bin_of) ++begin[static_cast<std::size_t>(pos[b]) + 1];
  for (std::size_t j = 0; j < bins; ++j) begin[j + 1] += begin[j];
  std::vector<std::uint64_t> fill(begin.begin(), begin.end() - 1);
  pieces.resize(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const PackItem& it = items[i];
    pieces[static_cast<std::size_t>(fill[static_cast<std::size_t>(pos[bin_of[i]])]++)] =
        Piece{it.document, it.offset, it.length};
  }
}

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PACKING_DETAIL_PLAN_HPP

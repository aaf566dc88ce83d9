// distsampler packing internals: pieces to pack, a stable longest-first sort, the best-fit decreasing packer and its bin counter.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PACKING_DETAIL_BEST_FIT_HPP
#define DISTSAMPLER_PACKING_DETAIL_BEST_FIT_HPP

#include <array>
#include <cstdint>
#include <vector>

#include "../../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

// A piece of a document to place in a sequence: tokens [offset, offset + length) of it.
struct PackItem {
  std::uint64_t document = 0;
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
};

[[nodiscard]] inline unsigned lowest_bit(std::uint64_t x) noexcept {  // x != 0
#if defined(__GNUC__) || defined(__clang__)
  return static_cast<unsigned>(__builtin_ctzll(x));
#else
  unsigned n = 0;
  while ((x & 1u) == 0) {
    x >>= 1;
    ++n;
  }
  return n;
#endif
}

[[nodiscard]] inline unsigned highest_bit(std::uint64_t x) noexcept {  // x != 0
#if defined(__GNUC__) || defined(__clang__)
  return 63u - static_cast<unsigned>(__builtin_clzll(x));
#else
  unsigned n = 0;
  while (x >>= 1) ++n;
  return n;
#endif
}

// Sorts items by length, longest first, keeping the input order among equal lengths:
// a stable two-pass radix sort on 24-bit keys (lengths are below 2^23). O(n).
inline void sort_longest_first(std::vector<PackItem>& items, std::vector<PackItem>& scratch) {
  scratch.resize(items.size());
  for (const unsigned shift : {0u, 12u}) {
    std::array<std::uint64_t, 4097> start{};
    for (const PackItem& it : items) ++start[((0xffffffu - it.length) >> shift & 0xfffu) + 1];
    for (std::size_t d = 1; d < start.size(); ++d) start[d] += start[d - 1];
    for (const PackItem& it : items)
      scratch[static_cast<std::size_t>(start[static_cast<std::size_t>((0xffffffu - it.length) >> shift & 0xfffu)]++)] =
          it;
    items.swap(scratch);
  }
}

// The rooms 0..capacity that have open bins, as a two-level bitset: the least room >= x
// in O(capacity / 4096) words at worst. Shared by the packer and the counter.
class RoomBits {
 public:
  static constexpr std::uint32_t none = 0xffffffffu;

  explicit RoomBits(std::uint64_t capacity)
      : bits0_(static_cast<std::size_t>(capacity) / 64 + 1, 0), bits1_(bits0_.size() / 64 + 1, 0) {}

  void set(std::uint32_t c) noexcept {
    bits0_[c >> 6] |= std::uint64_t{1} << (c & 63);
    bits1_[c >> 12] |= std::uint64_t{1} << ((c >> 6) & 63);
  }
  void reset(std::uint32_t c) noexcept {
    bits0_[c >> 6] &= ~(std::uint64_t{1} << (c & 63));
    if (bits0_[c >> 6] == 0) bits1_[c >> 12] &= ~(std::uint64_t{1} << ((c >> 6) & 63));
  }
  // Clears the words holding room c, whatever else they hold (for emptying after a call).
  void clear_words_of(std::uint32_t c) noexcept {
    bits0_[c >> 6] = 0;
    bits1_[c >> 12] = 0;
  }
  // Calls f(c) for every room set, then clears them all: O(capacity / 64 + rooms).
  template <class F>
  void drain(F f) noexcept {
    for (std::size_t w = 0; w < bits0_.size(); ++w) {
      for (std::uint64_t m = bits0_[w]; m != 0; m &= m - 1) f(static_cast<std::uint32_t>(w * 64 + lowest_bit(m)));
      bits0_[w] = 0;
    }
    for (auto& v : bits1_) v = 0;
  }
  // The least room c >= x that is set, or none.
  [[nodiscard]] std::uint32_t least_at_least(std::uint32_t x) const noexcept {
    std::size_t w = x >> 6;
    const std::uint64_t here = bits0_[w] & (~std::uint64_t{0} << (x & 63));
    if (here != 0) return static_cast<std::uint32_t>(w * 64 + lowest_bit(here));
    ++w;  // the next non-empty word of bits0_, found through bits1_
    if (w >= bits0_.size()) return none;
    std::size_t j = w >> 6;
    std::uint64_t m = bits1_[j] & (~std::uint64_t{0} << (w & 63));
    while (m == 0) {
      if (++j >= bits1_.size()) return none;
      m = bits1_[j];
    }
    const std::size_t word = j * 64 + lowest_bit(m);
    return static_cast<std::uint32_t>(word * 64 + lowest_bit(bits0_[word]));
  }

 private:
  std::vector<std::uint64_t> bits0_;  // room c is set
  std::vector<std::uint64_t> bits1_;  // word c/64 of bits0_ is non-zero
};

// Best-fit decreasing into bins of `capacity` tokens: each item (longest first) goes to the
// bin with the least room that still fits it (the most recently filled of those), else to
// a new bin. Bins with the same room sit on one stack; a two-level bitset finds the least
// room >= x. The packer keeps its O(capacity) tables between calls: O(n) per call plus
// the bitset search.
class BestFitPacker {
 public:
  explicit BestFitPacker(std::uint64_t capacity)
      : capacity_(static_cast<std::uint32_t>(capacity)),
        head_(static_cast<std::size_t>(capacity) + 1, none),
        rooms_(capacity) {}

  // bin_of[i] = the bin of items[i] (items sorted longest first, lengths 1..capacity);
  // returns the number of bins, numbered in the order they were opened.
  std::uint32_t pack(const std::vector<PackItem>& items, std::vector<std::uint32_t>& bin_of) {
    bin_of.resize(items.size());
    room_.clear();
    next_.clear();
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::uint32_t x = items[i].length;
      const std::uint32_t c = rooms_.least_at_least(x);
      std::uint32_t bin;
      if (c == none) {
        bin = static_cast<std::uint32_t>(room_.size());
        room_.push_back(capacity_ - x);
        next_.push_back(none);
      } else {
        bin = pop(c);
        room_[bin] = c - x;
      }
      bin_of[i] = bin;
      if (room_[bin] > 0) push(room_[bin], bin);
    }
    // Empty the stacks for the next call: O(bins).
    for (std::uint32_t bin = 0; bin < room_.size(); ++bin) {
      const std::uint32_t c = room_[bin];
      head_[c] = none;
      rooms_.clear_words_of(c);
    }
    return static_cast<std::uint32_t>(room_.size());
  }

 private:
  static constexpr std::uint32_t none = RoomBits::none;

  void push(std::uint32_t c, std::uint32_t bin) noexcept {
    next_[bin] = head_[c];
    head_[c] = bin;
    rooms_.set(c);
  }
  std::uint32_t pop(std::uint32_t c) noexcept {
    const std::uint32_t bin = head_[c];
    head_[c] = next_[bin];
    if (head_[c] == none) rooms_.reset(c);
    return bin;
  }

  std::uint32_t capacity_;
  std::vector<std::uint32_t> head_;  // per room: the top bin of its stack
  RoomBits rooms_;                   // rooms with a non-empty stack
  std::vector<std::uint32_t> room_;   // per bin
  std::vector<std::uint32_t> next_;   // per bin: the next bin down its stack
};

// The number of bins best-fit decreasing opens for a multiset of lengths, without placing
// any item: what an epoch plan needs of each window. Equal items and bins with equal room
// are interchangeable for the count, so it runs on two histograms (items per length, bins
// per room) and moves whole groups at once: the bins with the least room c >= x each take
// floor(c / x) items of length x in a row (their room falls below x, so the next item goes
// to the next such bin), and new bins take floor(capacity / x) each. O(capacity / 64 +
// distinct lengths + group moves) per call, after O(1) per add(); the same count as
// BestFitPacker::pack on the same items (tests/test_packing.cpp checks both against a
// multiset reference).
class BestFitCounter {
 public:
  explicit BestFitCounter(std::uint64_t capacity)
      : capacity_(static_cast<std::uint32_t>(capacity)),
        inverse_(1.0 / static_cast<double>(capacity)),
        items_(static_cast<std::size_t>(capacity) + 1, 0),
        bins_(static_cast<std::size_t>(capacity) + 1, 0),
        rooms_(capacity) {}

  // One item of `length` tokens (1..capacity).
  void add(std::uint32_t length) noexcept {
    ++items_[length];
    ++documents_;
  }

  // Documents of lengths[0..n) tokens, each cut into pieces of at most capacity: their
  // full pieces (a bin each) counted at once, their rests added as items. Branch-free per
  // document: the quotient is a shift for a power-of-two capacity, else a multiplication
  // by 1 / capacity (exact or one too small, then corrected); a rest of 0 lands in
  // items_[0], which count() ignores.
  void add_documents(const std::uint32_t* lengths, std::size_t n) noexcept {
    std::uint64_t full = 0;
    std::uint32_t* items = items_.data();
    if ((capacity_ & (capacity_ - 1)) == 0) {
      const unsigned shift = lowest_bit(capacity_);
      const std::uint32_t mask = capacity_ - 1;
      for (std::size_t i = 0; i < n; ++i) {
        full += lengths[i] >> shift;
        ++items[lengths[i] & mask];
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t length = lengths[i];
        auto q = static_cast<std::uint32_t>(static_cast<double>(length) * inverse_);
        std::uint32_t rest = length - q * capacity_;
        const std::uint32_t fix = rest >= capacity_ ? 1u : 0u;
        q += fix;
        rest -= fix * capacity_;
        full += q;
        ++items[rest];
      }
    }
    full_ += full;
    documents_ += n;
  }

  // The pieces of the documents added since the last count(): their full pieces and their
  // non-empty rests (documents of 0 tokens are no piece).
  [[nodiscard]] std::uint64_t pieces() const noexcept { return full_ + documents_ - items_[0]; }

  // The bins for the items added since the last call; the counter is empty afterwards.
  std::uint64_t count() noexcept {
    std::uint64_t bins = full_;
    full_ = 0;
    documents_ = 0;
    items_[0] = 0;
    for (std::uint32_t x = capacity_; x > 0; --x) {  // longest first
      if (items_[x] == 0) continue;
      const std::uint32_t k = items_[x];
      items_[x] = 0;
      bins += place(x, k);
    }
    rooms_.drain([this](std::uint32_t c) { bins_[c] = 0; });  // O(capacity / 64 + rooms)
    return bins;
  }

 private:
  static constexpr std::uint32_t none = RoomBits::none;

  // Places k items of length x; returns the bins opened. 32-bit arithmetic (a window
  // holds < 2^32 pieces), and a division only where a bin takes more than one item.
  std::uint64_t place(std::uint32_t x, std::uint32_t k) noexcept {
    while (k > 0) {
      const std::uint32_t c = rooms_.least_at_least(x);
      if (c == none) {  // new bins, floor(capacity / x) items each, the last one the rest
        const std::uint32_t per = capacity_ / x, full = k / per, rest = k - full * per;
        add_rooms(capacity_ - per * x, full);
        if (rest != 0) add_rooms(capacity_ - rest * x, 1);
        return std::uint64_t{full} + (rest != 0 ? 1u : 0u);
      }
      const std::uint32_t have = bins_[c], per = c < 2 * x ? 1u : c / x;
      const std::uint32_t full = std::uint64_t{have} * per <= k ? have : k / per;
      if (full > 0) {
        take_rooms(c, full);
        add_rooms(c - per * x, full);
        k -= full * per;
      }
      if (k > 0 && full < have) {  // fewer than `per` left: one more bin of room c takes them
        take_rooms(c, 1);
        add_rooms(c - k * x, 1);
        k = 0;
      }
    }
    return 0;
  }
  void add_rooms(std::uint32_t c, std::uint32_t n) noexcept {
    if (c == 0 || n == 0) return;  // a full bin takes nothing more
    if (bins_[c] == 0) rooms_.set(c);
    bins_[c] += n;
  }
  void take_rooms(std::uint32_t c, std::uint32_t n) noexcept {
    bins_[c] -= n;
    if (bins_[c] == 0) rooms_.reset(c);
  }
  std::uint32_t capacity_;
  double inverse_;                        // 1 / capacity
  std::uint64_t full_ = 0;                // full pieces of documents added
  std::uint64_t documents_ = 0;           // documents added
  std::vector<std::uint32_t> items_;      // per length: items of it (a window holds < 2^32 documents)
  std::vector<std::uint32_t> bins_;       // per room: open bins with it
  RoomBits rooms_;                        // rooms with open bins
};

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PACKING_DETAIL_BEST_FIT_HPP

// Transcribed peers of sequence packing for bench/pack_peers.cpp: a Megatron-style GPTDataset index build and Grain-style streaming packers.
// SPDX-License-Identifier: MIT
//
// Written from reading the peers' documented behaviour, not copied:
//  - Megatron-LM's GPTDataset builds, on one rank, a document index (every document once per
//    epoch, int32, shuffled by numpy.random.RandomState(seed).shuffle), a sample index (for each sample of
//    seq_length + 1 tokens, the document-index position and offset where it starts; samples
//    overlap by the one extra token, so each advances seq_length tokens) and a shuffle index
//    (a uint32 arange over the samples, shuffled by the same RandomState), and caches the three
//    arrays on disk. NumpyRandomState is numpy's legacy generator: MT19937 seeded as
//    init_genrand (std::mt19937's seeding), and shuffle's draws by masked rejection
//    (random_interval); tests/bench_peer_numpy.py checks both shuffles against numpy. Reading sample
//    j looks up shuffle[j], then the sample index pair, then walks the documents.
//  - Grain's first-fit packing keeps a fixed number of open bins; each element goes into the
//    first open bin with room (best-fit here: the bin with the least room that fits); when it
//    fits none, every open bin is emitted and a fresh set is opened with it. Elements longer
//    than the sequence are split into pieces of seq_length first, as the distsampler packer
//    does, so every packer reads the same tokens.
#ifndef DISTSAMPLER_BENCH_PACK_PEERS_HPP
#define DISTSAMPLER_BENCH_PACK_PEERS_HPP

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include <distsampler/detail/bounded.hpp>
#include <distsampler/detail/mix.hpp>

namespace pack_bench {

// An unbiased draw below n from a SplitMix64 stream.
inline std::uint64_t below(distsampler::detail::SplitMix64& rng, std::uint64_t n) {
  return distsampler::detail::bounded_draw(rng, n);
}

// A SplitMix64 Fisher-Yates shuffle: faster than numpy's, for the fast peer row.
struct FastShuffle {
  distsampler::detail::SplitMix64 rng;
  explicit FastShuffle(std::uint64_t seed) : rng(seed) {}
  template <class T>
  void operator()(std::vector<T>& v) {
    for (std::uint64_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(rng, i)]);
  }
};

// numpy.random.RandomState(seed).shuffle on 1-D arrays: for i from n - 1 down to 1, swap
// x[i] with x[j], j = random_interval(i): the lowest all-ones mask covering i applied to
// 32-bit MT19937 draws (64-bit ones above 2^32 - 1) until the draw is at most i.
struct NumpyRandomState {
  std::mt19937 mt;
  explicit NumpyRandomState(std::uint32_t seed) : mt(seed) {}
  std::uint64_t interval(std::uint64_t max) {
    if (max == 0) return 0;
    std::uint64_t mask = max;
    for (const unsigned shift : {1u, 2u, 4u, 8u, 16u, 32u}) mask |= mask >> shift;
    std::uint64_t value;
    if (max <= 0xffffffffu) {
      do value = mt() & mask; while (value > max);
    } else {
      do value = ((std::uint64_t{mt()} << 32) | mt()) & mask; while (value > max);
    }
    return value;
  }
  template <class T>
  void operator()(std::vector<T>& v) {
    for (std::uint64_t i = v.size(); i-- > 1;) std::swap(v[i], v[interval(i)]);
  }
};

// The three index arrays of one epoch.
struct MegatronIndices {
  std::vector<std::int32_t> document_index;
  std::vector<std::int32_t> sample_index;  // pairs (document-index position, offset), num_samples + 1 of them
  std::vector<std::uint32_t> shuffle_index;

  [[nodiscard]] std::uint64_t num_samples() const { return shuffle_index.size(); }
  [[nodiscard]] std::uint64_t bytes() const {
    return document_index.size() * 4 + sample_index.size() * 4 + shuffle_index.size() * 4;
  }
};

// The build with one generator for both shuffles (document index first), as GPTDataset does
// with its RandomState; Shuffle is NumpyRandomState (Megatron's) or FastShuffle.
template <class Shuffle>
MegatronIndices megatron_build(const std::vector<std::uint32_t>& sizes, std::uint64_t seq_length, Shuffle shuffle) {
  MegatronIndices out;
  const std::uint64_t n = sizes.size();
  out.document_index.resize(n);
  for (std::uint64_t i = 0; i < n; ++i) out.document_index[i] = static_cast<std::int32_t>(i);
  shuffle(out.document_index);
  std::uint64_t tokens = 0;
  for (const auto s : sizes) tokens += s;
  const std::uint64_t samples = tokens == 0 ? 0 : (tokens - 1) / seq_length;  // one extra token per sample
  out.sample_index.resize(2 * (samples + 1));
  std::uint64_t at = 0, offset = 0;
  out.sample_index[0] = out.sample_index[1] = 0;
  for (std::uint64_t s = 1; s <= samples; ++s) {
    std::int64_t remaining = static_cast<std::int64_t>(seq_length + 1);
    while (remaining != 0) {
      const std::int64_t left = static_cast<std::int64_t>(sizes[static_cast<std::size_t>(out.document_index[at])]) -
                                static_cast<std::int64_t>(offset);
      remaining -= left;
      if (remaining <= 0) {
        offset += static_cast<std::uint64_t>(remaining + left - 1);  // the next sample starts on the extra token
        remaining = 0;
      } else {
        ++at;
        offset = 0;
      }
    }
    out.sample_index[2 * s] = static_cast<std::int32_t>(at);
    out.sample_index[2 * s + 1] = static_cast<std::int32_t>(offset);
  }
  out.shuffle_index.resize(samples);
  for (std::uint64_t i = 0; i < samples; ++i) out.shuffle_index[i] = static_cast<std::uint32_t>(i);
  shuffle(out.shuffle_index);
  return out;
}

// Sample j's pieces as (document, offset, length) counts summed into `tokens`; returns the piece count.
inline std::uint64_t megatron_sample(const MegatronIndices& m, const std::vector<std::uint32_t>& sizes,
                                     std::uint64_t j, std::uint64_t& tokens) {
  const std::uint64_t s = m.shuffle_index[j];
  std::uint64_t at = static_cast<std::uint64_t>(m.sample_index[2 * s]);
  std::uint64_t off = static_cast<std::uint64_t>(m.sample_index[2 * s + 1]);
  const std::uint64_t end_at = static_cast<std::uint64_t>(m.sample_index[2 * s + 2]);
  const std::uint64_t end_off = static_cast<std::uint64_t>(m.sample_index[2 * s + 3]);
  std::uint64_t pieces = 0;
  for (; at <= end_at; ++at, off = 0) {
    const std::uint64_t stop = at == end_at ? end_off + 1 : sizes[static_cast<std::size_t>(m.document_index[at])];
    tokens += stop - off;
    ++pieces;
  }
  return pieces;
}

// What a streaming packer produced.
struct StreamPacked {
  std::uint64_t sequences = 0;
  std::uint64_t tokens = 0;
  std::uint64_t peak_open = 0;
};

// Grain-style streaming packing over documents order(0), order(1), ... with `bins` open bins; best: least room that fits, else first fit.
template <class Order>
StreamPacked stream_pack(const std::vector<std::uint32_t>& sizes, const Order& order, std::uint64_t seq_length,
                         std::uint64_t bins, bool best) {
  StreamPacked out;
  std::vector<std::uint64_t> room;
  room.reserve(bins);
  auto flush = [&] {
    out.sequences += room.size();
    room.clear();
  };
  auto add = [&](std::uint64_t len) {
    out.tokens += len;
    std::size_t pick = room.size();
    for (std::size_t b = 0; b < room.size(); ++b) {
      if (room[b] < len) continue;
      if (!best) {
        pick = b;
        break;
      }
      if (pick == room.size() || room[b] < room[pick]) pick = b;
    }
    if (pick == room.size()) {
      if (room.size() == bins) flush();
      room.push_back(seq_length - len);
      out.peak_open = std::max<std::uint64_t>(out.peak_open, room.size());
    } else {
      room[pick] -= len;
    }
  };
  for (std::uint64_t i = 0; i < sizes.size(); ++i) {
    const std::uint64_t len = sizes[order(i)];
    for (std::uint64_t off = 0; off < len; off += seq_length) add(std::min(seq_length, len - off));
  }
  flush();
  return out;
}

// First-fit decreasing bins of one window's piece lengths (a max-segment tree over the bins' room).
inline std::uint64_t first_fit_decreasing(std::vector<std::uint32_t> items, std::uint64_t seq_length) {
  std::sort(items.begin(), items.end(), [](std::uint32_t a, std::uint32_t b) { return a > b; });
  std::size_t leaves = 1;
  while (leaves < items.size()) leaves *= 2;
  std::vector<std::uint64_t> tree(2 * leaves, seq_length);  // every unopened bin has full room
  std::uint64_t opened = 0;
  for (const std::uint32_t x : items) {
    std::size_t i = 1;
    while (i < leaves) i = tree[2 * i] >= x ? 2 * i : 2 * i + 1;
    opened = std::max<std::uint64_t>(opened, i - leaves + 1);
    tree[i] -= x;
    for (i /= 2; i >= 1; i /= 2) tree[i] = std::max(tree[2 * i], tree[2 * i + 1]);
  }
  return opened;
}

}  // namespace pack_bench

#endif  // DISTSAMPLER_BENCH_PACK_PEERS_HPP

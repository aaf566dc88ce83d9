// distsampler partition: which positions of an epoch's order belong to one rank, and what the tail policy does with the
// remainder. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PARTITION_HPP
#define DISTSAMPLER_PARTITION_HPP

#include <cstdint>
#include <string>
#include <string_view>

#include "error.hpp"
#include "options.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The strided split of one epoch among W ranks, torch's layout: rank r reads
/// positions r, r + W, r + 2W, ... of the epoch's order. Pure integer math on
/// (dataset_size, rank, world_size, tail); O(1) time and memory; no overflow for any
/// 64-bit dataset_size and world_size (positions past N are never formed).
///
/// A position is an offset into the epoch's order (the permutation's input); the
/// sampler maps it to a dataset index. `source_position(i)` is < dataset_size always:
/// for a padding slot it is the wrapped-around position that slot repeats.
class StridedPartition {
 public:
  constexpr StridedPartition() noexcept = default;

  /// Throws config_error when world_size is 0, rank >= world_size or tail is not a Tail.
  constexpr StridedPartition(std::uint64_t dataset_size, std::uint64_t rank, std::uint64_t world_size, Tail tail)
      : n_(dataset_size), rank_(rank), world_size_(world_size), tail_(tail) {
    if (world_size == 0) detail::throw_config_error("Partition: world_size is 0 (expected at least 1)");
    if (rank >= world_size) {
      detail::throw_out_of_range("Partition", "rank", rank, "world_size", world_size);
    }
    detail::check_tail(tail, "Partition");
    const std::uint64_t whole = n_ / world_size_, rest = n_ % world_size_;
    switch (tail_) {
      case Tail::pad:
        size_ = whole + (rest != 0 ? 1 : 0);
        break;
      case Tail::drop:
        size_ = whole;
        break;
      case Tail::uneven:
        size_ = whole + (rank_ < rest ? 1 : 0);
        break;
    }
  }

  [[nodiscard]] constexpr std::uint64_t dataset_size() const noexcept { return n_; }
  [[nodiscard]] constexpr std::uint64_t rank() const noexcept { return rank_; }
  [[nodiscard]] constexpr std::uint64_t world_size() const noexcept { return world_size_; }
  [[nodiscard]] constexpr Tail tail() const noexcept { return tail_; }

  /// Samples this rank reads per epoch (torch's `len(sampler)`).
  [[nodiscard]] constexpr std::uint64_t size() const noexcept { return size_; }

  /// Padding slots in the whole epoch: (W - N mod W) mod W for pad, else 0.
  [[nodiscard]] constexpr std::uint64_t padding_count() const noexcept {
    if (tail_ != Tail::pad || n_ % world_size_ == 0) return 0;
    return world_size_ - n_ % world_size_;
  }

  /// Positions of the epoch's order that no rank reads: N mod W for drop, else 0.
  [[nodiscard]] constexpr std::uint64_t dropped_count() const noexcept {
    return tail_ == Tail::drop ? n_ % world_size_ : 0;
  }

  /// True when this rank's i-th slot (i < size()) is wrap-around padding.
  [[nodiscard]] constexpr bool is_padding(std::uint64_t i) const noexcept {
    // i * W <= N - 1 for every i < size(), so neither line can overflow.
    return tail_ == Tail::pad && rank_ >= n_ - i * world_size_;
  }

  /// The epoch-order position this rank's i-th slot reads (i < size()); always < N.
  [[nodiscard]] constexpr std::uint64_t source_position(std::uint64_t i) const noexcept {
    const std::uint64_t base = i * world_size_;
    const std::uint64_t left = n_ - base;  // positions from base to the end of the order
    if (rank_ < left) return base + rank_;
    // Padding: global slot base + rank is N + k; torch repeats position k mod N.
    return (rank_ - left) % n_;
  }

  /// The epoch position slot i reads (i < size()) when this partition splits what is left
  /// of an epoch of start + dataset_size() positions after its prefix [0, start): start +
  /// source_position(i) for a real slot, and for the t-th padding slot past the end
  /// position t mod (start + dataset_size()), as the epoch read whole pads (torch's
  /// wrap-around from the epoch's start). So a run resumed at a multiple of world_size
  /// pads with exactly the uninterrupted run's duplicates. O(1), no overflow.
  [[nodiscard]] constexpr std::uint64_t epoch_position(std::uint64_t i, std::uint64_t start) const noexcept {
    const std::uint64_t base = i * world_size_, left = n_ - base;
    if (rank_ < left) return start + base + rank_;
    return (rank_ - left) % (start + n_);
  }

  friend constexpr bool operator==(const StridedPartition& a, const StridedPartition& b) noexcept {
    return a.n_ == b.n_ && a.rank_ == b.rank_ && a.world_size_ == b.world_size_ && a.tail_ == b.tail_;
  }
  friend constexpr bool operator!=(const StridedPartition& a, const StridedPartition& b) noexcept { return !(a == b); }

 private:
  std::uint64_t n_ = 0;
  std::uint64_t rank_ = 0;
  std::uint64_t world_size_ = 1;
  Tail tail_ = Tail::pad;
  std::uint64_t size_ = 0;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PARTITION_HPP

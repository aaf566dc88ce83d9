// distsampler shard streams: one consumer's samples as a lazy range over a shared, immutable ShardWalk.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARD_STREAM_HPP
#define DISTSAMPLER_SHARD_STREAM_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <utility>

#include "detail/walk.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Input iterator over one consumer's samples. It computes them a chunk of `chunk` at a
/// time with ShardWalk::fill() (as fast as fill, several times faster than sample() per
/// element), so it is about 2 KiB and best not copied in a hot loop.
///
/// It holds the segment it was made from (a shared, immutable ShardWalk), so it stays
/// valid and reads that segment consistently to its end whatever happens to the sampler
/// (set_epoch, resume, assignment, destruction). An iterator at its end compares equal to
/// every iterator at its end, so a loop over an old iterator against any end() stops.
/// A default-constructed iterator is at its end. Dereferencing an iterator at its end is
/// undefined, as for standard iterators. Thread-safety: one iterator per thread; distinct
/// iterators over one segment may run concurrently (the segment is immutable).
class ShardStreamIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = ShardSample;
  using difference_type = std::ptrdiff_t;
  using pointer = const ShardSample*;
  using reference = const ShardSample&;
  static constexpr std::uint64_t chunk = 64;

  ShardStreamIterator() = default;
  // Copy only: a moved-from iterator keeps its segment, so it stays valid.
  ShardStreamIterator(const ShardStreamIterator&) = default;
  ShardStreamIterator& operator=(const ShardStreamIterator&) = default;
  ~ShardStreamIterator() = default;
  /// Slot i of consumer k of `walk` (i <= end <= walk->size(k)).
  ShardStreamIterator(std::shared_ptr<const ShardWalk> walk, std::uint64_t k, std::uint64_t i, std::uint64_t end)
      : walk_(std::move(walk)), k_(k), i_(i), first_(i), end_(end) {
    if (i_ < end_) refill();
  }

  [[nodiscard]] const ShardSample& operator*() const noexcept { return buffer_[static_cast<std::size_t>(i_ - first_)]; }
  [[nodiscard]] const ShardSample* operator->() const noexcept { return &**this; }
  ShardStreamIterator& operator++() {
    if (++i_ == first_ + chunk && i_ < end_) refill();
    return *this;
  }
  ShardStreamIterator operator++(int) {
    ShardStreamIterator old = *this;
    ++*this;
    return old;
  }
  /// The slot number within the consumer's stream.
  [[nodiscard]] std::uint64_t position() const noexcept { return i_; }
  /// True when the iterator has passed its stream's last slot.
  [[nodiscard]] bool at_end() const noexcept { return i_ >= end_; }

  friend bool operator==(const ShardStreamIterator& a, const ShardStreamIterator& b) noexcept {
    const bool a_end = a.at_end(), b_end = b.at_end();
    return a_end || b_end ? a_end == b_end : a.i_ == b.i_;
  }
  friend bool operator!=(const ShardStreamIterator& a, const ShardStreamIterator& b) noexcept { return !(a == b); }

 private:
  void refill() {
    first_ = i_;
    walk_->fill(k_, i_, std::min(chunk, end_ - i_), buffer_);
  }

  std::shared_ptr<const ShardWalk> walk_;
  std::uint64_t k_ = 0;
  std::uint64_t i_ = 0;
  std::uint64_t first_ = 0;  // slot of buffer_[0]
  std::uint64_t end_ = 0;
  ShardSample buffer_[chunk] = {};
};

/// A range-for view of one consumer's stream in one segment. Like its iterators it holds
/// that segment (a shared, immutable ShardWalk): it needs no live sampler, and after the
/// sampler's set_epoch or resume it still yields the segment it was made from. Cheap to
/// copy (a shared pointer and an id).
class ShardWorkerStream {
 public:
  ShardWorkerStream(std::shared_ptr<const ShardWalk> walk, std::uint64_t k) noexcept : walk_(std::move(walk)), k_(k) {}
  // Copy only: a moved-from stream keeps its segment, so it stays valid.
  ShardWorkerStream(const ShardWorkerStream&) = default;
  ShardWorkerStream& operator=(const ShardWorkerStream&) = default;
  ~ShardWorkerStream() = default;

  [[nodiscard]] ShardStreamIterator begin() const { return ShardStreamIterator(walk_, k_, 0, size()); }
  [[nodiscard]] ShardStreamIterator end() const { return ShardStreamIterator(walk_, k_, size(), size()); }
  [[nodiscard]] std::uint64_t size() const noexcept { return walk_->size(k_); }
  /// The epoch this stream reads.
  [[nodiscard]] std::uint64_t epoch() const noexcept { return walk_->epoch(); }

 private:
  std::shared_ptr<const ShardWalk> walk_;
  std::uint64_t k_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARD_STREAM_HPP

// distsampler ShardCatalog: a sharded dataset's shard sizes, prefix offsets, total and layout hash.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARD_CATALOG_HPP
#define DISTSAMPLER_SHARD_CATALOG_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../detail/mix.hpp"
#include "../../error.hpp"
#include "../../state.hpp"
#include "../../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// One sample of a sharded dataset: which shard, which record in it, its global index
/// (the shard's prefix sum in the original shard list + offset), and whether the slot is
/// flagged tail padding (a duplicate that exact evaluation should mask).
struct ShardSample {
  std::uint64_t shard = 0;
  std::uint64_t offset = 0;
  std::uint64_t index = 0;
  bool is_padding = false;

  friend constexpr bool operator==(const ShardSample& a, const ShardSample& b) noexcept {
    return a.shard == b.shard && a.offset == b.offset && a.index == b.index && a.is_padding == b.is_padding;
  }
  friend constexpr bool operator!=(const ShardSample& a, const ShardSample& b) noexcept { return !(a == b); }
};

/// The shards of a dataset in their original order: sizes, the global index of each
/// shard's first record (prefix sums), the total, and a 64-bit hash of the sizes that
/// fingerprints the layout in saved states. Global index i of the concatenated shards is
/// record i - offset(s) of the shard s holding it; empty shards hold no index.
///
/// Throws config_error from the constructor when the sizes sum past 2^64 - 1.
/// Complexity: construction O(shards); locate O(log shards); the rest O(1).
/// Immutable after construction: const members may run concurrently.
class ShardCatalog {
 public:
  /// An empty catalog (no shards, total 0).
  ShardCatalog() : ShardCatalog(std::vector<std::uint64_t>{}) {}

  /// Throws config_error "<who>: total samples overflow 64 bits at shard s (...)".
  explicit ShardCatalog(std::vector<std::uint64_t> shard_sizes, std::string_view who = "ShardCatalog")
      : sizes_(std::move(shard_sizes)), offsets_(sizes_.size(), 0) {
    std::uint64_t h = detail::hash_field(0xcbf29ce484222325u, static_cast<std::uint64_t>(sizes_.size()));
    for (std::size_t s = 0; s < sizes_.size(); ++s) {
      if (sizes_[s] > UINT64_MAX - total_) {
        detail::throw_config_error(std::string(who) + ": total samples overflow 64 bits at shard " + std::to_string(s) +
                                   " (size " + std::to_string(sizes_[s]) + " after " + std::to_string(total_) +
                                   "; expected a sum <= " + std::to_string(UINT64_MAX) + ")");
      }
      offsets_[s] = total_;
      total_ += sizes_[s];
      h = detail::hash_field(h, sizes_[s]);
    }
    hash_ = detail::mix64(h);
  }

  [[nodiscard]] std::uint64_t num_shards() const noexcept { return sizes_.size(); }
  [[nodiscard]] const std::vector<std::uint64_t>& sizes() const noexcept { return sizes_; }
  /// Records in `shard` (< num_shards(); unchecked).
  [[nodiscard]] std::uint64_t shard_size(std::uint64_t shard) const noexcept {
    return sizes_[static_cast<std::size_t>(shard)];
  }
  /// Global index of `shard`'s first record: the sum of the sizes before it (unchecked).
  [[nodiscard]] std::uint64_t shard_offset(std::uint64_t shard) const noexcept {
    return offsets_[static_cast<std::size_t>(shard)];
  }
  /// The number of samples, the sum of the sizes (at most 2^64 - 1).
  [[nodiscard]] std::uint64_t total() const noexcept { return total_; }
  /// A 64-bit hash of the shard count and every size, in order; equal catalogs have equal
  /// hashes on every platform. Part of the order's fingerprint.
  [[nodiscard]] std::uint64_t layout_hash() const noexcept { return hash_; }

  /// The global index of record `offset` of `shard` (unchecked: shard < num_shards(),
  /// offset < shard_size(shard)).
  [[nodiscard]] std::uint64_t index(std::uint64_t shard, std::uint64_t offset) const noexcept {
    return shard_offset(shard) + offset;
  }

  /// The (shard, offset) holding global index `index` (< total()), as a ShardSample.
  /// Throws config_error "ShardCatalog::locate: index I is out of range for total N
  /// (expected 0..N-1)". O(log shards).
  [[nodiscard]] ShardSample locate(std::uint64_t index) const {
    if (index >= total_) detail::throw_out_of_range("ShardCatalog::locate", "index", index, "total", total_);
    // The last shard starting at or before `index` is non-empty: the next one starts after it.
    const auto j =
        static_cast<std::size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), index) - offsets_.begin() - 1);
    return ShardSample{static_cast<std::uint64_t>(j), index - offsets_[j], index, false};
  }

  friend bool operator==(const ShardCatalog& a, const ShardCatalog& b) noexcept { return a.sizes_ == b.sizes_; }
  friend bool operator!=(const ShardCatalog& a, const ShardCatalog& b) noexcept { return !(a == b); }

 private:
  std::vector<std::uint64_t> sizes_;
  std::vector<std::uint64_t> offsets_;
  std::uint64_t total_ = 0;
  std::uint64_t hash_ = 0;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARD_CATALOG_HPP

// distsampler resume: continue a DistributedSampler's epoch from a SamplerState, on the same or another world size.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_RESUME_HPP
#define DISTSAMPLER_RESUME_HPP

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "distributed_sampler.hpp"
#include "error.hpp"
#include "feistel.hpp"
#include "options.hpp"
#include "partition.hpp"
#include "permutation.hpp"
#include "state.hpp"
#include "version.hpp"
#include "world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The name a permutation engine contributes to a state's fingerprint, with the options
/// that change its order. Specialise it for your own engine (or give the engine a
/// `static constexpr const char* name`). Changing a name invalidates saved states.
template <class Permutation, class = void>
struct permutation_name {
  static_assert(sizeof(Permutation) == 0,
                "distsampler::permutation_name: give the engine a static `name` or specialise permutation_name");
  static std::string get(const typename Permutation::options_type&) { return {}; }
};

template <class Permutation>
struct permutation_name<Permutation, std::void_t<decltype(Permutation::name)>> {
  static std::string get(const typename Permutation::options_type&) { return std::string(Permutation::name); }
};

template <>
struct permutation_name<FeistelPermutation> {
  static std::string get(const FeistelPermutation::options_type&) { return "feistel"; }
};

template <>
struct permutation_name<TorchRandperm> {
  static std::string get(const TorchRandperm::options_type& options) {
    return options.generation == TorchGeneration::v1 ? "torch-v1" : "torch-v2.7";
  }
};

template <>
struct permutation_name<IdentityPermutation> {
  static std::string get(const IdentityPermutation::options_type&) { return "identity"; }
};

namespace detail {

// The state after every rank of a strided split of positions [start, n) over w ranks read
// its first `samples_done` slots: consumed = min(start + w * samples_done, n). Throws
// config_error, prefixed by `who`, when samples_done exceeds the largest rank's size.
inline SamplerState strided_state(const StateKey& key, std::uint64_t start, std::uint64_t w, std::uint64_t epoch,
                                  std::uint64_t samples_done, const char* who) {
  const std::uint64_t n = key.dataset_size, remaining = n - start;
  const std::uint64_t max_size = remaining / w + (remaining % w != 0 && key.tail != Tail::drop ? 1 : 0);
  if (samples_done > max_size) {
    throw_config_error(std::string(who) + ": samples_done " + std::to_string(samples_done) +
                       " exceeds the samples per rank " + std::to_string(max_size) + " (expected 0.." +
                       std::to_string(max_size) + ")");
  }
  SamplerState s;
  s.dataset_size = n;
  s.seed = key.seed;
  s.epoch = epoch;
  s.consumed = samples_done > remaining / w ? n : start + samples_done * w;
  s.fingerprint = key.fingerprint();
  return s;
}

}  // namespace detail

/// The state of a plain `DistributedSampler` after every rank has read its first
/// `samples_done` slots of the current epoch (the same number on every rank; under
/// Tail::uneven a rank with fewer slots has read all of its own). `consumed` is
/// min(world_size * samples_done, dataset_size): strided positions [0, consumed) are done.
/// Throws config_error when samples_done exceeds the largest rank's size. O(1).
template <class Permutation>
[[nodiscard]] SamplerState make_state(const DistributedSampler<Permutation>& sampler, std::uint64_t samples_done) {
  const std::string engine = permutation_name<Permutation>::get(sampler.permutation_settings());
  const StateKey key{"distributed", sampler.dataset_size(), sampler.options().seed, sampler.options().shuffle,
                     sampler.options().tail, engine};
  return detail::strided_state(key, 0, sampler.world_size(), sampler.epoch(), samples_done, "make_state");
}

/// A DistributedSampler that starts an epoch at a saved position: the positions
/// [consumed, N) of the epoch's global order not yet read, split strided over this
/// (possibly different) world, the tail policy applied to that remainder R = N - consumed:
/// rank r reads positions consumed + r, consumed + r + W, ... (pad: ceil(R / W) each, the
/// padding wraps to the start of the remainder and is flagged; drop: floor(R / W);
/// uneven: every remaining position exactly once).
///
/// Without a state (or after set_epoch to another epoch) it is exactly
/// `DistributedSampler<Permutation>`, index for index. Save with `state(samples_done)`
/// and resume any number of times, changing world_size each time: over the chain every
/// sample of the epoch is read exactly once (pad: plus flagged padding; drop: minus the
/// remainder dropped by the last segment).
///
/// Example (8 ranks stop after 100 samples each; the job continues on 3 ranks):
///     auto saved = sampler8.state(100).to_text();              // on any rank
///     ResumedDistributedSampler<> s3(n, world3, opts, SamplerState::from_text(saved));
///     for (auto index : s3) load(index);
///
/// Throws config_error for a bad World or tail; state_error when the state belongs to
/// another dataset size, seed or option set. Deterministic; O(1) memory and O(1) per
/// index with the default FeistelPermutation. Thread-safety as DistributedSampler.
template <class Permutation = FeistelPermutation>
class ResumedDistributedSampler {
 public:
  using permutation_type = Permutation;
  using permutation_options = typename Permutation::options_type;
  class iterator;

  /// Starts at the beginning of epoch 0.
  ResumedDistributedSampler(std::uint64_t dataset_size, World world, SamplerOptions options = {},
                            permutation_options permutation = {})
      : n_(dataset_size), world_(world), options_(options), permutation_options_(permutation) {
    world_.validate("ResumedDistributedSampler");
    engine_ = permutation_name<Permutation>::get(permutation_options_);
    rebuild();
  }

  /// Continues `state`'s epoch at its consumed position. Throws state_error on mismatch.
  ResumedDistributedSampler(std::uint64_t dataset_size, World world, SamplerOptions options, const SamplerState& state,
                            permutation_options permutation = {})
      : ResumedDistributedSampler(dataset_size, world, options, permutation) {
    resume(state);
  }

  /// Validates `state` against this sampler's key, then continues its epoch at its
  /// consumed position. On throw the sampler is unchanged.
  void resume(const SamplerState& state) {
    state.validate(key(), "ResumedDistributedSampler");
    const bool same_epoch = state.epoch == epoch_;
    epoch_ = state.epoch;
    start_ = state.consumed;
    partition_ = StridedPartition(n_ - start_, world_.rank, world_.world_size, options_.tail);
    if (!same_epoch) rebuild_permutation();
  }

  /// Selects `epoch` from its beginning (no-op when it is already the current epoch and
  /// nothing was resumed into it).
  void set_epoch(std::uint64_t epoch) {
    if (epoch == epoch_ && start_ == 0) return;
    const bool same_epoch = epoch == epoch_;
    epoch_ = epoch;
    start_ = 0;
    partition_ = StridedPartition(n_, world_.rank, world_.world_size, options_.tail);
    if (!same_epoch) rebuild_permutation();
  }

  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// Positions of this epoch consumed before this sampler started (the resumed state's `consumed`).
  [[nodiscard]] std::uint64_t start() const noexcept { return start_; }
  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return n_; }
  [[nodiscard]] const World& world() const noexcept { return world_; }
  [[nodiscard]] const SamplerOptions& options() const noexcept { return options_; }
  [[nodiscard]] const StridedPartition& partition() const noexcept { return partition_; }

  /// What saved states must match (see StateKey). The view refers into this sampler.
  [[nodiscard]] StateKey key() const noexcept {
    return StateKey{"distributed", n_, options_.seed, options_.shuffle, options_.tail, engine_};
  }

  /// This rank's remaining samples in this epoch.
  [[nodiscard]] std::uint64_t size() const noexcept { return partition_.size(); }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }

  /// The i-th remaining index of this rank. Throws std::out_of_range when i >= size().
  [[nodiscard]] std::uint64_t operator[](std::uint64_t i) const {
    if (i >= size()) throw_out_of_range("operator[]", i);
    return get(i);
  }
  /// True when slot i is wrap-around padding. Throws std::out_of_range when i >= size().
  [[nodiscard]] bool is_padding(std::uint64_t i) const {
    if (i >= size()) throw_out_of_range("is_padding", i);
    return partition_.is_padding(i);
  }
  /// The epoch-order position slot i reads (i < size()).
  [[nodiscard]] std::uint64_t position(std::uint64_t i) const noexcept {
    return start_ + partition_.source_position(i);
  }
  /// Unchecked access: i < size().
  [[nodiscard]] std::uint64_t get(std::uint64_t i) const noexcept {
    const std::uint64_t p = position(i);
    return options_.shuffle ? permutation_(p) : p;
  }
  /// All remaining indices of this rank, in order. O(size()).
  [[nodiscard]] std::vector<std::uint64_t> indices() const {
    std::vector<std::uint64_t> out;
    out.reserve(static_cast<std::size_t>(size()));
    for (std::uint64_t i = 0; i < size(); ++i) out.push_back(get(i));
    return out;
  }

  /// The state after every rank has read its first `samples_done` slots of this
  /// sampler (the same number on every rank, e.g. the global step; a rank with fewer
  /// slots under Tail::uneven has read all of its own): consumed =
  /// min(start() + world_size * samples_done, dataset_size). Throws config_error when
  /// samples_done exceeds the largest rank's size. O(1).
  [[nodiscard]] SamplerState state(std::uint64_t samples_done) const {
    return detail::strided_state(key(), start_, world_.world_size, epoch_, samples_done,
                                 "ResumedDistributedSampler::state");
  }

  [[nodiscard]] iterator begin() const noexcept { return iterator(this, 0); }
  [[nodiscard]] iterator end() const noexcept { return iterator(this, size()); }

  /// A forward iterator over this rank's remaining indices.
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::uint64_t;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::uint64_t;

    iterator() noexcept = default;
    [[nodiscard]] std::uint64_t operator*() const noexcept { return sampler_->get(i_); }
    [[nodiscard]] bool is_padding() const noexcept { return sampler_->partition_.is_padding(i_); }
    [[nodiscard]] std::uint64_t position() const noexcept { return i_; }
    iterator& operator++() noexcept { ++i_; return *this; }
    iterator operator++(int) noexcept { iterator old = *this; ++i_; return old; }
    [[nodiscard]] friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.i_ == b.i_; }
    [[nodiscard]] friend bool operator!=(const iterator& a, const iterator& b) noexcept { return a.i_ != b.i_; }

   private:
    friend class ResumedDistributedSampler;
    iterator(const ResumedDistributedSampler* sampler, std::uint64_t i) noexcept : sampler_(sampler), i_(i) {}
    const ResumedDistributedSampler* sampler_ = nullptr;
    std::uint64_t i_ = 0;
  };

 private:
  void rebuild() {
    const Tail t = options_.tail;
    if (t != Tail::pad && t != Tail::drop && t != Tail::uneven) {
      detail::throw_config_error("ResumedDistributedSampler: tail " + std::to_string(static_cast<int>(t)) +
                                 " is not a Tail (expected pad, drop or uneven)");
    }
    partition_ = StridedPartition(n_ - start_, world_.rank, world_.world_size, t);
    rebuild_permutation();
  }
  void rebuild_permutation() {
    if (options_.shuffle) permutation_ = Permutation(n_, options_.seed, epoch_, permutation_options_);
  }
  [[noreturn]] void throw_out_of_range(const char* what, std::uint64_t i) const {
    throw std::out_of_range("ResumedDistributedSampler::" + std::string(what) + ": position " + std::to_string(i) +
                            " is out of range for size " + std::to_string(size()));
  }

  std::uint64_t n_ = 0;
  World world_;
  SamplerOptions options_;
  permutation_options permutation_options_;
  std::string engine_;
  std::uint64_t epoch_ = 0;
  std::uint64_t start_ = 0;
  StridedPartition partition_;
  Permutation permutation_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_RESUME_HPP

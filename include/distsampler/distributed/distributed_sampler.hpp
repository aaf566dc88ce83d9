// distsampler DistributedSampler: one rank's disjoint share of every epoch, resumable on any world size.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_DISTRIBUTED_SAMPLER_HPP
#define DISTSAMPLER_DISTRIBUTED_SAMPLER_HPP

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "../epoch_order.hpp"
#include "../error.hpp"
#include "../feistel.hpp"
#include "../options.hpp"
#include "../partition.hpp"
#include "../permutation.hpp"
#include "../permutation_traits.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "../world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The dataset indices one rank reads in one epoch, torch's DistributedSampler as a C++ value.
///
/// Every rank builds the same sampler (same dataset_size and options, its own World);
/// each epoch's order is `Permutation(dataset_size, seed, epoch)` (or the identity when
/// `shuffle` is false) and rank r reads positions r, r + W, r + 2W, ... of it, with the
/// tail policy deciding what happens to the last N mod W positions (see Tail).
/// Together the ranks are disjoint and covering (pad: plus flagged duplicates;
/// drop: minus the dropped tail), and every rank has the same size() except under
/// Tail::uneven.
///
/// With `DistributedSampler<TorchRandperm>` the output equals
/// `torch.utils.data.DistributedSampler(range(N), W, r, shuffle, seed, drop_last)` after
/// `set_epoch(epoch)`, index for index. The default FeistelPermutation computes only
/// this rank's indices: O(1) memory, O(1) per index.
///
/// Example:
///     distsampler::DistributedSampler<> sampler(50000, distsampler::World::from_env(),
///                                               distsampler::SamplerOptions().with_seed(42));
///     for (std::uint64_t epoch = 0; epoch < 10; ++epoch) {
///       sampler.set_epoch(epoch);
///       for (std::uint64_t index : sampler) load(index);
///     }
///
/// Mid-epoch resume, also on another world size: `state(samples_done)` after every rank
/// read its first samples_done slots records how many positions of the epoch's order are
/// done; `resume(state)` (or the constructor taking a state) continues at that position:
/// the remainder R = N - consumed is split strided over this world, rank r reading
/// positions consumed + r, consumed + r + W, ..., with the tail policy applied to R (pad:
/// ceil(R / W) each, padding wrapping to the start of the epoch and flagged; drop:
/// floor(R / W); uneven: every remaining position once). Resume any number of times,
/// changing world_size each time: over the chain every sample of the epoch is read
/// exactly once (pad: plus flagged padding; drop: minus what the last segment drops).
/// On the same world a state saved by state(samples_done) is at a multiple of W, so R
/// mod W = N mod W and the resumed slots are the uninterrupted run's slots samples_done
/// onwards, index for index, padding (the same duplicates) and drop included.
///
///     auto saved = sampler8.state(100).to_text();                 // on any rank
///     DistributedSampler<> s3(n, world3, opts, SamplerState::from_text(saved));
///     for (auto index : s3) load(index);
///
/// Throws config_error from the constructor for an invalid World (rank >= world_size,
/// world_size 0, ...) or an unknown tail; state_error when a state belongs to another
/// dataset size, seed or option set. Strong exception guarantee: set_epoch and resume
/// build the new epoch's order first and change nothing when that throws (a
/// TorchRandperm that cannot allocate its table, a mismatched state). Deterministic: a
/// pure function of (dataset_size, world, options, epoch, resumed position).
/// Thread-safety: const members may be called concurrently; set_epoch and resume must
/// not race with readers. Copies are cheap (a materialising permutation shares its table).
///
/// Iterator invalidation: set_epoch, resume and assignment invalidate every iterator
/// (as reallocation does for std::vector); destroying or moving from the sampler leaves
/// its iterators dangling. Unlike a std::vector's, an invalidated iterator is safe to use
/// while the sampler lives: it reads the current segment's slot at its position and
/// throws std::out_of_range past the current size(), so it never reads out of bounds and
/// a loop up to an old end() stops there.
template <class Permutation = FeistelPermutation>
class DistributedSampler {
  static_assert(check_permutation<Permutation>(), "see permutation_traits.hpp");

 public:
  using options_type = SamplerOptions;  ///< the options type it is built from
  using permutation_type = Permutation;
  using permutation_options = typename Permutation::options_type;

  class iterator;
  using const_iterator = iterator;

  /// Starts at the beginning of epoch 0.
  DistributedSampler(std::uint64_t dataset_size, World world, SamplerOptions options = {},
                     permutation_options permutation = {})
      : world_(checked(world, options)),
        options_(options),
        order_(dataset_size, options.shuffle, options.seed, permutation),
        partition_(dataset_size, world.rank, world.world_size, options.tail) {}

  /// Continues `state`'s epoch at its consumed position (see resume), building only that
  /// epoch's order. Throws state_error (prefixed "DistributedSampler::resume") as resume does.
  DistributedSampler(std::uint64_t dataset_size, World world, SamplerOptions options, const SamplerState& state,
                     permutation_options permutation = {})
      : world_(checked(world, options)),
        options_(options),
        order_(EpochOrder<Permutation>::from_state(state, family, options.tail, who_resume, dataset_size,
                                                   options.shuffle, options.seed, permutation)),
        partition_(order_.remaining(), world.rank, world.world_size, options.tail) {}

  /// Selects the epoch (torch's set_epoch) from its beginning. Forgetting it repeats
  /// epoch 0's order. O(1) for random-access permutations, O(N) for materialising ones
  /// when the epoch changes. Strong guarantee: on throw nothing changed, and calling it
  /// again retries.
  void set_epoch(std::uint64_t epoch) {
    EpochOrder<Permutation> next = order_.at(epoch, 0);
    partition_ = StridedPartition(next.dataset_size(), world_.rank, world_.world_size, options_.tail);
    order_ = std::move(next);
  }

  /// Validates `state` against key() (state_error naming the field that differs), then
  /// continues its epoch at its consumed position, split over this world. Strong
  /// guarantee: on throw the sampler is unchanged. O(1) for random-access permutations.
  void resume(const SamplerState& state) {
    EpochOrder<Permutation> next = order_.resumed(state, family, options_.tail, who_resume);
    partition_ = StridedPartition(next.remaining(), world_.rank, world_.world_size, options_.tail);
    order_ = std::move(next);
  }

  /// The state after every rank has read its first `samples_done` slots of this
  /// segment (the same number on every rank, e.g. the global step; under Tail::uneven a
  /// rank with fewer slots has read all of its own): consumed =
  /// min(start() + world_size * samples_done, dataset_size). Throws config_error when
  /// samples_done exceeds the largest rank's size. O(1).
  [[nodiscard]] SamplerState state(std::uint64_t samples_done) const {
    const std::uint64_t remaining = order_.remaining(), w = world_.world_size;
    const std::uint64_t max_size = remaining / w + (remaining % w != 0 && options_.tail != Tail::drop ? 1 : 0);
    if (samples_done > max_size) {
      detail::throw_config_error("DistributedSampler::state: samples_done " + std::to_string(samples_done) +
                                 " exceeds the samples per rank " + std::to_string(max_size) + " (expected 0.." +
                                 std::to_string(max_size) + ")");
    }
    const std::uint64_t consumed =
        samples_done > remaining / w ? order_.dataset_size() : order_.start() + samples_done * w;
    return order_.state(family, options_.tail, consumed);
  }

  /// What saved states must match (see StateKey); its names are static strings.
  [[nodiscard]] StateKey key() const noexcept { return order_.key(family, options_.tail); }

  [[nodiscard]] std::uint64_t epoch() const noexcept { return order_.epoch(); }
  /// Positions of this epoch consumed before this segment (0 unless resumed).
  [[nodiscard]] std::uint64_t start() const noexcept { return order_.start(); }
  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return order_.dataset_size(); }
  [[nodiscard]] const World& world() const noexcept { return world_; }
  [[nodiscard]] std::uint64_t rank() const noexcept { return world_.rank; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return world_.world_size; }
  [[nodiscard]] const SamplerOptions& options() const noexcept { return options_; }
  [[nodiscard]] const permutation_options& permutation_settings() const noexcept {
    return order_.permutation_settings();
  }
  [[nodiscard]] const StridedPartition& partition() const noexcept { return partition_; }
  /// The epoch's global order this sampler reads from (shared by every rank).
  [[nodiscard]] const EpochOrder<Permutation>& order() const noexcept { return order_; }

  /// This rank's samples in this epoch, or in what remains of it when resumed (torch's
  /// len(sampler)); the same on every rank except under Tail::uneven.
  [[nodiscard]] std::uint64_t size() const noexcept { return partition_.size(); }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }

  /// The i-th index of this rank in this epoch. O(1). Throws std::out_of_range when i >= size().
  [[nodiscard]] std::uint64_t operator[](std::uint64_t i) const {
    if (i >= size()) throw_out_of_range("operator[]", i);
    return get(i);
  }

  /// True when the i-th slot is wrap-around padding (a duplicate of another rank's
  /// sample, present only so every rank has the same count). Throws std::out_of_range
  /// when i >= size().
  [[nodiscard]] bool is_padding(std::uint64_t i) const {
    if (i >= size()) throw_out_of_range("is_padding", i);
    return partition_.is_padding(i);
  }

  /// All of this rank's indices for this epoch, in order. O(size()) time and memory.
  [[nodiscard]] std::vector<std::uint64_t> indices() const {
    std::vector<std::uint64_t> out(static_cast<std::size_t>(size()));
    fill(0, size(), out.data());
    return out;
  }

  /// Writes this rank's indices of slots [first, first + count) to out[0..count): the
  /// fastest way to scan an epoch (with FeistelPermutation it computes several indices at
  /// once, so the compiler can interleave them). Throws std::out_of_range when
  /// first + count > size(). O(count), no allocation.
  void fill(std::uint64_t first, std::uint64_t count, std::uint64_t* out) const {
    if (first > size() || count > size() - first) throw_out_of_range("fill", first + count - (count ? 1 : 0));
    // Every slot but possibly the last one of a rank is a real position r + i * W.
    std::uint64_t real = count;
    if (count != 0 && partition_.is_padding(first + count - 1)) --real;
    if (real != 0) order_.fill(position(first), real, out, world_.world_size);
    if (real != count) out[real] = get(first + real);
  }

  /// Unchecked access for iteration: i < size().
  [[nodiscard]] std::uint64_t get(std::uint64_t i) const noexcept { return order_.index(position(i)); }

  /// The position of this epoch's global order slot i reads (i < size(); unchecked):
  /// start() + r + i * W for rank r; the t-th padding slot repeats position t mod N, the
  /// start of the epoch (StridedPartition::epoch_position).
  [[nodiscard]] std::uint64_t position(std::uint64_t i) const noexcept {
    return partition_.epoch_position(i, order_.start());
  }

  /// The dataset index at `position` of this epoch's global order (shared by all ranks),
  /// position < dataset_size(); unchecked.
  [[nodiscard]] std::uint64_t index_at_position(std::uint64_t position) const noexcept {
    return order_.index(position);
  }

  [[nodiscard]] iterator begin() const noexcept { return iterator(this, 0); }
  [[nodiscard]] iterator end() const noexcept { return iterator(this, size()); }

  /// A random-access iterator over this rank's indices of the current segment. It
  /// refers to the sampler (see the class comment for invalidation): dereferencing
  /// checks the slot against the sampler's current size() and throws std::out_of_range
  /// past it.
  class iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = std::uint64_t;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::uint64_t;

    constexpr iterator() noexcept = default;
    [[nodiscard]] std::uint64_t operator*() const {
      if (i_ >= sampler_->size()) sampler_->throw_out_of_range("iterator", i_);
      return sampler_->get(i_);
    }
    [[nodiscard]] std::uint64_t operator[](difference_type k) const { return *(*this + k); }
    /// The slot number of this position within the rank's epoch.
    [[nodiscard]] constexpr std::uint64_t position() const noexcept { return i_; }
    /// Throws std::out_of_range past the sampler's current size().
    [[nodiscard]] bool is_padding() const { return sampler_->is_padding(i_); }

    iterator& operator++() noexcept {
      ++i_;
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator old = *this;
      ++i_;
      return old;
    }
    iterator& operator--() noexcept {
      --i_;
      return *this;
    }
    iterator operator--(int) noexcept {
      iterator old = *this;
      --i_;
      return old;
    }
    iterator& operator+=(difference_type k) noexcept {
      i_ += static_cast<std::uint64_t>(k);
      return *this;
    }
    iterator& operator-=(difference_type k) noexcept {
      i_ -= static_cast<std::uint64_t>(k);
      return *this;
    }
    [[nodiscard]] friend iterator operator+(iterator it, difference_type k) noexcept { return it += k; }
    [[nodiscard]] friend iterator operator+(difference_type k, iterator it) noexcept { return it += k; }
    [[nodiscard]] friend iterator operator-(iterator it, difference_type k) noexcept { return it -= k; }
    [[nodiscard]] friend difference_type operator-(const iterator& a, const iterator& b) noexcept {
      return static_cast<difference_type>(a.i_ - b.i_);
    }
    [[nodiscard]] friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.i_ == b.i_; }
    [[nodiscard]] friend bool operator!=(const iterator& a, const iterator& b) noexcept { return a.i_ != b.i_; }
    [[nodiscard]] friend bool operator<(const iterator& a, const iterator& b) noexcept { return a.i_ < b.i_; }
    [[nodiscard]] friend bool operator>(const iterator& a, const iterator& b) noexcept { return a.i_ > b.i_; }
    [[nodiscard]] friend bool operator<=(const iterator& a, const iterator& b) noexcept { return a.i_ <= b.i_; }
    [[nodiscard]] friend bool operator>=(const iterator& a, const iterator& b) noexcept { return a.i_ >= b.i_; }

   private:
    friend class DistributedSampler;
    constexpr iterator(const DistributedSampler* sampler, std::uint64_t i) noexcept : sampler_(sampler), i_(i) {}
    const DistributedSampler* sampler_ = nullptr;
    std::uint64_t i_ = 0;
  };

 private:
  static constexpr std::string_view family = "distributed";
  static constexpr std::string_view who_resume = "DistributedSampler::resume";

  static World checked(World world, const SamplerOptions& options) {
    world.validate("DistributedSampler");
    detail::check_tail(options.tail, "DistributedSampler");
    return world;
  }

  [[noreturn]] void throw_out_of_range(const char* what, std::uint64_t i) const {
    throw std::out_of_range("DistributedSampler::" + std::string(what) + ": position " + std::to_string(i) +
                            " is out of range for size " + std::to_string(size()) +
                            (size() ? " (expected 0.." + std::to_string(size() - 1) + ")" : " (the rank is empty)"));
  }

  World world_;
  SamplerOptions options_;
  EpochOrder<Permutation> order_;
  StridedPartition partition_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_DISTRIBUTED_SAMPLER_HPP

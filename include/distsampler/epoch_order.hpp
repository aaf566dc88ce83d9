// distsampler EpochOrder: one epoch's global order from a consumed prefix on, shared by the samplers.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_EPOCH_ORDER_HPP
#define DISTSAMPLER_EPOCH_ORDER_HPP

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "feistel.hpp"
#include "options.hpp"
#include "permutation_traits.hpp"
#include "state.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

namespace detail {

// True when P has a batched `fill(first, count, out, stride)` (FeistelPermutation does).
template <class P, class = void>
struct has_strided_fill : std::false_type {};
template <class P>
struct has_strided_fill<P,
                        std::void_t<decltype(std::declval<const P&>().fill(
                            std::uint64_t{}, std::uint64_t{}, static_cast<std::uint64_t*>(nullptr), std::uint64_t{}))>>
    : std::true_type {};

}  // namespace detail

/// The global order of one epoch, shared by every rank: `Permutation(dataset_size, seed,
/// epoch, permutation options)`, or the identity when `shuffle` is false, together with
/// `start`, the prefix of positions [0, start) already consumed (0 unless resumed). The
/// samplers put a layout on top of it (which positions a rank, worker or micro-batch
/// reads) and keep their progress in it; this is the one place that builds permutations,
/// maps positions to indices and names the order in saved states.
///
/// A value type. Changing the epoch or the start never modifies an order: `at(epoch,
/// start)` and `resumed(state, ...)` return a new one (building the permutation only when
/// the epoch changes), so a sampler that builds the new order first and then moves it in
/// (noexcept) has the strong exception guarantee. Throws what the Permutation's
/// constructor throws (config_error for TorchRandperm out of memory) and state_error for a
/// mismatched state. Copies are cheap (a materialising permutation shares its table).
/// Deterministic: a pure function of (dataset_size, shuffle, seed, epoch, options, start).
/// Thread-safety: const members may run concurrently.
template <class Permutation = FeistelPermutation>
class EpochOrder {
  static_assert(check_permutation<Permutation>(), "see permutation_traits.hpp");
  static_assert(std::is_nothrow_move_constructible_v<Permutation> && std::is_nothrow_move_assignable_v<Permutation>,
                "distsampler Permutation: the engine must move without throwing (a new epoch is committed by a move)");

 public:
  using permutation_type = Permutation;
  using permutation_options = typename Permutation::options_type;

  /// An empty order (dataset_size 0), epoch 0.
  EpochOrder() = default;

  /// Epoch `epoch` of `dataset_size` positions, consumed up to `start`. Builds the
  /// permutation when `shuffle` (O(1) for random-access engines, O(N) for materialising
  /// ones). Throws config_error when start > dataset_size, and what the engine throws.
  EpochOrder(std::uint64_t dataset_size, bool shuffle, std::uint64_t seed, permutation_options options = {},
             std::uint64_t epoch = 0, std::uint64_t start = 0)
      : n_(dataset_size), shuffle_(shuffle), seed_(seed), options_(options), epoch_(epoch), start_(start) {
    if (start > dataset_size) throw_start(start, dataset_size);
    if (shuffle_) permutation_ = Permutation(n_, seed_, epoch_, options_);
  }

  /// This order at `epoch`, consumed up to `start`: a new value, this one is unchanged.
  /// Reuses the permutation when the epoch is the same. Throws as the constructor does.
  [[nodiscard]] EpochOrder at(std::uint64_t epoch, std::uint64_t start = 0) const {
    if (start > n_) throw_start(start, n_);
    if (epoch != epoch_) return EpochOrder(n_, shuffle_, seed_, options_, epoch, start);
    EpochOrder same(*this);
    same.start_ = start;
    return same;
  }

  /// This order continued where `state` stopped: validates it against key(sampler, tail)
  /// (state_error, prefixed by `who`, naming the field that differs), then at(state.epoch,
  /// state.consumed). This order is unchanged.
  [[nodiscard]] EpochOrder resumed(const SamplerState& state, std::string_view sampler, Tail tail,
                                   std::string_view who) const {
    state.validate(key(sampler, tail), who);
    return at(state.epoch, state.consumed);
  }

  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return n_; }
  [[nodiscard]] bool shuffle() const noexcept { return shuffle_; }
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// Positions [0, start) of the epoch are consumed (by an earlier run).
  [[nodiscard]] std::uint64_t start() const noexcept { return start_; }
  /// Positions left in the epoch: dataset_size - start.
  [[nodiscard]] std::uint64_t remaining() const noexcept { return n_ - start_; }
  [[nodiscard]] const permutation_options& permutation_settings() const noexcept { return options_; }
  /// The engine's order for this epoch (an empty engine when shuffle is false).
  [[nodiscard]] const Permutation& permutation() const noexcept { return permutation_; }

  /// The dataset index at `position` of the epoch's order; position < dataset_size
  /// (unchecked). O(1) with a random-access engine.
  [[nodiscard]] std::uint64_t index(std::uint64_t position) const noexcept {
    return shuffle_ ? permutation_(position) : position;
  }

  /// out[i] = index(position + i * stride) for i < count; every such position must be <
  /// dataset_size (unchecked). Uses the engine's batched fill when it has one.
  void fill(std::uint64_t position, std::uint64_t count, std::uint64_t* out, std::uint64_t stride) const noexcept {
    if constexpr (detail::has_strided_fill<Permutation>::value) {
      if (shuffle_) {
        permutation_.fill(position, count, out, stride);
        return;
      }
    }
    for (std::uint64_t i = 0; i < count; ++i) out[i] = index(position + i * stride);
  }

  /// What a saved state of a sampler of family `sampler` with tail `tail` over this order
  /// must match (see StateKey). `sampler` must view static storage. O(1).
  [[nodiscard]] StateKey key(std::string_view sampler, Tail tail) const noexcept {
    return make_key(sampler, tail, n_, shuffle_, seed_, options_);
  }

  /// key(sampler, tail) of an order with these settings, without building one.
  [[nodiscard]] static StateKey make_key(std::string_view sampler, Tail tail, std::uint64_t dataset_size, bool shuffle,
                                         std::uint64_t seed, const permutation_options& options) noexcept {
    StateKey k;
    k.sampler = sampler;
    k.dataset_size = dataset_size;
    k.seed = seed;
    k.shuffle = shuffle;
    k.tail = tail;
    const EngineIdentity engine = engine_identity<Permutation>(options);
    k.engine = engine.name;
    k.engine_version = engine.format_version;
    return k;
  }

  /// The order `state` continues, built once: validates the state against make_key(...)
  /// (state_error prefixed by `who`), then builds epoch state.epoch from state.consumed.
  [[nodiscard]] static EpochOrder from_state(const SamplerState& state, std::string_view sampler, Tail tail,
                                             std::string_view who, std::uint64_t dataset_size, bool shuffle,
                                             std::uint64_t seed, const permutation_options& options = {}) {
    state.validate(make_key(sampler, tail, dataset_size, shuffle, seed, options), who);
    return EpochOrder(dataset_size, shuffle, seed, options, state.epoch, state.consumed);
  }

  /// The state of this epoch with positions [0, consumed) done, for a sampler of family
  /// `sampler` with tail `tail`; consumed <= dataset_size (the caller's layout computes it).
  [[nodiscard]] SamplerState state(std::string_view sampler, Tail tail, std::uint64_t consumed) const {
    SamplerState s;
    s.dataset_size = n_;
    s.seed = seed_;
    s.epoch = epoch_;
    s.consumed = consumed;
    s.set_key(key(sampler, tail));
    return s;
  }

 private:
  [[noreturn]] static void throw_start(std::uint64_t start, std::uint64_t n) {
    detail::throw_config_error("EpochOrder: start " + std::to_string(start) + " exceeds dataset_size " +
                               std::to_string(n) + " (expected 0.." + std::to_string(n) + ")");
  }

  std::uint64_t n_ = 0;
  bool shuffle_ = true;
  std::uint64_t seed_ = 0;
  permutation_options options_{};
  std::uint64_t epoch_ = 0;
  std::uint64_t start_ = 0;
  Permutation permutation_{};
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_EPOCH_ORDER_HPP

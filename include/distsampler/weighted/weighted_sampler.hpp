// distsampler WeightedSampler: one dataset drawn by per-sample weights (alias table or weighted shuffle), per rank.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_WEIGHTED_HPP
#define DISTSAMPLER_WEIGHTED_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../detail/bounded.hpp"
#include "../detail/ieee_double.hpp"
#include "../detail/mix.hpp"
#include "../state/format.hpp"
#include "../error.hpp"
#include "../options.hpp"
#include "../partition.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "options.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Walker's alias table (Vose's construction) over weights w_0..w_{N-1}: a draw picks
/// column j uniformly and keeps j with probability q_j (as a 64-bit threshold), else takes
/// alias[j]; index i then comes out with probability w_i / sum(w) up to the rounding of
/// q_j to 2^-64 and of the double arithmetic of the build (relative error ~1e-15).
/// Built once in O(N) time, 16 bytes per weight; a draw is O(1) (two or more 64-bit
/// words of a SplitMix64 stream). Deterministic: basic IEEE double operations only.
class AliasTable {
 public:
  AliasTable() = default;

  /// Throws config_error, prefixed by `who`, for no weights, a negative, NaN or infinite
  /// weight, or weights that are all 0 or sum past the largest double.
  AliasTable(const std::vector<double>& weights, std::string_view who) {
    const std::string w(who);
    if (weights.empty()) detail::throw_config_error(w + ": weights is empty (expected at least one weight)");
    double sum = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (!(weights[i] >= 0) || !std::isfinite(weights[i])) {
        detail::throw_config_error(w + ": weights[" + std::to_string(i) + "] is " + std::to_string(weights[i]) +
                                   " (expected a finite weight >= 0)");
      }
      sum += weights[i];
    }
    if (!(sum > 0) || !std::isfinite(sum)) {
      detail::throw_config_error(w +
                                 ": weights are all 0 or sum past the largest double (expected a positive, "
                                 "finite sum)");
    }
    const std::size_t n = weights.size();
    std::vector<double> scaled(n);
    std::vector<std::size_t> small, large;
    for (std::size_t i = 0; i < n; ++i) {
      scaled[i] = weights[i] / sum * static_cast<double>(n);
      (scaled[i] < 1.0 ? small : large).push_back(i);
    }
    threshold_.assign(n, UINT64_MAX);
    alias_.resize(n);
    for (std::size_t i = 0; i < n; ++i) alias_[i] = i;
    while (!small.empty() && !large.empty()) {
      const std::size_t s = small.back(), l = large.back();
      small.pop_back();
      threshold_[s] = to_threshold(scaled[s]);
      alias_[s] = l;
      scaled[l] = (scaled[l] + scaled[s]) - 1.0;
      if (scaled[l] < 1.0) {
        large.pop_back();
        small.push_back(l);
      }
    }
    // Leftovers are 1 up to rounding: they keep their own column.
  }

  [[nodiscard]] std::uint64_t size() const noexcept { return threshold_.size(); }

  /// One draw from `stream`. O(1) expected.
  [[nodiscard]] std::uint64_t draw(detail::SplitMix64& stream) const noexcept {
    const std::uint64_t j = detail::bounded_draw(stream, threshold_.size());
    return stream() < threshold_[static_cast<std::size_t>(j)] ? j : alias_[static_cast<std::size_t>(j)];
  }

  /// The probability table: column j keeps j with probability threshold(j) / 2^64.
  [[nodiscard]] std::uint64_t threshold(std::uint64_t j) const noexcept {
    return threshold_[static_cast<std::size_t>(j)];
  }
  [[nodiscard]] std::uint64_t alias(std::uint64_t j) const noexcept { return alias_[static_cast<std::size_t>(j)]; }

 private:
  static std::uint64_t to_threshold(double q) noexcept {
    if (!(q > 0)) return 0;
    if (q >= 1.0) return UINT64_MAX;
    return static_cast<std::uint64_t>(std::ldexp(q, 64));
  }

  std::vector<std::uint64_t> threshold_;
  std::vector<std::uint64_t> alias_;
};


namespace detail {

// -ln(u) for u = (x + 1) / 2^64 in (0, 1], from basic double operations only (identical
// on every IEEE platform, unlike std::log): exponent by bit width, mantissa by the atanh
// series. Relative error below 1e-14.
[[nodiscard]] inline double neg_log_unit(std::uint64_t x) noexcept {
  const double u = (static_cast<double>(x >> 11) + 1.0) / 9007199254740992.0;  // (0, 1], 53 bits
  int e = 0;
  const double m = std::frexp(u, &e);  // u = m 2^e, m in [1/2, 1)
  const double s = (2 * m - 1) / (2 * m + 1);
  const double s2 = s * s;
  double term = s, series = 0;
  for (int k = 1; k <= 31; k += 2) {
    series += term / k;
    term *= s2;
  }
  const double ln2 = 0.69314718055994530942;
  return -(2 * series + (e - 1) * ln2);
}

}  // namespace detail

/// Samples of one dataset drawn by per-sample weights (torch's WeightedRandomSampler,
/// distributed). Epoch e has `num_samples` positions; rank r reads positions r, r + W, ...
/// (StridedPartition, tail as options.tail), so ranks are disjoint and cover the epoch.
///
///  - replacement (default): position p is an alias-table draw from a SplitMix64 stream
///    keyed by (seed, epoch, p): random access, O(1) per index, the table (16 bytes per
///    weight) built once in O(N) by the constructor.
///  - without replacement: the epoch's order is the weighted shuffle of Efraimidis and
///    Spirakis: sample i gets key -ln(u_i) / w_i with u_i keyed by (seed, epoch, i) and
///    the order sorts keys ascending (ties by index), which is exactly successive
///    sampling without replacement proportional to weight (up to the 1e-14 error of the
///    logarithm). Built per epoch in O(N log N) time and 8 bytes per sample;
///    num_samples at most the samples with positive weight.
///
/// State: `state(samples_done)` and `resume` as DistributedSampler (family "weighted",
/// layout = hash of the weights): consumed positions of the epoch, on any world size;
/// padding repeats the epoch's first positions, so a same-world resume continues the
/// uninterrupted run index for index.
/// Throws config_error for bad weights (AliasTable), num_samples above the positive
/// weights without replacement, a bad World; state_error from resume. Strong guarantee
/// for set_epoch and resume. Deterministic. Const members may run concurrently.
class WeightedSampler {
 public:
  using options_type = WeightedSamplerOptions;  ///< the options type it is built from
  static constexpr std::string_view family = "weighted";

  WeightedSampler(const std::vector<double>& weights, World world, WeightedSamplerOptions options = {})
      : world_(checked(world)),
        options_(options),
        table_(std::make_shared<const AliasTable>(weights, who)),
        weights_hash_(hash_weights(weights)) {
    detail::check_tail(options_.tail, who);
    if (options_.num_samples == 0) options_.num_samples = weights.size();
    if (!options_.replacement) {
      weights_ = std::make_shared<const std::vector<double>>(weights);
      const auto positive =
          static_cast<std::uint64_t>(std::count_if(weights.begin(), weights.end(), [](double x) { return x > 0; }));
      if (options_.num_samples > positive) {
        detail::throw_config_error(std::string(who) + ": num_samples " + std::to_string(options_.num_samples) +
                                   " exceeds the " + std::to_string(positive) +
                                   " samples with positive weight (expected at most that many without replacement)");
      }
      order_ = build_order(0);
    }
    partition_ = StridedPartition(options_.num_samples, world_.rank, world_.world_size, options_.tail);
  }

  [[nodiscard]] std::uint64_t rank() const noexcept { return world_.rank; }
  [[nodiscard]] std::uint64_t world_size() const noexcept { return world_.world_size; }
  [[nodiscard]] const World& world() const noexcept { return world_; }
  [[nodiscard]] const WeightedSamplerOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return table_->size(); }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  [[nodiscard]] std::uint64_t start() const noexcept { return start_; }
  /// Samples this rank reads in the rest of the epoch.
  [[nodiscard]] std::uint64_t size() const noexcept { return partition_.size(); }
  /// This rank's share of the epoch's positions (its i-th read is at epoch_position(i, start())).
  [[nodiscard]] const StridedPartition& partition() const noexcept { return partition_; }

  /// The dataset index at `position` of the epoch (position < num_samples, unchecked).
  [[nodiscard]] std::uint64_t index_at_position(std::uint64_t position) const noexcept {
    if (!options_.replacement) return (*order_)[static_cast<std::size_t>(position)];
    detail::SplitMix64 stream(detail::mix64(options_.seed ^ detail::splitmix64(epoch_)) ^ detail::splitmix64(position));
    return table_->draw(stream);
  }

  /// This rank's i-th index (i < size()). Throws std::out_of_range otherwise.
  [[nodiscard]] std::uint64_t operator[](std::uint64_t i) const {
    if (i >= size()) throw std::out_of_range(detail::out_of_range_message(who, "i", i, "size", size()));
    return index_at_position(partition_.epoch_position(i, start_));
  }

  /// This rank's indices for the rest of the epoch. O(size()).
  [[nodiscard]] std::vector<std::uint64_t> indices() const {
    std::vector<std::uint64_t> out;
    for (std::uint64_t i = 0; i < size(); ++i) out.push_back((*this)[i]);
    return out;
  }

  /// Selects `epoch` from its start (O(N log N) without replacement). Strong guarantee.
  void set_epoch(std::uint64_t epoch) {
    std::shared_ptr<const std::vector<std::uint64_t>> order = options_.replacement ? nullptr : build_order(epoch);
    StridedPartition partition(options_.num_samples, world_.rank, world_.world_size, options_.tail);
    commit(epoch, 0, std::move(order), partition);
  }

  [[nodiscard]] StateKey key() const noexcept {
    StateKey k;
    k.sampler = family;
    k.dataset_size = options_.num_samples;
    k.seed = options_.seed;
    k.shuffle = true;
    k.tail = options_.tail;
    k.engine = options_.replacement ? "alias" : "weighted-shuffle";
    k.engine_version = 1;
    k.layout = weights_hash_;
    k.layout_name = "weights";
    return k;
  }

  /// The state after every rank read `samples_done` samples: start + W * samples_done,
  /// up to num_samples. Throws config_error when samples_done > size().
  [[nodiscard]] SamplerState state(std::uint64_t samples_done) const {
    if (samples_done > size()) {
      detail::throw_config_error(std::string(who) + "::state: samples_done " + std::to_string(samples_done) +
                                 " exceeds size " + std::to_string(size()) + " (expected 0.." + std::to_string(size()) +
                                 ")");
    }
    const std::uint64_t remaining = options_.num_samples - start_;
    SamplerState s;
    s.epoch = epoch_;
    s.consumed =
        samples_done > remaining / world_.world_size ? options_.num_samples : start_ + samples_done * world_.world_size;
    s.set_key(key());
    return s;
  }

  /// Continues `state` at its consumed position on this world. Throws state_error naming
  /// what differs. Strong guarantee.
  void resume(const SamplerState& state) {
    state.validate(key(), who);
    std::shared_ptr<const std::vector<std::uint64_t>> order =
        options_.replacement ? nullptr : (state.epoch == epoch_ ? order_ : build_order(state.epoch));
    StridedPartition partition(options_.num_samples - state.consumed, world_.rank, world_.world_size, options_.tail);
    commit(state.epoch, state.consumed, std::move(order), partition);
  }

 private:
  static constexpr std::string_view who = "WeightedSampler";

  static World checked(World world) {
    world.validate(who);
    return world;
  }

  static std::uint64_t hash_weights(const std::vector<double>& weights) noexcept {
    std::uint64_t h = detail::hash_field(0xcbf29ce484222325u, "distsampler-weights-v1");
    for (const double w : weights) {
      std::uint64_t bits = 0;
      static_assert(sizeof bits == sizeof w, "IEEE double");
      std::memcpy(&bits, &w, sizeof bits);
      h = detail::hash_field(h, bits);
    }
    return detail::mix64(h);
  }

  std::shared_ptr<const std::vector<std::uint64_t>> build_order(std::uint64_t epoch) const {
    const std::vector<double>& w = *weights_;
    std::vector<std::pair<double, std::uint64_t>> keys;
    const std::uint64_t stream = detail::mix64(options_.seed ^ detail::splitmix64(epoch) ^ 0x77736872u);
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (w[i] > 0) keys.emplace_back(detail::neg_log_unit(detail::mix64(stream ^ detail::splitmix64(i))) / w[i], i);
    }
    std::sort(keys.begin(), keys.end());
    auto order = std::make_shared<std::vector<std::uint64_t>>();
    order->reserve(static_cast<std::size_t>(options_.num_samples));
    for (std::size_t i = 0; i < options_.num_samples; ++i) order->push_back(keys[i].second);
    return order;
  }

  void commit(std::uint64_t epoch, std::uint64_t start, std::shared_ptr<const std::vector<std::uint64_t>> order,
              const StridedPartition& partition) noexcept {
    epoch_ = epoch;
    start_ = start;
    order_ = std::move(order);
    partition_ = partition;
  }

  World world_;
  WeightedSamplerOptions options_;
  std::shared_ptr<const AliasTable> table_;
  std::shared_ptr<const std::vector<double>> weights_;
  std::shared_ptr<const std::vector<std::uint64_t>> order_;
  std::uint64_t weights_hash_ = 0;
  std::uint64_t epoch_ = 0;
  std::uint64_t start_ = 0;
  StridedPartition partition_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_WEIGHTED_HPP

// distsampler permutations: the order of one epoch, position -> dataset index (identity and torch's exact randperm).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PERMUTATION_HPP
#define DISTSAMPLER_PERMUTATION_HPP

#include <cstdint>
#include <memory>
#include <string>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/mt19937.hpp"
#include "error.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

// The Permutation requirements are listed, and checked, in permutation_traits.hpp.

/// The identity order, 0, 1, ..., n - 1 (what `shuffle = false` gives).
/// O(1) time and memory; noexcept; a value type.
class IdentityPermutation {
 public:
  struct options_type {};
  static constexpr bool random_access = true;
  static constexpr std::uint32_t format_version = 1;
  [[nodiscard]] static constexpr std::string_view name(const options_type& /*options*/) noexcept { return "identity"; }

  constexpr IdentityPermutation() noexcept = default;
  constexpr IdentityPermutation(std::uint64_t n, std::uint64_t /*seed*/, std::uint64_t /*epoch*/,
                                const options_type& /*options*/ = {}) noexcept
      : n_(n) {}

  [[nodiscard]] constexpr std::uint64_t size() const noexcept { return n_; }
  [[nodiscard]] constexpr std::uint64_t operator()(std::uint64_t position) const noexcept { return position; }

 private:
  std::uint64_t n_ = 0;
};

/// Which generation of torch's `randperm` to reproduce for n >= 214748364.
/// Both generations agree below that size.
enum class TorchGeneration {
  /// torch 1.x up to 2.6: one 32-bit draw per step, `swap(r[i], r[i + random() % (n - i)])`.
  v1 = 1,
  /// torch 2.7 and later: for large n, an inside-out shuffle with 64-bit draws.
  v2_7 = 2,
  /// What current torch does (= v2_7).
  current = v2_7,
};

/// TorchRandperm's options: which torch generation's large-n algorithm to reproduce.
struct TorchRandpermOptions {
  TorchGeneration generation = TorchGeneration::current;
};

/// Bit-exact `torch.randperm(n, generator=g)` on the CPU, with `g.manual_seed(seed + epoch)`:
/// the order of `torch.utils.data.DistributedSampler` with the same seed after `set_epoch(epoch)`.
///
/// The manual seed is `seed + epoch` taken mod 2^64 (torch takes negative seeds mod 2^64,
/// so pass `static_cast<std::uint64_t>(-1)` for torch's seed -1; torch itself raises an
/// overflow error where seed + epoch >= 2^64, and this engine wraps instead). The
/// generator is MT19937 seeded with the low 32 bits of that value, as in torch.
///
/// Cost: O(n) time and memory at construction (4 bytes per index while n <= 2^32,
/// else 8), O(1) per lookup. Copies share the immutable table. Throws config_error, naming
/// n, for every n whose table cannot be held: more indices than a vector holds, a byte
/// count beyond the address space (both checked before allocating), or an allocation
/// that fails (std::bad_alloc is translated). A moved-from TorchRandperm is empty (size 0), like a
/// default-constructed one. Deterministic on every platform (no std::shuffle, no std
/// distributions).
class TorchRandperm {
 public:
  using options_type = TorchRandpermOptions;
  /// torch's order is fixed by torch; this changes only if the reproduction had a bug.
  static constexpr std::uint32_t format_version = 1;
  /// "torch-v1" or "torch-v2.7": the generations differ for large n.
  [[nodiscard]] static constexpr std::string_view name(const options_type& options) noexcept {
    return options.generation == TorchGeneration::v1 ? "torch-v1" : "torch-v2.7";
  }
  static constexpr bool random_access = false;

  /// Sizes below this use the 32-bit-draw algorithm in every torch generation.
  static constexpr std::uint64_t large_n_threshold = 4294967295u / 20u;  // 214748364

  TorchRandperm() = default;
  TorchRandperm(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch, const options_type& options = {});

  TorchRandperm(const TorchRandperm&) = default;
  TorchRandperm& operator=(const TorchRandperm&) = default;
  /// Leaves `other` empty: its lookups must not outlive the table it handed over.
  TorchRandperm(TorchRandperm&& other) noexcept
      : n_(std::exchange(other.n_, 0)),
        table_(std::move(other.table_)),
        narrow_(std::exchange(other.narrow_, nullptr)),
        wide_(std::exchange(other.wide_, nullptr)) {}
  /// Leaves `other` empty (unchanged when it is *this).
  TorchRandperm& operator=(TorchRandperm&& other) noexcept {
    TorchRandperm taken(std::move(other));
    std::swap(n_, taken.n_);
    table_.swap(taken.table_);
    std::swap(narrow_, taken.narrow_);
    std::swap(wide_, taken.wide_);
    return *this;
  }
  ~TorchRandperm() = default;

  [[nodiscard]] std::uint64_t size() const noexcept { return n_; }
  [[nodiscard]] std::uint64_t operator()(std::uint64_t position) const noexcept {
    return narrow_ ? narrow_[position] : wide_[position];
  }

  /// True when torch of `generation` uses the inside-out, 64-bit-draw algorithm for n.
  [[nodiscard]] static constexpr bool uses_inside_out(std::uint64_t n, TorchGeneration generation) noexcept;

  /// The manual seed torch's generator receives for (seed, epoch).
  [[nodiscard]] static constexpr std::uint64_t torch_seed(std::uint64_t seed, std::uint64_t epoch) noexcept {
    return seed + epoch;  // unsigned: wraps mod 2^64
  }

 private:
  template <class T>
  static std::shared_ptr<const std::vector<T>> build(std::uint64_t n, std::uint64_t seed, TorchGeneration generation);

  std::uint64_t n_ = 0;
  std::shared_ptr<const void> table_;
  const std::uint32_t* narrow_ = nullptr;
  const std::uint64_t* wide_ = nullptr;
};

namespace detail {

/// torch's small-n randperm: r = 0..n-1, then swap(r[i], r[i + random() % (n - i)]) for
/// i in 0..n-2, drawing from MT19937 seeded with `seed`.
template <class T>
void torch_randperm_swap(T* r, std::uint64_t n, std::uint32_t seed) noexcept {
  Mt19937 engine(seed);
  for (std::uint64_t i = 0; i < n; ++i) r[i] = static_cast<T>(i);
  for (std::uint64_t i = 0; i + 1 < n; ++i) {
    const std::uint64_t bound = n - i;
    const std::uint32_t draw = engine();
    // A 32-bit draw modulo a bound >= 2^32 is the draw itself; 32-bit division is
    // much faster and gives the same remainder otherwise.
    const std::uint64_t z = bound > 0xffffffffu ? draw : draw % static_cast<std::uint32_t>(bound);
    const T saved = r[i];
    r[i] = r[i + z];
    r[i + z] = saved;
  }
}

/// torch 2.7's large-n randperm: for i in 0..n-1, z = random64() % (i + 1); r[i] = r[z]; r[z] = i.
template <class T>
void torch_randperm_inside_out(T* r, std::uint64_t n, std::uint32_t seed) noexcept {
  Mt19937 engine(seed);
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t z = engine.next64() % (i + 1);
    r[i] = r[z];
    r[z] = static_cast<T>(i);
  }
}

}  // namespace detail

inline constexpr bool TorchRandperm::uses_inside_out(std::uint64_t n, TorchGeneration generation) noexcept {
  return generation != TorchGeneration::v1 && n >= large_n_threshold;
}

template <class T>
std::shared_ptr<const std::vector<T>> TorchRandperm::build(std::uint64_t n, std::uint64_t seed,
                                                           TorchGeneration generation) {
  auto table = std::make_shared<std::vector<T>>(static_cast<std::size_t>(n));
  // torch seeds its MT19937 with the low 32 bits of the 64-bit manual seed.
  const auto seed32 = static_cast<std::uint32_t>(seed);
  if (uses_inside_out(n, generation)) {
    detail::torch_randperm_inside_out(table->data(), n, seed32);
  } else {
    detail::torch_randperm_swap(table->data(), n, seed32);
  }
  return table;
}

inline TorchRandperm::TorchRandperm(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch,
                                    const options_type& options)
    : n_(n) {
  if (options.generation != TorchGeneration::v1 && options.generation != TorchGeneration::v2_7) {
    detail::throw_config_error("TorchRandperm: generation " + std::to_string(static_cast<int>(options.generation)) +
                               " is unknown (expected TorchGeneration::v1 or TorchGeneration::v2_7)");
  }
  if (n == 0) return;
  const bool narrow = n - 1 <= 0xffffffffu;
  const std::uint64_t width = narrow ? sizeof(std::uint32_t) : sizeof(std::uint64_t);
  const std::uint64_t most = narrow ? std::vector<std::uint32_t>().max_size() : std::vector<std::uint64_t>().max_size();
  if (n > SIZE_MAX / width || n > most) {
    detail::throw_config_error("TorchRandperm: dataset_size " + std::to_string(n) + " needs " + std::to_string(width) +
                               " bytes per index, more than this address space holds (at most " + std::to_string(most) +
                               " indices; use FeistelPermutation, which needs O(1) memory)");
  }
  const std::uint64_t s = torch_seed(seed, epoch);
  try {
    if (narrow) {
      auto table = build<std::uint32_t>(n, s, options.generation);
      narrow_ = table->data();
      table_ = std::move(table);
    } else {
      auto table = build<std::uint64_t>(n, s, options.generation);
      wide_ = table->data();
      table_ = std::move(table);
    }
  } catch (const std::bad_alloc&) {
    detail::throw_config_error("TorchRandperm: out of memory materialising dataset_size " + std::to_string(n) +
                               " indices (use FeistelPermutation, which needs O(1) memory)");
  }
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PERMUTATION_HPP

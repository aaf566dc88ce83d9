// distsampler tests: a Permutation engine that counts its constructions and throws on demand (strong-guarantee tests).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TESTS_FLAKY_PERMUTATION_HPP
#define DISTSAMPLER_TESTS_FLAKY_PERMUTATION_HPP

#include <cstdint>
#include <string>
#include <string_view>

#include <distsampler/error.hpp>
#include <distsampler/feistel.hpp>
#include <distsampler/permutation_traits.hpp>

namespace distsampler_test {

// FeistelPermutation's order, but the constructor throws config_error while `fail` is set
// (as TorchRandperm does when its table cannot be allocated), and counts the orders built.
class FlakyPermutation {
 public:
  struct options_type {};
  static constexpr bool random_access = true;
  static constexpr std::uint32_t format_version = 1;
  [[nodiscard]] static constexpr std::string_view name(const options_type& /*options*/) noexcept { return "flaky"; }

  static inline bool fail = false;
  static inline std::uint64_t built = 0;

  FlakyPermutation() noexcept = default;
  FlakyPermutation(std::uint64_t n, std::uint64_t seed, std::uint64_t epoch, const options_type& /*options*/ = {}) {
    if (fail) {
      distsampler::detail::throw_config_error("FlakyPermutation: cannot build epoch " + std::to_string(epoch));
    }
    order_ = distsampler::FeistelPermutation(n, seed, epoch);
    ++built;
  }

  [[nodiscard]] std::uint64_t size() const noexcept { return order_.size(); }
  [[nodiscard]] std::uint64_t operator()(std::uint64_t position) const noexcept { return order_(position); }

 private:
  distsampler::FeistelPermutation order_;
};

static_assert(distsampler::check_permutation<FlakyPermutation>());

// Sets FlakyPermutation::fail for one scope.
struct FailBuilds {
  FailBuilds() noexcept { FlakyPermutation::fail = true; }
  ~FailBuilds() { FlakyPermutation::fail = false; }
  FailBuilds(const FailBuilds&) = delete;
  FailBuilds& operator=(const FailBuilds&) = delete;
};

}  // namespace distsampler_test

#endif  // DISTSAMPLER_TESTS_FLAKY_PERMUTATION_HPP

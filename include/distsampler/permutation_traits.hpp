// distsampler permutation layer: the Permutation concept, checked at compile time, and each engine's identity.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PERMUTATION_TRAITS_HPP
#define DISTSAMPLER_PERMUTATION_TRAITS_HPP

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

// A Permutation engine P, as the samplers use it:
//
//   typename P::options_type          engine-specific options, default-constructible
//   P()                               an empty order (size 0); also what a moved-from engine is
//   P(n, seed, epoch, options)        the epoch's bijection on [0, n)
//   p.size()                          n
//   p(position)                       the dataset index at position (position < n)
//   P::random_access                  true when p(position) costs O(1) and the constructor
//                                     does not materialise n values
//   P::name(options)                  the engine's identity in saved states, with the options
//                                     that change its order (a view of static storage)
//   P::format_version                 bumped whenever the order changes for any input
//
// Every engine is a pure function of (n, seed, epoch, options): the same output on every
// platform, compiler and standard library. Name and format_version are declared once, by the
// engine; states fingerprint both, so a state saved under another order is refused.

namespace detail {

template <class P, class = void>
struct has_options_type : std::false_type {};
template <class P>
struct has_options_type<P, std::void_t<typename P::options_type>> : std::true_type {};

template <class P, class = void>
struct has_engine_constructor : std::false_type {};
template <class P>
struct has_engine_constructor<P, std::void_t<decltype(P(std::uint64_t{}, std::uint64_t{}, std::uint64_t{},
                                                        std::declval<const typename P::options_type&>()))>>
    : std::true_type {};

template <class P, class = void>
struct has_lookup : std::false_type {};
template <class P>
struct has_lookup<P, std::void_t<decltype(static_cast<std::uint64_t>(std::declval<const P&>()(std::uint64_t{}))),
                                 decltype(static_cast<std::uint64_t>(std::declval<const P&>().size()))>>
    : std::true_type {};

template <class P, class = void>
struct has_random_access_flag : std::false_type {};
template <class P>
struct has_random_access_flag<P, std::void_t<decltype(static_cast<bool>(P::random_access))>> : std::true_type {};

template <class P, class = void>
struct has_engine_name : std::false_type {};
template <class P>
struct has_engine_name<
    P, std::void_t<decltype(std::string_view(P::name(std::declval<const typename P::options_type&>())))>>
    : std::true_type {};

template <class P, class = void>
struct has_format_version : std::false_type {};
template <class P>
struct has_format_version<P, std::void_t<decltype(static_cast<std::uint32_t>(P::format_version))>> : std::true_type {};

}  // namespace detail

/// True when P meets every requirement of a Permutation engine listed above.
template <class P>
inline constexpr bool is_permutation_v = detail::has_options_type<P>::value&& std::is_default_constructible_v<P>&&
    detail::has_engine_constructor<P>::value&& detail::has_lookup<P>::value&& detail::has_random_access_flag<P>::value&&
        detail::has_engine_name<P>::value&& detail::has_format_version<P>::value;

/// Compile-time check with one readable message per missing requirement; the samplers
/// call it for their Permutation parameter. Always true when it compiles.
template <class P>
constexpr bool check_permutation() noexcept {
  static_assert(detail::has_options_type<P>::value,
                "distsampler Permutation: the engine needs a nested `options_type` (an empty struct is fine)");
  static_assert(std::is_default_constructible_v<P>,
                "distsampler Permutation: the engine needs a default constructor (an empty order)");
  static_assert(detail::has_engine_constructor<P>::value,
                "distsampler Permutation: the engine needs a constructor P(n, seed, epoch, const options_type&)");
  static_assert(detail::has_lookup<P>::value,
                "distsampler Permutation: the engine needs `size()` and `operator()(position)` returning indices");
  static_assert(detail::has_random_access_flag<P>::value,
                "distsampler Permutation: the engine needs `static constexpr bool random_access`");
  static_assert(detail::has_engine_name<P>::value,
                "distsampler Permutation: the engine needs `static constexpr std::string_view name(const "
                "options_type&)`, its identity in saved states");
  static_assert(detail::has_format_version<P>::value,
                "distsampler Permutation: the engine needs `static constexpr std::uint32_t format_version`");
  return true;
}

/// The identity an engine contributes to a state's fingerprint: its name with the options
/// that change its order (e.g. "torch-v2.7"), and its format version.
struct EngineIdentity {
  std::string_view name;
  std::uint32_t format_version = 0;
};

namespace detail {
template <class P, class = void>
struct has_format1_order : std::false_type {};
template <class P>
struct has_format1_order<P, std::void_t<decltype(static_cast<bool>(P::keeps_format1_order(std::uint64_t{})))>>
    : std::true_type {};
}  // namespace detail

/// True when engine P's order of n values is the one its format version 1 gave (so states
/// written before engines recorded their version still describe it): always for a
/// version-1 engine; else what the engine's optional `static constexpr bool
/// keeps_format1_order(std::uint64_t n)` says; else false. O(1), noexcept.
template <class P>
[[nodiscard]] constexpr bool keeps_format1_order(std::uint64_t n) noexcept {
  if constexpr (detail::has_format1_order<P>::value) {
    return P::format_version == 1 || P::keeps_format1_order(n);
  } else {
    return P::format_version == 1;
  }
}

/// EngineIdentity of engine P with `options`. O(1), noexcept.
template <class P>
[[nodiscard]] constexpr EngineIdentity engine_identity(const typename P::options_type& options) noexcept {
  return {std::string_view(P::name(options)), static_cast<std::uint32_t>(P::format_version)};
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PERMUTATION_TRAITS_HPP

// distsampler fmt adapter (opt-in): fmt formatters for World, Tail, SamplerOptions, TorchGeneration and
// PartitionReport. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FMT_HPP
#define DISTSAMPLER_FMT_HPP

#include <fmt/format.h>

#include <string_view>

#include "distsampler.hpp"

/// `fmt::format("{}", world)` -> "rank 3/8 (local 1/2)".
template <>
struct fmt::formatter<distsampler::World> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(const distsampler::World& w, FormatContext& ctx) const -> decltype(ctx.out()) {
    return fmt::format_to(ctx.out(), "rank {}/{} (local {}/{})", w.rank, w.world_size, w.local_rank,
                          w.local_world_size);
  }
};

/// `fmt::format("{}", Tail::pad)` -> "pad"; accepts string format specs such as `{:>6}`.
template <>
struct fmt::formatter<distsampler::Tail> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(distsampler::Tail t, FormatContext& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::string_view>::format(distsampler::to_string(t), ctx);
  }
};

/// "v1" or "v2.7".
template <>
struct fmt::formatter<distsampler::TorchGeneration> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(distsampler::TorchGeneration g, FormatContext& ctx) const -> decltype(ctx.out()) {
    const std::string_view name = g == distsampler::TorchGeneration::v1 ? "v1" : "v2.7";
    return fmt::formatter<std::string_view>::format(name, ctx);
  }
};

/// "shuffle=true seed=42 tail=pad".
template <>
struct fmt::formatter<distsampler::SamplerOptions> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(const distsampler::SamplerOptions& o, FormatContext& ctx) const -> decltype(ctx.out()) {
    return fmt::format_to(ctx.out(), "shuffle={} seed={} tail={}", o.shuffle, o.seed, distsampler::to_string(o.tail));
  }
};

/// The report's one-line summary.
template <>
struct fmt::formatter<distsampler::PartitionReport> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(const distsampler::PartitionReport& r, FormatContext& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::string_view>::format(r.summary(), ctx);
  }
};

#endif  // DISTSAMPLER_FMT_HPP

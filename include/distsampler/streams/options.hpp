// distsampler read-time streams: how a StreamPlan deals (StreamOptions).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STREAMS_OPTIONS_HPP
#define DISTSAMPLER_STREAMS_OPTIONS_HPP

#include <cstdint>

#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// How a StreamPlan deals: `seed` orders the passes; `share` is the number of consumers each
/// shard is cut among by stride (its records part + j * share), StreamOptions::share_all for
/// every consumer. With share 1 (the default) a shard is cut only when there are fewer shards
/// than consumers (into ceil(consumers / shards) parts), and the consumers' shares of a pass
/// differ by the spread of the shard sizes, so without byte hints they drift apart over the
/// passes. With share_all consumer c reads records j = c + pass + i (mod consumers) of the
/// shard at position i of the pass, so the shares of a pass differ by at most one record per
/// shard (those extra records falling on other consumers in each shard) and the consumers
/// stay within about one pass of each other without hints; the cost is I/O: a format read
/// front to back is scanned `share` times per pass (docs/STREAMS.md). Plain data.
struct StreamOptions {
  /// The share that cuts every shard among every consumer.
  static constexpr std::uint64_t share_all = 0;
  std::uint64_t seed = 0;
  std::uint64_t share = 1;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STREAMS_OPTIONS_HPP

// distsampler loader round-robin: where torch's DataLoader stops each worker's shard stream after b batches.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_LOADER_ROUND_ROBIN_HPP
#define DISTSAMPLER_LOADER_ROUND_ROBIN_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "progress.hpp"
#include "../state.hpp"
#include "streaming_shard_sampler.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

/// Batches of up to `batch_size` (> 0) that workers with streams of `worker_sizes`
/// samples hold in all, each worker batching its own stream with a short last batch.
[[nodiscard]] inline std::uint64_t round_robin_batches(const std::vector<std::uint64_t>& worker_sizes,
                                                       std::uint64_t batch_size) noexcept {
  std::uint64_t total = 0;
  for (const std::uint64_t size : worker_sizes) total += size / batch_size + (size % batch_size != 0 ? 1 : 0);
  return total;
}

/// Samples each worker has handed out once a loader yielded `batches` (at most
/// round_robin_batches(worker_sizes, batch_size)) batches of up to `batch_size` (> 0),
/// taking batch j from the workers in turn (worker 0, 1, ..., skipping workers whose
/// stream is exhausted): torch's DataLoader over an iterable dataset with one stream per
/// worker. O(workers log workers).
[[nodiscard]] inline std::vector<std::uint64_t> round_robin_done(const std::vector<std::uint64_t>& worker_sizes,
                                                                 std::uint64_t batches, std::uint64_t batch_size) {
  const std::size_t nw = worker_sizes.size();
  std::vector<std::uint64_t> per(nw);
  for (std::size_t w = 0; w < nw; ++w) {
    per[w] = worker_sizes[w] / batch_size + (worker_sizes[w] % batch_size != 0 ? 1 : 0);
  }
  // After t full turns worker w gave min(per[w], t) batches: find the largest t whose
  // total fits, then the leftover batches go to the next workers still running, in turn.
  std::vector<std::uint64_t> sorted = per;
  std::sort(sorted.begin(), sorted.end());
  std::uint64_t t = 0, below = 0;  // below: batches of the workers that ran out by turn t
  std::size_t i = 0;
  for (;;) {
    while (i < nw && sorted[i] <= t) below += sorted[i++];
    const auto active = static_cast<std::uint64_t>(nw - i);
    if (active == 0) break;
    if (below + sorted[i] * active > batches) {
      t = (batches - below) / active;
      break;
    }
    t = sorted[i];
  }
  std::uint64_t given = 0;
  std::vector<std::uint64_t> done(nw);
  for (std::size_t w = 0; w < nw; ++w) {
    done[w] = std::min(per[w], t);
    given += done[w];
  }
  for (std::size_t w = 0; w < nw && given < batches; ++w) {
    if (per[w] > t) {
      ++done[w];
      ++given;
    }
  }
  for (std::size_t w = 0; w < nw; ++w) done[w] = std::min(worker_sizes[w], done[w] * batch_size);
  return done;
}

// The stream sizes of rank r's workers, in worker order.
[[nodiscard]] inline std::vector<std::uint64_t> rank_worker_sizes(const StreamingShardSampler& sampler,
                                                                  std::uint64_t r) {
  std::vector<std::uint64_t> sizes(static_cast<std::size_t>(sampler.num_workers()));
  for (std::uint64_t w = 0; w < sampler.num_workers(); ++w) {
    sizes[static_cast<std::size_t>(w)] = sampler.consumer_size(w * sampler.world_size() + r);
  }
  return sizes;
}

}  // namespace detail

/// How many samples each worker of `sampler`'s rank has handed out once a data loader
/// has yielded `batches` batches of up to `batch_size` samples, taking them from the
/// workers in turn over `sampler.stream(worker)` (see detail::round_robin_done). Throws
/// config_error for batch_size 0 or more batches than this rank's workers have.
/// O(num_workers log num_workers).
[[nodiscard]] inline std::vector<std::uint64_t> loader_worker_done(const StreamingShardSampler& sampler,
                                                                   std::uint64_t batches, std::uint64_t batch_size) {
  const std::string who = "loader_worker_done: ";
  if (batch_size == 0) detail::throw_config_error(who + "batch_size is 0 (expected at least 1)");
  const auto sizes = detail::rank_worker_sizes(sampler, sampler.rank());
  const std::uint64_t total = detail::round_robin_batches(sizes, batch_size);
  if (batches > total) {
    detail::throw_config_error(who + "batches " + std::to_string(batches) + " exceeds the " + std::to_string(total) +
                               " batches of this rank's workers at batch_size " + std::to_string(batch_size));
  }
  return detail::round_robin_done(sizes, batches, batch_size);
}

/// The state of the whole job after the data loader of every rank yielded `batches`
/// batches of `batch_size`, or all it had (see loader_worker_done; ranks differ only
/// under Tail::uneven); the same on every rank. Throws config_error for batch_size 0 or
/// more batches than any rank has. O(consumers log num_workers + ranges).
[[nodiscard]] inline SamplerState state_after_batches(const StreamingShardSampler& sampler, std::uint64_t batches,
                                                      std::uint64_t batch_size) {
  const std::string who = "state_after_batches: ";
  if (batch_size == 0) detail::throw_config_error(who + "batch_size is 0 (expected at least 1)");
  const std::uint64_t w_size = sampler.world_size();
  std::vector<std::vector<std::uint64_t>> sizes(static_cast<std::size_t>(w_size));
  std::uint64_t most = 0;
  for (std::uint64_t r = 0; r < w_size; ++r) {
    sizes[static_cast<std::size_t>(r)] = detail::rank_worker_sizes(sampler, r);
    most = std::max(most, detail::round_robin_batches(sizes[static_cast<std::size_t>(r)], batch_size));
  }
  if (batches > most) {
    detail::throw_config_error(who + "batches " + std::to_string(batches) + " exceeds the " + std::to_string(most) +
                               " batches of the largest rank at batch_size " + std::to_string(batch_size));
  }
  std::vector<std::uint64_t> done(static_cast<std::size_t>(sampler.consumers()));
  for (std::uint64_t r = 0; r < w_size; ++r) {
    const auto& rank_sizes = sizes[static_cast<std::size_t>(r)];
    const std::uint64_t rank_batches = std::min(batches, detail::round_robin_batches(rank_sizes, batch_size));
    const auto per_worker = detail::round_robin_done(rank_sizes, rank_batches, batch_size);
    for (std::uint64_t w = 0; w < sampler.num_workers(); ++w) {
      done[static_cast<std::size_t>(w * w_size + r)] = per_worker[static_cast<std::size_t>(w)];
    }
  }
  return sampler.state(ConsumerProgress(std::move(done)));
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_LOADER_ROUND_ROBIN_HPP

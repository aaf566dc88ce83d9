// distsampler shard family's MPI helpers (opt-in, included by mpi.hpp): guard_shard_epoch and the job-wide state.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_SHARDS_MPI_HPP
#define DISTSAMPLER_SHARDS_MPI_HPP

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../state.hpp"
#include "../version.hpp"
#include "../world.hpp"
#include "../shards/progress.hpp"
#include "../shards/guard.hpp"
#include "../shards/streaming_shard_sampler.hpp"
#include "core.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace mpi {

/// The overlap guard for one segment of a StreamingShardSampler (a whole epoch, or what
/// a resumed state leaves): every worker stream of this rank (padding flagged) and this
/// rank's share of the positions the segment does not read (consumed before it, and the
/// remainder Tail::drop leaves), so the verdict covers all N samples: guard_epoch under
/// the name it had before guard_epoch served every family. Collective over `comm`;
/// O(N / W + reads) per rank.
[[nodiscard]] inline GuardReport guard_shard_epoch(const StreamingShardSampler& sampler,
                                                   MPI_Comm comm = MPI_COMM_WORLD) {
  return guard_epoch(sampler, comm);
}

/// The state of the whole job's StreamingShardSampler epoch when worker w of this rank
/// has read `worker_done[w]` samples of its stream: for ranks that are not in lockstep
/// (each rank passes its own counts). Gathers every rank's counts (an allgather of 3
/// integers, then of num_workers integers per rank) and returns
/// `sampler.state(ConsumerProgress(...))`, identical on every rank. Collective over `comm`.
/// Throws config_error, on every rank alike, when a rank's sampler is not built for its
/// MPI rank and size, ranks disagree on num_workers, a rank passes the wrong number of
/// counts, or a count is past the end of its stream.
[[nodiscard]] inline SamplerState shard_state(const StreamingShardSampler& sampler,
                                              const std::vector<std::uint64_t>& worker_done,
                                              MPI_Comm comm = MPI_COMM_WORLD) {
  const World mpi_world = world_from(comm);
  const std::uint64_t w = mpi_world.world_size;
  const std::uint64_t mine[4] = {sampler.world().rank, sampler.world().world_size, sampler.num_workers(),
                                 static_cast<std::uint64_t>(worker_done.size())};
  std::vector<std::uint64_t> heads(4 * static_cast<std::size_t>(w));
  detail::check(MPI_Allgather(mine, 4, MPI_UINT64_T, heads.data(), 4, MPI_UINT64_T, comm), "MPI_Allgather");
  const std::string who = "distsampler::mpi::shard_state: ";
  for (std::uint64_t r = 0; r < w; ++r) {
    const std::uint64_t* h = &heads[static_cast<std::size_t>(4 * r)];
    if (h[0] != r || h[1] != w) {
      distsampler::detail::throw_config_error(who + "MPI rank " + std::to_string(r) + " of " + std::to_string(w) +
                                              " built its sampler as rank " + std::to_string(h[0]) + " of " +
                                              std::to_string(h[1]) + " (expected its own MPI rank and size)");
    }
    if (h[2] != heads[2]) {
      distsampler::detail::throw_config_error(who + "rank " + std::to_string(r) + " has num_workers " +
                                              std::to_string(h[2]) + " but rank 0 has " + std::to_string(heads[2]) +
                                              " (expected the same on every rank)");
    }
    if (h[3] != h[2]) {
      distsampler::detail::throw_config_error(who + "rank " + std::to_string(r) + " passed " + std::to_string(h[3]) +
                                              " counts (expected num_workers = " + std::to_string(h[2]) + ")");
    }
  }
  const std::uint64_t workers = sampler.num_workers();
  std::vector<std::uint64_t> all(static_cast<std::size_t>(workers * w));
  detail::check(MPI_Allgather(worker_done.data(), static_cast<int>(workers), MPI_UINT64_T, all.data(),
                              static_cast<int>(workers), MPI_UINT64_T, comm),
                "MPI_Allgather");
  // all[r * workers + k] is rank r's worker k: consumer k * world_size + r.
  std::vector<std::uint64_t> done(all.size());
  for (std::uint64_t r = 0; r < w; ++r) {
    for (std::uint64_t k = 0; k < workers; ++k)
      done[static_cast<std::size_t>(k * w + r)] = all[static_cast<std::size_t>(r * workers + k)];
  }
  return sampler.state(ConsumerProgress(std::move(done)));
}

}  // namespace mpi
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_SHARDS_MPI_HPP

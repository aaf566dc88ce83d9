// distsampler MPI adapter's generic part: World from a communicator, check_consistent, and the overlap and mesh guards.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_MPI_CORE_HPP
#define DISTSAMPLER_MPI_CORE_HPP

// Only MPI's C API is used; Open MPI's and MPICH's deprecated C++ bindings are skipped.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../distsampler.hpp"
#include "../store_exchange.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace mpi {

namespace detail {

[[noreturn]] inline void fail(const std::string& what, int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  distsampler::detail::throw_config_error("distsampler::mpi: " + what +
                                          " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

inline void check(int code, const char* what) {
  if (code != MPI_SUCCESS) fail(what, code);
}

// Rank and size in `comm`, without a collective (what a guard with a timeout may call).
inline World rank_world(MPI_Comm comm) {
  int rank = 0, size = 0;
  check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  return World(static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(size));
}

// "20 s", "1.5 s": a timeout as messages show it (the c10d and Python guards' form).
using store_exchange::seconds_text;

}  // namespace detail

/// This process's World in `comm`: rank and size from MPI, local rank and local size
/// from a split of `comm` into shared-memory (same node) groups. Collective over `comm`.
/// Throws config_error when an MPI call fails (MPI must be initialised).
[[nodiscard]] inline World world_from(MPI_Comm comm = MPI_COMM_WORLD) {
  int rank = 0, size = 0, local_rank = 0, local_size = 0;
  detail::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  detail::check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  detail::check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  detail::check(MPI_Comm_rank(node, &local_rank), "MPI_Comm_rank (node)");
  detail::check(MPI_Comm_size(node, &local_size), "MPI_Comm_size (node)");
  MPI_Comm_free(&node);
  return World(static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(size),
               static_cast<std::uint64_t>(local_rank), static_cast<std::uint64_t>(local_size));
}

/// Checks that every rank of `comm` built its sampler with the same dataset size, seed,
/// epoch, shuffle and tail, and with its own MPI rank and size: catches "every rank
/// seeded differently" and "LOCAL_RANK used as rank" at run time. Collective over
/// `comm` (one allgather of 7 integers per rank). Throws config_error on every rank,
/// naming the first rank that disagrees and the field.
template <class Sampler>
void check_consistent(const Sampler& sampler, MPI_Comm comm = MPI_COMM_WORLD) {
  const World mpi_world = world_from(comm);
  const SamplerOptions& o = sampler.options();
  const std::uint64_t mine[7] = {sampler.dataset_size(),
                                 o.seed,
                                 sampler.epoch(),
                                 o.shuffle ? 1u : 0u,
                                 static_cast<std::uint64_t>(o.tail),
                                 sampler.rank(),
                                 sampler.world_size()};
  std::vector<std::uint64_t> all(7 * static_cast<std::size_t>(mpi_world.world_size));
  detail::check(MPI_Allgather(mine, 7, MPI_UINT64_T, all.data(), 7, MPI_UINT64_T, comm), "MPI_Allgather");
  static const char* const names[5] = {"dataset_size", "seed", "epoch", "shuffle", "tail"};
  for (std::uint64_t r = 0; r < mpi_world.world_size; ++r) {
    const std::uint64_t* theirs = &all[static_cast<std::size_t>(7 * r)];
    for (int f = 0; f < 5; ++f) {
      if (theirs[f] != all[static_cast<std::size_t>(f)]) {
        distsampler::detail::throw_config_error("distsampler::mpi::check_consistent: rank " + std::to_string(r) +
                                                " has " + names[f] + " " + std::to_string(theirs[f]) +
                                                " but rank 0 has " + std::to_string(all[static_cast<std::size_t>(f)]) +
                                                " (expected the same on every rank)");
      }
    }
    if (theirs[5] != r || theirs[6] != mpi_world.world_size) {
      distsampler::detail::throw_config_error("distsampler::mpi::check_consistent: MPI rank " + std::to_string(r) +
                                              " of " + std::to_string(mpi_world.world_size) +
                                              " built its sampler as rank " + std::to_string(theirs[5]) + " of " +
                                              std::to_string(theirs[6]) + " (expected its own MPI rank and size)");
    }
  }
}

/// What the overlap guard found (distsampler::GuardReport, the same on every rank).
using distsampler::GuardReport;

/// The runtime overlap guard: proves that the ranks of a communicator together read
/// every index of an epoch exactly once (padding excepted), or reports overlap or
/// missing samples. A ReadSums (read, padding, skip, merge; see overlap_check.hpp) that
/// knows the dataset size and finishes over MPI.
///
/// Each rank feeds what it read (`read`, `padding`) and, for tail policies that leave
/// samples unread on purpose, what it skipped (`skip`, each index on one rank only).
/// `finish` sums the ranks' overlap_words (one allreduce of 9 integers); each rank hashes
/// its 1/W block of [0, N), so the expected sums cost O(N/W) per rank, like the epoch
/// itself. A broken partition passes with probability about 2^-64.
///
/// O(1) memory; `read` is a few multiplications. Not thread-safe per object: give each
/// loader thread its own guard and `merge` them before `finish`.
class OverlapGuard : public ReadSums {
 public:
  explicit OverlapGuard(std::uint64_t dataset_size) noexcept : n_(dataset_size) {}

  [[nodiscard]] std::uint64_t dataset_size() const noexcept { return n_; }

  /// Collective over `comm`: the verdict, identical on every rank. Throws config_error
  /// when an MPI call fails. Blocks until every rank calls it (see the overload with a timeout).
  [[nodiscard]] GuardReport finish(MPI_Comm comm = MPI_COMM_WORLD) const {
    const World world = world_from(comm);
    const OverlapWords local = overlap_words(*this, n_, world);
    OverlapWords total = {};
    detail::check(
        MPI_Allreduce(local.data(), total.data(), static_cast<int>(overlap_word_count), MPI_UINT64_T, MPI_SUM, comm),
        "MPI_Allreduce");
    return overlap_verdict(total, n_, world.world_size);
  }

  /// As above, but waits at most `timeout` for the other ranks, by point-to-point messages
  /// (tag `tag` on `comm`) polled every 1 to 20 ms: each rank sends its words to rank 0; rank
  /// 0 waits `timeout` for all of them, then sends every rank that arrived one decision, the
  /// verdict or the ranks that did not arrive; the others wait up to 2 x `timeout` for it.
  /// Throws config_error on every rank that reads the decision, with the same message:
  /// "rank 2 did not arrive within 1 s (expected all 4 ranks to call the guard)". A rank that
  /// waits in vain for rank 0 (rank 0 stalled, or this rank came after rank 0 gave up) throws
  /// "rank 0 sent no decision within 2 s". What MPI cannot do: take back a message, so after
  /// a failure the job should end (a later guard could match a late rank's stale message);
  /// and survive a dead process: under Open MPI, mpirun ends the whole job when a rank is
  /// killed or exits without MPI_Finalize (no rank is left waiting in the guard), and
  /// mpirun's message names the rank. Messages are O(1) words per rank, O(W) at rank 0.
  [[nodiscard]] GuardReport finish(MPI_Comm comm, std::chrono::milliseconds timeout, int tag = 0x6473) const {
    const World world = detail::rank_world(comm);
    const OverlapWords local = overlap_words(*this, n_, world);
    // The decision: status (0 ok, 1 ranks missing), the summed words, how many ranks are
    // missing, and the first few of them.
    constexpr std::size_t listed = 8, words = 2 + overlap_word_count + listed;
    std::uint64_t decision[words] = {};
    const int w = static_cast<int>(world.world_size);
    // Polls `requests` until all are done or `until`; returns which are done.
    const auto poll = [](std::vector<MPI_Request>& requests, std::chrono::steady_clock::time_point until) {
      std::vector<bool> done(requests.size(), false);
      auto pause = std::chrono::milliseconds(1);
      for (;;) {
        bool all = true;
        for (std::size_t i = 0; i < requests.size(); ++i) {
          int flag = 0;
          if (!done[i]) detail::check(MPI_Test(&requests[i], &flag, MPI_STATUS_IGNORE), "MPI_Test");
          done[i] = done[i] || flag != 0;
          all = all && done[i];
        }
        if (all || std::chrono::steady_clock::now() >= until) return done;
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(20));
      }
    };
    const auto start = std::chrono::steady_clock::now();
    if (world.rank == 0) {
      std::vector<OverlapWords> theirs(static_cast<std::size_t>(w));
      std::vector<MPI_Request> requests(static_cast<std::size_t>(w), MPI_REQUEST_NULL);
      for (int q = 1; q < w; ++q) {
        detail::check(MPI_Irecv(theirs[static_cast<std::size_t>(q)].data(), static_cast<int>(overlap_word_count),
                                MPI_UINT64_T, q, tag, comm, &requests[static_cast<std::size_t>(q)]),
                      "MPI_Irecv");
      }
      const std::vector<bool> done = poll(requests, start + timeout);
      std::vector<int> missing;
      for (int q = 1; q < w; ++q) {
        if (!done[static_cast<std::size_t>(q)]) missing.push_back(q);
      }
      decision[0] = missing.empty() ? 0 : 1;
      decision[1 + overlap_word_count] = missing.size();
      for (std::size_t i = 0; i < missing.size() && i < listed; ++i) {
        decision[2 + overlap_word_count + i] = static_cast<std::uint64_t>(missing[i]);
      }
      for (std::size_t i = 0; i < overlap_word_count; ++i) {
        decision[1 + i] = local[i];
        for (int q = 1; q < w; ++q) decision[1 + i] += theirs[static_cast<std::size_t>(q)][i];
      }
      for (int q = 1; q < w; ++q) {
        MPI_Request& rq = requests[static_cast<std::size_t>(q)];
        if (!done[static_cast<std::size_t>(q)]) {  // never matched: withdrawn
          MPI_Cancel(&rq);
          MPI_Request_free(&rq);
          continue;
        }
        detail::check(MPI_Send(decision, static_cast<int>(words), MPI_UINT64_T, q, tag + 1, comm), "MPI_Send");
      }
    } else {
      std::vector<MPI_Request> requests(2, MPI_REQUEST_NULL);
      detail::check(
          MPI_Isend(local.data(), static_cast<int>(overlap_word_count), MPI_UINT64_T, 0, tag, comm, &requests[0]),
          "MPI_Isend");
      detail::check(MPI_Irecv(decision, static_cast<int>(words), MPI_UINT64_T, 0, tag + 1, comm, &requests[1]),
                    "MPI_Irecv");
      const std::vector<bool> done = poll(requests, start + 2 * timeout);
      if (!done[1]) {
        MPI_Cancel(&requests[1]);
        MPI_Request_free(&requests[1]);
        if (!done[0]) MPI_Request_free(&requests[0]);
        distsampler::detail::throw_config_error(
            "distsampler::mpi::guard_epoch: rank " + std::to_string(world.rank) + ": rank 0 sent no decision within " +
            detail::seconds_text(2 * timeout) + " (expected all " + std::to_string(w) +
            " ranks to call the guard; rank 0 is stalled, or gave up on this rank before it came)");
      }
    }
    if (decision[0] != 0) {
      std::string ranks = decision[1 + overlap_word_count] == 1 ? "rank " : "ranks ";
      for (std::uint64_t i = 0; i < decision[1 + overlap_word_count] && i < listed; ++i) {
        ranks += (i == 0 ? "" : ", ") + std::to_string(decision[2 + overlap_word_count + i]);
      }
      if (decision[1 + overlap_word_count] > listed) {
        ranks += " and " + std::to_string(decision[1 + overlap_word_count] - listed) + " more";
      }
      distsampler::detail::throw_config_error("distsampler::mpi::guard_epoch: " + ranks + " did not arrive within " +
                                              detail::seconds_text(timeout) + " (expected all " + std::to_string(w) +
                                              " ranks to call the guard)");
    }
    OverlapWords total = {};
    for (std::size_t i = 0; i < overlap_word_count; ++i) total[i] = decision[1 + i];
    return overlap_verdict(total, n_, world.world_size);
  }

 private:
  std::uint64_t n_;
};

/// The overlap guard for the current epoch, or the segment a resume left, of any sampler
/// whose family declares segment_sums (overlap_check.hpp; found by argument-dependent
/// lookup): feeds this rank's reads and its share of the samples the segment leaves
/// unread into an OverlapGuard. Collective over `comm`; per rank the cost of the family's
/// segment_sums (O(N / W + reads) for the index samplers).
template <class Sampler>
[[nodiscard]] GuardReport guard_epoch(const Sampler& sampler, MPI_Comm comm = MPI_COMM_WORLD) {
  OverlapGuard guard(guard_slots_of(sampler));
  guard.merge(segment_sums(sampler, world_from(comm)));
  return guard.finish(comm);
}

/// As above, waiting at most `timeout` for the other ranks (OverlapGuard::finish with a
/// timeout: the same verdict, or the same config_error naming the ranks that did not arrive).
template <class Sampler>
[[nodiscard]] GuardReport guard_epoch(const Sampler& sampler, MPI_Comm comm, std::chrono::milliseconds timeout) {
  OverlapGuard guard(guard_slots_of(sampler));
  guard.merge(segment_sums(sampler, detail::rank_world(comm)));
  return guard.finish(comm, timeout);
}

/// The mesh guard over MPI: `comm`'s ranks are the global ranks of `mesh` (its product is
/// the communicator's size) and each passes the sampler it built for its data rank
/// (World::from_mesh). Checks, on every rank alike (check_mesh_records), that each sampler
/// is built for its rank's data rank and data world size, that every model-parallel group
/// (tp, cp, pp, ...: the ranks that differ in one non-data dim) agrees on the key and
/// reads the same samples, that the data ranks agree on the key, and returns whether the
/// data ranks' reads are disjoint and covering. `sampler` is any sampler mesh_record_of
/// takes. Collective over `comm`: one allgather of 23 words per rank; per rank the cost of
/// its segment_sums, plus O(world_size x dims + N / DW) for the verdict. Throws
/// config_error naming the group, the rank and the field ("tp group of ranks 4,5: rank 5
/// reads other samples (seed 43, rank 4 has 42; ...)"), or when the mesh's product is not
/// the communicator's size or an MPI call fails.
template <class Sampler>
[[nodiscard]] GuardReport guard_mesh_epoch(const Sampler& sampler, const Mesh& mesh, MPI_Comm comm = MPI_COMM_WORLD);

/// The mesh guard's transport: every rank passes its `record` (mesh_record; the same
/// number of words on every rank), and gets check_mesh_records's verdict over all of them
/// (`format` names the key's fields). For samplers of your own; guard_mesh_epoch builds
/// the record of a library sampler. Collective over `comm`; throws as guard_mesh_epoch.
[[nodiscard]] inline GuardReport guard_mesh(const std::vector<std::uint64_t>& record, const Mesh& mesh,
                                            std::uint64_t dataset_size, const MeshKeyFormat& format,
                                            MPI_Comm comm = MPI_COMM_WORLD) {
  const char* who = "distsampler::mpi::guard_mesh_epoch";
  int size = 0;
  detail::check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  if (mesh.size() != static_cast<std::uint64_t>(size)) {
    distsampler::detail::throw_config_error(std::string(who) + ": mesh " + mesh.to_string() + " has " +
                                            std::to_string(mesh.size()) + " ranks but the communicator has " +
                                            std::to_string(size) + " (expected the product of the dims)");
  }
  const int words = static_cast<int>(record.size());
  std::vector<std::uint64_t> all(record.size() * static_cast<std::size_t>(size));
  detail::check(MPI_Allgather(record.data(), words, MPI_UINT64_T, all.data(), words, MPI_UINT64_T, comm),
                "MPI_Allgather");
  std::vector<std::vector<std::uint64_t>> records;
  for (std::size_t r = 0; r < static_cast<std::size_t>(size); ++r) {
    records.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(r * record.size()),
                         all.begin() + static_cast<std::ptrdiff_t>((r + 1) * record.size()));
  }
  return check_mesh_records(who, mesh, dataset_size, records, format);
}

template <class Sampler>
GuardReport guard_mesh_epoch(const Sampler& sampler, const Mesh& mesh, MPI_Comm comm) {
  return guard_mesh(mesh_record_of(sampler), mesh, guard_slots_of(sampler), mesh_key_format, comm);
}

}  // namespace mpi
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_MPI_CORE_HPP

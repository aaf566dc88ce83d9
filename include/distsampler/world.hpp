// distsampler World: which process this is (rank) among how many (world_size), explicit or from the launcher's
// environment. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_WORLD_HPP
#define DISTSAMPLER_WORLD_HPP

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "detail/decimal.hpp"
#include "error.hpp"
#include "version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

class Mesh;

/// The position of this process in a distributed job.
///
/// `rank` is in [0, world_size); `local_rank` is in [0, local_world_size) and
/// `local_world_size <= world_size`. Samplers use only `rank` and `world_size`;
/// the local fields are carried for the user's device selection.
///
/// Construction validates: `World{3, 4}` is fine, `World{4, 4}` throws
/// `config_error`. The default `World{}` is a single process (rank 0 of 1).
/// Fields are public for reading; samplers validate again when they receive a World.
///
/// Thread-safety: a plain value. `from_env` reads the environment and is as
/// thread-safe as `std::getenv`.
struct World {
  std::uint64_t rank = 0;
  std::uint64_t world_size = 1;
  std::uint64_t local_rank = 0;
  std::uint64_t local_world_size = 1;

  /// A single process: rank 0 of 1.
  constexpr World() noexcept = default;

  /// rank of world_size; locality unknown (local_rank 0 of 1).
  /// Throws config_error when world_size is 0 or rank >= world_size.
  World(std::uint64_t rank_, std::uint64_t world_size_) : World(rank_, world_size_, 0, 1) {}

  /// Everything explicit. Throws config_error when world_size is 0, rank >= world_size,
  /// local_world_size is 0, local_rank >= local_world_size or local_world_size > world_size.
  World(std::uint64_t rank_, std::uint64_t world_size_, std::uint64_t local_rank_, std::uint64_t local_world_size_)
      : rank(rank_), world_size(world_size_), local_rank(local_rank_), local_world_size(local_world_size_) {
    validate("World");
  }

  /// The single-process world, asked for explicitly (see `from_env_or`).
  [[nodiscard]] static constexpr World single() noexcept { return World(); }

  /// Reads the launcher's environment, in this order (the first launcher whose
  /// rank or size variable is present wins; the others are not consulted):
  ///
  ///  1. torchrun / torch.distributed: `RANK`, `WORLD_SIZE`, with `LOCAL_RANK`, `LOCAL_WORLD_SIZE`
  ///  2. Open MPI: `OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE`, with
  ///     `OMPI_COMM_WORLD_LOCAL_RANK`, `OMPI_COMM_WORLD_LOCAL_SIZE`
  ///  3. MPICH / Intel MPI (PMI): `PMI_RANK`, `PMI_SIZE`, with `MPI_LOCALRANKID`, `MPI_LOCALNRANKS`
  ///  4. SLURM: `SLURM_PROCID`, `SLURM_NTASKS`, with `SLURM_LOCALID`, `SLURM_NTASKS_PER_NODE`
  ///
  /// Why this order: launchers nest, and the innermost one describes this process.
  /// torchrun is often started by srun or mpirun, one agent per node, so SLURM_PROCID
  /// and OMPI_COMM_WORLD_RANK then number the agents, not the trainers; mpirun inside
  /// a SLURM allocation leaves the batch step's SLURM variables in the environment.
  /// So the most specific launcher is read first and SLURM, the outermost, last.
  ///
  /// Parsing is strict: a value must be plain decimal digits (no sign, no spaces,
  /// no empty string) and fit in 64 bits. The rank and size of a launcher come as a
  /// pair, and so do the local rank and local size: one without the other throws.
  /// When a launcher gives no locality, local_rank is 0 and local_world_size 1;
  /// SLURM gives `SLURM_LOCALID` alone unless `--ntasks-per-node` was used, and then
  /// local_world_size is reported as world_size (an upper bound).
  ///
  /// Throws config_error naming the variable, the value seen and what was expected;
  /// when no launcher is found, the message lists every variable looked for.
  /// There is no silent single-process default: use `from_env_or(World::single())`.
  [[nodiscard]] static World from_env() { return from_env(&std::getenv); }

  /// As `from_env()`, but reading variables through `lookup(const char* name)`, which
  /// returns the value as `const char*` or nullptr when unset. Lets tests inject an
  /// environment without touching the process's own.
  template <class Lookup>
  [[nodiscard]] static World from_env(Lookup&& lookup);

  /// As `from_env()`, but returns `fallback` when none of the launchers' variables is
  /// set at all. Present-but-malformed variables still throw.
  [[nodiscard]] static World from_env_or(const World& fallback) { return from_env_or(fallback, &std::getenv); }

  /// As `from_env_or(fallback)`, reading through `lookup`.
  template <class Lookup>
  [[nodiscard]] static World from_env_or(const World& fallback, Lookup&& lookup);

  /// The data-parallel World of `process` (its global rank and world size, e.g. from the
  /// launcher) in a parallel `mesh` (mesh.hpp, which defines these): rank is the data
  /// rank, world_size the data world size. local_rank and local_world_size count the data
  /// ranks on this process's node (global ranks placed in blocks of local_world_size per
  /// node, as torchrun and SLURM place them) when they form aligned blocks of one size on
  /// every node; otherwise, for a process without locality and for jobs over 2^20 ranks,
  /// 0 of 1. Throws config_error when the mesh's product is not process.world_size.
  /// O(world_size x dims) when local_world_size > 1, else O(dims).
  [[nodiscard]] static World from_mesh(const World& process, const Mesh& mesh);
  /// As above for global rank `global_rank` of `world_size` (locality unknown).
  [[nodiscard]] static World from_mesh(std::uint64_t global_rank, std::uint64_t world_size, const Mesh& mesh);
  /// As above for the process the launcher's environment describes (from_env's rules).
  [[nodiscard]] static World from_mesh_env(const Mesh& mesh);
  /// As from_mesh_env(mesh), reading variables through `lookup` (see from_env).
  template <class Lookup>
  [[nodiscard]] static World from_mesh_env(const Mesh& mesh, Lookup&& lookup);

  /// Throws config_error, prefixed by `who`, unless the invariants above hold.
  void validate(std::string_view who) const;

  friend constexpr bool operator==(const World& a, const World& b) noexcept {
    return a.rank == b.rank && a.world_size == b.world_size && a.local_rank == b.local_rank &&
           a.local_world_size == b.local_world_size;
  }
  friend constexpr bool operator!=(const World& a, const World& b) noexcept { return !(a == b); }

 private:
  template <class Lookup>
  static bool try_from_env(Lookup& lookup, World& out);
};

namespace detail {

struct LauncherVars {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

inline constexpr LauncherVars launchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MPICH/Intel MPI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"SLURM", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
};

/// Parses a strictly decimal, unsigned 64-bit value of environment variable `name`.
inline std::uint64_t parse_env_u64(const char* name, const char* value) {
  const std::string_view text(value);
  auto fail = [&](const char* what) {
    throw_config_error(std::string("World::from_env: ") + name + "=\"" + std::string(text) + "\" " + what);
  };
  const DecimalParse parsed = parse_decimal(text);
  if (parsed.error != DecimalError::ok) fail(describe(parsed.error));
  return parsed.value;
}

inline std::string world_to_string(const World& w) {
  return "rank " + std::to_string(w.rank) + " of world_size " + std::to_string(w.world_size);
}

}  // namespace detail

inline void World::validate(std::string_view who) const {
  const std::string prefix(who);
  if (world_size == 0) detail::throw_config_error(prefix + ": world_size is 0 (expected at least 1)");
  if (rank >= world_size) {
    detail::throw_out_of_range(prefix, "rank", rank, "world_size", world_size);
  }
  if (local_world_size == 0) detail::throw_config_error(prefix + ": local_world_size is 0 (expected at least 1)");
  if (local_rank >= local_world_size) {
    detail::throw_out_of_range(prefix, "local_rank", local_rank, "local_world_size", local_world_size);
  }
  if (local_world_size > world_size) {
    detail::throw_config_error(prefix + ": local_world_size " + std::to_string(local_world_size) +
                               " exceeds world_size " + std::to_string(world_size) +
                               " (expected local_world_size <= world_size)");
  }
}

template <class Lookup>
bool World::try_from_env(Lookup& lookup, World& out) {
  for (const auto& l : detail::launchers) {
    const char* rank_text = lookup(l.rank);
    const char* size_text = lookup(l.size);
    if (rank_text == nullptr && size_text == nullptr) continue;
    if (rank_text == nullptr || size_text == nullptr) {
      const char* present = rank_text ? l.rank : l.size;
      const char* absent = rank_text ? l.size : l.rank;
      detail::throw_config_error(std::string("World::from_env: ") + present + " is set but " + absent + " is not (" +
                                 l.name + " sets both; expected the pair)");
    }
    World w;
    w.rank = detail::parse_env_u64(l.rank, rank_text);
    w.world_size = detail::parse_env_u64(l.size, size_text);
    const char* local_rank_text = lookup(l.local_rank);
    const char* local_size_text = lookup(l.local_size);
    const bool slurm_localid_only = std::string_view(l.name) == "SLURM" && local_rank_text && !local_size_text;
    if (slurm_localid_only) {
      w.local_rank = detail::parse_env_u64(l.local_rank, local_rank_text);
      w.local_world_size = w.world_size;
    } else if (local_rank_text != nullptr || local_size_text != nullptr) {
      if (local_rank_text == nullptr || local_size_text == nullptr) {
        const char* present = local_rank_text ? l.local_rank : l.local_size;
        const char* absent = local_rank_text ? l.local_size : l.local_rank;
        detail::throw_config_error(std::string("World::from_env: ") + present + " is set but " + absent +
                                   " is not (expected the pair)");
      }
      w.local_rank = detail::parse_env_u64(l.local_rank, local_rank_text);
      w.local_world_size = detail::parse_env_u64(l.local_size, local_size_text);
    }
    w.validate(std::string("World::from_env (") + l.name + ": " + l.rank + "/" + l.size + ")");
    out = w;
    return true;
  }
  return false;
}

template <class Lookup>
World World::from_env(Lookup&& lookup) {
  World w;
  if (try_from_env(lookup, w)) return w;
  std::string looked_for;
  for (const auto& l : detail::launchers) {
    if (!looked_for.empty()) looked_for += ", ";
    looked_for += std::string(l.rank) + "/" + l.size;
  }
  detail::throw_config_error("World::from_env: no launcher environment found (looked for " + looked_for +
                             "); to run as one process, use World::from_env_or(World::single()) or World{}");
}

template <class Lookup>
World World::from_env_or(const World& fallback, Lookup&& lookup) {
  World w;
  if (try_from_env(lookup, w)) return w;
  fallback.validate("World::from_env_or (fallback)");
  return fallback;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_WORLD_HPP

// distsampler c10d guard (opt-in): ranks of a torchrun job (or of its parallel mesh) agree and read disjoint shares.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TORCH_GUARD_HPP
#define DISTSAMPLER_TORCH_GUARD_HPP

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "detail/decimal.hpp"
#include "detail/mix.hpp"
#include "distsampler.hpp"
#include "torch.hpp"
#include "torch/exchange.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace torch_guard {

/// What every rank must agree on, and who it claims to be: the sampler's key (family,
/// dataset size, seed, epoch, options, the segment a resume left) and its World. Filled
/// by check_epoch for any guarded sampler; fill it yourself for check_reads. The
/// "sampler" field is guard_family_code of the family name (StateKey::sampler), so
/// mismatch messages name each rank's family.
struct GuardKey {
  static constexpr std::size_t field_count = 13;
  /// Field names, in the order they are compared (the first difference is reported).
  static constexpr const char* names[field_count] = {
      "sampler",          "dataset_size",       "seed",        "epoch",  "shuffle",   "tail", "engine", "consumed",
      "micro_batch_size", "accumulation_steps", "num_workers", "layout", "world_size"};
  std::uint64_t fields[field_count] = {};
  std::uint64_t rank = 0;  ///< the rank the sampler was built for; must be the process's own
  /// The family name messages show for the "sampler" field (its first 32 bytes travel in
  /// the record); empty: guard_family_name(fields[0]).
  std::string family;
};

/// The sums a rank feeds (distsampler::ReadSums) and the verdict (distsampler::GuardReport)
/// of the core overlap check (overlap_check.hpp).
using distsampler::GuardReport;
using distsampler::ReadSums;

namespace detail {

using distsampler::detail::throw_config_error;

// Field `field` of a record for a message; `family` is the name the record carries.
inline std::string show(std::size_t field, std::uint64_t v, const std::string& family) {
  switch (field) {
    case 0:
      return family.empty() ? guard_family_name(v) : family;
    case 4:
      return v != 0 ? "true" : "false";
    case 5:
      return v <= 2 ? std::string(to_string(static_cast<Tail>(v))) : std::to_string(v);
    case 6:
    case 11:
      return distsampler::detail::hex64(v);
    default:
      return std::to_string(v);
  }
}

inline void put(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

inline std::uint64_t get(const std::vector<std::uint8_t>& in, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | in[at * 8 + static_cast<std::size_t>(i)];
  return v;
}

// One rank's record: magic, the key, the claimed rank, the sums, the hashes of its 1/W
// block of [0, N) (the expected sums, computed in parallel), and the family name (its
// first name_bytes bytes, zero-padded; compared through the key's "sampler" word).
constexpr std::uint64_t record_magic = 0x6473677561726432u;  // "dsguard2"
constexpr std::size_t name_bytes = 32;
constexpr std::size_t name_at = (1 + GuardKey::field_count + 1 + overlap_word_count) * 8;
constexpr std::size_t record_words = 1 + GuardKey::field_count + 1 + overlap_word_count + name_bytes / 8;

inline void put_name(std::vector<std::uint8_t>& out, const std::string& name) {
  for (std::size_t i = 0; i < name_bytes; ++i) out.push_back(i < name.size() ? static_cast<std::uint8_t>(name[i]) : 0);
}

inline std::string get_name(const std::vector<std::uint8_t>& in) {
  std::string name;
  for (std::size_t i = name_at; i < name_at + name_bytes && in[i] != 0; ++i) name += static_cast<char>(in[i]);
  return name;
}

// The guard's fields of any sampler: its key() (the family named by guard_family_code;
// the engine field the key's fingerprint without its layout), its position, its family's
// GuardShape (guard_shape_of: micro-batch size, accumulation, workers, layout) and its World.
template <class Sampler>
GuardKey key_of(const Sampler& s) {
  const StateKey k = s.key();
  StateKey order = k;
  order.layout = 0;
  const GuardShape shape = guard_shape_of(s);
  return GuardKey{{guard_family_code(k.sampler), s.dataset_size(), k.seed, s.epoch(), k.shuffle ? 1u : 0u,
                   static_cast<std::uint64_t>(k.tail), order.fingerprint(), s.start(), shape.micro_batch_size,
                   shape.accumulation_steps, shape.num_workers, shape.layout, s.world_size()},
                  s.rank(),
                  std::string(k.sampler)};
}

// The library sampler a libtorch adapter reads (its core(), a snapshot of its pass), or the sampler itself.
template <class Sampler>
auto core_of(const Sampler& s, int) -> decltype(s.core()) {
  return s.core();
}
template <class Sampler>
const Sampler& core_of(const Sampler& s, long) noexcept {
  return s;
}

}  // namespace detail

/// The guard's core, for any sampler: every rank of `process` (its true rank and world
/// size, e.g. from RANK/WORLD_SIZE) passes the key of its sampler and the sums of what it
/// reads (and skips) in one epoch, whose reads and skips should be the slots
/// 0..slots-1 once (guard_slots_of the sampler); returns the verdict, the same on every rank.
///
/// Each rank counts its calls in the store (`distsampler/guard/calls/<rank>`) and writes
/// one record (28 words) under a key namespaced by the call number
/// (`distsampler/guard/<n>/...`), waits for all world_size records, reads them, and the
/// ranks agree on one decision (torch/exchange.hpp): communication is O(world_size) words
/// per rank, independent of the dataset. Rank 0 returns only after every rank is done with
/// the store (it hosts the one store_from_env makes) and deletes the call's keys. Each rank
/// also hashes its 1/W block of [0, N) for the expected sums, so the check costs O(N / W)
/// per rank, like the epoch.
///
/// `timeout` (zero: the store's timeout) bounds the wait for the other ranks, counted from
/// this rank's call. Either every live rank returns the same verdict, or every live rank
/// throws the same config_error naming the ranks that were missing: "rank 2 did not arrive
/// within 20 s (expected all 4 ranks to call the guard, ...)" for a rank that never called
/// (or died before publishing its record, or called too late), "rank 2 arrived but did not
/// finish within 20 s (...)" for one that died or stalled inside the guard. A rank that
/// dies after the decision does not change it. Only when the store itself fails (its host,
/// rank 0 for store_from_env, died) may a rank that had not yet read the decision throw
/// the store's error while others already returned.
///
/// Throws config_error on every rank alike, naming the first rank that differs from rank
/// 0 and the field ("rank 2 has seed 43, rank 0 has 42"), or a rank whose sampler is not
/// built for its own rank; for a negative `timeout`; and when ranks are missing or the
/// store fails, as above. Collective: every rank calls it the same number of times, in the
/// same order.
[[nodiscard]] inline GuardReport check_reads(c10d::Store& store, const World& process, const GuardKey& key,
                                             const ReadSums& sums, std::uint64_t slots,
                                             std::chrono::milliseconds timeout) {
  const char* who = "distsampler::torch_guard::check_epoch";
  process.validate(who);
  const std::chrono::milliseconds wait = detail::guard_timeout(store, timeout, who);
  const std::uint64_t w = process.world_size, n = slots;
  const std::string ns = detail::call_namespace(store, process, who);
  std::vector<std::uint8_t> mine;
  mine.reserve(detail::record_words * 8);
  detail::put(mine, detail::record_magic);
  for (const std::uint64_t f : key.fields) detail::put(mine, f);
  detail::put(mine, key.rank);
  for (const std::uint64_t word : overlap_words(sums, n, process)) detail::put(mine, word);
  detail::put_name(mine, key.family);

  const auto records = detail::exchange(store, ns, process, mine, wait, who);

  OverlapWords total = {};
  const std::vector<std::uint8_t>& first = records[0];
  for (std::uint64_t q = 0; q < w; ++q) {
    const std::vector<std::uint8_t>& rec = records[static_cast<std::size_t>(q)];
    if (rec.size() != detail::record_words * 8 || detail::get(rec, 0) != detail::record_magic) {
      detail::throw_config_error(std::string(who) + ": rank " + std::to_string(q) + " wrote a record of " +
                                 std::to_string(rec.size()) + " bytes under '" + ns + "' (expected " +
                                 std::to_string(detail::record_words * 8) +
                                 " bytes from this guard; is another program using the store's keys?)");
    }
    for (std::size_t f = 0; f < GuardKey::field_count; ++f) {
      const std::uint64_t theirs = detail::get(rec, 1 + f), rank0 = detail::get(first, 1 + f);
      if (theirs != rank0) {
        detail::throw_config_error(std::string(who) + ": rank " + std::to_string(q) + " has " + GuardKey::names[f] +
                                   " " + detail::show(f, theirs, detail::get_name(rec)) + ", rank 0 has " +
                                   detail::show(f, rank0, detail::get_name(first)) +
                                   " (expected the same on every rank)");
      }
    }
    const std::uint64_t claimed = detail::get(rec, 1 + GuardKey::field_count);
    const std::uint64_t world = detail::get(rec, GuardKey::field_count);
    if (claimed != q || world != w) {
      detail::throw_config_error(std::string(who) + ": rank " + std::to_string(q) + " of " + std::to_string(w) +
                                 " built its sampler as rank " + std::to_string(claimed) + " of " +
                                 std::to_string(world) + " (expected its own rank " + std::to_string(q) + " of " +
                                 std::to_string(w) + ")");
    }
    for (std::size_t i = 0; i < overlap_word_count; ++i) total[i] += detail::get(rec, 2 + GuardKey::field_count + i);
  }
  return overlap_verdict(total, n, w);
}

/// As above, over the slots 0..key.fields[1]-1 (the dataset's indices: the key's dataset_size).
[[nodiscard]] inline GuardReport check_reads(c10d::Store& store, const World& process, const GuardKey& key,
                                             const ReadSums& sums,
                                             std::chrono::milliseconds timeout = std::chrono::milliseconds::zero()) {
  return check_reads(store, process, key, sums, key.fields[1], timeout);
}

/// Checks one epoch (or the segment a resume left) of `sampler` across the job: every
/// rank agrees on the key (sampler family, dataset size, seed, epoch, shuffle, tail,
/// engine, resumed position, batch layout or shard layout, world size), each sampler is
/// built for its process's own rank, and the shares are disjoint and covering (padding
/// and what the tail drops excepted). `sampler` is any sampler with the guard's
/// customisation points, which every guarded family declares beside its sampler: a
/// `key()` member, `segment_sums(sampler, process)` and, when its ranks must agree on more
/// than the key, `guard_shape(sampler)` (overlap_check.hpp), found by argument-dependent
/// lookup; or a libtorch adapter, through its `core()` (the pass it reads, or the next one
/// when set_epoch or resume is pending). No family is named here. See check_reads
/// for the communication, the verdict and what throws.
///
///     auto store = distsampler::torch_guard::store_from_env();   // once per job
///     auto report = distsampler::torch_guard::check_epoch(sampler, *store);
///     if (!report.ok) throw std::runtime_error(report.message);
///
/// `timeout` bounds the wait for the other ranks (zero: the store's timeout; see check_reads).
template <class Sampler>
[[nodiscard]] GuardReport check_epoch(const Sampler& sampler, c10d::Store& store, const World& process,
                                      std::chrono::milliseconds timeout = std::chrono::milliseconds::zero()) {
  decltype(auto) core = detail::core_of(sampler, 0);
  return check_reads(store, process, detail::key_of(core), segment_sums(core, process), guard_slots_of(core), timeout);
}

/// As above, with this process's World read from the launcher's environment (RANK, WORLD_SIZE, ...).
template <class Sampler>
[[nodiscard]] GuardReport check_epoch(const Sampler& sampler, c10d::Store& store,
                                      std::chrono::milliseconds timeout = std::chrono::milliseconds::zero()) {
  return check_epoch(sampler, store, World::from_env(), timeout);
}

/// The mesh guard over a c10d store: `process` is this rank's global World (e.g. from
/// RANK/WORLD_SIZE) in `mesh` (its product must be process.world_size) and `sampler` the
/// sampler it built for its data rank (World::from_mesh; a library sampler or a libtorch
/// adapter). Checks, on every rank alike (check_mesh_records), that each sampler is built
/// for its rank's data rank and data world, that every model-parallel group (the ranks
/// that differ in one non-data dim: tp, cp, pp, ...) agrees on the key and reads the same
/// samples, that the data ranks agree on the key; returns whether the data ranks' reads
/// are disjoint and covering. One record of 23 words per rank through the store, as
/// check_reads; per rank the cost of its segment_sums, plus O(world_size x dims + N / DW).
/// Throws config_error naming the group, the rank and the field ("tp group of ranks 4,5:
/// rank 5 reads other samples (seed 43, rank 4 has 42; ...)"), for a mesh whose product
/// is not the world size, and when the store fails. Collective, in step with check_epoch.
template <class Sampler>
[[nodiscard]] GuardReport check_mesh_epoch(const Sampler& sampler, c10d::Store& store, const World& process,
                                           const Mesh& mesh,
                                           std::chrono::milliseconds timeout = std::chrono::milliseconds::zero()) {
  const char* who = "distsampler::torch_guard::check_mesh_epoch";
  process.validate(who);
  const std::chrono::milliseconds wait = detail::guard_timeout(store, timeout, who);
  if (mesh.size() != process.world_size) {
    detail::throw_config_error(std::string(who) + ": mesh " + mesh.to_string() + " has " + std::to_string(mesh.size()) +
                               " ranks but world_size is " + std::to_string(process.world_size) +
                               " (expected the product of the dims)");
  }
  decltype(auto) core = detail::core_of(sampler, 0);
  std::vector<std::uint8_t> mine;
  for (const std::uint64_t word : mesh_record_of(core)) detail::put(mine, word);
  const std::string ns = detail::call_namespace(store, process, who);
  const std::vector<std::vector<std::uint8_t>> raw = detail::exchange(store, ns, process, mine, wait, who);
  std::vector<std::vector<std::uint64_t>> records;
  for (const std::vector<std::uint8_t>& rec : raw) {
    std::vector<std::uint64_t> words;
    for (std::size_t at = 0; at < rec.size() / 8; ++at) words.push_back(detail::get(rec, at));
    records.push_back(std::move(words));
  }
  return check_mesh_records(who, mesh, guard_slots_of(core), records, mesh_key_format);
}

/// As above, with this process's World read from the launcher's environment (RANK, WORLD_SIZE, ...).
template <class Sampler>
[[nodiscard]] GuardReport check_mesh_epoch(const Sampler& sampler, c10d::Store& store, const Mesh& mesh) {
  return check_mesh_epoch(sampler, store, World::from_env(), mesh);
}

/// A c10d TCPStore for the job at MASTER_ADDR:MASTER_PORT, hosted by rank 0 (RANK and
/// WORLD_SIZE as World::from_env reads them); returns once every rank has connected or
/// `timeout` passed. Keep it for the whole job and pass it to every check_epoch. When the
/// program already has a store there (e.g. for ProcessGroupGloo), pass that one instead:
/// a second server cannot take the port. Throws config_error naming the variable for a
/// missing or malformed MASTER_ADDR, MASTER_PORT, RANK or WORLD_SIZE, and when the store
/// cannot be created or reached.
[[nodiscard]] inline c10::intrusive_ptr<c10d::TCPStore> store_from_env(
    std::chrono::milliseconds timeout = std::chrono::minutes(5)) {
  const char* who = "distsampler::torch_guard::store_from_env";
  const World world = World::from_env();
  const char* addr = std::getenv("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0') {
    detail::throw_config_error(std::string(who) + ": MASTER_ADDR is " + (addr == nullptr ? "not set" : "empty") +
                               " (expected the host of rank 0, as torchrun sets it)");
  }
  const char* port_text = std::getenv("MASTER_PORT");
  if (port_text == nullptr) {
    detail::throw_config_error(std::string(who) +
                               ": MASTER_PORT is not set (expected a TCP port, as torchrun sets it)");
  }
  const auto port = distsampler::detail::parse_decimal(port_text);
  if (port.error != distsampler::detail::DecimalError::ok) {
    detail::throw_config_error(std::string(who) + ": MASTER_PORT \"" + port_text + "\" " +
                               distsampler::detail::describe(port.error));
  }
  if (port.value == 0 || port.value > 65535) {
    detail::throw_config_error(std::string(who) + ": MASTER_PORT " + std::to_string(port.value) +
                               " is not a TCP port (expected 1..65535)");
  }
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port.value);
  options.isServer = world.rank == 0;
  options.numWorkers = static_cast<std::size_t>(world.world_size);
  options.waitWorkers = true;
  options.timeout = timeout;
  try {
    return c10::make_intrusive<c10d::TCPStore>(std::string(addr), options);
  } catch (const std::exception& e) {
    std::string reason = e.what();
    reason = reason.substr(0, reason.find('\n'));
    detail::throw_config_error(std::string(who) + ": rank " + std::to_string(world.rank) + " could not " +
                               (world.rank == 0 ? "host" : "reach") + " the store at " + addr + ":" +
                               std::to_string(port.value) + " (MASTER_ADDR:MASTER_PORT): " + reason);
  }
}

}  // namespace torch_guard
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_TORCH_GUARD_HPP

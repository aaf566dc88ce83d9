// distsampler mesh check: the ranks of each model-parallel group read the same, the data ranks a disjoint cover.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_MESH_CHECK_HPP
#define DISTSAMPLER_MESH_CHECK_HPP

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "mesh.hpp"
#include "options.hpp"
#include "overlap_check.hpp"
#include "state.hpp"
#include "version.hpp"
#include "world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// How a guard names and shows the fields of its key: `names[i]` and `show(i, value)`.
struct MeshKeyFormat {
  const char* const* names = nullptr;
  std::size_t count = 0;
  std::function<std::string(std::size_t field, std::uint64_t value)> show;
};

/// One rank's record for check_mesh_records, as the words a transport moves: a magic word,
/// the key's field count and fields (what its sampler must share with every other rank:
/// family, seed, epoch, ...), the World its sampler was built for, and its ReadSums.
/// O(fields).
[[nodiscard]] inline std::vector<std::uint64_t> mesh_record(const std::vector<std::uint64_t>& key,
                                                            const World& built_for, const ReadSums& sums) {
  std::vector<std::uint64_t> out;
  out.reserve(key.size() + 4 + ReadSums::word_count);
  out.push_back(0x64736d6573683031u);  // "dsmesh01"
  out.push_back(key.size());
  out.insert(out.end(), key.begin(), key.end());
  out.push_back(built_for.rank);
  out.push_back(built_for.world_size);
  out.insert(out.end(), sums.words().begin(), sums.words().end());
  return out;
}

namespace detail {

struct MeshRecordView {
  const std::vector<std::uint64_t>* words;
  std::size_t fields;
  [[nodiscard]] std::uint64_t key(std::size_t i) const { return (*words)[2 + i]; }
  [[nodiscard]] std::uint64_t rank() const { return (*words)[2 + fields]; }
  [[nodiscard]] std::uint64_t world_size() const { return (*words)[3 + fields]; }
  [[nodiscard]] ReadSums sums() const {
    ReadSums::Words w = {};
    for (std::size_t i = 0; i < ReadSums::word_count; ++i) w[i] = (*words)[4 + fields + i];
    return ReadSums(w);
  }
};

inline std::string mesh_rank_list(const std::vector<std::uint64_t>& ranks) {
  std::string out;
  for (const std::uint64_t r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

inline std::string mesh_place(const Mesh& mesh, std::uint64_t g) {
  const std::vector<std::uint64_t> c = mesh.coordinates(g);
  std::string out;
  for (std::size_t i = 0; i < mesh.ndim(); ++i) {
    out += (out.empty() ? "" : " ") + mesh.dim(i).name + " " + std::to_string(c[i]);
  }
  return out;
}

// The rank that speaks for its data rank: coordinate 0 in every non-data dim.
inline bool mesh_representative(const Mesh& mesh, std::uint64_t g) {
  const std::vector<std::uint64_t> c = mesh.coordinates(g);
  for (std::size_t i = 0; i < mesh.ndim(); ++i) {
    if (!mesh.is_data_dim(i) && c[i] != 0) return false;
  }
  return true;
}

// The first key field in which `a` and `b` differ, or fields when none does.
inline std::size_t first_key_difference(const MeshRecordView& a, const MeshRecordView& b) {
  for (std::size_t f = 0; f < a.fields; ++f) {
    if (a.key(f) != b.key(f)) return f;
  }
  return a.fields;
}

}  // namespace detail

/// The mesh guard's checks of every global rank's mesh_record (records[g] from rank g),
/// the same on every rank that calls them with the same records. check_mesh_groups does
/// steps 1 to 3 (for transports whose read sums cannot tell padding from reads, so only
/// their equality inside groups means something); check_mesh_records all four:
///
///  1. each rank's sampler is built for its data rank and the data world size
///     (World::from_mesh), else config_error "rank 5 (dp 2 tp 1) built its sampler as
///     rank 5 of 8 (expected data rank 2 of 4 of mesh dp=4,tp=2)";
///  2. inside every model-parallel group (the ranks that differ only in one non-data dim,
///     innermost dim first) every rank has the key and the read sums of the group's first
///     rank, else config_error naming the group, the rank and the field: "tp group of
///     ranks 4,5: rank 5 reads other samples (seed 43, rank 4 has 42)";
///  3. every data rank has rank 0's key, else config_error "data rank 2 (rank 4) has seed
///     43, rank 0 has 42 (expected the same on every rank)";
///  4. the data ranks' reads (one rank per data rank: the one at coordinate 0 of every
///     non-data dim) are disjoint and covering over [0, dataset_size): the returned
///     report (overlap_verdict over the data world), its message prefixed by the mesh.
///
/// Messages start with `who`. Throws config_error too when there is not one record per
/// rank of the mesh or a record is malformed. O(world_size x (fields + dims) + N / DW)
/// (each data rank's expected block sums, computed here for all of them); deterministic.
inline void check_mesh_groups(std::string_view who, const Mesh& mesh,
                              const std::vector<std::vector<std::uint64_t>>& records, const MeshKeyFormat& format) {
  const std::string prefix = std::string(who) + ": ";
  if (records.size() != mesh.size()) {
    detail::throw_config_error(prefix + "mesh " + mesh.to_string() + " has " + std::to_string(mesh.size()) +
                               " ranks but " + std::to_string(records.size()) +
                               " records were given (expected one per rank)");
  }
  std::vector<detail::MeshRecordView> views;
  for (std::uint64_t g = 0; g < records.size(); ++g) {
    const std::vector<std::uint64_t>& r = records[static_cast<std::size_t>(g)];
    if (r.size() < 2 || r[0] != 0x64736d6573683031u || r[1] != format.count ||
        r.size() != 4 + format.count + ReadSums::word_count) {
      detail::throw_config_error(prefix + "rank " + std::to_string(g) + " sent a record of " +
                                 std::to_string(r.size()) + " words (expected " +
                                 std::to_string(4 + format.count + ReadSums::word_count) +
                                 " from this guard with a key of " + std::to_string(format.count) + " fields)");
    }
    views.push_back(detail::MeshRecordView{&r, format.count});
  }
  const std::string mesh_text = "mesh " + mesh.to_string();
  for (std::uint64_t g = 0; g < mesh.size(); ++g) {
    const detail::MeshRecordView& v = views[static_cast<std::size_t>(g)];
    const std::uint64_t d = mesh.data_rank(g);
    if (v.rank() != d || v.world_size() != mesh.data_world_size()) {
      detail::throw_config_error(prefix + "rank " + std::to_string(g) + " (" + detail::mesh_place(mesh, g) +
                                 ") built its sampler as rank " + std::to_string(v.rank()) + " of " +
                                 std::to_string(v.world_size()) + " (expected data rank " + std::to_string(d) + " of " +
                                 std::to_string(mesh.data_world_size()) + " of " + mesh_text + ", data dims " +
                                 mesh.data_dims_string() + ")");
    }
  }
  for (std::size_t dim = mesh.ndim(); dim-- > 0;) {
    if (mesh.is_data_dim(dim) || mesh.dim(dim).size == 1) continue;
    for (std::uint64_t g = 0; g < mesh.size(); ++g) {
      if (mesh.coordinates(g)[dim] != 0) continue;
      const std::vector<std::uint64_t> group = mesh.group(g, dim);
      const detail::MeshRecordView& first = views[static_cast<std::size_t>(g)];
      for (const std::uint64_t member : group) {
        const detail::MeshRecordView& v = views[static_cast<std::size_t>(member)];
        const std::size_t f = detail::first_key_difference(v, first);
        const std::string head = prefix + mesh.dim(dim).name + " group of ranks " + detail::mesh_rank_list(group) +
                                 ": rank " + std::to_string(member) + " reads other samples (";
        if (f < format.count) {
          detail::throw_config_error(head + format.names[f] + " " + format.show(f, v.key(f)) + ", rank " +
                                     std::to_string(g) + " has " + format.show(f, first.key(f)) +
                                     "; expected the same samples on every rank of the group)");
        }
        if (v.sums() != first.sums()) {
          detail::throw_config_error(head + "the same key, but its reads differ from rank " + std::to_string(g) +
                                     "'s: " + std::to_string(v.sums().reads()) + " reads, rank " + std::to_string(g) +
                                     " has " + std::to_string(first.sums().reads()) +
                                     "; expected the same samples on every rank of the group)");
        }
      }
    }
  }
  for (std::uint64_t g = 0; g < mesh.size(); ++g) {
    if (!detail::mesh_representative(mesh, g)) continue;
    const detail::MeshRecordView& v = views[static_cast<std::size_t>(g)];
    const std::size_t f = detail::first_key_difference(v, views[0]);
    if (f < format.count) {
      detail::throw_config_error(prefix + "data rank " + std::to_string(v.rank()) + " (rank " + std::to_string(g) +
                                 ") has " + format.names[f] + " " + format.show(f, v.key(f)) + ", rank 0 has " +
                                 format.show(f, views[0].key(f)) + " (expected the same on every rank of " + mesh_text +
                                 ")");
    }
  }
}

/// The mesh guard's verdict: check_mesh_groups (steps 1 to 3 above), then step 4 over the
/// data ranks' read sums. See the contract above.
[[nodiscard]] inline GuardReport check_mesh_records(std::string_view who, const Mesh& mesh, std::uint64_t dataset_size,
                                                    const std::vector<std::vector<std::uint64_t>>& records,
                                                    const MeshKeyFormat& format) {
  check_mesh_groups(who, mesh, records, format);
  OverlapWords total = {};
  for (std::uint64_t g = 0; g < mesh.size(); ++g) {
    if (!detail::mesh_representative(mesh, g)) continue;
    const detail::MeshRecordView v{&records[static_cast<std::size_t>(g)], format.count};
    const OverlapWords words = overlap_words(v.sums(), dataset_size, World(v.rank(), v.world_size()));
    for (std::size_t i = 0; i < overlap_word_count; ++i) total[i] += words[i];
  }
  GuardReport report = overlap_verdict(total, dataset_size, mesh.data_world_size());
  report.message = "mesh " + mesh.to_string() + " (data dims " + mesh.data_dims_string() + "): " + report.message;
  return report;
}

namespace detail {

inline constexpr const char* mesh_key_names[] = {
    "sampler",          "dataset_size",       "seed",        "epoch", "shuffle", "tail", "engine", "consumed",
    "micro_batch_size", "accumulation_steps", "num_workers", "layout"};

inline std::string mesh_key_show(std::size_t field, std::uint64_t value) {
  switch (field) {
    case 0:
      return guard_family_name(value);
    case 4:
      return value != 0 ? "true" : "false";
    case 5:
      return value <= 2 ? std::string(to_string(static_cast<Tail>(value))) : std::to_string(value);
    case 6:
    case 11:
      return hex64(value);
    default:
      return std::to_string(value);
  }
}

template <class Sampler>
auto mesh_world_of(const Sampler& s, int) -> decltype(World(s.world())) {
  return s.world();
}
template <class Sampler>
World mesh_world_of(const Sampler& s, long) {
  return World(s.rank(), s.world_size());
}

}  // namespace detail

/// The key of mesh_key_of, in the order its fields are compared (the first difference is
/// named): the family (sampler), dataset_size, seed, epoch, shuffle, tail, engine (the
/// order's fingerprint without its layout: engine, its version, the dataset), consumed
/// (where a resumed segment starts), the family's GuardShape (micro_batch_size,
/// accumulation_steps, num_workers, and layout: the hash of every other option that
/// defines the reads, e.g. the token lengths and budget, or packing's lengths, seq_len,
/// mode and window). The fields of the c10d guard's GuardKey but its world size.
inline const MeshKeyFormat mesh_key_format{detail::mesh_key_names, 12, &detail::mesh_key_show};

/// The mesh_key_format key of any guarded sampler: its key() (StateKey), dataset_size(),
/// epoch(), start() and guard_shape_of (its family's guard_shape found by argument-dependent
/// lookup, else the key's layout). O(what key() and guard_shape cost).
template <class Sampler>
[[nodiscard]] std::vector<std::uint64_t> mesh_key_of(const Sampler& sampler) {
  const StateKey k = sampler.key();
  StateKey order = k;
  order.layout = 0;
  const GuardShape shape = guard_shape_of(sampler);
  return {guard_family_code(k.sampler),
          sampler.dataset_size(),
          k.seed,
          sampler.epoch(),
          k.shuffle ? 1u : 0u,
          static_cast<std::uint64_t>(k.tail),
          order.fingerprint(),
          sampler.start(),
          shape.micro_batch_size,
          shape.accumulation_steps,
          shape.num_workers,
          shape.layout};
}

/// This rank's mesh_record for `sampler` (any sampler mesh_key_of takes, with its World (a
/// world() member, or rank() and world_size()) and a segment_sums found by
/// argument-dependent lookup): its mesh_key_of, the World it was built for, and its
/// segment_sums over that World. O(segment_sums).
template <class Sampler>
[[nodiscard]] std::vector<std::uint64_t> mesh_record_of(const Sampler& sampler) {
  const World built_for = detail::mesh_world_of(sampler, 0);
  return mesh_record(mesh_key_of(sampler), built_for, segment_sums(sampler, built_for));
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_MESH_CHECK_HPP

// distsampler Mesh: a parallel mesh of named dims (pp, dp, tp, ...) and the data-parallel World it implies.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_MESH_HPP
#define DISTSAMPLER_MESH_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detail/decimal.hpp"
#include "error.hpp"
#include "version.hpp"
#include "world.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// One dim of a parallel mesh: its name (letters, digits and `_`) and its size (>= 1).
struct MeshDim {
  std::string name;
  std::uint64_t size = 1;
};

/// A parallel mesh: named dims listed outermost first and laid out row-major, as torch's
/// DeviceMesh lays out its ranks (the last dim varies fastest). Global rank g has the
/// coordinates of g in the mixed radix of the sizes: for `pp=2,dp=2,tp=2`, rank 5 is
/// pp 1, dp 0, tp 1. Megatron's `tp-cp-ep-dp-pp` order (tp fastest) is `pp,dp,ep,cp,tp` here.
///
/// Some dims are data dims: the ranks that differ only in them read different samples;
/// the others (tp, cp, pp, ...) are model-parallel and every rank of one of their groups
/// reads the same samples. Unless named explicitly, the data dims are those named `dp`,
/// `dp_replicate` or `dp_shard`. The data rank of g is the row-major index of its
/// coordinates over the data dims, in the mesh's order; the data world size is the
/// product of their sizes. World::from_mesh turns a global rank into that data World,
/// which every sampler takes unchanged.
///
/// Throws config_error, naming the mesh, for no dims, a dim without a name or with a
/// name other than letters, digits and `_`, a dim of size 0, a dim named twice, a product
/// of sizes over 2^64 - 1, an explicit data dim that is not a dim of the mesh or is named
/// twice, explicit data dims out of the mesh's order, and a mesh with no data dim.
///
/// A plain value: O(dims) memory, every query O(dims) unless noted; deterministic;
/// thread-safe for concurrent reads.
class Mesh {
 public:
  /// The dims, outermost first; data dims by name (dp, dp_replicate, dp_shard).
  explicit Mesh(std::vector<MeshDim> dims) : Mesh(std::move(dims), {}) {}

  /// The dims, outermost first, and the data dims named explicitly (in the mesh's order;
  /// an empty list means: by name, as above).
  Mesh(std::vector<MeshDim> dims, const std::vector<std::string>& data_dims) : dims_(std::move(dims)) {
    validate_dims();
    is_data_.assign(dims_.size(), false);
    if (data_dims.empty()) {
      for (std::size_t i = 0; i < dims_.size(); ++i) is_data_[i] = is_default_data_name(dims_[i].name);
    } else {
      mark_data_dims(data_dims);
    }
    data_world_size_ = 1;
    for (std::size_t i = 0; i < dims_.size(); ++i) {
      if (is_data_[i]) data_world_size_ *= dims_[i].size;
    }
    bool any = false;
    for (const bool d : is_data_) any = any || d;
    if (!any) {
      detail::throw_config_error("Mesh: mesh " + to_string() +
                                 " has no data dim (expected a dim named dp, dp_replicate or dp_shard, or the data "
                                 "dims named explicitly)");
    }
  }

  /// Parses `NAME=SIZE,NAME=SIZE,...` (outermost first) and, when `data_dims` is not
  /// empty, `NAME,NAME,...`. Throws config_error naming the text for a malformed entry,
  /// then as the constructor.
  [[nodiscard]] static Mesh parse(std::string_view spec, std::string_view data_dims = {}) {
    return Mesh(parse_dims(spec), parse_names(data_dims));
  }

  /// The dims of `NAME=SIZE,...`, parsed but not validated (the constructor does that).
  /// Throws config_error naming the text for an entry without `=` or with a size that is
  /// not a decimal integer below 2^64.
  [[nodiscard]] static std::vector<MeshDim> parse_dims(std::string_view spec) {
    std::vector<MeshDim> dims;
    for (const std::string_view entry : split(spec)) {
      const std::size_t eq = entry.find('=');
      if (eq == std::string_view::npos) {
        detail::throw_config_error("Mesh::parse: mesh \"" + std::string(spec) + "\" has entry \"" + std::string(entry) +
                                   "\" without a size (expected NAME=SIZE,...)");
      }
      const detail::DecimalParse size = detail::parse_decimal(entry.substr(eq + 1));
      if (size.error != detail::DecimalError::ok) {
        detail::throw_config_error("Mesh::parse: mesh \"" + std::string(spec) + "\" has size \"" +
                                   std::string(entry.substr(eq + 1)) + "\" for dim \"" +
                                   std::string(entry.substr(0, eq)) + "\", which " + detail::describe(size.error));
      }
      dims.push_back(MeshDim{std::string(entry.substr(0, eq)), size.value});
    }
    return dims;
  }

  /// The names of `NAME,NAME,...`; none for "" (no validation: the constructor does that).
  [[nodiscard]] static std::vector<std::string> parse_names(std::string_view names) {
    std::vector<std::string> out;
    if (!names.empty()) {
      for (const std::string_view name : split(names)) out.emplace_back(name);
    }
    return out;
  }

  [[nodiscard]] std::size_t ndim() const noexcept { return dims_.size(); }
  [[nodiscard]] const std::vector<MeshDim>& dims() const noexcept { return dims_; }
  [[nodiscard]] const MeshDim& dim(std::size_t i) const { return dims_.at(i); }
  [[nodiscard]] bool is_data_dim(std::size_t i) const { return is_data_.at(i); }
  /// The number of ranks: the product of the sizes.
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  /// The product of the data dims' sizes.
  [[nodiscard]] std::uint64_t data_world_size() const noexcept { return data_world_size_; }

  /// The index of the dim called `name`, or ndim() when there is none.
  [[nodiscard]] std::size_t find(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < dims_.size(); ++i) {
      if (dims_[i].name == name) return i;
    }
    return dims_.size();
  }

  /// The coordinates of `global_rank`, one per dim, outermost first. Throws config_error
  /// when global_rank >= size().
  [[nodiscard]] std::vector<std::uint64_t> coordinates(std::uint64_t global_rank) const {
    check_rank("Mesh::coordinates", global_rank);
    std::vector<std::uint64_t> out(dims_.size());
    for (std::size_t i = dims_.size(); i-- > 0;) {
      out[i] = global_rank % dims_[i].size;
      global_rank /= dims_[i].size;
    }
    return out;
  }

  /// The global rank at `coords` (one per dim): the inverse of coordinates(). Throws
  /// config_error for the wrong number of coordinates or one out of its dim's range.
  [[nodiscard]] std::uint64_t global_rank(const std::vector<std::uint64_t>& coords) const {
    if (coords.size() != dims_.size()) {
      detail::throw_config_error("Mesh::global_rank: " + std::to_string(coords.size()) + " coordinates for mesh " +
                                 to_string() + " (expected " + std::to_string(dims_.size()) + ")");
    }
    std::uint64_t g = 0;
    for (std::size_t i = 0; i < dims_.size(); ++i) {
      if (coords[i] >= dims_[i].size) {
        detail::throw_out_of_range("Mesh::global_rank", "coordinate", coords[i], dims_[i].name, dims_[i].size);
      }
      g = g * dims_[i].size + coords[i];
    }
    return g;
  }

  /// The data rank of `global_rank`: the row-major index of its data coordinates.
  /// Throws config_error when global_rank >= size().
  [[nodiscard]] std::uint64_t data_rank(std::uint64_t global_rank) const {
    const std::vector<std::uint64_t> c = coordinates(global_rank);
    std::uint64_t d = 0;
    for (std::size_t i = 0; i < dims_.size(); ++i) {
      if (is_data_[i]) d = d * dims_[i].size + c[i];
    }
    return d;
  }

  /// The ranks that differ from `global_rank` only in dim `dim`, ascending (its group
  /// along that dim, global_rank included). O(dims + size of the dim).
  [[nodiscard]] std::vector<std::uint64_t> group(std::uint64_t global_rank, std::size_t dim) const {
    std::vector<std::uint64_t> c = coordinates(global_rank);
    std::vector<std::uint64_t> out;
    for (std::uint64_t k = 0; k < dims_.at(dim).size; ++k) {
      c[dim] = k;
      out.push_back(this->global_rank(c));
    }
    return out;
  }

  /// "pp=2,dp=2,tp=2".
  [[nodiscard]] std::string to_string() const {
    std::string out;
    for (const MeshDim& d : dims_) {
      if (!out.empty()) out += ',';
      out += d.name + "=" + std::to_string(d.size);
    }
    return out;
  }

  /// The data dims' names in the mesh's order, joined by `,`: "dp_replicate,dp_shard".
  [[nodiscard]] std::string data_dims_string() const {
    std::string out;
    for (std::size_t i = 0; i < dims_.size(); ++i) {
      if (!is_data_[i]) continue;
      if (!out.empty()) out += ',';
      out += dims_[i].name;
    }
    return out;
  }

  friend bool operator==(const Mesh& a, const Mesh& b) {
    if (a.dims_.size() != b.dims_.size() || a.is_data_ != b.is_data_) return false;
    for (std::size_t i = 0; i < a.dims_.size(); ++i) {
      if (a.dims_[i].name != b.dims_[i].name || a.dims_[i].size != b.dims_[i].size) return false;
    }
    return true;
  }
  friend bool operator!=(const Mesh& a, const Mesh& b) { return !(a == b); }

 private:
  static bool is_default_data_name(std::string_view name) noexcept {
    return name == "dp" || name == "dp_replicate" || name == "dp_shard";
  }

  static std::vector<std::string_view> split(std::string_view text) {
    std::vector<std::string_view> out;
    std::size_t at = 0;
    while (true) {
      const std::size_t comma = text.find(',', at);
      out.push_back(text.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at));
      if (comma == std::string_view::npos) return out;
      at = comma + 1;
    }
  }

  static bool valid_name(std::string_view name) noexcept {
    if (name.empty()) return false;
    for (const char c : name) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      if (!ok) return false;
    }
    return true;
  }

  void validate_dims() {
    if (dims_.empty()) detail::throw_config_error("Mesh: the mesh has no dims (expected at least one NAME=SIZE)");
    size_ = 1;
    for (std::size_t i = 0; i < dims_.size(); ++i) {
      const MeshDim& d = dims_[i];
      if (!valid_name(d.name)) {
        detail::throw_config_error("Mesh: mesh " + to_string() + " has dim name \"" + d.name +
                                   "\" (expected a non-empty name of letters, digits and _)");
      }
      if (d.size == 0) {
        detail::throw_config_error("Mesh: mesh " + to_string() + " has dim " + d.name +
                                   " of size 0 (expected at least 1)");
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (dims_[j].name == d.name) {
          detail::throw_config_error("Mesh: mesh " + to_string() + " has dim " + d.name +
                                     " twice (expected each name once)");
        }
      }
      if (size_ > UINT64_MAX / d.size) {
        detail::throw_config_error("Mesh: mesh " + to_string() +
                                   " has more than 18446744073709551615 ranks (expected a product of the sizes that "
                                   "fits in 64 bits)");
      }
      size_ *= d.size;
    }
  }

  void mark_data_dims(const std::vector<std::string>& data_dims) {
    std::string listed;
    for (const std::string& name : data_dims) listed += (listed.empty() ? "" : ",") + name;
    std::size_t previous = 0;
    for (std::size_t k = 0; k < data_dims.size(); ++k) {
      const std::size_t i = find(data_dims[k]);
      if (i == dims_.size()) {
        std::string names;
        for (const MeshDim& d : dims_) names += (names.empty() ? "" : ",") + d.name;
        detail::throw_config_error("Mesh: data dim \"" + data_dims[k] + "\" is not a dim of mesh " + to_string() +
                                   " (expected one of " + names + ")");
      }
      if (is_data_[i]) {
        detail::throw_config_error("Mesh: data dims " + listed + " name " + data_dims[k] +
                                   " twice (expected each data dim once)");
      }
      if (k > 0 && i < previous) {
        is_data_[i] = true;
        for (std::size_t j = k + 1; j < data_dims.size(); ++j) {
          const std::size_t at = find(data_dims[j]);
          if (at < dims_.size()) is_data_[at] = true;
        }
        detail::throw_config_error("Mesh: data dims " + listed + " are not in the order of mesh " + to_string() +
                                   " (expected " + data_dims_string() + ", outermost first)");
      }
      is_data_[i] = true;
      previous = i;
    }
  }

  void check_rank(const char* who, std::uint64_t global_rank) const {
    if (global_rank >= size_)
      detail::throw_out_of_range(who, "rank", global_rank, "mesh " + to_string() + " of size", size_);
  }

  std::vector<MeshDim> dims_;
  std::vector<bool> is_data_;
  std::uint64_t size_ = 1;
  std::uint64_t data_world_size_ = 1;
};

inline World World::from_mesh(const World& process, const Mesh& mesh) {
  process.validate("World::from_mesh");
  if (mesh.size() != process.world_size) {
    detail::throw_config_error("World::from_mesh: mesh " + mesh.to_string() + " has " + std::to_string(mesh.size()) +
                               " ranks but world_size is " + std::to_string(process.world_size) +
                               " (expected the product of the dims)");
  }
  World out;
  out.rank = mesh.data_rank(process.rank);
  out.world_size = mesh.data_world_size();
  // Locality of the data world: the data ranks on this process's node (global ranks
  // node * L .. node * L + L - 1, as torchrun and SLURM's block distribution place them)
  // when, on every node, they are an aligned block of one common size; else unknown (0 of 1).
  const std::uint64_t l = process.local_world_size;
  // Jobs of more than 2^20 ranks skip the O(world_size) walk: locality unknown.
  if (l > 1 && process.world_size % l == 0 && process.local_rank == process.rank % l &&
      process.world_size <= (std::uint64_t{1} << 20)) {
    std::uint64_t common = 0;
    bool aligned = true;
    for (std::uint64_t node = 0; node < process.world_size / l && aligned; ++node) {
      std::uint64_t low = UINT64_MAX, high = 0;
      std::vector<bool> seen;
      for (std::uint64_t g = node * l; g < node * l + l; ++g) {
        const std::uint64_t d = mesh.data_rank(g);
        low = d < low ? d : low;
        high = d > high ? d : high;
      }
      const std::uint64_t count = high - low + 1;
      seen.assign(static_cast<std::size_t>(count), false);
      for (std::uint64_t g = node * l; g < node * l + l; ++g)
        seen[static_cast<std::size_t>(mesh.data_rank(g) - low)] = true;
      for (const bool s : seen) aligned = aligned && s;
      aligned = aligned && (common == 0 || common == count) && low % count == 0;
      common = count;
    }
    if (aligned) {
      out.local_world_size = common;
      out.local_rank = out.rank % common;
    }
  }
  return out;
}

inline World World::from_mesh(std::uint64_t global_rank, std::uint64_t world_size, const Mesh& mesh) {
  World process;
  process.rank = global_rank;
  process.world_size = world_size;
  return from_mesh(process, mesh);
}

template <class Lookup>
World World::from_mesh_env(const Mesh& mesh, Lookup&& lookup) {
  return from_mesh(from_env(lookup), mesh);
}

inline World World::from_mesh_env(const Mesh& mesh) { return from_mesh_env(mesh, &std::getenv); }

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_MESH_HPP

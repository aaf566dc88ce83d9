// _core bindings of Mesh: parallel meshes, the data World they imply, and the mesh guard's group checks.
// SPDX-License-Identifier: MIT
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "distsampler/mesh.hpp"
#include "distsampler/mesh_check.hpp"

namespace distsampler_python {

namespace {

// Python's key field names and shown values as a MeshKeyFormat (which points into them).
struct GuardKeyNames {
  std::vector<const char*> pointers;
  ds::MeshKeyFormat format;
  GuardKeyNames(const std::vector<std::string>& names, const std::vector<std::vector<std::string>>& shown) {
    for (const std::string& n : names) pointers.push_back(n.c_str());
    format = ds::MeshKeyFormat{pointers.data(), names.size(),
                               [&shown](std::size_t f, std::uint64_t v) { return shown.at(f).at(v); }};
  }
};

// Every rank's mesh_record from its key codes, (rank, world_size) and ReadSums words.
std::vector<std::vector<std::uint64_t>> mesh_records(const std::vector<std::vector<std::uint64_t>>& keys,
                                                     const std::vector<std::pair<std::uint64_t, std::uint64_t>>& worlds,
                                                     const std::vector<std::vector<std::uint64_t>>& sums) {
  std::vector<std::vector<std::uint64_t>> records;
  for (std::size_t r = 0; r < keys.size() && r < worlds.size() && r < sums.size(); ++r) {
    ds::ReadSums::Words words = {};
    for (std::size_t i = 0; i < words.size() && i < sums[r].size(); ++i) words[i] = sums[r][i];
    ds::World w;
    w.rank = worlds[r].first;
    w.world_size = worlds[r].second;
    records.push_back(ds::mesh_record(keys[r], w, ds::ReadSums(words)));
  }
  return records;
}

}  // namespace

void register_mesh(py::module_& m) {
  py::class_<ds::Mesh>(m, "Mesh", "A parallel mesh of named dims, outermost first, row-major (C++ distsampler::Mesh).")
      .def(py::init([](const std::vector<std::pair<std::string, std::uint64_t>>& dims,
                       const std::vector<std::string>& data_dims) {
             std::vector<ds::MeshDim> out;
             for (const auto& [name, size] : dims) out.push_back(ds::MeshDim{name, size});
             return ds::Mesh(std::move(out), data_dims);
           }),
           py::arg("dims"), py::arg("data_dims") = std::vector<std::string>{})
      .def_static("parse", &ds::Mesh::parse, py::arg("spec"), py::arg("data_dims") = "")
      .def_static(
          "parse_dims",
          [](const std::string& spec) {
            std::vector<std::pair<std::string, std::uint64_t>> out;
            for (const ds::MeshDim& d : ds::Mesh::parse_dims(spec)) out.emplace_back(d.name, d.size);
            return out;
          },
          "The (name, size) pairs of NAME=SIZE,... (not yet validated: Mesh does that).")
      .def_property_readonly("size", &ds::Mesh::size)
      .def_property_readonly("data_world_size", &ds::Mesh::data_world_size)
      .def_property_readonly("ndim", &ds::Mesh::ndim)
      .def_property_readonly("names",
                             [](const ds::Mesh& mesh) {
                               std::vector<std::string> out;
                               for (const ds::MeshDim& d : mesh.dims()) out.push_back(d.name);
                               return out;
                             })
      .def_property_readonly("sizes",
                             [](const ds::Mesh& mesh) {
                               std::vector<std::uint64_t> out;
                               for (const ds::MeshDim& d : mesh.dims()) out.push_back(d.size);
                               return out;
                             })
      .def_property_readonly("data_dims",
                             [](const ds::Mesh& mesh) {
                               std::vector<std::string> out;
                               for (std::size_t i = 0; i < mesh.ndim(); ++i) {
                                 if (mesh.is_data_dim(i)) out.push_back(mesh.dim(i).name);
                               }
                               return out;
                             })
      .def("coordinates", &ds::Mesh::coordinates)
      .def("global_rank", &ds::Mesh::global_rank)
      .def("data_rank", &ds::Mesh::data_rank)
      .def("group", &ds::Mesh::group)
      .def("__str__", &ds::Mesh::to_string)
      .def("__repr__",
           [](const ds::Mesh& mesh) {
             return "Mesh(\"" + mesh.to_string() + "\", data_dims=\"" + mesh.data_dims_string() + "\")";
           })
      .def("__eq__", [](const ds::Mesh& a, const ds::Mesh& b) { return a == b; })
      .def(py::pickle(
          [](const ds::Mesh& mesh) { return py::make_tuple(mesh.to_string(), mesh.data_dims_string()); },
          [](const py::tuple& t) { return ds::Mesh::parse(t[0].cast<std::string>(), t[1].cast<std::string>()); }));
  m.def(
      "world_from_mesh",
      [](const ds::Mesh& mesh, std::uint64_t rank, std::uint64_t world_size, std::uint64_t local_rank,
         std::uint64_t local_world_size) {
        ds::World process;
        process.rank = rank;
        process.world_size = world_size;
        process.local_rank = local_rank;
        process.local_world_size = local_world_size;
        const ds::World w = ds::World::from_mesh(process, mesh);
        return py::make_tuple(w.rank, w.world_size, w.local_rank, w.local_world_size);
      },
      py::arg("mesh"), py::arg("rank"), py::arg("world_size"), py::arg("local_rank") = 0,
      py::arg("local_world_size") = 1,
      "(rank, world_size, local_rank, local_world_size) of the data World (World::from_mesh).");
  py::class_<ds::ReadSums>(m, "ReadSums", "Order-independent sums of the indices one rank read (overlap_check.hpp).")
      .def(py::init<>())
      .def(
          "read",
          [](ds::ReadSums& sums, const std::vector<std::uint64_t>& indices) {
            for (const std::uint64_t i : indices) sums.read(i);
          },
          "Adds every index of `indices` as read.")
      .def_property_readonly("words", [](const ds::ReadSums& sums) {
        return std::vector<std::uint64_t>(sums.words().begin(), sums.words().end());
      });
  m.def(
      "check_mesh_groups",
      [](const std::string& who, const ds::Mesh& mesh, const std::vector<std::vector<std::uint64_t>>& keys,
         const std::vector<std::pair<std::uint64_t, std::uint64_t>>& worlds,
         const std::vector<std::vector<std::uint64_t>>& sums, const std::vector<std::string>& names,
         const std::vector<std::vector<std::string>>& shown) {
        const GuardKeyNames format(names, shown);
        ds::check_mesh_groups(who, mesh, mesh_records(keys, worlds, sums), format.format);
      },
      "Steps 1 to 3 of the C++ mesh guard (check_mesh_groups) over every rank's key codes, (rank, world_size) and "
      "read sums; `shown[f][code]` is how key field f's value `code` is printed.");
  m.def(
      "check_mesh_records",
      [](const std::string& who, const ds::Mesh& mesh, std::uint64_t dataset_size,
         const std::vector<std::vector<std::uint64_t>>& keys,
         const std::vector<std::pair<std::uint64_t, std::uint64_t>>& worlds,
         const std::vector<std::vector<std::uint64_t>>& sums, const std::vector<std::string>& names,
         const std::vector<std::vector<std::string>>& shown) {
        const GuardKeyNames format(names, shown);
        const ds::GuardReport r =
            ds::check_mesh_records(who, mesh, dataset_size, mesh_records(keys, worlds, sums), format.format);
        return py::make_tuple(r.ok, r.message);
      },
      "The whole C++ mesh guard (check_mesh_records) as check_mesh_groups, then whether the data ranks' read sums "
      "(the ranks at coordinate 0 of every non-data dim) are disjoint and covering over [0, dataset_size): "
      "(ok, message).");
}

}  // namespace distsampler_python

// distsampler fuzz target: feeds arbitrary text to Mesh::parse (mesh, newline, data dims); only config_error may escape.
// SPDX-License-Identifier: MIT
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <distsampler/mesh.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = text.find('\n');
  const std::string_view spec = text.substr(0, newline);
  const std::string_view data_dims = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
  try {
    const distsampler::Mesh mesh = distsampler::Mesh::parse(spec, data_dims);
    // An accepted mesh prints as a mesh that parses back to itself, and its ranks map back and forth.
    if (distsampler::Mesh::parse(mesh.to_string(), mesh.data_dims_string()) != mesh) std::abort();
    if (mesh.data_world_size() == 0 || mesh.size() % mesh.data_world_size() != 0) std::abort();
    for (const std::uint64_t g : {std::uint64_t{0}, mesh.size() / 2, mesh.size() - 1}) {
      const std::vector<std::uint64_t> c = mesh.coordinates(g);
      if (mesh.global_rank(c) != g || mesh.data_rank(g) >= mesh.data_world_size()) std::abort();
      const distsampler::World w = distsampler::World::from_mesh(g, mesh.size(), mesh);
      if (w.rank != mesh.data_rank(g) || w.world_size != mesh.data_world_size()) std::abort();
    }
  } catch (const distsampler::config_error&) {
  }
  return 0;
}

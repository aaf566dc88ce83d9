// The `distsampler mesh` command, and --mesh/--data-dims: global ranks of a parallel mesh read as their data ranks.
// SPDX-License-Identifier: MIT
#include <distsampler/error.hpp>
#include <distsampler/mesh.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"

namespace cli {
namespace {

using distsampler::Mesh;
using distsampler::MeshDim;

// The commands whose --world and --rank may be global ranks of a --mesh.
constexpr std::string_view mesh_aware[] = {"indices", "check", "batches", "tokens", "mix", "pack", "blend"};

// A Mesh's config_error as the UsageError of `flag`: the library's "Mesh: " prefix dropped.
[[noreturn]] void mesh_refused(std::string_view flag, std::string_view value, const distsampler::config_error& e) {
  std::string_view message = e.what();
  for (const std::string_view prefix : {std::string_view("Mesh::parse: "), std::string_view("Mesh: ")}) {
    if (message.substr(0, prefix.size()) == prefix) message.remove_prefix(prefix.size());
  }
  throw UsageError(fmt::format("{} {}: {}", flag, shown(value), message));
}

}  // namespace

bool takes_mesh_flags(std::string_view command) {
  return std::find(std::begin(mesh_aware), std::end(mesh_aware), command) != std::end(mesh_aware);
}

Mesh mesh_of(const Invocation& invocation) {
  const std::string_view spec = invocation.text("--mesh"), data = invocation.text("--data-dims");
  if (!invocation.has("--mesh")) {
    throw UsageError("--data-dims needs --mesh (the data dims are names of the mesh's dims)");
  }
  std::vector<MeshDim> dims;
  try {
    dims = Mesh::parse_dims(spec);
    if (invocation.has("--data-dims")) {
      // The dims alone first (every dim a data dim), so their errors name --mesh.
      std::vector<std::string> all;
      for (const MeshDim& d : dims) all.push_back(d.name);
      (void)Mesh(dims, all);
    } else {
      return Mesh(dims);
    }
  } catch (const distsampler::config_error& e) {
    mesh_refused("--mesh", spec, e);
  }
  try {
    const std::vector<std::string> names = Mesh::parse_names(data);
    if (names.empty()) throw UsageError("--data-dims is empty (expected NAME,... of the mesh's dims)");
    return Mesh(dims, names);
  } catch (const distsampler::config_error& e) {
    mesh_refused("--data-dims", data, e);
  }
}

Invocation with_data_world(const Invocation& invocation) {
  if (!takes_mesh_flags(invocation.command->name)) return invocation;
  if (!invocation.has("--mesh") && !invocation.has("--data-dims")) return invocation;
  const Mesh mesh = mesh_of(invocation);
  const std::uint64_t world = invocation.required_number("--world");
  if (mesh.size() != world) {
    throw UsageError(fmt::format("--mesh {}: mesh {} has {} ranks but --world is {} (expected the product of the dims)",
                                 shown(invocation.text("--mesh")), mesh.to_string(), mesh.size(), world));
  }
  Invocation out = invocation;
  out.values.erase(out.values.find("--mesh"));
  if (out.has("--data-dims")) out.values.erase(out.values.find("--data-dims"));
  out.values["--world"] = std::to_string(mesh.data_world_size());
  if (const auto rank = invocation.number("--rank")) {
    if (*rank >= world) {
      throw UsageError(
          fmt::format("--rank {} is out of range for --world {} (expected 0..{})", *rank, world, world - 1));
    }
    out.values["--rank"] = std::to_string(mesh.data_rank(*rank));
  }
  return out;
}

int run_mesh(const Invocation& invocation) {
  const Mesh mesh = mesh_of(invocation);
  const std::uint64_t world = invocation.required_number("--world");
  if (mesh.size() != world) {
    throw UsageError(fmt::format("--mesh {}: mesh {} has {} ranks but --world is {} (expected the product of the dims)",
                                 shown(invocation.text("--mesh")), mesh.to_string(), mesh.size(), world));
  }
  if (world > limits::ranks) {
    throw UsageError(
        fmt::format("--world {} is too large for mesh (at most {}: one line per rank)", world, limits::ranks));
  }
  std::string line;
  for (std::uint64_t g = 0; g < world; ++g) {
    const std::vector<std::uint64_t> c = mesh.coordinates(g);
    line = fmt::format("rank {}: data {}/{}", g, mesh.data_rank(g), mesh.data_world_size());
    for (std::size_t i = 0; i < mesh.ndim(); ++i) line += fmt::format(" {}={}", mesh.dim(i).name, c[i]);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
  }
  return 0;
}

std::vector<CommandSpec> mesh_commands() {
  return {{"mesh",
           "distsampler mesh --world W --mesh NAME=SIZE,... [--data-dims NAME,...]",
           "print each global rank's data rank and coordinates in a parallel mesh",
           "print one line per global rank: `rank R: data D/DW` and its coordinates NAME=C, outermost first. The\n"
           "mesh is row-major (the last dim varies fastest); the data rank is the row-major index over the data\n"
           "dims. indices, check, batches, tokens and mix take --mesh too: a rank then reads what data rank D reads",
           {"--world", "--mesh"},
           {"--data-dims"},
           fmt::format("limits: --world at most {}.\n", limits::ranks),
           run_mesh}};
}

}  // namespace cli

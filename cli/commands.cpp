// The `distsampler` command table: one line per sampler family, each family's commands in its own file.
// SPDX-License-Identifier: MIT
#include <fmt/format.h>

#include <string>
#include <vector>

#include "cli.hpp"

namespace cli {

// Each family's commands, defined in its file (the comment names it).
std::vector<CommandSpec> distributed_commands();  // indices.cpp: indices, check
std::vector<CommandSpec> shard_commands();        // shards.cpp: shards
std::vector<CommandSpec> batch_commands();        // batches.cpp: batches, state
std::vector<CommandSpec> token_commands();        // tokens.cpp: tokens
std::vector<CommandSpec> mixture_commands();      // mix.cpp: mix
std::vector<CommandSpec> pack_commands();         // pack.cpp: pack
std::vector<CommandSpec> mesh_commands();         // mesh.cpp: mesh (and --mesh for the others)
std::vector<CommandSpec> stream_commands();       // streams.cpp: stream
std::vector<CommandSpec> blend_commands();        // blend.cpp: blend

const std::vector<CommandSpec>& commands() {
  // The registration table, in the order of the program's help: one line per family.
  static const std::vector<CommandSpec> table = [] {
    std::vector<CommandSpec> all;
    for (auto family : {distributed_commands, shard_commands, batch_commands, token_commands, mixture_commands,
                        pack_commands, mesh_commands, stream_commands, blend_commands}) {
      for (CommandSpec& c : family()) all.push_back(std::move(c));
    }
    return all;
  }();
  return table;
}

// With --mesh, a command runs as the data rank of its global --rank (mesh.cpp).
int run_command(const Invocation& invocation) { return invocation.command->run(with_data_world(invocation)); }

std::string torch_limit_text() { return fmt::format("with --shuffle torch, --size at most {}", limits::torch_size); }

}  // namespace cli

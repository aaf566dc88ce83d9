// The `distsampler` command: prints a rank's indices, batches or states, or checks a whole partition; never crashes.
// SPDX-License-Identifier: MIT
#include <distsampler/error.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"

namespace {

// Every failure ends here: one line on stderr naming the command, exit status 2.
int fail(const cli::CommandSpec* command, std::string_view message) {
  std::fflush(stdout);
  fmt::print(stderr, "distsampler{}{}: {}\n", command ? " " : "", command ? command->name : "", message);
  return 2;
}

// Output that could not be written is a failure, not a silent truncation.
int finish(const cli::CommandSpec* command, int status) {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    return fail(command, fmt::format("cannot write to standard output: {}", std::strerror(errno)));
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "index") return cli::run_index(args);
  // Errors name the command as soon as the first argument is one, even when a later flag is bad.
  const cli::CommandSpec* command = args.empty() ? nullptr : cli::find_command(args[0]);
  try {
    cli::Invocation invocation;
    try {
      invocation = cli::parse_args(args);
    } catch (const cli::UsageError& e) {
      fail(command, e.what());
      fmt::print(stderr, "{}\n", cli::usage_hint(command));
      return 2;
    }
    for (const auto& warning : invocation.warnings) {
      fmt::print(stderr, "distsampler{}{}: warning: {}\n", command ? " " : "", command ? command->name : "", warning);
    }
    if (invocation.help) {
      const std::string text = invocation.command ? cli::command_help(*invocation.command) : cli::program_help();
      std::fwrite(text.data(), 1, text.size(), stdout);
      return finish(invocation.command, 0);
    }
    return finish(command, cli::run_command(invocation));  // the command table (commands.cpp)
  } catch (const cli::UsageError& e) {
    return fail(command, e.what());
  } catch (const std::bad_alloc&) {
    return fail(command, "out of memory: these flags need more memory than this machine gives (try smaller values)");
  } catch (const distsampler::config_error& e) {
    return fail(command, fmt::format("bad configuration: {}", e.what()));
  } catch (const distsampler::state_error& e) {
    return fail(command, fmt::format("bad state: {}", e.what()));
  } catch (const std::exception& e) {
    return fail(command, fmt::format("internal error: {}", e.what()));
  } catch (...) {
    return fail(command, "internal error: an unknown exception");
  }
}

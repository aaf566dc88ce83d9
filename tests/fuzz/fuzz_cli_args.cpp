// distsampler fuzz target: arbitrary argument vectors through the command's parsers; only UsageError may escape.
// SPDX-License-Identifier: MIT
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "../../cli/cli.hpp"

namespace {

// Every refusal is a UsageError with a message; anything else escaping is a bug.
template <class F>
void refused_or_ok(F&& f) {
  try {
    f();
  } catch (const cli::UsageError& e) {
    if (std::string_view(e.what()).empty()) std::abort();
  }
}

}  // namespace

// The input is argv[1..] separated by NUL bytes (an argument cannot contain NUL).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> args;
  for (std::size_t at = 0; at <= input.size();) {
    const std::size_t end = std::min(input.find('\0', at), input.size());
    args.push_back(input.substr(at, end - at));
    at = end + 1;
  }
  if (size == 0) args.clear();
  for (const auto arg : args) {
    if (cli::shown(arg).empty()) std::abort();
  }
  refused_or_ok([&] {
    const cli::Invocation in = cli::parse_args(args);
    if (in.help) {
      if ((in.command ? cli::command_help(*in.command) : cli::program_help()).empty()) std::abort();
      return;
    }
    if (in.command == nullptr) std::abort();
    for (const auto& entry : in.values) {
      const std::string& flag = entry.first;
      const std::string& value = entry.second;
      if (cli::find_flag(flag) == nullptr) std::abort();
      refused_or_ok([&] { (void)in.number(flag); });
      refused_or_ok([&] { (void)cli::parse_seed(flag, value); });
      refused_or_ok([&] { (void)cli::parse_choice(flag, value, {"pad", "drop", "uneven"}); });
      if (!value.empty() && value.find_first_not_of("0123456789,") == std::string::npos) {
        refused_or_ok([&] { (void)cli::parse_shard_list(flag, value); });
      }
    }
  });
  return 0;
}

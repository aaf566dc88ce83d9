// The `distsampler` commands' shared flags and their way into the library: errors rephrased as usage errors.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_EXAMPLES_CLI_SAMPLERS_HPP
#define DISTSAMPLER_EXAMPLES_CLI_SAMPLERS_HPP

// The vocabulary every command shares; each command's file includes its own family's headers.
#include <distsampler/error.hpp>
#include <distsampler/options.hpp>
#include <distsampler/permutation.hpp>
#include <distsampler/state.hpp>
#include <distsampler/world.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"

namespace cli {

enum class Engine { feistel, torch, none };

/// The flags that define one epoch's order (indices, check, batches, state), already validated.
struct OrderFlags {
  std::uint64_t size = 0;
  std::uint64_t world_size = 1;
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  Engine engine = Engine::feistel;
  distsampler::Tail tail = distsampler::Tail::pad;
  distsampler::TorchGeneration generation = distsampler::TorchGeneration::current;
};

/// The batch shape of batches, state and mix, already validated.
struct BatchFlags {
  std::uint64_t micro_batch = 1;
  std::uint64_t accum = 1;
};

/// `message` without the library's leading "Who::member: ", so what remains can follow a flag name.
[[nodiscard]] inline std::string without_who(std::string_view message) {
  std::size_t i = 0;
  while (i < message.size() && (std::isalnum(static_cast<unsigned char>(message[i])) != 0 || message[i] == '_' ||
                                message[i] == ':' || message[i] == '<' || message[i] == '>')) {
    ++i;
  }
  if (i > 0 && i + 1 < message.size() && message[i - 1] == ':' && message[i] == ' ')
    return std::string(message.substr(i + 1));
  return std::string(message);
}

/// Runs `call` and rephrases the library's config_error and state_error as a UsageError about `flags`,
/// the flags whose values reached the library.
template <class Call>
decltype(auto) library(std::string_view flags, Call&& call) {
  try {
    return call();
  } catch (const distsampler::config_error& e) {
    throw UsageError(std::string(flags) + ": " + without_who(e.what()));
  } catch (const distsampler::state_error& e) {
    throw UsageError(std::string(flags) + ": " + without_who(e.what()));
  }
}

/// Parses a state line given to `flag`.
[[nodiscard]] inline distsampler::SamplerState parse_state(std::string_view flag, std::string_view text) {
  return library(flag, [&] { return distsampler::SamplerState::from_text(text); });
}

}  // namespace cli

#endif  // DISTSAMPLER_EXAMPLES_CLI_SAMPLERS_HPP

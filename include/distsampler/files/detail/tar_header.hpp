// distsampler files internal: one 512-byte tar header (ustar, GNU and pax forms) decoded and checked.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_DETAIL_TAR_HEADER_HPP
#define DISTSAMPLER_FILES_DETAIL_TAR_HEADER_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "../../version.hpp"
#include "file_io.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace files_detail {

inline constexpr std::uint64_t tar_block = 512;

/// The fields of a tar header the index uses.
struct TarHeader {
  std::string name;
  std::uint64_t size = 0;
  char type = '0';
};

/// A header's numeric field: octal digits (leading spaces, ended by NUL or space), or
/// GNU's base-256 form (first byte 0x80, then big-endian). nullopt when malformed.
[[nodiscard]] inline std::optional<std::uint64_t> tar_number(std::string_view field) {
  const auto first = static_cast<unsigned char>(field[0]);
  if (first == 0x80) {
    std::uint64_t v = 0;
    for (std::size_t i = 1; i < field.size(); ++i) {
      if (v >> 56 != 0) return std::nullopt;
      v = (v << 8) | static_cast<unsigned char>(field[i]);
    }
    return v;
  }
  std::size_t i = 0;
  while (i < field.size() && field[i] == ' ') ++i;
  std::uint64_t v = 0;
  bool any = false;
  for (; i < field.size() && field[i] != '\0' && field[i] != ' '; ++i) {
    if (field[i] < '0' || field[i] > '7' || v >> 60 != 0) return std::nullopt;
    v = v * 8 + static_cast<std::uint64_t>(field[i] - '0');
    any = true;
  }
  if (!any) return std::nullopt;
  return v;
}

/// A NUL-terminated field as a string (the whole field when it has no NUL).
[[nodiscard]] inline std::string tar_text(std::string_view field) {
  const std::size_t nul = field.find('\0');
  return std::string(field.substr(0, nul));
}

/// True when all 512 bytes are zero: an end-of-archive block.
[[nodiscard]] inline bool tar_zero_block(std::string_view block) {
  for (const char c : block) {
    if (c != '\0') return false;
  }
  return true;
}

/// Decodes the header at byte `at` of `path`; throws config_error naming the file and the
/// offset when its checksum or size field is wrong.
[[nodiscard]] inline TarHeader decode_tar_header(std::string_view block, const std::string& path, std::uint64_t at) {
  const auto where = [&] { return "the tar header at byte " + std::to_string(at); };
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < tar_block; ++i) {
    sum += i >= 148 && i < 156 ? std::uint64_t{' '} : static_cast<unsigned char>(block[i]);
  }
  const std::optional<std::uint64_t> stored = tar_number(block.substr(148, 8));
  if (!stored || *stored != sum) {
    throw_shard_error(path, where() + " has a bad checksum (stored " + (stored ? std::to_string(*stored) : "none") +
                                ", computed " + std::to_string(sum) + "): not a tar archive, or a damaged one");
  }
  const std::optional<std::uint64_t> size = tar_number(block.substr(124, 12));
  if (!size) throw_shard_error(path, where() + " has a malformed size field");
  TarHeader h;
  h.size = *size;
  h.type = block[156];
  h.name = tar_text(block.substr(0, 100));
  // POSIX ustar splits long names into a prefix and a name; GNU's "ustar  " magic has no prefix.
  if (block.substr(257, 6) == std::string_view("ustar\0", 6)) {
    const std::string prefix = tar_text(block.substr(345, 155));
    if (!prefix.empty()) h.name = prefix + "/" + h.name;
  }
  return h;
}

/// The "path" and "size" of a pax extended header's records ("<length> <key>=<value>\n").
struct PaxOverrides {
  std::optional<std::string> path;
  std::optional<std::uint64_t> size;
};

[[nodiscard]] inline PaxOverrides parse_pax(std::string_view data, const std::string& path, std::uint64_t at) {
  PaxOverrides out;
  std::size_t i = 0;
  while (i < data.size() && data[i] != '\0') {
    std::size_t length = 0, j = i;
    while (j < data.size() && data[j] >= '0' && data[j] <= '9' && length < data.size()) {
      length = length * 10 + static_cast<std::size_t>(data[j] - '0');
      ++j;
    }
    if (j == i || j >= data.size() || data[j] != ' ' || length <= j - i || i + length > data.size() ||
        data[i + length - 1] != '\n') {
      throw_shard_error(path, "the pax header at byte " + std::to_string(at) + " has a malformed record");
    }
    const std::string_view record = data.substr(j + 1, i + length - 1 - (j + 1));
    const std::size_t eq = record.find('=');
    if (eq != std::string_view::npos) {
      const std::string_view key = record.substr(0, eq), value = record.substr(eq + 1);
      if (key == "path") out.path = std::string(value);
      if (key == "size") {
        std::uint64_t v = 0;
        for (const char c : value) {
          if (c < '0' || c > '9' || v > (UINT64_MAX - 9) / 10) {
            throw_shard_error(path, "the pax header at byte " + std::to_string(at) + " has a malformed size");
          }
          v = v * 10 + static_cast<std::uint64_t>(c - '0');
        }
        out.size = v;
      }
    }
    i += length;
  }
  return out;
}

}  // namespace files_detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_DETAIL_TAR_HEADER_HPP

// distsampler files: the index of a WebDataset-style tar shard (a record is a sample: the members sharing a key).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_TAR_HPP
#define DISTSAMPLER_FILES_TAR_HPP

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../version.hpp"
#include "detail/file_io.hpp"
#include "detail/tar_header.hpp"
#include "shard_index.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The key and suffix of a tar member name: the key is the name up to the first dot of
/// its base name (directories included), the suffix what follows that dot ("" without one).
/// "train/000123.seg.png" -> key "train/000123", suffix "seg.png".
struct TarName {
  std::string key;
  std::string suffix;
};

[[nodiscard]] inline TarName split_tar_name(std::string_view name) {
  const std::size_t slash = name.find_last_of('/');
  const std::size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const std::size_t dot = name.find('.', base);
  if (dot == std::string_view::npos) return {std::string(name), std::string()};
  return {std::string(name.substr(0, dot)), std::string(name.substr(dot + 1))};
}

/// Indexes a tar archive as WebDataset reads it: regular-file members, in archive order,
/// grouped into samples; consecutive members with the same key form one sample (a key that
/// comes back later starts a new sample). A record is a sample: its key, and per member its
/// suffix, data offset and size. Reads ustar and GNU headers (base-256 sizes, long names)
/// and pax "path"/"size" overrides; directories, links and other non-file members are
/// skipped.
/// Throws config_error naming the file when a header's checksum is wrong, a member runs past
/// the end of the file, the archive ends without its end-of-archive block, or a sample has
/// two members with the same suffix.
/// O(members) header reads (served from 1 MiB blocks when members are small), O(members)
/// memory. Thread-safe for distinct calls.
[[nodiscard]] inline ShardIndex index_tar(const std::string& path) {
  namespace fd = files_detail;
  ShardIndex out;
  out.path = path;
  out.format = ShardFormat::tar;
  out.data_path = path;
  const FileStamp stamp = fd::stamp_of(path);
  out.data_size = stamp.size;
  out.sources.push_back(stamp);
  fd::InputFile file(path);
  fd::ReadWindow window(file, stamp.size);

  std::string long_name;  // from a GNU 'L' member, for the next member
  fd::PaxOverrides pax;   // from a pax 'x' member, for the next member
  bool ended = false;
  std::uint64_t at = 0;
  const auto member_data = [&](std::uint64_t offset, std::uint64_t size) {
    std::string data;
    data.resize(static_cast<std::size_t>(size));
    if (size > 0 && file.read_at(offset, data.data(), data.size()) != data.size()) {
      fd::throw_shard_error(path, "the member at byte " + std::to_string(offset) + " is truncated");
    }
    return data;
  };
  while (at + fd::tar_block <= stamp.size) {
    const std::string_view block = window.at(at, fd::tar_block);
    if (block.size() < fd::tar_block) break;
    if (fd::tar_zero_block(block)) {
      ended = true;
      break;
    }
    fd::TarHeader h = fd::decode_tar_header(block, path, at);
    if (pax.size) h.size = *pax.size;
    const std::uint64_t data_at = at + fd::tar_block;
    if (h.size > stamp.size - data_at) {
      fd::throw_shard_error(path, "member \"" + h.name + "\" at byte " + std::to_string(at) + " needs " +
                                      std::to_string(h.size) + " bytes but the file ends after " +
                                      std::to_string(stamp.size - data_at) + ": a truncated archive");
    }
    const std::uint64_t next = data_at + (h.size + fd::tar_block - 1) / fd::tar_block * fd::tar_block;
    constexpr std::uint64_t max_meta = std::uint64_t{1} << 20;  // names and pax headers are small
    if ((h.type == 'L' || h.type == 'x') && h.size > max_meta) {
      fd::throw_shard_error(path, "the metadata member at byte " + std::to_string(at) + " is " +
                                      std::to_string(h.size) + " bytes (at most " + std::to_string(max_meta) + ")");
    }
    if (h.type == 'L') {
      long_name = fd::tar_text(member_data(data_at, h.size));
    } else if (h.type == 'x') {
      pax = fd::parse_pax(member_data(data_at, h.size), path, at);
    } else if (h.type == 'K' || h.type == 'g') {
      // A GNU long link name, or pax global settings: nothing a sample needs, and the next
      // member keeps its pending long name or pax overrides.
    } else {
      if (h.type == '0' || h.type == '\0' || h.type == '7') {
        const std::string name = pax.path ? *pax.path : !long_name.empty() ? long_name : h.name;
        TarName split = split_tar_name(name);
        if (out.keys.empty() || out.keys.back() != split.key) {
          out.keys.push_back(split.key);
          out.member_begin.push_back(out.members.size());
          out.records.push_back(RecordSpan{data_at, 0});
        } else {
          for (std::size_t m = static_cast<std::size_t>(out.member_begin.back()); m < out.members.size(); ++m) {
            if (out.members[m].suffix == split.suffix) {
              fd::throw_shard_error(path, "sample \"" + split.key + "\" has two members with the suffix \"" +
                                              split.suffix + "\" (the second at byte " + std::to_string(at) +
                                              "): each member of a sample needs its own suffix");
            }
          }
        }
        out.members.push_back(TarMember{std::move(split.suffix), data_at, h.size});
        out.records.back().size = data_at + h.size - out.records.back().offset;
      }
      // Directories, links and devices carry no sample data.
      long_name.clear();
      pax = fd::PaxOverrides{};
    }
    at = next;
  }
  if (!ended) {
    fd::throw_shard_error(path, "ends at byte " + std::to_string(stamp.size) +
                                    " without the end-of-archive block: a truncated or damaged archive");
  }
  out.member_begin.push_back(out.members.size());
  return out;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_TAR_HPP

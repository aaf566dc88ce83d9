// distsampler files: the index of a WebDataset-style tar shard (a record is a sample: the members sharing a key).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_TAR_HPP
#define DISTSAMPLER_FILES_TAR_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../version.hpp"
#include "detail/file_io.hpp"
#include "detail/tar_header.hpp"
#include "shard_index.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The key and suffix of a tar member name, as WebDataset's reader splits it: the key is the
/// name up to the first dot of its base name (directories included), the suffix what follows
/// that dot, lower-cased (ASCII letters; the bytes of other characters are kept).
/// "train/000123.Seg.PNG" -> key "train/000123", suffix "seg.png".
struct TarName {
  std::string key;
  std::string suffix;
};

/// The key and suffix of member `name` (see TarName), or nullopt for a member WebDataset's
/// reader skips: a top-level name that starts and ends with "__" ("__meta__"), a name whose
/// first directory is "__X__" ("__meta__/a.json"), and a name it finds no key and suffix in:
/// a base name without a dot ("README"), a top-level base name that starts with a dot. A base
/// name that starts with a dot below a directory without a dot ("d/.x") has that directory
/// as its key ("d/") and the rest as its suffix ("x"), as WebDataset's split does.
[[nodiscard]] inline std::optional<TarName> split_tar_name(std::string_view name) {
  const auto meta = [](std::string_view part) {
    return part.size() >= 2 && part.substr(0, 2) == "__" && part.substr(part.size() - 2) == "__";
  };
  const std::size_t first_slash = name.find('/');
  if (first_slash == std::string_view::npos ? meta(name) : (first_slash >= 4 && meta(name.substr(0, first_slash)))) {
    return std::nullopt;
  }
  const auto lower = [](std::string_view text) {
    std::string out(text);
    for (char& c : out) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
  };
  const std::size_t last_slash = name.rfind('/');
  const std::size_t base = last_slash == std::string_view::npos ? 0 : last_slash + 1;
  if (base == name.size()) return std::nullopt;  // "dir/": no base name
  if (name[base] != '.') {
    const std::size_t dot = name.find('.', base);
    if (dot == std::string_view::npos) return std::nullopt;
    return TarName{std::string(name.substr(0, dot)), lower(name.substr(dot + 1))};
  }
  // The base name starts with a dot: the key is the directory, if the directory's own name has no dot.
  if (last_slash == std::string_view::npos) return std::nullopt;
  const std::size_t parent = last_slash == 0 ? std::string_view::npos : name.rfind('/', last_slash - 1);
  const std::size_t dir_begin = parent == std::string_view::npos ? 0 : parent + 1;
  if (name.substr(dir_begin, last_slash - dir_begin).find('.') != std::string_view::npos) return std::nullopt;
  return TarName{std::string(name.substr(0, last_slash + 1)), lower(name.substr(last_slash + 2))};
}

/// `name` for a message: printable ASCII as it is, every other byte as \xNN (a member name
/// need not be UTF-8).
[[nodiscard]] inline std::string printable_tar_name(std::string_view name) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (const char c : name) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      out += c;
    } else {
      out += "\\x";
      out += hex[b >> 4];
      out += hex[b & 15];
    }
  }
  return out;
}

/// Indexes a tar archive as WebDataset reads it: regular-file members, in archive order,
/// named by split_tar_name (the members it skips are not indexed), grouped into samples;
/// consecutive members with the same key form one sample (a key that comes back later
/// starts a new sample). A record is a sample: its key, and per member its
/// suffix, data offset and size. Reads ustar and GNU headers (base-256 sizes, long names)
/// and pax "path"/"size" overrides; directories, links and other non-file members are
/// skipped.
/// Throws config_error naming the file when a header's checksum is wrong, a member runs past
/// the end of the file, the archive ends without its end-of-archive block, or a sample has
/// two members with the same suffix (after lower-casing: "a.JPG" and "a.jpg" are the same).
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
        std::optional<TarName> named = split_tar_name(name);
        if (!named) {
          // A member WebDataset's reader skips (metadata, or no key and suffix in its name).
          long_name.clear();
          pax = fd::PaxOverrides{};
          at = next;
          continue;
        }
        TarName& split = *named;
        if (out.keys.empty() || out.keys.back() != split.key) {
          out.keys.push_back(split.key);
          out.member_begin.push_back(out.members.size());
          out.records.push_back(RecordSpan{data_at, 0});
        } else {
          for (std::size_t m = static_cast<std::size_t>(out.member_begin.back()); m < out.members.size(); ++m) {
            if (out.members[m].suffix == split.suffix) {
              fd::throw_shard_error(path, "sample \"" + printable_tar_name(split.key) +
                                              "\" has two members with the suffix \"" +
                                              printable_tar_name(split.suffix) + "\" (the second at byte " +
                                              std::to_string(at) + "): each member of a sample needs its own suffix");
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

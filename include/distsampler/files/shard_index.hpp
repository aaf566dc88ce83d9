// distsampler files: the index of one shard file (its records' byte ranges) and the five formats it reads.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_SHARD_INDEX_HPP
#define DISTSAMPLER_FILES_SHARD_INDEX_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The formats a shard file can have. Each defines what one record is:
/// - `jsonl`: one JSON value per line (JSON Lines); empty lines are not records.
/// - `tar`: a WebDataset-style tar archive; a record is a sample, the consecutive members
///   sharing a key (the member name up to the first dot of its base name).
/// - `megatron`: a Megatron indexed dataset (`.idx` + `.bin`); a record is a sequence.
/// - `npy`: a NumPy `.npy` array; a record is a row along axis 0.
/// - `raw`: a headerless array of token ids of a given dtype; a record is a document, the
///   tokens up to and including an end-of-document token (`eos`). Never from an extension.
enum class ShardFormat : std::uint8_t { jsonl = 1, tar = 2, megatron = 3, npy = 4, raw = 5 };

/// The format's name as the CLI and Python spell it: "jsonl", "tar", "megatron", "npy".
[[nodiscard]] constexpr std::string_view format_name(ShardFormat f) noexcept {
  switch (f) {
    case ShardFormat::jsonl: return "jsonl";
    case ShardFormat::tar: return "tar";
    case ShardFormat::megatron: return "megatron";
    case ShardFormat::npy: return "npy";
    case ShardFormat::raw: return "raw";
  }
  return "unknown";
}

/// The format named `name` ("jsonl", "tar", "megatron", "npy" or "raw"); nullopt for any other text.
[[nodiscard]] constexpr std::optional<ShardFormat> parse_format(std::string_view name) noexcept {
  for (const ShardFormat f :
       {ShardFormat::jsonl, ShardFormat::tar, ShardFormat::megatron, ShardFormat::npy, ShardFormat::raw}) {
    if (format_name(f) == name) return f;
  }
  return std::nullopt;
}

/// The format a file name's extension stands for: .jsonl and .ndjson -> jsonl, .tar -> tar,
/// .idx and .bin -> megatron, .npy -> npy. Throws config_error naming the file and the
/// extension when it is none of these (the caller then names the format explicitly).
[[nodiscard]] inline ShardFormat format_from_extension(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const std::size_t dot = base.find_last_of('.');
  const std::string_view ext = dot == std::string_view::npos ? std::string_view() : base.substr(dot);
  if (ext == ".jsonl" || ext == ".ndjson") return ShardFormat::jsonl;
  if (ext == ".tar") return ShardFormat::tar;
  if (ext == ".idx" || ext == ".bin") return ShardFormat::megatron;
  if (ext == ".npy") return ShardFormat::npy;
  detail::throw_config_error("shard " + std::string(path) + ": cannot tell the format from the extension \"" +
                             std::string(ext) +
                             "\" (expected .jsonl, .ndjson, .tar, .idx, .bin or .npy, or name the format: "
                             "jsonl, tar, megatron, npy, or raw with its dtype and eos)");
}

/// A file an index was built from, as it was then: its path, size in bytes and
/// modification time (the file system's clock ticks since its epoch). An index is stale
/// when either changed.
struct FileStamp {
  std::string path;
  std::uint64_t size = 0;
  std::int64_t mtime = 0;

  friend bool operator==(const FileStamp& a, const FileStamp& b) {
    return a.path == b.path && a.size == b.size && a.mtime == b.mtime;
  }
};

/// The bytes of one record in the data file: [offset, offset + size).
struct RecordSpan {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;

  friend constexpr bool operator==(const RecordSpan& a, const RecordSpan& b) noexcept {
    return a.offset == b.offset && a.size == b.size;
  }
};

/// One member of a tar sample: its name suffix (after the first dot of the base name,
/// "" when there is none) and its data's bytes in the archive.
struct TarMember {
  std::string suffix;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;

  friend bool operator==(const TarMember& a, const TarMember& b) {
    return a.suffix == b.suffix && a.offset == b.offset && a.size == b.size;
  }
};

/// The index of one shard: its record count and the byte range of every record, plus what
/// a reader of the format needs to decode a record. Built by index_file() or
/// index_shards(); saved and loaded by the index cache. A plain value: copyable, no
/// invariants beyond those the builders establish (records.size() is the record count;
/// for tar, keys.size() == records.size() and member_begin.size() == records.size() + 1).
struct ShardIndex {
  /// The path as the caller gave it.
  std::string path;
  ShardFormat format = ShardFormat::jsonl;
  /// The file holding the records' bytes (for megatron the .bin, else `path`) and its size.
  std::string data_path;
  std::uint64_t data_size = 0;
  /// Every file read to build the index (megatron: the .idx, then the .bin).
  std::vector<FileStamp> sources;
  /// Record i's bytes in data_path. For a tar sample: from its first member's data to the
  /// end of its last member's data.
  std::vector<RecordSpan> records;
  /// tar: each sample's key and its members, members[member_begin[i] .. member_begin[i + 1]).
  std::vector<std::string> keys;
  std::vector<std::uint64_t> member_begin;
  std::vector<TarMember> members;
  /// megatron and raw: the token type's NumPy name ("uint16", "int32", ...); npy: the descr ("<f4").
  std::string dtype;
  /// raw: the end-of-document token id; 0 for the other formats.
  std::uint64_t eos = 0;
  /// npy: the shape of one row (the array's shape without axis 0); megatron: empty.
  std::vector<std::uint64_t> row_shape;
  /// Where the index came from (not saved): the cache file used ("" without a cache) and
  /// whether it was read from there rather than built from the shard.
  std::string cache_path;
  bool from_cache = false;
  /// Not saved either: "" unless the cached index was stale and this one was built in its
  /// place (CacheMode::use without `strict`); then which shard changed and how, as
  /// "shard data/part-3.jsonl changed after it was indexed (size 1200 -> 1250)".
  std::string rebuilt_stale;

  [[nodiscard]] std::uint64_t num_records() const noexcept { return records.size(); }

  /// Same shard, same records: every saved field equal (cache_path, from_cache and rebuilt_stale ignored).
  friend bool operator==(const ShardIndex& a, const ShardIndex& b) {
    return a.path == b.path && a.format == b.format && a.data_path == b.data_path && a.data_size == b.data_size &&
           a.sources == b.sources && a.records == b.records && a.keys == b.keys &&
           a.member_begin == b.member_begin && a.members == b.members && a.dtype == b.dtype &&
           a.eos == b.eos && a.row_shape == b.row_shape;
  }
  friend bool operator!=(const ShardIndex& a, const ShardIndex& b) { return !(a == b); }
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_SHARD_INDEX_HPP

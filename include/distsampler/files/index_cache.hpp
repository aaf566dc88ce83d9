// distsampler files: the index cache, a shard's index saved beside it or in a cache folder and refused once stale.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_INDEX_CACHE_HPP
#define DISTSAMPLER_FILES_INDEX_CACHE_HPP

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "../version.hpp"
#include "detail/file_io.hpp"
#include "detail/index_codec.hpp"
#include "megatron.hpp"
#include "shard_index.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The key a shard's cached index is stored under: its absolute, lexically normal path.
[[nodiscard]] inline std::string index_cache_key(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return (ec ? std::filesystem::path(path) : abs).lexically_normal().string();
}

/// The key of an index in `format`: the path's key, and for a raw token file also its dtype
/// and eos ("<key>\nraw uint32 eos 50279"), so an index built with other options is another
/// index (rebuilt, never read as this one).
[[nodiscard]] inline std::string index_cache_key(const std::string& path, ShardFormat format, std::string_view dtype,
                                                 std::uint64_t eos) {
  std::string key = index_cache_key(path);
  if (format == ShardFormat::raw) key += "\nraw " + std::string(dtype) + " eos " + std::to_string(eos);
  return key;
}

/// Where the index of `path` is cached: "<path>.dsidx" beside the shard when `cache_dir` is
/// empty, else "<cache_dir>/<file name>.<16 hex digits of the key's checksum>.dsidx" (shards
/// of the same name in different folders do not collide).
[[nodiscard]] inline std::string index_cache_path(const std::string& path, const std::string& cache_dir) {
  if (cache_dir.empty()) return path + ".dsidx";
  const std::uint64_t h = files_detail::checksum(index_cache_key(path));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  const std::string name = std::filesystem::path(path).filename().string();
  return (std::filesystem::path(cache_dir) / (name + "." + hex + ".dsidx")).string();
}

/// Writes `index` to `cache_path` (creating its folder): to a temporary file first, then
/// renamed over the old one, so readers in other processes never see half a file.
/// Throws config_error naming the cache file when it cannot be written.
inline void save_index(const ShardIndex& index, const std::string& cache_path) {
  namespace fs = std::filesystem;
  const auto fail = [&](const std::string& why) {
    detail::throw_config_error("index cache " + cache_path + " of shard " + index.path + ": cannot write it (" + why +
                               "); choose a writable cache folder");
  };
  std::error_code ec;
  const fs::path parent = fs::path(cache_path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) fail(ec.message());
  const std::string bytes =
      files_detail::encode_index(index, index_cache_key(index.path, index.format, index.dtype, index.eos));
  // A name of its own per writer: several ranks may index the same shard at once.
  const std::uint64_t tag = files_detail::checksum(
      std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + ":" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ":" + cache_path);
  const std::string temp = cache_path + ".tmp" + std::to_string(tag % 1000000007u);
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr) fail(std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !written) {
    fs::remove(temp, ec);
    fail("write failed");
  }
  fs::rename(temp, cache_path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    fail(ec.message());
  }
}

/// Reads the index cached at `cache_path` for the shard `path` under `key` (index_cache_key;
/// "" for index_cache_key(path)). Returns nullopt when there is no such file or it was
/// written under another key (another shard, or a raw file's other dtype or eos). Throws
/// config_error naming the cache file when it is damaged or of another format version.
/// When a file the index was built from has another size or modification time now, the
/// index is stale: with `stale` null, throws config_error naming the shard, in the form
/// "shard data/part-3.jsonl changed after it was indexed (size 1200 -> 1250): rebuild the
/// index"; with `stale` given, sets *stale to that message without its ": rebuild the index"
/// and returns nullopt.
[[nodiscard]] inline std::optional<ShardIndex> load_index(const std::string& path, const std::string& cache_path,
                                                          const std::string& key = {}, std::string* stale = nullptr) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(cache_path, ec)) return std::nullopt;
  std::string bytes;
  {
    files_detail::InputFile f(cache_path);
    const std::uint64_t size = fs::file_size(cache_path, ec);
    if (ec) files_detail::throw_shard_error(cache_path, "cannot read its size (" + ec.message() + ")");
    bytes.resize(static_cast<std::size_t>(size));
    if (f.read_some(bytes.data(), bytes.size()) != bytes.size()) {
      detail::throw_config_error("index cache " + cache_path + " of shard " + path + " is truncated: rebuild the index");
    }
  }
  files_detail::DecodedIndex d = files_detail::decode_index(bytes);
  if (!d.error.empty()) {
    detail::throw_config_error("index cache " + cache_path + " of shard " + path + " " + d.error +
                               ": rebuild the index");
  }
  if (d.key != (key.empty() ? index_cache_key(path) : key)) return std::nullopt;
  // The sources as this caller names them (the cache may have been written from another folder).
  std::vector<std::string> current{path};
  if (d.index.format == ShardFormat::megatron) {
    const MegatronPaths m = megatron_paths(path);
    current = {m.idx, m.bin};
    d.index.data_path = m.bin;
  } else {
    d.index.data_path = path;
  }
  if (current.size() != d.index.sources.size()) {
    detail::throw_config_error("index cache " + cache_path + " of shard " + path +
                               " is damaged (it lists the wrong files): rebuild the index");
  }
  for (std::size_t i = 0; i < current.size(); ++i) {
    const FileStamp& then = d.index.sources[i];
    const FileStamp now = files_detail::stamp_of(current[i]);
    d.index.sources[i].path = current[i];
    std::string changed;
    if (now.size != then.size) {
      changed = "shard " + now.path + " changed after it was indexed (size " + std::to_string(then.size) + " -> " +
                std::to_string(now.size) + ")";
    } else if (now.mtime != then.mtime) {
      changed = "shard " + now.path + " changed after it was indexed (modification time changed, size " +
                std::to_string(now.size) + ")";
    }
    if (!changed.empty()) {
      if (stale == nullptr) detail::throw_config_error(changed + ": rebuild the index");
      *stale = std::move(changed);
      return std::nullopt;
    }
  }
  d.index.path = path;
  d.index.cache_path = cache_path;
  d.index.from_cache = true;
  return std::move(d.index);
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_INDEX_CACHE_HPP

// distsampler files: index_file and index_shards, the entry points (formats by extension, the cache, threads).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_INDEX_BUILDER_HPP
#define DISTSAMPLER_FILES_INDEX_BUILDER_HPP

#include <atomic>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../error.hpp"
#include "../version.hpp"
#include "index_cache.hpp"
#include "jsonl.hpp"
#include "megatron.hpp"
#include "npy.hpp"
#include "raw.hpp"
#include "shard_index.hpp"
#include "tar.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Indexes one shard file in the given format, without any cache; `dtype` and `eos` are a raw
/// token file's (index_raw) and ignored for the other formats. Throws what the format's
/// indexer throws (config_error naming the file).
[[nodiscard]] inline ShardIndex index_file(const std::string& path, ShardFormat format, std::string_view dtype = {},
                                           std::uint64_t eos = 0) {
  switch (format) {
    case ShardFormat::jsonl: return index_jsonl(path);
    case ShardFormat::tar: return index_tar(path);
    case ShardFormat::megatron: return index_megatron(path);
    case ShardFormat::npy: return index_npy(path);
    case ShardFormat::raw: return index_raw(path, dtype, eos);
  }
  detail::throw_config_error("index_file: unknown format code " + std::to_string(static_cast<int>(format)));
}

/// How index_shards uses the cache:
/// - `use`: read a cached index when there is one, else build the index and save it; a
///   cached index whose shard changed since (size or modification time) is built again and
///   saved in its place, the result's `rebuilt_stale` saying which shard changed, or with
///   IndexOptions::strict refused;
/// - `rebuild`: build every index again and save it (the answer to a stale index);
/// - `verify`: check that each shard has a cached index that is fresh and equal to one
///   built now, writing nothing (a shard without one, or with a stale or different one,
///   is refused);
/// - `off`: build every index, read and write no cache.
enum class CacheMode : std::uint8_t { use, rebuild, verify, off };

/// Options of index_shards, set by name.
struct IndexOptions {
  /// The format of every file; nullopt: each file's from its extension (format_from_extension).
  std::optional<ShardFormat> format;
  /// Where cached indexes live; "" beside each shard ("<shard>.dsidx").
  std::string cache_dir;
  CacheMode cache = CacheMode::use;
  /// Threads indexing files in parallel, at least 1; with 1 everything runs in the calling
  /// thread and no thread is started.
  std::uint64_t threads = 1;
  /// Format raw only, and then both required: the token type (raw_dtypes: "uint16",
  /// "uint32", ...) and the end-of-document token id.
  std::string dtype;
  std::optional<std::uint64_t> eos;
  /// Under CacheMode::use, refuse a stale cached index ("... changed after it was indexed
  /// (...): rebuild the index") instead of building it again.
  bool strict = false;
};

/// Checks options' dtype and eos against its format: both given, and valid, for raw; neither
/// for another format or for formats from extensions (raw is never one). Throws config_error
/// "index_shards: ..." naming the option.
inline void check_index_options(const IndexOptions& options) {
  const bool raw = options.format == ShardFormat::raw;
  if (raw) {
    if (options.dtype.empty()) {
      detail::throw_config_error("index_shards: format raw needs a dtype, the token type (" +
                                 std::string(raw_dtype_names) + ")");
    }
    if (!options.eos) {
      detail::throw_config_error("index_shards: format raw needs eos, the end-of-document token id");
    }
    (void)check_raw_options("index_shards", options.dtype, *options.eos);
    return;
  }
  const std::string formats = options.format ? "the format is " + std::string(format_name(*options.format))
                                             : "the formats come from the extensions";
  if (!options.dtype.empty()) {
    detail::throw_config_error("index_shards: dtype \"" + options.dtype + "\" is for format raw only (" + formats +
                               ")");
  }
  if (options.eos) {
    detail::throw_config_error("index_shards: eos " + std::to_string(*options.eos) + " is for format raw only (" +
                               formats + ")");
  }
}

/// One shard's index under `options` (see CacheMode); the result says whether it came from
/// the cache (`from_cache`), which cache file (`cache_path`) and whether a stale cached
/// index was rebuilt (`rebuilt_stale`). Throws config_error naming the file: the format's
/// faults, an unknown extension, a damaged cache, a cache that cannot be written, a stale
/// cache under `verify` or `strict`, and under `verify` a missing or different cached
/// index; and naming the option for check_index_options's faults.
[[nodiscard]] inline ShardIndex index_shard(const std::string& path, const IndexOptions& options) {
  check_index_options(options);
  const ShardFormat format = options.format ? *options.format : format_from_extension(path);
  const std::uint64_t eos = options.eos ? *options.eos : 0;
  if (options.cache == CacheMode::off) return index_file(path, format, options.dtype, eos);
  const std::string cache_path = index_cache_path(path, options.cache_dir);
  std::string stale;
  if (options.cache == CacheMode::use || options.cache == CacheMode::verify) {
    const bool tolerate = options.cache == CacheMode::use && !options.strict;
    std::optional<ShardIndex> cached =
        load_index(path, cache_path, index_cache_key(path, format, options.dtype, eos), tolerate ? &stale : nullptr);
    if (cached && cached->format != format) {
      detail::throw_config_error("index cache " + cache_path + " of shard " + path + " holds a " +
                                 std::string(format_name(cached->format)) + " index, not " +
                                 std::string(format_name(format)) + ": rebuild the index");
    }
    if (options.cache == CacheMode::use && cached) return std::move(*cached);
    if (options.cache == CacheMode::verify) {
      if (!cached) {
        (void)index_file(path, format, options.dtype, eos);  // a missing or malformed shard is the fault to name first
        detail::throw_config_error("shard " + path + " has no index at " + cache_path +
                                   " (expected one to verify): index it first");
      }
      ShardIndex fresh = index_file(path, format, options.dtype, eos);
      if (fresh != *cached) {
        detail::throw_config_error("shard " + path + " does not match its index " + cache_path + " (" +
                                   std::to_string(fresh.num_records()) + " records now, " +
                                   std::to_string(cached->num_records()) + " indexed): rebuild the index");
      }
      return std::move(*cached);
    }
  }
  // Saved under a temporary name and renamed: a reader never sees half of the rebuilt index.
  ShardIndex built = index_file(path, format, options.dtype, eos);
  save_index(built, cache_path);
  built.cache_path = cache_path;
  built.rebuilt_stale = std::move(stale);
  return built;
}

/// The indexes of `paths`, in their order, each as index_shard(path, options) builds it,
/// over options.threads threads (parallel over files: each file is read by one thread).
/// The result does not depend on the thread count. When several files fail, the error of
/// the first of them in `paths` is thrown, after every thread has finished.
/// Throws config_error for threads 0, check_index_options's faults (before any file is
/// read) and whatever index_shard throws.
[[nodiscard]] inline std::vector<ShardIndex> index_shards(const std::vector<std::string>& paths,
                                                          const IndexOptions& options = {}) {
  if (options.threads == 0) {
    detail::throw_config_error("index_shards: threads 0 is out of range (expected at least 1)");
  }
  check_index_options(options);
  std::vector<ShardIndex> out(paths.size());
  if (options.threads == 1 || paths.size() <= 1) {
    for (std::size_t i = 0; i < paths.size(); ++i) out[i] = index_shard(paths[i], options);
    return out;
  }
  std::vector<std::exception_ptr> errors(paths.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < paths.size(); i = next++) {
      try {
        out[i] = index_shard(paths[i], options);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const std::uint64_t n = options.threads < paths.size() ? options.threads : paths.size();
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(n));
  for (std::uint64_t t = 0; t < n; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return out;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_INDEX_BUILDER_HPP

// distsampler files: index_file and index_shards, the entry points (formats by extension, the cache, threads).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_INDEX_BUILDER_HPP
#define DISTSAMPLER_FILES_INDEX_BUILDER_HPP

#include <atomic>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../error.hpp"
#include "../version.hpp"
#include "index_cache.hpp"
#include "jsonl.hpp"
#include "megatron.hpp"
#include "npy.hpp"
#include "shard_index.hpp"
#include "tar.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Indexes one shard file in the given format, without any cache. Throws what the format's
/// indexer throws (config_error naming the file).
[[nodiscard]] inline ShardIndex index_file(const std::string& path, ShardFormat format) {
  switch (format) {
    case ShardFormat::jsonl: return index_jsonl(path);
    case ShardFormat::tar: return index_tar(path);
    case ShardFormat::megatron: return index_megatron(path);
    case ShardFormat::npy: return index_npy(path);
  }
  detail::throw_config_error("index_file: unknown format code " + std::to_string(static_cast<int>(format)));
}

/// How index_shards uses the cache:
/// - `use`: read a cached index when there is one (refused when its shard changed since),
///   else build the index and save it;
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
};

/// One shard's index under `options` (see CacheMode); the result says whether it came from
/// the cache (`from_cache`) and which cache file (`cache_path`). Throws config_error naming
/// the file: the format's faults, an unknown extension, a stale or damaged cache, a cache
/// that cannot be written, and under `verify` a missing or different cached index.
[[nodiscard]] inline ShardIndex index_shard(const std::string& path, const IndexOptions& options) {
  const ShardFormat format = options.format ? *options.format : format_from_extension(path);
  if (options.cache == CacheMode::off) return index_file(path, format);
  const std::string cache_path = index_cache_path(path, options.cache_dir);
  if (options.cache == CacheMode::use || options.cache == CacheMode::verify) {
    std::optional<ShardIndex> cached = load_index(path, cache_path);
    if (cached && cached->format != format) {
      detail::throw_config_error("index cache " + cache_path + " of shard " + path + " holds a " +
                                 std::string(format_name(cached->format)) + " index, not " +
                                 std::string(format_name(format)) + ": rebuild the index");
    }
    if (options.cache == CacheMode::use && cached) return std::move(*cached);
    if (options.cache == CacheMode::verify) {
      if (!cached) {
        (void)index_file(path, format);  // a missing or malformed shard is the fault to name first
        detail::throw_config_error("shard " + path + " has no index at " + cache_path +
                                   " (expected one to verify): index it first");
      }
      ShardIndex fresh = index_file(path, format);
      if (fresh != *cached) {
        detail::throw_config_error("shard " + path + " does not match its index " + cache_path + " (" +
                                   std::to_string(fresh.num_records()) + " records now, " +
                                   std::to_string(cached->num_records()) + " indexed): rebuild the index");
      }
      return std::move(*cached);
    }
  }
  ShardIndex built = index_file(path, format);
  save_index(built, cache_path);
  built.cache_path = cache_path;
  return built;
}

/// The indexes of `paths`, in their order, each as index_shard(path, options) builds it,
/// over options.threads threads (parallel over files: each file is read by one thread).
/// The result does not depend on the thread count. When several files fail, the error of
/// the first of them in `paths` is thrown, after every thread has finished.
/// Throws config_error for threads 0 and whatever index_shard throws.
[[nodiscard]] inline std::vector<ShardIndex> index_shards(const std::vector<std::string>& paths,
                                                          const IndexOptions& options = {}) {
  if (options.threads == 0) {
    detail::throw_config_error("index_shards: threads 0 is out of range (expected at least 1)");
  }
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

// Tests of the index cache (hit, rebuild, stale and damaged refusals, verify) and of index_shards over threads.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <distsampler/files/index_builder.hpp>

#include "files_test_util.hpp"

using distsampler::CacheMode;
using distsampler::IndexOptions;

namespace {

std::string cache_lines(int n, int width) {
  std::string out;
  for (int i = 0; i < n; ++i) out += "{\"n\": " + std::to_string(i) + std::string(static_cast<std::size_t>(width), ' ') + "}\n";
  return out;
}

IndexOptions cache_options(CacheMode mode, std::string cache_dir = {}) {
  IndexOptions o;
  o.cache = mode;
  o.cache_dir = std::move(cache_dir);
  return o;
}

}  // namespace

TEST_CASE("an index is cached beside its shard and read back from there", "[files][cache]") {
  files_test::TempDir dir;
  const std::string path = dir.file("part-3.jsonl");
  files_test::write_bytes(path, cache_lines(10, 3));
  const distsampler::ShardIndex built = distsampler::index_shard(path, cache_options(CacheMode::use));
  CHECK_FALSE(built.from_cache);
  CHECK(built.cache_path == path + ".dsidx");
  CHECK(std::filesystem::exists(path + ".dsidx"));
  const distsampler::ShardIndex read = distsampler::index_shard(path, cache_options(CacheMode::use));
  CHECK(read.from_cache);
  CHECK(read == built);
  CHECK(read.num_records() == 10);
  // What the cache returns equals a fresh build of the shard.
  CHECK(read == distsampler::index_file(path, distsampler::ShardFormat::jsonl));
}

TEST_CASE("a cached index of a changed shard is rebuilt and says which shard changed, strict refuses it",
          "[files][cache]") {
  files_test::TempDir dir;
  const std::string path = dir.file("part-3.jsonl");
  files_test::write_bytes(path, std::string(1200, 'x') + "\n");
  const distsampler::ShardIndex first = distsampler::index_shard(path, cache_options(CacheMode::use));
  CHECK(first.rebuilt_stale.empty());
  IndexOptions strict = cache_options(CacheMode::use);
  strict.strict = true;
  SECTION("a different size") {
    files_test::append_bytes(path, std::string(49, 'y') + "\n");
    CHECK_THROWS_WITH(distsampler::index_shard(path, strict),
                      "shard " + path + " changed after it was indexed (size 1201 -> 1251): rebuild the index");
    CHECK_THROWS_WITH(distsampler::index_shard(path, cache_options(CacheMode::verify)),
                      "shard " + path + " changed after it was indexed (size 1201 -> 1251): rebuild the index");
    const distsampler::ShardIndex rebuilt = distsampler::index_shard(path, cache_options(CacheMode::use));
    CHECK_FALSE(rebuilt.from_cache);
    CHECK(rebuilt.num_records() == 2);
    CHECK(rebuilt.rebuilt_stale == "shard " + path + " changed after it was indexed (size 1201 -> 1251)");
    CHECK(rebuilt == distsampler::index_file(path, distsampler::ShardFormat::jsonl));
    // Saved in place (no temporary file left beside it): the next run reads it, strict or not.
    const distsampler::ShardIndex again = distsampler::index_shard(path, strict);
    CHECK(again.from_cache);
    CHECK(again.rebuilt_stale.empty());
    CHECK(again.num_records() == 2);
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file() ? 1u : 0u;
    CHECK(files == 2);
    CHECK(distsampler::index_shard(path, cache_options(CacheMode::verify)).from_cache);
  }
  SECTION("the same size, another modification time") {
    const auto t = std::filesystem::last_write_time(path);
    std::filesystem::last_write_time(path, t + std::chrono::seconds(5));
    CHECK_THROWS_WITH(distsampler::index_shard(path, strict),
                      "shard " + path + " changed after it was indexed (modification time changed, size 1201): "
                                        "rebuild the index");
    const distsampler::ShardIndex rebuilt = distsampler::index_shard(path, cache_options(CacheMode::use));
    CHECK(rebuilt.rebuilt_stale ==
          "shard " + path + " changed after it was indexed (modification time changed, size 1201)");
    CHECK(distsampler::index_shard(path, strict).from_cache);
  }
  SECTION("over threads, each stale shard says so in its own index") {
    const std::string other = dir.file("part-4.jsonl");
    files_test::write_bytes(other, "1\n");
    IndexOptions many = cache_options(CacheMode::use);
    many.threads = 2;
    (void)distsampler::index_shards({path, other}, many);
    files_test::append_bytes(other, "2\n");
    const auto got = distsampler::index_shards({path, other}, many);
    CHECK(got[0].from_cache);
    CHECK(got[0].rebuilt_stale.empty());
    CHECK(got[1].rebuilt_stale == "shard " + other + " changed after it was indexed (size 2 -> 4)");
    CHECK(got[1].num_records() == 2);
  }
}

TEST_CASE("verify checks a cached index against its shard and writes nothing", "[files][cache]") {
  files_test::TempDir dir;
  const std::string path = dir.file("v.jsonl");
  files_test::write_bytes(path, "1\n22\n333\n");
  CHECK_THROWS_WITH(distsampler::index_shard(path, cache_options(CacheMode::verify)),
                    "shard " + path + " has no index at " + path + ".dsidx (expected one to verify): index it first");
  CHECK_FALSE(std::filesystem::exists(path + ".dsidx"));
  (void)distsampler::index_shard(path, cache_options(CacheMode::use));
  CHECK(distsampler::index_shard(path, cache_options(CacheMode::verify)).from_cache);
  // Same size and modification time, other line breaks: only verify, which reads the shard, sees it.
  const auto t = std::filesystem::last_write_time(path);
  files_test::write_bytes(path, "1\n2\n2\n33\n");
  std::filesystem::last_write_time(path, t);
  CHECK(distsampler::index_shard(path, cache_options(CacheMode::use)).num_records() == 3);
  CHECK_THROWS_WITH(distsampler::index_shard(path, cache_options(CacheMode::verify)),
                    "shard " + path + " does not match its index " + path + ".dsidx (4 records now, 3 indexed): "
                                      "rebuild the index");
}

TEST_CASE("a cache folder keeps shards of the same name apart, and a damaged cache is refused", "[files][cache]") {
  files_test::TempDir dir;
  const std::string a = dir.file("x/s.jsonl"), b = dir.file("y/s.jsonl"), cache = dir.file("cache");
  files_test::write_bytes(a, "1\n");
  files_test::write_bytes(b, "1\n2\n");
  const auto ia = distsampler::index_shard(a, cache_options(CacheMode::use, cache));
  const auto ib = distsampler::index_shard(b, cache_options(CacheMode::use, cache));
  CHECK(ia.cache_path != ib.cache_path);
  CHECK(std::filesystem::path(ia.cache_path).parent_path() == std::filesystem::path(cache));
  CHECK_FALSE(std::filesystem::exists(a + ".dsidx"));
  CHECK(distsampler::index_shard(a, cache_options(CacheMode::use, cache)).num_records() == 1);
  CHECK(distsampler::index_shard(b, cache_options(CacheMode::use, cache)).num_records() == 2);
  // One flipped byte in the saved records.
  std::string bytes(static_cast<std::size_t>(std::filesystem::file_size(ib.cache_path)), '\0');
  {
    std::ifstream f(ib.cache_path, std::ios::binary);
    f.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  bytes[bytes.size() - 30] ^= 1;
  files_test::write_bytes(ib.cache_path, bytes);
  CHECK_THROWS_WITH(distsampler::index_shard(b, cache_options(CacheMode::use, cache)),
                    "index cache " + ib.cache_path + " of shard " + b +
                        " is damaged (its checksum or length does not match): rebuild the index");
  files_test::write_bytes(ib.cache_path, "DSSHIDX\n" + std::string(24, '\0'));
  CHECK_THROWS_WITH(distsampler::index_shard(b, cache_options(CacheMode::use, cache)),
                    "index cache " + ib.cache_path + " of shard " + b +
                        " has index format version 0 (expected 3): rebuild the index");
  CHECK(distsampler::index_shard(b, cache_options(CacheMode::rebuild, cache)).num_records() == 2);
  CHECK(distsampler::index_shard(b, cache_options(CacheMode::use, cache)).from_cache);
}

TEST_CASE("a Megatron index is stale when its .bin changes", "[files][cache]") {
  files_test::TempDir dir;
  std::string idx("MMIDIDX\0\0", 9);
  files_test::put_le(idx, 1, 8);
  idx += '\4';  // int32
  files_test::put_le(idx, 1, 8);
  files_test::put_le(idx, 2, 8);
  files_test::put_le(idx, 2, 4);
  files_test::put_le(idx, 0, 8);
  files_test::put_le(idx, 0, 8);
  files_test::put_le(idx, 1, 8);
  files_test::write_bytes(dir.file("m.idx"), idx);
  files_test::write_bytes(dir.file("m.bin"), std::string(8, '\0'));
  const auto built = distsampler::index_shard(dir.file("m.bin"), cache_options(CacheMode::use));
  CHECK(built.records == std::vector<distsampler::RecordSpan>{{0, 8}});
  CHECK(distsampler::index_shard(dir.file("m.bin"), cache_options(CacheMode::use)).from_cache);
  files_test::append_bytes(dir.file("m.bin"), "more");
  IndexOptions strict = cache_options(CacheMode::use);
  strict.strict = true;
  CHECK_THROWS_WITH(distsampler::index_shard(dir.file("m.bin"), strict),
                    "shard " + dir.file("m.bin") + " changed after it was indexed (size 8 -> 12): rebuild the index");
  // Rebuilt without strict: the .bin's 4 more bytes are not a whole int32 sequence past the .idx's, so the
  // fresh index is the same record, and says the .bin changed.
  const auto rebuilt = distsampler::index_shard(dir.file("m.bin"), cache_options(CacheMode::use));
  CHECK(rebuilt.rebuilt_stale == "shard " + dir.file("m.bin") + " changed after it was indexed (size 8 -> 12)");
  CHECK(rebuilt.records == std::vector<distsampler::RecordSpan>{{0, 8}});
}

TEST_CASE("index_shards gives the same indexes on 1 thread and on several, and the first file's error", "[files][cache]") {
  files_test::TempDir dir;
  std::vector<std::string> paths;
  for (int i = 0; i < 7; ++i) {
    paths.push_back(dir.file("p" + std::to_string(i) + ".jsonl"));
    files_test::write_bytes(paths.back(), cache_lines(i * 13 + 1, i));
  }
  IndexOptions one = cache_options(CacheMode::off);
  const std::vector<distsampler::ShardIndex> serial = distsampler::index_shards(paths, one);
  REQUIRE(serial.size() == 7);
  for (int i = 0; i < 7; ++i) CHECK(serial[static_cast<std::size_t>(i)].num_records() == static_cast<std::uint64_t>(i * 13 + 1));
  const std::uint64_t threads = GENERATE(std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{16});
  IndexOptions many = one;
  many.threads = threads;
  CHECK(distsampler::index_shards(paths, many) == serial);
  many.cache = CacheMode::use;
  CHECK(distsampler::index_shards(paths, many) == serial);
  many.cache = CacheMode::verify;
  CHECK(distsampler::index_shards(paths, many) == serial);
  std::vector<std::string> with_errors = paths;
  with_errors[2] = dir.file("missing-a.jsonl");
  with_errors[5] = dir.file("missing-b.jsonl");
  CHECK_THROWS_WITH(distsampler::index_shards(with_errors, many),
                    "shard " + with_errors[2] + ": cannot open (No such file or directory)");
  many.threads = 0;
  CHECK_THROWS_WITH(distsampler::index_shards(paths, many),
                    "index_shards: threads 0 is out of range (expected at least 1)");
}

TEST_CASE("index_shards takes the format from each extension unless one is given", "[files][cache]") {
  files_test::TempDir dir;
  files_test::write_bytes(dir.file("a.txt"), "1\n2\n");
  IndexOptions o = cache_options(CacheMode::off);
  CHECK_THROWS_WITH(distsampler::index_shards({dir.file("a.txt")}, o),
                    Catch::StartsWith("shard " + dir.file("a.txt") + ": cannot tell the format from the extension \".txt\""));
  o.format = distsampler::ShardFormat::jsonl;
  CHECK(distsampler::index_shards({dir.file("a.txt")}, o)[0].num_records() == 2);
}

// Tests of raw token files (headerless token arrays, documents ending with an end-of-document token): the index, its cache, the refusals.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <distsampler/files/index_builder.hpp>

#include "files_test_util.hpp"

using distsampler::CacheMode;
using distsampler::IndexOptions;
using distsampler::RecordSpan;
using distsampler::ShardFormat;

namespace {

std::string raw_tokens(const std::vector<std::uint64_t>& tokens, int width) {
  std::string out;
  for (const std::uint64_t t : tokens) files_test::put_le(out, t, width);
  return out;
}

IndexOptions raw_options(std::string dtype, std::uint64_t eos, CacheMode mode = CacheMode::off) {
  IndexOptions o;
  o.format = ShardFormat::raw;
  o.dtype = std::move(dtype);
  o.eos = eos;
  o.cache = mode;
  return o;
}

// Documents as the brute force finds them, in bytes: each ends with eos (included), the tail is the last.
std::vector<RecordSpan> expected_documents(const std::vector<std::uint64_t>& tokens, std::uint64_t eos,
                                           std::uint64_t width) {
  std::vector<RecordSpan> out;
  std::uint64_t start = 0;
  for (std::uint64_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == eos) {
      out.push_back(RecordSpan{start * width, (i + 1 - start) * width});
      start = i + 1;
    }
  }
  if (start < tokens.size()) out.push_back(RecordSpan{start * width, (tokens.size() - start) * width});
  return out;
}

}  // namespace

TEST_CASE("a raw token file's documents end with the eos token, and the tokens after the last eos are one more",
          "[files][raw]") {
  files_test::TempDir dir;
  const std::string path = dir.file("tokens.npy");  // OLMo's naming: no header all the same
  files_test::write_bytes(path, raw_tokens({5, 6, 0, 7, 0, 0, 8, 9}, 4));
  const distsampler::ShardIndex x = distsampler::index_shards({path}, raw_options("uint32", 0))[0];
  CHECK(x.format == ShardFormat::raw);
  CHECK(x.dtype == "uint32");
  CHECK(x.eos == 0);
  CHECK(x.data_size == 32);
  CHECK(x.records == std::vector<RecordSpan>{{0, 12}, {12, 8}, {20, 4}, {24, 8}});
  // Ending with eos: no empty document after it.
  files_test::write_bytes(path, raw_tokens({5, 0, 7, 0}, 4));
  CHECK(distsampler::index_file(path, ShardFormat::raw, "uint32", 0).records == std::vector<RecordSpan>{{0, 8}, {8, 8}});
  // An empty file has no documents; a file without eos is one.
  files_test::write_bytes(path, "");
  CHECK(distsampler::index_file(path, ShardFormat::raw, "uint32", 0).num_records() == 0);
  files_test::write_bytes(path, raw_tokens({1, 2, 3}, 2));
  CHECK(distsampler::index_file(path, ShardFormat::raw, "uint16", 0).records == std::vector<RecordSpan>{{0, 6}});
}

TEST_CASE("raw token files of every token type, across the scanner's 1 MiB blocks, match a brute force",
          "[files][raw]") {
  files_test::TempDir dir;
  const std::string path = dir.file("big.bin");
  struct Case {
    const char* dtype;
    int width;
    std::uint64_t eos;
  };
  const Case c = GENERATE(Case{"uint8", 1, 255}, Case{"uint16", 2, 65535}, Case{"uint16", 2, 1},
                          Case{"uint32", 4, 50279}, Case{"int32", 4, 0x7fffffffu}, Case{"uint64", 8, 1u << 20},
                          Case{"int64", 8, 3});
  CAPTURE(c.dtype, c.eos);
  // About 2.5 blocks of tokens, documents of 1 to 700 tokens, a value that differs from eos only in its
  // high byte (eos + 256) so a byte-wise match would be wrong, and a tail without eos.
  std::vector<std::uint64_t> tokens;
  const std::uint64_t n = (std::uint64_t{5} << 20) / 2 / static_cast<std::uint64_t>(c.width) + 3;
  std::uint64_t state = 12345;
  const std::uint64_t mask = c.width == 8 ? UINT64_MAX : (std::uint64_t{1} << (8 * c.width)) - 1;
  while (tokens.size() < n) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    const std::uint64_t length = (state >> 33) % 700;
    for (std::uint64_t i = 0; i < length && tokens.size() < n; ++i) {
      std::uint64_t t = ((state >> 7) + i * 2654435761u) & mask;
      if (t == c.eos) t = (t + 1) & mask;
      if (i % 5 == 3 && c.width > 1) t = (c.eos + 256) & mask;
      tokens.push_back(t);
    }
    if (tokens.size() < n) tokens.push_back(c.eos);
  }
  if (tokens.back() == c.eos) tokens.push_back(c.eos == 1 ? 2 : 1);
  files_test::write_bytes(path, raw_tokens(tokens, c.width));
  const distsampler::ShardIndex x =
      distsampler::index_file(path, ShardFormat::raw, c.dtype, c.eos);
  const std::vector<RecordSpan> want = expected_documents(tokens, c.eos, static_cast<std::uint64_t>(c.width));
  CHECK(want.size() > 100);
  CHECK(x.records.size() == want.size());
  CHECK(x.records == want);
}

TEST_CASE("raw token files are refused naming the file or the option", "[files][raw][errors]") {
  files_test::TempDir dir;
  const std::string path = dir.file("t.bin");
  files_test::write_bytes(path, std::string(10, '\0'));
  CHECK_THROWS_WITH(distsampler::index_shards({path}, raw_options("uint32", 0)),
                    "shard " + path +
                        ": is 10 bytes, not a multiple of 4 (the size of a uint32 token): not a raw uint32 token file "
                        "(check dtype, or whether the file is truncated)");
  CHECK(distsampler::index_shards({path}, raw_options("uint16", 0))[0].num_records() == 5);  // five 0 tokens
  CHECK_THROWS_WITH(distsampler::index_shards({path}, raw_options("uint16", 65536)),
                    "index_shards: eos 65536 is out of range for dtype uint16 (expected 0 to 65535)");
  CHECK_THROWS_WITH(distsampler::index_shards({path}, raw_options("int32", 1u << 31)),
                    "index_shards: eos 2147483648 is out of range for dtype int32 (expected 0 to 2147483647)");
  CHECK_THROWS_WITH(distsampler::index_shards({path}, raw_options("float32", 0)),
                    "index_shards: dtype \"float32\" is not a token type of raw token files (expected uint8, uint16, "
                    "uint32, uint64, int32 or int64)");
  CHECK_THROWS_WITH(distsampler::index_file(path, ShardFormat::raw, "uint8", 256),
                    "index_raw: eos 256 is out of range for dtype uint8 (expected 0 to 255)");
  IndexOptions o = raw_options("", 0);
  CHECK_THROWS_WITH(distsampler::index_shards({path}, o),
                    "index_shards: format raw needs a dtype, the token type (uint8, uint16, uint32, uint64, int32 or "
                    "int64)");
  o = raw_options("uint16", 0);
  o.eos.reset();
  CHECK_THROWS_WITH(distsampler::index_shard(path, o), "index_shards: format raw needs eos, the end-of-document token id");
  o.format = ShardFormat::jsonl;
  o.dtype = "uint16";
  CHECK_THROWS_WITH(distsampler::index_shards({path}, o),
                    "index_shards: dtype \"uint16\" is for format raw only (the format is jsonl)");
  o.format.reset();
  o.dtype.clear();
  o.eos = 7;
  CHECK_THROWS_WITH(distsampler::index_shards({path}, o),
                    "index_shards: eos 7 is for format raw only (the formats come from the extensions)");
  // The option faults come before any file is read.
  CHECK_THROWS_WITH(distsampler::index_shards({dir.file("missing.bin")}, raw_options("uint16", 1u << 16)),
                    "index_shards: eos 65536 is out of range for dtype uint16 (expected 0 to 65535)");
  CHECK_THROWS_WITH(distsampler::index_shards({dir.file("missing.bin")}, raw_options("uint16", 0)),
                    "shard " + dir.file("missing.bin") + ": cannot open (No such file or directory)");
  // A raw file is never guessed from its extension: a headerless .npy is refused as a .npy.
  const std::string npy = dir.file("olmo.npy");
  files_test::write_bytes(npy, raw_tokens({1, 2, 0}, 4));
  CHECK_THROWS_WITH(distsampler::index_shards({npy}, IndexOptions{}),
                    Catch::StartsWith("shard " + npy + ": wrong magic"));
}

TEST_CASE("a raw index is cached under its dtype and eos: other options build another index", "[files][raw][cache]") {
  files_test::TempDir dir;
  const std::string path = dir.file("t.npy");
  files_test::write_bytes(path, raw_tokens({1, 2, 0, 3, 9, 4}, 4));
  const auto built = distsampler::index_shard(path, raw_options("uint32", 0, CacheMode::use));
  CHECK_FALSE(built.from_cache);
  CHECK(built.records == std::vector<RecordSpan>{{0, 12}, {12, 12}});
  const auto read = distsampler::index_shard(path, raw_options("uint32", 0, CacheMode::use));
  CHECK(read.from_cache);
  CHECK(read == built);
  CHECK(distsampler::index_shard(path, raw_options("uint32", 0, CacheMode::verify)).from_cache);
  // Another eos: not the cached index (a different key), built and saved in its place.
  const auto other = distsampler::index_shard(path, raw_options("uint32", 9, CacheMode::use));
  CHECK_FALSE(other.from_cache);
  CHECK(other.rebuilt_stale.empty());
  CHECK(other.eos == 9);
  CHECK(other.records == std::vector<RecordSpan>{{0, 20}, {20, 4}});
  CHECK(distsampler::index_shard(path, raw_options("uint32", 9, CacheMode::use)).from_cache);
  // Another dtype, and another format, are other indexes too.
  const auto narrow = distsampler::index_shard(path, raw_options("uint16", 0, CacheMode::use));
  CHECK_FALSE(narrow.from_cache);
  CHECK(narrow.records.size() == 7);  // 1 0 | 2 0 | 0 | 0 | 3 0 | 9 0 | 4 0 as uint16 tokens
  CHECK_THROWS_WITH(distsampler::index_shard(path, raw_options("uint32", 9, CacheMode::verify)),
                    "shard " + path + " has no index at " + path + ".dsidx (expected one to verify): index it first");
  // In a cache folder as beside the shard.
  const std::string cache = dir.file("cache");
  IndexOptions in_folder = raw_options("uint32", 0, CacheMode::use);
  in_folder.cache_dir = cache;
  CHECK_FALSE(distsampler::index_shard(path, in_folder).from_cache);
  CHECK(distsampler::index_shard(path, in_folder).from_cache);
  // A stale raw index is rebuilt like any other.
  files_test::append_bytes(path, raw_tokens({0}, 4));
  const auto rebuilt = distsampler::index_shard(path, in_folder);
  CHECK(rebuilt.rebuilt_stale == "shard " + path + " changed after it was indexed (size 24 -> 28)");
  CHECK(rebuilt.records == std::vector<RecordSpan>{{0, 12}, {12, 16}});
}

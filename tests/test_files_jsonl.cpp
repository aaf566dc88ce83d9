// Tests of the JSON Lines index: record offsets against the writer's own, empty lines, CRLF, a missing final newline.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <distsampler/files/jsonl.hpp>

#include "files_test_util.hpp"

using distsampler::RecordSpan;

namespace {

// The file's bytes and the records a reader must see, tracked while writing line by line.
struct JsonlWriter {
  std::string bytes;
  std::vector<RecordSpan> expected;
  // A record: its text, then the line end.
  void record(const std::string& text, const std::string& end = "\n") {
    expected.push_back(RecordSpan{bytes.size(), text.size()});
    bytes += text + end;
  }
  // A line that is not a record (empty, or only "\r").
  void skipped(const std::string& line) { bytes += line; }
};

}  // namespace

TEST_CASE("a JSON Lines index finds every line's bytes, skipping empty lines and CRLF ends", "[files][jsonl]") {
  files_test::TempDir dir;
  JsonlWriter w;
  w.record("{\"a\": 1}");
  w.skipped("\n");
  w.record("[1, 2, 3]", "\r\n");
  w.skipped("\r\n");
  w.record("  ");  // spaces are a record: its decoding fails loudly instead of vanishing
  w.record("\"last\"", "");  // no final newline: still a record
  const std::string path = dir.file("a.jsonl");
  files_test::write_bytes(path, w.bytes);
  const distsampler::ShardIndex index = distsampler::index_jsonl(path);
  CHECK(index.num_records() == 4);
  CHECK(index.records == w.expected);
  CHECK(index.format == distsampler::ShardFormat::jsonl);
  CHECK(index.data_path == path);
  CHECK(index.data_size == w.bytes.size());
  REQUIRE(index.sources.size() == 1);
  CHECK(index.sources[0].size == w.bytes.size());
}

TEST_CASE("a JSON Lines index is right across 1 MiB block boundaries", "[files][jsonl]") {
  files_test::TempDir dir;
  JsonlWriter w;
  // Lines of varying length, then one whose "\r" ends the first block and whose "\n" starts the second.
  std::uint64_t k = 0;
  while (w.bytes.size() < (std::size_t{1} << 20) - 200) {
    w.record("{\"id\": " + std::to_string(k) + ", \"pad\": \"" + std::string(k % 97, 'x') + "\"}");
    ++k;
  }
  const std::size_t room = (std::size_t{1} << 20) - 1 - w.bytes.size();
  w.record(std::string(room, 'y'), "\r\n");
  REQUIRE(w.bytes[(std::size_t{1} << 20) - 1] == '\r');
  w.skipped("\n");
  for (int i = 0; i < 3000; ++i) w.record(std::to_string(i) + std::string(static_cast<std::size_t>(i % 700), ' '));
  const std::string path = dir.file("big.jsonl");
  files_test::write_bytes(path, w.bytes);
  const distsampler::ShardIndex index = distsampler::index_jsonl(path);
  REQUIRE(index.num_records() == w.expected.size());
  CHECK(index.records == w.expected);
}

TEST_CASE("an empty JSON Lines file or one of empty lines has no records", "[files][jsonl]") {
  files_test::TempDir dir;
  files_test::write_bytes(dir.file("empty.jsonl"), "");
  files_test::write_bytes(dir.file("blank.jsonl"), "\n\r\n\n\r");
  CHECK(distsampler::index_jsonl(dir.file("empty.jsonl")).num_records() == 0);
  CHECK(distsampler::index_jsonl(dir.file("blank.jsonl")).num_records() == 0);
}

TEST_CASE("a JSON Lines index refuses a missing file and a folder, naming them", "[files][jsonl]") {
  files_test::TempDir dir;
  const std::string missing = dir.file("nope.jsonl");
  CHECK_THROWS_WITH(distsampler::index_jsonl(missing),
                    "shard " + missing + ": cannot open (No such file or directory)");
  CHECK_THROWS_AS(distsampler::index_jsonl(missing), distsampler::config_error);
  CHECK_THROWS_WITH(distsampler::index_jsonl(dir.path().string()), "shard " + dir.path().string() + ": is not a regular file");
}

TEST_CASE("a file's format comes from its extension, or the refusal names the file", "[files][jsonl]") {
  using distsampler::ShardFormat;
  CHECK(distsampler::format_from_extension("d/a.jsonl") == ShardFormat::jsonl);
  CHECK(distsampler::format_from_extension("a.ndjson") == ShardFormat::jsonl);
  CHECK(distsampler::format_from_extension("x.y/shard-0.tar") == ShardFormat::tar);
  CHECK(distsampler::format_from_extension("c.idx") == ShardFormat::megatron);
  CHECK(distsampler::format_from_extension("c.bin") == ShardFormat::megatron);
  CHECK(distsampler::format_from_extension("r.npy") == ShardFormat::npy);
  CHECK_THROWS_WITH(distsampler::format_from_extension("data/t.csv"),
                    Catch::StartsWith("shard data/t.csv: cannot tell the format from the extension \".csv\" (expected "));
  CHECK_THROWS_WITH(distsampler::format_from_extension("x.d/noext"),
                    Catch::StartsWith("shard x.d/noext: cannot tell the format from the extension \"\""));
  CHECK(distsampler::parse_format("megatron") == ShardFormat::megatron);
  CHECK_FALSE(distsampler::parse_format("json").has_value());
}

// Tests of the tar index: samples grouped by key, member offsets against the writer's own, GNU and pax names, refusals.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <distsampler/files/tar.hpp>

#include "files_test_util.hpp"

using distsampler::TarMember;

namespace {

// A tar archive written header by header; remembers where each member's data went.
struct TarWriter {
  std::string bytes;
  std::vector<std::uint64_t> data_at;

  static std::string octal(std::uint64_t v, std::size_t width) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(width - 1), static_cast<unsigned long long>(v));
    return std::string(buf, width - 1) + '\0';
  }
  void member(const std::string& name, const std::string& data, char type = '0', const std::string& prefix = "") {
    std::string h(512, '\0');
    h.replace(0, name.size(), name);
    h.replace(100, 8, octal(0644, 8));
    h.replace(108, 8, octal(0, 8));
    h.replace(116, 8, octal(0, 8));
    h.replace(124, 12, octal(data.size(), 12));
    h.replace(136, 12, octal(0, 12));
    h[156] = type;
    h.replace(257, 6, std::string("ustar\0", 6));
    h.replace(263, 2, "00");
    h.replace(345, prefix.size(), prefix);
    h.replace(148, 8, std::string(8, ' '));
    unsigned sum = 0;
    for (const char c : h) sum += static_cast<unsigned char>(c);
    h.replace(148, 8, octal(sum, 7) + ' ');
    bytes += h;
    data_at.push_back(bytes.size());
    bytes += data;
    bytes.append((512 - data.size() % 512) % 512, '\0');
  }
  void end() { bytes.append(1024, '\0'); }
};

std::string pax_record(const std::string& key, const std::string& value) {
  // "<length> key=value\n", where the length counts its own digits.
  const std::string body = " " + key + "=" + value + "\n";
  std::size_t n = body.size() + 1;
  while (std::to_string(n).size() + body.size() != n) ++n;
  return std::to_string(n) + body;
}

}  // namespace

TEST_CASE("a tar index groups consecutive members by key into samples, with each member's bytes", "[files][tar]") {
  files_test::TempDir dir;
  TarWriter w;
  w.member("train/", "", '5');                      // 0: a directory, skipped
  w.member("train/0001.jpg", std::string(700, 'j'));  // 1
  w.member("train/0001.cls", "7");                  // 2
  w.member("train/0001.seg.png", "png!");           // 3: suffix after the first dot
  w.member("train/0002.jpg", "");                   // 4: an empty member is still a member
  const std::string long_name = "train/" + std::string(120, 'k') + ".txt";
  w.member("././@LongLink", long_name + '\0', 'L');   // 5: GNU long name of the next member
  w.member("././@LongLink", "a/link/target", 'K');    // 6: GNU long link name: the long name still applies
  w.member("ignored-short-name", "long!");           // 7
  w.member("", pax_record("path", "train/0003.json"), 'x');  // 8: pax path of the next member
  w.member("pax_global_header", pax_record("comment", "hi"), 'g');  // 9: global: nothing for the samples
  w.member("PaxHeaders/x", "{}");                   // 10
  w.member("0001.jpg", "again", '0', "train");       // 11: ustar prefix "train" + name; same key as before, later
  w.member("README", "no dot");                     // 12: no dot: skipped, as WebDataset skips it
  w.end();
  const std::string path = dir.file("shard-0.tar");
  files_test::write_bytes(path, w.bytes);
  const distsampler::ShardIndex index = distsampler::index_tar(path);
  REQUIRE(index.num_records() == 5);
  CHECK(index.keys == std::vector<std::string>{"train/0001", "train/0002", "train/" + std::string(120, 'k'),
                                               "train/0003", "train/0001"});
  CHECK(index.member_begin == std::vector<std::uint64_t>{0, 3, 4, 5, 6, 7});
  const auto& at = w.data_at;
  CHECK(index.members == std::vector<TarMember>{{"jpg", at[1], 700},  {"cls", at[2], 1}, {"seg.png", at[3], 4},
                                                {"jpg", at[4], 0},    {"txt", at[7], 5}, {"json", at[10], 2},
                                                {"jpg", at[11], 5}});
  // A sample's record spans its first member's data to the end of its last member's.
  CHECK(index.records[0] == distsampler::RecordSpan{at[1], at[3] + 4 - at[1]});
  CHECK(index.records[4] == distsampler::RecordSpan{at[11], 5});
  CHECK(distsampler::split_tar_name("a.b/c.d.e")->key == "a.b/c");
  CHECK(distsampler::split_tar_name("a.b/c.d.e")->suffix == "d.e");
}

TEST_CASE("tar member names split as WebDataset's reader splits them", "[files][tar]") {
  struct Case {
    std::string name;
    bool kept;
    std::string key;
    std::string suffix;
  };
  const std::vector<Case> cases = {
      {"a/0001.JPG", true, "a/0001", "jpg"},        // suffixes lower-cased
      {"0001.Seg.PNG", true, "0001", "seg.png"},    // after the first dot of the base name
      {"a.b/c.d.e", true, "a.b/c", "d.e"},          // a dot in a directory is part of the key
      {"x.", true, "x", ""},                        // an empty suffix
      {"README", false, "", ""},                    // no dot in the base name
      {"a.b/README", false, "", ""},                // no dot in the base name, below a dotted directory
      {"dir/", false, "", ""},                      // no base name
      {".hidden", false, "", ""},                   // a top-level base name that starts with a dot
      {"d/.x", true, "d/", "x"},                    // below a directory: the directory is the key
      {"a/d/.X.y", true, "a/d/", "x.y"},            // only the innermost directory counts
      {"d.e/.x", false, "", ""},                    // ... and it must have no dot
      {"__meta__", false, "", ""},                  // top-level metadata
      {"__", false, "", ""},                        // starts and ends with "__"
      {"__meta__/a.json", false, "", ""},           // a top-level "__X__" directory
      {"____/a.json", false, "", ""},
      {"___/a.json", true, "___/a", "json"},        // "___" is not "__X__"
      {"__meta__.json", true, "__meta__", "json"},  // a sample of key "__meta__"
      {"a/__meta__/b.json", true, "a/__meta__/b", "json"},
      {"a/__meta__", false, "", ""},                // below the top: no dot, so no suffix
      {"caf\xe9.TXT", true, "caf\xe9", "txt"},    // bytes, not UTF-8: kept as they are
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::optional<distsampler::TarName> got = distsampler::split_tar_name(c.name);
    REQUIRE(got.has_value() == c.kept);
    if (c.kept) {
      CHECK(got->key == c.key);
      CHECK(got->suffix == c.suffix);
    }
  }
}

TEST_CASE("a tar index skips the members WebDataset skips and refuses suffixes equal after lower-casing",
          "[files][tar]") {
  files_test::TempDir dir;
  const std::string path = dir.file("w.tar");
  TarWriter w;
  w.member("__meta__", "{}");
  w.member("README", "readme");
  w.member("s/1.JPG", "j");
  w.member("s/1.Cls", "c");
  w.member("__meta__/x.json", "{}");
  w.member("caf\xe9.txt", "t");
  w.end();
  files_test::write_bytes(path, w.bytes);
  const distsampler::ShardIndex index = distsampler::index_tar(path);
  CHECK(index.keys == std::vector<std::string>{"s/1", "caf\xe9"});
  CHECK(index.members == std::vector<TarMember>{{"jpg", w.data_at[2], 1}, {"cls", w.data_at[3], 1},
                                                {"txt", w.data_at[5], 1}});

  TarWriter dup;
  dup.member("s/1.jpg", "a");
  dup.member("caf\xe9/2.jpg", "b");
  dup.member("caf\xe9/2.JPG", "c");
  dup.end();
  files_test::write_bytes(path, dup.bytes);
  CHECK_THROWS_WITH(distsampler::index_tar(path),
                    "shard " + path + ": sample \"caf\\xe9/2\" has two members with the suffix \"jpg\" (the second "
                                      "at byte 2048): each member of a sample needs its own suffix");
}

TEST_CASE("an empty tar archive has no samples", "[files][tar]") {
  files_test::TempDir dir;
  TarWriter w;
  w.end();
  files_test::write_bytes(dir.file("e.tar"), w.bytes);
  const distsampler::ShardIndex index = distsampler::index_tar(dir.file("e.tar"));
  CHECK(index.num_records() == 0);
  CHECK(index.member_begin == std::vector<std::uint64_t>{0});
}

TEST_CASE("a tar index refuses damaged, truncated and ambiguous archives, naming the file", "[files][tar]") {
  files_test::TempDir dir;
  const std::string path = dir.file("bad.tar");
  TarWriter w;
  w.member("s/1.jpg", std::string(1000, 'a'));
  w.member("s/1.txt", "t");
  SECTION("a bad header checksum") {
    w.end();
    w.bytes[512 + 1024 + 3] ^= 0x10;  // the second header's name
    files_test::write_bytes(path, w.bytes);
    CHECK_THROWS_WITH(distsampler::index_tar(path),
                      Catch::StartsWith("shard " + path + ": the tar header at byte 1536 has a bad checksum (stored ") &&
                          Catch::EndsWith("): not a tar archive, or a damaged one"));
  }
  SECTION("a member cut short") {
    files_test::write_bytes(path, w.bytes.substr(0, 800));
    CHECK_THROWS_WITH(distsampler::index_tar(path),
                      "shard " + path + ": member \"s/1.jpg\" at byte 0 needs 1000 bytes but the file ends after 288: "
                                        "a truncated archive");
  }
  SECTION("no end-of-archive block") {
    files_test::write_bytes(path, w.bytes);
    CHECK_THROWS_WITH(distsampler::index_tar(path),
                      "shard " + path + ": ends at byte " + std::to_string(w.bytes.size()) +
                          " without the end-of-archive block: a truncated or damaged archive");
  }
  SECTION("two members of a sample with the same suffix") {
    w.member("s/1.jpg", "b");
    w.end();
    files_test::write_bytes(path, w.bytes);
    CHECK_THROWS_WITH(distsampler::index_tar(path),
                      "shard " + path + ": sample \"s/1\" has two members with the suffix \"jpg\" (the second at byte " +
                          std::to_string(w.data_at[2] - 512) + "): each member of a sample needs its own suffix");
  }
  SECTION("a file that is no tar at all") {
    files_test::write_bytes(path, std::string(2048, 'z'));
    CHECK_THROWS_WITH(distsampler::index_tar(path), Catch::Contains("the tar header at byte 0 has a bad checksum"));
  }
}

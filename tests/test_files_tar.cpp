// Tests of the tar index: samples grouped by key, member offsets against the writer's own, GNU and pax names, refusals.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
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
  w.member("README", "no dot");                     // 12: no suffix
  w.end();
  const std::string path = dir.file("shard-0.tar");
  files_test::write_bytes(path, w.bytes);
  const distsampler::ShardIndex index = distsampler::index_tar(path);
  REQUIRE(index.num_records() == 6);
  CHECK(index.keys == std::vector<std::string>{"train/0001", "train/0002", "train/" + std::string(120, 'k'),
                                               "train/0003", "train/0001", "README"});
  CHECK(index.member_begin == std::vector<std::uint64_t>{0, 3, 4, 5, 6, 7, 8});
  const auto& at = w.data_at;
  CHECK(index.members == std::vector<TarMember>{{"jpg", at[1], 700},  {"cls", at[2], 1}, {"seg.png", at[3], 4},
                                                {"jpg", at[4], 0},    {"txt", at[7], 5}, {"json", at[10], 2},
                                                {"jpg", at[11], 5},   {"", at[12], 6}});
  // A sample's record spans its first member's data to the end of its last member's.
  CHECK(index.records[0] == distsampler::RecordSpan{at[1], at[3] + 4 - at[1]});
  CHECK(index.records[5] == distsampler::RecordSpan{at[12], 6});
  CHECK(distsampler::split_tar_name("a.b/c.d.e").key == "a.b/c");
  CHECK(distsampler::split_tar_name("a.b/c.d.e").suffix == "d.e");
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

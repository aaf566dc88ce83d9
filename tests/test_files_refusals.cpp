// Tests of the shard-file indexes' remaining refusals: pax and .npy header faults, unwritable and mismatched caches.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include <distsampler/files/index_builder.hpp>

#include "files_test_util.hpp"

namespace {

// One ustar header of a member of type `type` and `size` bytes, then its data padded to 512.
std::string refusal_tar_member(const std::string& name, char type, const std::string& data) {
  std::string h(512, '\0');
  h.replace(0, name.size(), name);
  char size[12];
  std::snprintf(size, sizeof size, "%011llo", static_cast<unsigned long long>(data.size()));
  h.replace(124, 11, size);
  h[156] = type;
  h.replace(257, 6, std::string("ustar\0", 6));
  h.replace(148, 8, std::string(8, ' '));
  unsigned sum = 0;
  for (const char c : h) sum += static_cast<unsigned char>(c);
  char chk[8];
  std::snprintf(chk, sizeof chk, "%06o", sum);
  h.replace(148, 7, std::string(chk, 6) + '\0');
  return h + data + std::string((512 - data.size() % 512) % 512, '\0');
}

std::string refusal_npy(const std::string& dict, std::uint64_t data_bytes = 0) {
  std::string out("\x93NUMPY\x01\x00", 8);
  files_test::put_le(out, dict.size(), 2);
  return out + dict + std::string(static_cast<std::size_t>(data_bytes), '\0');
}

}  // namespace

TEST_CASE("a tar index refuses malformed pax headers and oversized metadata members", "[files][tar]") {
  files_test::TempDir dir;
  const std::string path = dir.file("p.tar");
  std::string expected, bytes;
  SECTION("a pax record whose length is wrong") {
    bytes = refusal_tar_member("", 'x', "99 path=a.txt\n") + refusal_tar_member("a.txt", '0', "x");
    expected = "shard " + path + ": the pax header at byte 0 has a malformed record";
  }
  SECTION("a pax size that is not a number") {
    bytes = refusal_tar_member("", 'x', "13 size=12x4\n") + refusal_tar_member("a.txt", '0', "x");
    expected = "shard " + path + ": the pax header at byte 0 has a malformed size";
  }
  SECTION("a metadata member over 1 MiB") {
    bytes = refusal_tar_member("././@LongLink", 'L', std::string((1u << 20) + 1, 'n'));
    expected = "shard " + path + ": the metadata member at byte 0 is 1048577 bytes (at most 1048576)";
  }
  files_test::write_bytes(path, bytes + std::string(1024, '\0'));
  CHECK_THROWS_WITH(distsampler::index_tar(path), expected);
}

TEST_CASE("a pax size overrides the header's size", "[files][tar]") {
  files_test::TempDir dir;
  const std::string path = dir.file("s.tar");
  // The ustar header says 0 bytes; the pax record says 700, and the data is there.
  std::string member = refusal_tar_member("big.bin", '0', "");
  const std::string data(700, 'd');
  files_test::write_bytes(path, refusal_tar_member("", 'x', "12 size=700\n") + member + data +
                                    std::string(1024 - 700, '\0') + std::string(1024, '\0'));
  const distsampler::ShardIndex index = distsampler::index_tar(path);
  REQUIRE(index.members.size() == 1);
  CHECK(index.members[0] == distsampler::TarMember{"bin", 1536, 700});
}

TEST_CASE("an .npy index refuses malformed headers, naming the file", "[files][npy]") {
  files_test::TempDir dir;
  const std::string path = dir.file("h.npy");
  std::string bytes, expected;
  SECTION("an unknown key") {
    bytes = refusal_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), 'extra': 1}\n", 4);
    expected = "shard " + path + ": the .npy header has an unknown key 'extra'";
  }
  SECTION("a missing key") {
    bytes = refusal_npy("{'descr': '<i4', 'shape': (1,)}\n", 4);
    expected = "shard " + path + ": the .npy header lacks one of 'descr', 'fortran_order' and 'shape'";
  }
  SECTION("an unterminated string") {
    bytes = refusal_npy("{'descr: <i4}\n");
    expected = "shard " + path + ": the .npy header has an unterminated string";
  }
  SECTION("a negative dimension") {
    bytes = refusal_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (-1,)}\n");
    expected = "shard " + path + ": the .npy header has a shape that is not a tuple of non-negative integers";
  }
  SECTION("an unsupported descr") {
    bytes = refusal_npy("{'descr': 'float32', 'fortran_order': False, 'shape': (1,)}\n", 4);
    expected = "shard " + path + ": has the dtype 'float32', which is not supported";
  }
  SECTION("a header longer than the file") {
    bytes = refusal_npy("{'descr': '<i4'");
    bytes[8] = '\x7f';
    expected = "shard " + path + ": is truncated: its header of 127 bytes does not fit in the file's " +
               std::to_string(bytes.size()) + " bytes";
  }
  SECTION("a preamble cut short") {
    bytes = std::string("\x93NUMPY\x02\x00\x10\x00", 10);
    expected = "shard " + path + ": is truncated inside its .npy preamble";
  }
  files_test::write_bytes(path, bytes);
  CHECK_THROWS_WITH(distsampler::index_npy(path), expected);
}

TEST_CASE("an index that cannot be saved, or a cache of another format or of other files, is refused",
          "[files][cache]") {
  files_test::TempDir dir;
  const std::string shard = dir.file("a.jsonl");
  files_test::write_bytes(shard, "1\n2\n");
  distsampler::IndexOptions o;
  SECTION("a cache folder that is a file") {
    files_test::write_bytes(dir.file("not-a-folder"), "x");
    o.cache_dir = dir.file("not-a-folder");
    CHECK_THROWS_WITH(distsampler::index_shard(shard, o),
                      Catch::StartsWith("index cache " + distsampler::index_cache_path(shard, o.cache_dir) +
                                        " of shard " + shard + ": cannot write it (") &&
                          Catch::EndsWith("); choose a writable cache folder"));
  }
  SECTION("a cached index of another format") {
    (void)distsampler::index_shard(shard, o);
    o.format = distsampler::ShardFormat::npy;
    CHECK_THROWS_WITH(distsampler::index_shard(shard, o),
                      "index cache " + shard + ".dsidx of shard " + shard +
                          " holds a jsonl index, not npy: rebuild the index");
  }
  SECTION("a cached index that lists other files") {
    distsampler::ShardIndex x = distsampler::index_file(shard, distsampler::ShardFormat::jsonl);
    x.sources.push_back(x.sources[0]);
    distsampler::save_index(x, shard + ".dsidx");
    CHECK_THROWS_WITH(distsampler::index_shard(shard, o),
                      "index cache " + shard + ".dsidx of shard " + shard +
                          " is damaged (it lists the wrong files): rebuild the index");
  }
  SECTION("a cache written for another shard is not used, and is replaced") {
    const std::string other = dir.file("b.jsonl");
    files_test::write_bytes(other, "1\n");
    distsampler::save_index(distsampler::index_file(other, distsampler::ShardFormat::jsonl), shard + ".dsidx");
    const distsampler::ShardIndex x = distsampler::index_shard(shard, o);
    CHECK_FALSE(x.from_cache);
    CHECK(x.num_records() == 2);
    CHECK(distsampler::index_shard(shard, o).from_cache);
  }
  SECTION("a format code that names no format") {
    CHECK_THROWS_WITH(distsampler::index_file(shard, static_cast<distsampler::ShardFormat>(9)),
                      "index_file: unknown format code 9");
  }
}

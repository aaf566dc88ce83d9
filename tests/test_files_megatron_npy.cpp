// Tests of the Megatron (.idx/.bin) and .npy indexes: records against the writer's layout, and every refusal.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <distsampler/files/megatron.hpp>
#include <distsampler/files/npy.hpp>

#include "files_test_util.hpp"

using distsampler::RecordSpan;
using files_test::put_le;

namespace {

// A Megatron .idx in the documented layout, with fields the tests can spoil.
struct MegatronIdx {
  std::string magic{"MMIDIDX\0\0", 9};
  std::uint64_t version = 1;
  std::uint8_t dtype = 8;  // uint16
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> pointers;
  std::vector<std::int64_t> documents;

  std::string bytes() const {
    std::string out = magic;
    put_le(out, version, 8);
    out += static_cast<char>(dtype);
    put_le(out, sizes.size(), 8);
    put_le(out, documents.size(), 8);
    for (const auto s : sizes) put_le(out, static_cast<std::uint64_t>(s), 4);
    for (const auto p : pointers) put_le(out, static_cast<std::uint64_t>(p), 8);
    for (const auto d : documents) put_le(out, static_cast<std::uint64_t>(d), 8);
    return out;
  }
};

// Three sequences of 3, 0 and 5 uint16 tokens packed in the .bin; two documents.
MegatronIdx sample_idx() {
  MegatronIdx m;
  m.sizes = {3, 0, 5};
  m.pointers = {0, 6, 6};
  m.documents = {0, 2, 3};
  return m;
}

std::string npy_file(int major, const std::string& dict, std::uint64_t data_bytes) {
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  put_le(out, header.size(), major == 1 ? 2 : 4);
  return out + header + std::string(static_cast<std::size_t>(data_bytes), '\x5a');
}

}  // namespace

TEST_CASE("a Megatron index gives each sequence's bytes in the .bin, from the .idx, the .bin or the prefix",
          "[files][megatron]") {
  files_test::TempDir dir;
  files_test::write_bytes(dir.file("c.idx"), sample_idx().bytes());
  files_test::write_bytes(dir.file("c.bin"), std::string(16, '\1'));
  for (const std::string name : {"c.idx", "c.bin", "c"}) {
    const distsampler::ShardIndex index = distsampler::index_megatron(dir.file(name));
    CHECK(index.path == dir.file(name));
    CHECK(index.records == std::vector<RecordSpan>{{0, 6}, {6, 0}, {6, 10}});
    CHECK(index.dtype == "uint16");
    CHECK(index.data_path == dir.file("c.bin"));
    CHECK(index.data_size == 16);
    REQUIRE(index.sources.size() == 2);
    CHECK(index.sources[0].path == dir.file("c.idx"));
    CHECK(index.sources[1].path == dir.file("c.bin"));
  }
}

TEST_CASE("an empty Megatron dataset (no sequences, a 0-byte .bin) has zero records, as every reader counts it",
          "[files][megatron]") {
  files_test::TempDir dir;
  MegatronIdx m;
  m.documents = {0};  // what Megatron's builder writes with no document
  files_test::write_bytes(dir.file("e.idx"), m.bytes());
  files_test::write_bytes(dir.file("e.bin"), std::string());
  const distsampler::ShardIndex index = distsampler::index_megatron(dir.file("e"));
  CHECK(index.records.empty());
  CHECK(index.data_size == 0);
  CHECK(index.dtype == "uint16");
}

TEST_CASE("Megatron's dtype codes map to NumPy types as Megatron's DType table has them", "[files][megatron]") {
  const std::vector<std::pair<std::string, std::uint64_t>> expected = {
      {"uint8", 1}, {"int8", 1}, {"int16", 2}, {"int32", 4}, {"int64", 8}, {"float64", 8}, {"float32", 4}, {"uint16", 2}};
  for (std::uint64_t code = 1; code <= 8; ++code) {
    CHECK(std::string(distsampler::megatron_dtype(code).name) == expected[code - 1].first);
    CHECK(distsampler::megatron_dtype(code).itemsize == expected[code - 1].second);
  }
  CHECK(distsampler::megatron_dtype(0).itemsize == 0);
  CHECK(distsampler::megatron_dtype(9).itemsize == 0);
}

TEST_CASE("a Megatron index refuses bad .idx files, naming the file and the fault", "[files][megatron]") {
  files_test::TempDir dir;
  const std::string idx = dir.file("d.idx"), bin = dir.file("d.bin");
  files_test::write_bytes(bin, std::string(16, '\1'));
  MegatronIdx m = sample_idx();
  std::string expected;
  SECTION("wrong magic") {
    m.magic[3] = 'Y';
    expected = "shard " + idx + ": wrong magic (expected \"MMIDIDX\\0\\0\": not a Megatron .idx file)";
  }
  SECTION("unknown version") {
    m.version = 2;
    expected = "shard " + idx + ": unknown version 2 (expected 1)";
  }
  SECTION("unknown dtype") {
    m.dtype = 9;
    expected = "shard " + idx + ": unknown dtype code 9 (expected 1..8: uint8, int8, int16, int32, int64, float64, "
                                "float32, uint16)";
  }
  SECTION("a pointer past the .bin") {
    m.pointers[2] = 8;
    expected = "shard " + idx + ": sequence 2 (pointer 8, 10 bytes) runs past the end of " + bin + " (16 bytes)";
  }
  SECTION("a negative pointer") {
    m.pointers[1] = -4;
    expected = "shard " + idx + ": sequence 1 (pointer -4, 0 bytes) runs past the end of " + bin + " (16 bytes)";
  }
  SECTION("a negative size") {
    m.sizes[0] = -1;
    expected = "shard " + idx + ": sequence 0 has a negative size";
  }
  files_test::write_bytes(idx, m.bytes());
  CHECK_THROWS_WITH(distsampler::index_megatron(idx), expected);
  CHECK_THROWS_AS(distsampler::index_megatron(idx), distsampler::config_error);
}

TEST_CASE("a Megatron index refuses a truncated .idx and a missing .bin", "[files][megatron]") {
  files_test::TempDir dir;
  const std::string idx = dir.file("t.idx"), bin = dir.file("t.bin");
  const std::string full = sample_idx().bytes();  // 34 + 3 * 12 + 3 * 8 = 94 bytes
  REQUIRE(full.size() == 94);
  CHECK_THROWS_WITH(distsampler::index_megatron(idx), "shard " + idx + ": cannot open (No such file or directory)");
  files_test::write_bytes(idx, full);
  CHECK_THROWS_WITH(distsampler::index_megatron(idx), "shard " + bin + ": cannot open (No such file or directory)");
  files_test::write_bytes(bin, std::string(16, '\1'));
  files_test::write_bytes(idx, full.substr(0, 93));
  CHECK_THROWS_WITH(distsampler::index_megatron(idx), "shard " + idx + ": is truncated: 93 bytes, but its header's 3 "
                                                                       "sequences and 3 documents need 94");
  files_test::write_bytes(idx, full.substr(0, 20));
  CHECK_THROWS_WITH(distsampler::index_megatron(idx),
                    "shard " + idx + ": is truncated: 20 bytes, shorter than the 34-byte header of a Megatron .idx");
}

TEST_CASE("an .npy index gives each row's bytes after the header, for format versions 1, 2 and 3", "[files][npy]") {
  files_test::TempDir dir;
  const int major = GENERATE(1, 2, 3);
  const std::string path = dir.file("r.npy");
  const std::string bytes = npy_file(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3, 2), }", 4 * 24);
  files_test::write_bytes(path, bytes);
  const distsampler::ShardIndex index = distsampler::index_npy(path);
  const std::uint64_t data = bytes.size() - 96;
  REQUIRE(data % 64 == 0);
  CHECK(index.records == std::vector<RecordSpan>{{data, 24}, {data + 24, 24}, {data + 48, 24}, {data + 72, 24}});
  CHECK(index.dtype == "<f4");
  CHECK(index.row_shape == std::vector<std::uint64_t>{3, 2});
}

TEST_CASE("an .npy index reads 1-D arrays, unicode items and empty arrays", "[files][npy]") {
  files_test::TempDir dir;
  files_test::write_bytes(dir.file("a.npy"), npy_file(1, "{\"descr\": \"<U3\", \"fortran_order\": False, \"shape\": (5,)}", 60));
  const distsampler::ShardIndex a = distsampler::index_npy(dir.file("a.npy"));
  CHECK(a.num_records() == 5);
  CHECK(a.records[1].size == 12);
  CHECK(a.row_shape.empty());
  files_test::write_bytes(dir.file("b.npy"), npy_file(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (0, 7), }", 0));
  CHECK(distsampler::index_npy(dir.file("b.npy")).num_records() == 0);
}

TEST_CASE("an .npy index refuses Fortran order, object dtypes and malformed files, naming the file", "[files][npy]") {
  files_test::TempDir dir;
  const std::string path = dir.file("bad.npy");
  std::string bytes, expected;
  SECTION("Fortran order") {
    bytes = npy_file(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }", 32);
    expected = "shard " + path + ": is in Fortran order (fortran_order True): its rows are not contiguous; save it in C "
                                 "order (numpy.ascontiguousarray)";
  }
  SECTION("object dtype") {
    bytes = npy_file(1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16);
    expected = "shard " + path + ": has the object dtype '|O': its bytes are Python pointers, not data";
  }
  SECTION("structured dtype") {
    bytes = npy_file(1, "{'descr': [('a', '<i4'), ('b', '<f8')], 'fortran_order': False, 'shape': (2,), }", 24);
    expected = "shard " + path + ": has a structured dtype (expected a plain one such as '<f4')";
  }
  SECTION("0-d array") {
    bytes = npy_file(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 8);
    expected = "shard " + path + ": holds a 0-d array (shape ()): it has no rows along axis 0";
  }
  SECTION("a dtype kind NumPy does not have") {
    bytes = npy_file(1, "{'descr': '<x4', 'fortran_order': False, 'shape': (2,), }", 8);
    expected = "shard " + path + ": has the dtype '<x4', which is not supported";
  }
  SECTION("an integer size NumPy does not have") {
    bytes = npy_file(1, "{'descr': '<i3', 'fortran_order': False, 'shape': (2,), }", 6);
    expected = "shard " + path + ": has the dtype '<i3', which is not supported";
  }
  SECTION("rows of 0 bytes") {
    // 128 bytes claiming 70,000,000 rows: the index held 16 bytes per row (1.07 GB) before.
    bytes = npy_file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (70000000, 0), }", 0);
    expected = "shard " + path + ": has rows of 0 bytes (shape (70000000, 0)): they hold no data, and the file's size "
                                 "cannot vouch for their count (expected rows of at least one byte)";
  }
  SECTION("2^60 rows of 0 bytes") {
    bytes = npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846976, 3, 0), }", 0);
    expected = "shard " + path + ": has rows of 0 bytes (shape (1152921504606846976, 3, 0)): they hold no data, and "
                                 "the file's size cannot vouch for their count (expected rows of at least one byte)";
  }
  SECTION("truncated data") {
    bytes = npy_file(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 23);
    const std::size_t header = bytes.size() - 23;  // npy_file pads the header to a multiple of 64
    REQUIRE(header == 128);
    expected = "shard " + path + ": is 151 bytes, but its header (128 bytes) and 3 rows of 8 bytes need 152: a "
                                 "truncated file";
  }
  SECTION("wrong magic") {
    bytes = "PK\3\4 this is a zip";
    expected = "shard " + path + ": wrong magic (expected \"\\x93NUMPY\": not a .npy file)";
  }
  SECTION("unknown version") {
    bytes = npy_file(4, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 24);
    expected = "shard " + path + ": unknown .npy format version 4 (expected 1, 2 or 3)";
  }
  SECTION("malformed header") {
    bytes = npy_file(1, "{'descr': '<i8', 'fortran_order': Nope, 'shape': (3,), }", 24);
    expected = "shard " + path + ": the .npy header has a fortran_order that is neither True nor False";
  }
  files_test::write_bytes(path, bytes);
  CHECK_THROWS_WITH(distsampler::index_npy(path), expected);
}

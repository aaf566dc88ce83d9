// distsampler fuzz target: arbitrary bytes as a shard file of each format and as an index cache; only config_error may escape.
// SPDX-License-Identifier: MIT
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include <distsampler/files/index_builder.hpp>

namespace {

namespace ds = distsampler;

void write(const std::string& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
}

// What every index promises: each record (and tar member) lies inside the data file.
void check_index(const ds::ShardIndex& x) {
  for (const ds::RecordSpan& r : x.records) {
    if (r.offset > x.data_size || r.size > x.data_size - r.offset) std::abort();
  }
  for (const ds::TarMember& m : x.members) {
    if (m.offset > x.data_size || m.size > x.data_size - m.offset) std::abort();
  }
  if (x.format == ds::ShardFormat::tar &&
      (x.keys.size() != x.records.size() || x.member_begin.size() != x.records.size() + 1)) {
    std::abort();
  }
}

const std::string& folder() {
  static const std::string dir = [] {
    const auto d = std::filesystem::temp_directory_path() / "distsampler-fuzz-files";
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

}  // namespace

// The first byte picks the target: 0 JSON Lines, 1 tar, 2 Megatron (the second byte splits the rest into the .idx and
// the .bin), 3 .npy, 4 an index cache file (decoded; what decodes must encode back to the same bytes).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string base = folder() + "/shard";
  try {
    switch (data[0] % 5) {
      case 0: write(base + ".jsonl", bytes); check_index(ds::index_jsonl(base + ".jsonl")); break;
      case 1: write(base + ".tar", bytes); check_index(ds::index_tar(base + ".tar")); break;
      case 2: {
        const std::size_t split = bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0]) * bytes.size() / 256;
        const std::string_view rest = bytes.empty() ? bytes : bytes.substr(1);
        write(base + ".idx", rest.substr(0, split < rest.size() ? split : rest.size()));
        write(base + ".bin", rest.substr(split < rest.size() ? split : rest.size()));
        check_index(ds::index_megatron(base + ".idx"));
        break;
      }
      case 3: write(base + ".npy", bytes); check_index(ds::index_npy(base + ".npy")); break;
      default: {
        const ds::files_detail::DecodedIndex d = ds::files_detail::decode_index(bytes);
        if (d.error.empty() && ds::files_detail::encode_index(d.index, d.key) != bytes) std::abort();
        break;
      }
    }
  } catch (const ds::config_error&) {
  }
  return 0;
}

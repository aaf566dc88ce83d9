// distsampler packing internals: a small reader of Megatron indexed-dataset .idx files (document sizes, pointers).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_PACKING_DETAIL_MEGATRON_IDX_HPP
#define DISTSAMPLER_PACKING_DETAIL_MEGATRON_IDX_HPP

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "../../error.hpp"
#include "../../version.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

// The 9 bytes a Megatron .idx file starts with.
inline constexpr char megatron_idx_magic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};

// What an .idx file says: one size (tokens) and one byte pointer into the .bin per
// sequence, the document boundaries, and the token dtype.
struct MegatronIndex {
  std::uint8_t dtype_code = 0;
  std::uint64_t dtype_size = 0;
  std::vector<std::uint32_t> sizes;
  std::vector<std::uint64_t> pointers;
  std::vector<std::uint64_t> document_indices;
};

// Bytes per token of a Megatron dtype code (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
// 6 float64, 7 float32, 8 uint16), 0 for an unknown code.
[[nodiscard]] constexpr std::uint64_t megatron_dtype_size(std::uint8_t code) noexcept {
  constexpr std::uint8_t table[9] = {0, 1, 1, 2, 4, 8, 8, 4, 2};
  return code < 9 ? table[code] : 0;
}

// True when `bytes` (at least 9) start with the .idx magic.
[[nodiscard]] inline bool has_megatron_idx_magic(const char* bytes, std::size_t size) noexcept {
  return size >= sizeof(megatron_idx_magic) && std::memcmp(bytes, megatron_idx_magic, sizeof(megatron_idx_magic)) == 0;
}

// True when the file at `path` starts with the .idx magic (false when it cannot be read).
[[nodiscard]] inline bool is_megatron_idx_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[9] = {};
  in.read(head, sizeof(head));
  return in.gcount() == static_cast<std::streamsize>(sizeof(head)) && has_megatron_idx_magic(head, sizeof(head));
}

[[nodiscard]] inline std::uint64_t load_le64(const unsigned char* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Parses an .idx file image (version 1: magic, u64 version, u8 dtype code, u64 sequence
// count, u64 document count, int32 sizes, int64 pointers, int64 document indices; later
// bytes are ignored). Throws config_error naming `path` and what is wrong.
[[nodiscard]] inline MegatronIndex parse_megatron_idx(const std::string& bytes, const std::string& path) {
  const std::string who = "Megatron index " + path + ": ";
  auto fail = [&](const std::string& what) { throw_config_error(who + what); };
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::uint64_t size = bytes.size();
  if (!has_megatron_idx_magic(bytes.data(), bytes.size())) {
    fail("does not start with the magic MMIDIDX\\x00\\x00 (expected a Megatron indexed dataset .idx file)");
  }
  constexpr std::uint64_t header = 9 + 8 + 1 + 8 + 8;
  if (size < header) {
    fail("is truncated: " + std::to_string(size) + " bytes, shorter than the " + std::to_string(header) +
         "-byte header");
  }
  const std::uint64_t version = load_le64(p + 9);
  if (version != 1) fail("has version " + std::to_string(version) + " (expected 1)");
  MegatronIndex out;
  out.dtype_code = p[17];
  out.dtype_size = megatron_dtype_size(out.dtype_code);
  if (out.dtype_size == 0) fail("has dtype code " + std::to_string(out.dtype_code) + " (expected 1..8)");
  const std::uint64_t sequences = load_le64(p + 18), documents = load_le64(p + 26);
  const std::uint64_t room = size - header;
  if (sequences > room / 12 || documents > (room - sequences * 12) / 8) {
    fail("is truncated: " + std::to_string(size) + " bytes cannot hold " + std::to_string(sequences) +
         " sequences and " + std::to_string(documents) + " document indices (expected " +
         std::to_string(header) + " + 12 x sequences + 8 x documents bytes)");
  }
  out.sizes.resize(static_cast<std::size_t>(sequences));
  out.pointers.resize(static_cast<std::size_t>(sequences));
  out.document_indices.resize(static_cast<std::size_t>(documents));
  const unsigned char* at = p + header;
  for (std::uint64_t i = 0; i < sequences; ++i, at += 4) {
    const std::uint32_t v = static_cast<std::uint32_t>(at[0]) | static_cast<std::uint32_t>(at[1]) << 8 |
                            static_cast<std::uint32_t>(at[2]) << 16 | static_cast<std::uint32_t>(at[3]) << 24;
    if (v > 0x7fffffffu) fail("sequence " + std::to_string(i) + " has a negative size (expected int32 >= 0)");
    out.sizes[i] = v;
  }
  for (std::uint64_t i = 0; i < sequences; ++i, at += 8) out.pointers[i] = load_le64(at);
  for (std::uint64_t i = 0; i < documents; ++i, at += 8) out.document_indices[i] = load_le64(at);
  if (documents == 0 || out.document_indices.front() != 0 || out.document_indices.back() != sequences) {
    fail("has document indices that do not run from 0 to the sequence count " + std::to_string(sequences) +
         " (expected at least one, first 0, last " + std::to_string(sequences) + ")");
  }
  return out;
}

// Reads and parses the .idx file at `path`. Throws config_error naming it when it cannot be
// read or is not a valid index.
[[nodiscard]] inline MegatronIndex read_megatron_idx(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_config_error("Megatron index " + path + ": cannot be opened (expected a readable .idx file)");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_megatron_idx(bytes, path);
}

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_PACKING_DETAIL_MEGATRON_IDX_HPP

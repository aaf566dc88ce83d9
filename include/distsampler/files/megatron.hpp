// distsampler files: the index of a Megatron indexed dataset (.idx + .bin); a record is a sequence.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_MEGATRON_HPP
#define DISTSAMPLER_FILES_MEGATRON_HPP

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../version.hpp"
#include "detail/file_io.hpp"
#include "shard_index.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The .idx and .bin paths of a Megatron dataset named by either file (or by its prefix,
/// the path without extension).
struct MegatronPaths {
  std::string idx;
  std::string bin;
};

[[nodiscard]] inline MegatronPaths megatron_paths(std::string_view path) {
  std::string prefix(path);
  const std::size_t slash = prefix.find_last_of('/');
  const std::size_t dot = prefix.find_last_of('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    const std::string ext = prefix.substr(dot);
    if (ext == ".idx" || ext == ".bin") prefix.resize(dot);
  }
  return {prefix + ".idx", prefix + ".bin"};
}

/// The NumPy name and size in bytes of a Megatron token type code (1..8, Megatron's DType
/// table: uint8, int8, int16, int32, int64, float64, float32, uint16); {"", 0} otherwise.
struct MegatronDtype {
  std::string_view name;
  std::uint64_t itemsize = 0;
};

[[nodiscard]] constexpr MegatronDtype megatron_dtype(std::uint64_t code) noexcept {
  switch (code) {
    case 1: return {"uint8", 1};
    case 2: return {"int8", 1};
    case 3: return {"int16", 2};
    case 4: return {"int32", 4};
    case 5: return {"int64", 8};
    case 6: return {"float64", 8};
    case 7: return {"float32", 4};
    case 8: return {"uint16", 2};
    default: return {"", 0};
  }
}

/// Indexes a Megatron indexed dataset given its .idx, its .bin or their prefix. The .idx is
/// the 9-byte magic "MMIDIDX\0\0", u64 version (1), u8 token type code, u64 sequence count S,
/// u64 document count D, then int32 sizes[S] (tokens per sequence), int64 pointers[S] (byte
/// offsets into the .bin) and int64 document_indices[D], all little-endian; bytes after them
/// (the multimodal sequence modes) are ignored.
/// A record is a sequence, not a document: a sequence is the unit Megatron stores with one
/// contiguous byte range and reads by index (its datasets address sequences; a document is
/// only a run of sequences), and with one sequence per document, as most preprocessing
/// writes, the two coincide. Record i is bytes [pointers[i], pointers[i] + sizes[i] *
/// itemsize) of the .bin; `dtype` is the token type's NumPy name.
/// Throws config_error naming the file and the fault: a missing file, a wrong magic, an
/// unknown version or type code, an .idx shorter than its counts say, a negative size or
/// pointer, a sequence that runs past the end of the .bin.
/// O(S) time and memory. Thread-safe for distinct calls.
[[nodiscard]] inline ShardIndex index_megatron(const std::string& path) {
  namespace fd = files_detail;
  const MegatronPaths paths = megatron_paths(path);
  ShardIndex out;
  out.path = path;
  out.format = ShardFormat::megatron;
  out.data_path = paths.bin;
  const FileStamp idx = fd::stamp_of(paths.idx);
  const FileStamp bin = fd::stamp_of(paths.bin);
  out.sources = {idx, bin};
  out.data_size = bin.size;

  constexpr std::uint64_t header_bytes = 9 + 8 + 1 + 8 + 8;
  fd::InputFile file(paths.idx);
  char header[header_bytes];
  if (idx.size < header_bytes || file.read_some(header, header_bytes) != header_bytes) {
    fd::throw_shard_error(paths.idx, "is truncated: " + std::to_string(idx.size) + " bytes, shorter than the " +
                                         std::to_string(header_bytes) + "-byte header of a Megatron .idx");
  }
  if (std::string_view(header, 9) != std::string_view("MMIDIDX\0\0", 9)) {
    fd::throw_shard_error(paths.idx, "wrong magic (expected \"MMIDIDX\\0\\0\": not a Megatron .idx file)");
  }
  const std::uint64_t version = fd::load_le(header + 9, 8);
  if (version != 1) {
    fd::throw_shard_error(paths.idx, "unknown version " + std::to_string(version) + " (expected 1)");
  }
  const auto code = static_cast<unsigned char>(header[17]);
  const MegatronDtype dtype = megatron_dtype(code);
  if (dtype.itemsize == 0) {
    fd::throw_shard_error(paths.idx, "unknown dtype code " + std::to_string(code) +
                                         " (expected 1..8: uint8, int8, int16, int32, int64, float64, float32, uint16)");
  }
  out.dtype = std::string(dtype.name);
  const std::uint64_t sequences = fd::load_le(header + 18, 8);
  const std::uint64_t documents = fd::load_le(header + 26, 8);
  // header + 12 bytes per sequence + 8 per document, saturated rather than wrapped.
  const bool huge = sequences > (UINT64_MAX - header_bytes) / 24 || documents > (UINT64_MAX - header_bytes) / 24;
  const std::uint64_t needed = huge ? UINT64_MAX : header_bytes + sequences * 12 + documents * 8;
  if (needed > idx.size) {
    fd::throw_shard_error(paths.idx, "is truncated: " + std::to_string(idx.size) + " bytes, but its header's " +
                                         std::to_string(sequences) + " sequences and " + std::to_string(documents) +
                                         " documents need " + (huge ? std::string("more than 2^64") : std::to_string(needed)));
  }
  const auto count = static_cast<std::size_t>(sequences);
  out.records.resize(count);
  // sizes[] then pointers[]: each read in blocks and decoded into the records.
  std::vector<char> block(fd::block_bytes);
  const auto read_array = [&](std::size_t width, auto&& store) {
    const std::size_t per_block = block.size() / width;
    for (std::size_t first = 0; first < count; first += per_block) {
      const std::size_t n = count - first < per_block ? count - first : per_block;
      if (file.read_some(block.data(), n * width) != n * width) {
        fd::throw_shard_error(paths.idx, "is truncated (it shrank while it was read)");
      }
      for (std::size_t i = 0; i < n; ++i) store(first + i, fd::load_le(block.data() + i * width, width));
    }
  };
  read_array(4, [&](std::size_t i, std::uint64_t v) {
    if (v >> 31 != 0) {
      fd::throw_shard_error(paths.idx, "sequence " + std::to_string(i) + " has a negative size");
    }
    out.records[i].size = v * dtype.itemsize;
  });
  read_array(8, [&](std::size_t i, std::uint64_t v) {
    const std::uint64_t bytes = out.records[i].size;
    if (v >> 63 != 0 || v > bin.size || bytes > bin.size - v) {
      fd::throw_shard_error(paths.idx, "sequence " + std::to_string(i) + " (pointer " +
                                           std::to_string(static_cast<std::int64_t>(v)) + ", " +
                                           std::to_string(bytes) + " bytes) runs past the end of " + paths.bin +
                                           " (" + std::to_string(bin.size) + " bytes)");
    }
    out.records[i].offset = v;
  });
  return out;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_MEGATRON_HPP

// distsampler files: the index of a NumPy .npy shard; a record is a row along axis 0.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_NPY_HPP
#define DISTSAMPLER_FILES_NPY_HPP

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../version.hpp"
#include "detail/file_io.hpp"
#include "detail/npy_header.hpp"
#include "shard_index.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// The bytes of one element of a NumPy descr such as "<f4", "|u1", "<U8" (4 bytes per
/// character) or "<M8[ns]"; 0 when the descr is not of that form or names a kind or size
/// NumPy has no dtype for ("<x4", "<i3", "<f5").
[[nodiscard]] inline std::uint64_t npy_itemsize(std::string_view descr) {
  if (descr.size() < 3 || std::string_view("<>|=").find(descr[0]) == std::string_view::npos) return 0;
  std::uint64_t n = 0;
  std::size_t i = 2;
  for (; i < descr.size() && descr[i] >= '0' && descr[i] <= '9'; ++i) {
    if (n > (UINT64_MAX - 9) / 10) return 0;
    n = n * 10 + static_cast<std::uint64_t>(descr[i] - '0');
  }
  const char kind = descr[1];
  const bool dated = kind == 'M' || kind == 'm';
  if (i == 2 || (i != descr.size() && (descr[i] != '[' || !dated || descr.back() != ']'))) return 0;
  // The sizes NumPy has for each kind ('<i3' or '<x4' it cannot read either).
  switch (kind) {
    case 'b': return n == 1 ? n : 0;
    case 'i':
    case 'u': return n == 1 || n == 2 || n == 4 || n == 8 ? n : 0;
    case 'f': return n == 2 || n == 4 || n == 8 || n == 16 ? n : 0;
    case 'c': return n == 8 || n == 16 || n == 32 ? n : 0;
    case 'M':
    case 'm': return n == 8 ? n : 0;
    case 'S':
    case 'a':
    case 'V': return n;
    case 'U': return n > UINT64_MAX / 4 ? 0 : n * 4;
    default: return 0;
  }
}

/// Indexes a .npy file (format versions 1, 2 and 3: magic "\x93NUMPY", version, a header
/// length of 2 bytes (v1) or 4 (v2, v3), the header dictionary). A record is a row along
/// axis 0: record i is bytes [data + i * row, data + (i + 1) * row), row = itemsize x the
/// product of the other dimensions; `dtype` keeps the descr and `row_shape` the shape
/// without axis 0.
/// Throws config_error naming the file for a wrong magic or version, a malformed header,
/// Fortran order (rows would not be contiguous), an object dtype (its bytes are pointers),
/// a structured dtype, a 0-d array (it has no rows), or a file whose size is not the header
/// plus the array's bytes.
/// O(rows) time and memory. Thread-safe for distinct calls.
[[nodiscard]] inline ShardIndex index_npy(const std::string& path) {
  namespace fd = files_detail;
  ShardIndex out;
  out.path = path;
  out.format = ShardFormat::npy;
  out.data_path = path;
  const FileStamp stamp = fd::stamp_of(path);
  out.data_size = stamp.size;
  out.sources.push_back(stamp);
  fd::InputFile file(path);
  char lead[12];
  const std::size_t got = file.read_some(lead, sizeof lead);
  if (got < 10 || std::string_view(lead, 6) != std::string_view("\x93NUMPY", 6)) {
    fd::throw_shard_error(path, "wrong magic (expected \"\\x93NUMPY\": not a .npy file)");
  }
  const auto major = static_cast<unsigned char>(lead[6]);
  if (major < 1 || major > 3) {
    fd::throw_shard_error(path, "unknown .npy format version " + std::to_string(major) + " (expected 1, 2 or 3)");
  }
  const std::uint64_t prefix = major == 1 ? 10 : 12;
  if (got < prefix) fd::throw_shard_error(path, "is truncated inside its .npy preamble");
  const std::uint64_t header_len = fd::load_le(lead + 8, major == 1 ? 2 : 4);
  if (header_len > stamp.size - prefix || header_len > (std::uint64_t{1} << 24)) {
    fd::throw_shard_error(path, "is truncated: its header of " + std::to_string(header_len) +
                                    " bytes does not fit in the file's " + std::to_string(stamp.size) + " bytes");
  }
  std::string text(static_cast<std::size_t>(header_len), '\0');
  if (file.read_at(prefix, text.data(), text.size()) != text.size()) {
    fd::throw_shard_error(path, "is truncated inside its header");
  }
  const fd::NpyHeader h = fd::NpyHeaderParser(text, path).parse();
  if (h.fortran_order) {
    fd::throw_shard_error(path, "is in Fortran order (fortran_order True): its rows are not contiguous; "
                                "save it in C order (numpy.ascontiguousarray)");
  }
  if (h.structured) fd::throw_shard_error(path, "has a structured dtype (expected a plain one such as '<f4')");
  if (h.descr.size() >= 2 && h.descr[1] == 'O') {
    fd::throw_shard_error(path, "has the object dtype '" + h.descr + "': its bytes are Python pointers, not data");
  }
  const std::uint64_t itemsize = npy_itemsize(h.descr);
  if (itemsize == 0) fd::throw_shard_error(path, "has the dtype '" + h.descr + "', which is not supported");
  if (h.shape.empty()) fd::throw_shard_error(path, "holds a 0-d array (shape ()): it has no rows along axis 0");
  out.dtype = h.descr;
  out.row_shape.assign(h.shape.begin() + 1, h.shape.end());
  std::uint64_t row = itemsize;
  for (const std::uint64_t d : out.row_shape) {
    if (d != 0 && row > UINT64_MAX / d) fd::throw_shard_error(path, "has a row size that overflows 64 bits");
    row *= d;
  }
  const std::uint64_t rows = h.shape[0];
  const std::uint64_t data = prefix + header_len;
  if (row == 0 && rows != 0) {
    // Rows of no bytes: the file cannot bound their count, and they hold no data to train on.
    std::string shape = "(" + std::to_string(rows);
    for (const std::uint64_t d : out.row_shape) shape += ", " + std::to_string(d);
    fd::throw_shard_error(path, "has rows of 0 bytes (shape " + shape + ")): they hold no data, and the file's size "
                                "cannot vouch for their count (expected rows of at least one byte)");
  }
  const bool too_many = row != 0 && rows > (stamp.size - data) / row;
  if (too_many || data + rows * row != stamp.size) {
    fd::throw_shard_error(path, "is " + std::to_string(stamp.size) + " bytes, but its header (" +
                                    std::to_string(data) + " bytes) and " + std::to_string(rows) + " rows of " +
                                    std::to_string(row) + " bytes need " +
                                    (row != 0 && rows > (UINT64_MAX - data) / row
                                         ? std::string("more than 2^64")
                                         : std::to_string(data + rows * row)) +
                                    (too_many || data + rows * row > stamp.size ? ": a truncated file" : ""));
  }
  out.records.resize(static_cast<std::size_t>(rows));
  for (std::uint64_t i = 0; i < rows; ++i) out.records[static_cast<std::size_t>(i)] = RecordSpan{data + i * row, row};
  return out;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_NPY_HPP

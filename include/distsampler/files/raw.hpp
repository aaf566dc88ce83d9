// distsampler files: the index of a raw token file (a headerless array of token ids); a record is a document ending with the end-of-document token.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_RAW_HPP
#define DISTSAMPLER_FILES_RAW_HPP

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../version.hpp"
#include "detail/file_io.hpp"
#include "shard_index.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// A token type a raw token file can hold: its NumPy name, its bytes, and the largest token
/// id it stores. Tokens are little-endian, as NumPy's `tofile` writes them on the usual hosts
/// (and as OLMo's and AI2's `.npy`-named headerless token files are).
struct RawDtype {
  std::string_view name;
  std::uint64_t itemsize;
  std::uint64_t max;
};

inline constexpr RawDtype raw_dtypes[] = {
    {"uint8", 1, 0xffu},         {"uint16", 2, 0xffffu},        {"uint32", 4, 0xffffffffu},
    {"uint64", 8, UINT64_MAX},   {"int32", 4, 0x7fffffffu},     {"int64", 8, static_cast<std::uint64_t>(INT64_MAX)},
};

/// The names of the token types, for messages: "uint8, uint16, uint32, uint64, int32 or int64".
inline constexpr std::string_view raw_dtype_names = "uint8, uint16, uint32, uint64, int32 or int64";

/// The token type named `name`, or nullptr.
[[nodiscard]] inline const RawDtype* find_raw_dtype(std::string_view name) noexcept {
  for (const RawDtype& d : raw_dtypes) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

/// Checks a raw token file's options: `dtype` one of raw_dtypes and `eos` a token id it can
/// hold. Throws config_error "<who>: ..." naming the argument otherwise.
inline const RawDtype& check_raw_options(std::string_view who, std::string_view dtype, std::uint64_t eos) {
  const RawDtype* d = find_raw_dtype(dtype);
  if (d == nullptr) {
    detail::throw_config_error(std::string(who) + ": dtype \"" + std::string(dtype) +
                               "\" is not a token type of raw token files (expected " +
                               std::string(raw_dtype_names) + ")");
  }
  if (eos > d->max) {
    detail::throw_config_error(std::string(who) + ": eos " + std::to_string(eos) + " is out of range for dtype " +
                               std::string(d->name) + " (expected 0 to " + std::to_string(d->max) + ")");
  }
  return *d;
}

namespace files_detail {

/// Appends the documents of `n` tokens at `p` (the file's tokens from `first`, in tokens) to
/// `out`: a document ends with a token equal to `eos` (its bytes compared as stored).
template <typename Word>
inline void raw_documents(const char* p, std::size_t n, std::uint64_t first, std::uint64_t eos_bytes_le,
                          std::uint64_t& doc_start, std::vector<RecordSpan>& out) {
  // The end-of-document token's bytes as the file stores them, loaded as the file's words are:
  // comparing the two native loads is right on hosts of either byte order.
  char pattern[sizeof(Word)];
  for (std::size_t i = 0; i < sizeof(Word); ++i) pattern[i] = static_cast<char>((eos_bytes_le >> (8 * i)) & 0xff);
  Word eos;
  std::memcpy(&eos, pattern, sizeof(Word));
  const auto scan = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      Word w;
      std::memcpy(&w, p + i * sizeof(Word), sizeof(Word));
      if (w == eos) {
        const std::uint64_t end = first + i + 1;
        out.push_back(RecordSpan{doc_start * sizeof(Word), (end - doc_start) * sizeof(Word)});
        doc_start = end;
      }
    }
  };
  // Runs of 64 tokens are first tested for any eos with a loop without branches (which the
  // compiler vectorizes); only a run that holds one is scanned token by token.
  constexpr std::size_t run = 64;
  std::size_t i = 0;
  for (; i + run <= n; i += run) {
    unsigned any = 0;
    for (std::size_t j = 0; j < run; ++j) {
      Word w;
      std::memcpy(&w, p + (i + j) * sizeof(Word), sizeof(Word));
      any |= static_cast<unsigned>(w == eos);
    }
    if (any != 0) scan(i, i + run);
  }
  scan(i, n);
}

}  // namespace files_detail

/// Indexes a raw token file: a headerless array of little-endian token ids of `dtype`
/// (raw_dtypes), documents separated by the end-of-document token `eos`. A record is a
/// document: its tokens up to and including its `eos`; tokens after the last `eos` are the
/// last document (as a last line without "\n" is a JSON Lines record), so the documents
/// cover every token of the file and an empty file has none. Two `eos` in a row make a
/// document of one token. Records' offsets and sizes are in bytes; `dtype` and `eos` are
/// kept in the index (and in its cache key: another eos is another index).
/// Throws config_error naming the argument for an unknown dtype or an eos it cannot hold,
/// and naming the file when its size is not a multiple of the token size, or when it cannot
/// be read or changes while it is read.
/// One pass in 1 MiB blocks: O(file size) time, O(documents) memory. Thread-safe for distinct calls.
[[nodiscard]] inline ShardIndex index_raw(const std::string& path, std::string_view dtype, std::uint64_t eos) {
  namespace fd = files_detail;
  const RawDtype& d = check_raw_options("index_raw", dtype, eos);
  ShardIndex out;
  out.path = path;
  out.format = ShardFormat::raw;
  out.data_path = path;
  out.dtype = std::string(d.name);
  out.eos = eos;
  const FileStamp stamp = fd::stamp_of(path);
  out.data_size = stamp.size;
  out.sources.push_back(stamp);
  if (stamp.size % d.itemsize != 0) {
    fd::throw_shard_error(path, "is " + std::to_string(stamp.size) + " bytes, not a multiple of " +
                                    std::to_string(d.itemsize) + " (the size of a " + std::string(d.name) +
                                    " token): not a raw " + std::string(d.name) +
                                    " token file (check dtype, or whether the file is truncated)");
  }
  fd::InputFile file(path);
  std::vector<char> block(fd::block_bytes);
  std::uint64_t bytes_read = 0;  // file offset just past the block's bytes
  std::size_t carry = 0;         // bytes of a token split across two reads, kept at block[0]
  std::uint64_t doc_start = 0;   // the current document's first token
  const auto itemsize = static_cast<std::size_t>(d.itemsize);  // 1 to 8 (a 32-bit std::size_t too)
  for (;;) {
    const std::size_t got = file.read_some(block.data() + carry, block.size() - carry);
    if (got == 0) break;
    bytes_read += got;
    const std::size_t have = carry + got;
    const std::size_t tokens = have / itemsize;
    const std::uint64_t first = (bytes_read - have) / d.itemsize;
    switch (d.itemsize) {
      case 1: fd::raw_documents<std::uint8_t>(block.data(), tokens, first, eos, doc_start, out.records); break;
      case 2: fd::raw_documents<std::uint16_t>(block.data(), tokens, first, eos, doc_start, out.records); break;
      case 4: fd::raw_documents<std::uint32_t>(block.data(), tokens, first, eos, doc_start, out.records); break;
      default: fd::raw_documents<std::uint64_t>(block.data(), tokens, first, eos, doc_start, out.records); break;
    }
    carry = have - tokens * itemsize;
    if (carry != 0) std::memmove(block.data(), block.data() + tokens * itemsize, carry);
  }
  fd::check_unchanged(stamp, bytes_read);
  const std::uint64_t total = stamp.size / d.itemsize;
  if (doc_start < total) out.records.push_back(RecordSpan{doc_start * d.itemsize, (total - doc_start) * d.itemsize});
  return out;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_RAW_HPP

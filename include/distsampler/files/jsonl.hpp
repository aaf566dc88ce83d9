// distsampler files: the index of a JSON Lines shard (one record per line), counted with block reads and memchr.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_JSONL_HPP
#define DISTSAMPLER_FILES_JSONL_HPP

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../version.hpp"
#include "detail/file_io.hpp"
#include "shard_index.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Indexes a JSON Lines file: a record is a line, its bytes up to (not including) the
/// line's "\n", and a "\r" just before it (CRLF files give the same records as LF files).
/// Decisions, so that every record decodes with one json.loads:
/// - an empty line ("" or "\r" before the "\n") is not a record and is skipped; a line of
///   spaces is a record (its decoding then fails loudly, naming the record);
/// - a last line without a final "\n" is a record all the same (it ends at the end of the
///   file), as most writers and readers of JSON Lines treat it.
/// The JSON itself is not parsed: indexing reads the file once in 1 MiB blocks and finds
/// each "\n" with memchr, so it runs at the speed of the disk (or of `wc -l`).
/// Throws config_error naming the file when it cannot be read or changes while it is read.
/// O(file size) time, O(records) memory. Thread-safe for distinct calls.
[[nodiscard]] inline ShardIndex index_jsonl(const std::string& path) {
  ShardIndex out;
  out.path = path;
  out.format = ShardFormat::jsonl;
  out.data_path = path;
  const FileStamp stamp = files_detail::stamp_of(path);
  out.data_size = stamp.size;
  out.sources.push_back(stamp);
  // A line of n bytes costs at least n + 1 bytes, so size / 64 is a modest first guess.
  out.records.reserve(static_cast<std::size_t>(stamp.size / 64));

  files_detail::InputFile file(path);
  std::vector<char> block(files_detail::block_bytes);
  std::uint64_t block_start = 0;  // file offset of block[0]
  std::uint64_t line_start = 0;   // file offset of the current line's first byte
  char before_block = '\0';       // the byte before block[0], for a "\r\n" split across blocks
  const auto emit = [&](std::uint64_t end, bool carriage_return) {
    const std::uint64_t length = end - line_start - (carriage_return ? 1 : 0);
    if (length != 0) out.records.push_back(RecordSpan{line_start, length});
  };
  for (;;) {
    const std::size_t got = file.read_some(block.data(), block.size());
    if (got == 0) break;
    const char* const base = block.data();
    const char* p = base;
    const char* const end = base + got;
    while (const void* hit = std::memchr(p, '\n', static_cast<std::size_t>(end - p))) {
      const char* q = static_cast<const char*>(hit);
      const std::uint64_t at = block_start + static_cast<std::uint64_t>(q - base);
      const char previous = q == base ? before_block : q[-1];
      emit(at, at > line_start && previous == '\r');
      line_start = at + 1;
      p = q + 1;
    }
    before_block = end[-1];
    block_start += got;
  }
  files_detail::check_unchanged(stamp, block_start);
  if (line_start < block_start) emit(block_start, before_block == '\r');
  return out;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_JSONL_HPP

// distsampler files internal: reading shard files (RAII handle, stamps, block reads, a read window, little-endian words).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_DETAIL_FILE_IO_HPP
#define DISTSAMPLER_FILES_DETAIL_FILE_IO_HPP

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "../../error.hpp"
#include "../../version.hpp"
#include "../shard_index.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace files_detail {

/// Bytes read per block by the scanners: large enough that a read costs far more than the
/// call, small enough to stay in the cache.
inline constexpr std::size_t block_bytes = std::size_t{1} << 20;

/// Throws config_error "shard <path>: <what>".
[[noreturn]] inline void throw_shard_error(std::string_view path, const std::string& what) {
  detail::throw_config_error("shard " + std::string(path) + ": " + what);
}

/// The file's stamp now: size and modification time. Throws config_error naming the file
/// when it is missing, not a regular file, or cannot be inspected.
[[nodiscard]] inline FileStamp stamp_of(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    throw_shard_error(path, "cannot open (" + (ec ? ec.message() : std::string("No such file or directory")) + ")");
  }
  if (!fs::is_regular_file(st)) throw_shard_error(path, "is not a regular file");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw_shard_error(path, "cannot read its size (" + ec.message() + ")");
  const fs::file_time_type t = fs::last_write_time(path, ec);
  if (ec) throw_shard_error(path, "cannot read its modification time (" + ec.message() + ")");
  return FileStamp{path, static_cast<std::uint64_t>(size), static_cast<std::int64_t>(t.time_since_epoch().count())};
}

/// A file opened for binary reading, closed on destruction. Every failure throws
/// config_error naming the file.
class InputFile {
 public:
  explicit InputFile(std::string path) : path_(std::move(path)), file_(std::fopen(path_.c_str(), "rb")) {
    if (file_ == nullptr) throw_shard_error(path_, std::string("cannot open (") + std::strerror(errno) + ")");
    // The scanners read whole blocks themselves: stdio's own buffer would only copy them twice.
    std::setvbuf(file_, nullptr, _IONBF, 0);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() { std::fclose(file_); }

  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  /// Reads up to n bytes at the current position; returns how many (0 at the end).
  std::size_t read_some(char* out, std::size_t n) {
    const std::size_t got = std::fread(out, 1, n, file_);
    if (got < n && std::ferror(file_)) throw_shard_error(path_, std::string("read failed (") + std::strerror(errno) + ")");
    return got;
  }

  /// Reads up to n bytes at byte `offset`; returns how many.
  std::size_t read_at(std::uint64_t offset, char* out, std::size_t n) {
    seek(offset);
    return read_some(out, n);
  }

  void seek(std::uint64_t offset) {
    if (offset > static_cast<std::uint64_t>(INT64_MAX)) {
      throw_shard_error(path_, "cannot seek to byte " + std::to_string(offset));
    }
    if constexpr (sizeof(long) >= 8) {
      if (std::fseek(file_, static_cast<long>(offset), SEEK_SET) != 0) {
        throw_shard_error(path_, "cannot seek to byte " + std::to_string(offset));
      }
      return;
    }
    if (std::fseek(file_, 0, SEEK_SET) != 0) throw_shard_error(path_, "cannot seek to byte 0");
    // fseek takes a long; step in pieces that fit on platforms where long is 32 bits.
    std::uint64_t left = offset;
    while (left > 0) {
      const std::uint64_t step = left < (std::uint64_t{1} << 30) ? left : (std::uint64_t{1} << 30);
      if (std::fseek(file_, static_cast<long>(step), SEEK_CUR) != 0) {
        throw_shard_error(path_, "cannot seek to byte " + std::to_string(offset));
      }
      left -= step;
    }
  }

 private:
  std::string path_;
  std::FILE* file_;
};

/// Random reads of small pieces (tar headers) served from one block kept in memory: a
/// piece inside the block costs a copy, one outside refills the block from its offset.
class ReadWindow {
 public:
  ReadWindow(InputFile& file, std::uint64_t file_size) : file_(file), size_(file_size), block_(block_bytes) {}

  /// The n bytes at `offset` (n <= block_bytes), or fewer when the file ends first.
  std::string_view at(std::uint64_t offset, std::size_t n) {
    if (offset < begin_ || offset + n > begin_ + filled_) {
      begin_ = offset;
      filled_ = file_.read_at(offset, block_.data(), block_.size());
    }
    const std::size_t from = static_cast<std::size_t>(offset - begin_);
    const std::size_t avail = filled_ > from ? filled_ - from : 0;
    return {block_.data() + from, n < avail ? n : avail};
  }

  [[nodiscard]] std::uint64_t file_size() const noexcept { return size_; }

 private:
  InputFile& file_;
  std::uint64_t size_;
  std::vector<char> block_;
  std::uint64_t begin_ = 0;
  std::size_t filled_ = 0;
};

/// Little-endian words from bytes, the same on every host.
[[nodiscard]] inline std::uint64_t load_le(const char* p, std::size_t n) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

/// Throws when the file changed size while it was read (the index would not describe it).
inline void check_unchanged(const FileStamp& before, std::uint64_t bytes_read) {
  if (bytes_read != before.size) {
    throw_shard_error(before.path, "changed while it was indexed (size " + std::to_string(before.size) + " -> " +
                                       std::to_string(bytes_read) + "): index it again");
  }
}

}  // namespace files_detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_DETAIL_FILE_IO_HPP

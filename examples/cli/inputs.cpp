// The `distsampler` command's --shard-sizes input: a comma-separated list or a bounded, line-checked file.
// SPDX-License-Identifier: MIT
#include "cli.hpp"

#include <distsampler/detail/decimal.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <system_error>
#include <sys/stat.h>

namespace cli {
namespace {

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

class ShardFile {
 public:
  ShardFile(std::string_view flag, std::string path) : flag_(flag), path_(std::move(path)) {}

  std::vector<std::uint64_t> read() {
    struct stat info {};
    if (::stat(path_.c_str(), &info) != 0) fail_open(errno);
    if (S_ISDIR(info.st_mode)) fail("is a directory (expected a file with one sample count per line)");
    const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path_.c_str(), "rb"));
    if (!file) fail_open(errno);
    char buffer[1 << 16];
    std::uint64_t total = 0;
    for (;;) {
      const std::size_t got = std::fread(buffer, 1, sizeof buffer, file.get());
      if (got == 0) {
        if (std::ferror(file.get())) fail(fmt::format("cannot be read: {}", std::strerror(errno)));
        break;
      }
      total += got;
      if (total > limits::file_bytes) {
        fail(fmt::format("is larger than {} bytes (expected at most {} sample counts, one per line)",
                         limits::file_bytes, limits::shards));
      }
      for (std::size_t i = 0; i < got; ++i) take(buffer[i]);
    }
    if (!line_.empty()) end_line();
    if (sizes_.empty()) fail("has no sample counts (expected one count per line)");
    return std::move(sizes_);
  }

 private:
  void take(char c) {
    if (c == '\n') return end_line();
    if (c == '\0') fail_line("a NUL byte (expected text: one sample count per line)");
    if (line_.size() == limits::line_bytes) {
      fail_line(fmt::format("longer than {} bytes (expected one sample count per line)", limits::line_bytes));
    }
    line_ += c;
  }

  void end_line() {
    const std::string_view text = trim(line_);
    if (!text.empty()) {
      namespace detail = distsampler::detail;
      const detail::DecimalParse p = detail::parse_decimal(text);
      if (p.error != detail::DecimalError::ok) fail_line(fmt::format("{} {}", shown(text), detail::describe(p.error)));
      if (sizes_.size() == limits::shards) {
        fail_line(fmt::format("more than {} sample counts (the most shards reads)", limits::shards));
      }
      sizes_.push_back(p.value);
    }
    line_.clear();
    ++line_number_;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw UsageError(fmt::format("{} file {} {}", flag_, shown(path_), what));
  }
  [[noreturn]] void fail_line(const std::string& what) const {
    throw UsageError(fmt::format("{} file {}, line {}: {}", flag_, shown(path_), line_number_, what));
  }
  [[noreturn]] void fail_open(int error) const {
    if (error == ENOENT) {
      throw UsageError(fmt::format("{} {} is neither a comma-separated list of sample counts nor an existing file",
                                   flag_, shown(path_)));
    }
    fail(fmt::format("cannot be opened: {}", std::strerror(error)));
  }

  std::string_view flag_;
  std::string path_;
  std::string line_;
  std::uint64_t line_number_ = 1;
  std::vector<std::uint64_t> sizes_;
};

}  // namespace

namespace {

// A comma-separated list of decimal counts; `too_many` ends the message past limits::shards entries.
std::vector<std::uint64_t> parse_decimal_list(std::string_view flag, std::string_view list, std::string_view too_many) {
  namespace detail = distsampler::detail;
  std::vector<std::uint64_t> out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string_view item = list.substr(at, comma - at);
    if (out.size() == limits::shards) {
      throw UsageError(fmt::format("{} has more than {} entries{}", flag, limits::shards, too_many));
    }
    const detail::DecimalParse p = detail::parse_decimal(item);
    if (p.error != detail::DecimalError::ok) {
      throw UsageError(fmt::format("{} entry {} {} {}", flag, out.size() + 1, shown(item), detail::describe(p.error)));
    }
    out.push_back(p.value);
    if (comma == list.size()) return out;
    at = comma + 1;
  }
}

}  // namespace

std::vector<std::uint64_t> parse_shard_list(std::string_view flag, std::string_view list) {
  return parse_decimal_list(flag, list, " (the most shards reads)");
}

std::vector<std::uint64_t> parse_count_list(std::string_view flag, std::string_view list) {
  return parse_decimal_list(flag, list, "");
}

std::vector<double> parse_weights(std::string_view flag, std::string_view list, std::string_view what) {
  std::vector<double> out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string_view item = list.substr(at, comma - at);
    if (out.size() == limits::shards) {
      throw UsageError(fmt::format("{} {}has more than {} weights", flag, what, limits::shards));
    }
    // Digits, then optionally '.' and digits: no sign, exponent, spaces, inf or nan.
    const std::size_t dot = item.find('.');
    const std::string_view whole = item.substr(0, dot);
    const std::string_view frac = dot == std::string_view::npos ? std::string_view("0") : item.substr(dot + 1);
    const auto digits = [](std::string_view t) {
      return !t.empty() && t.size() <= 40 && t.find_first_not_of("0123456789") == std::string_view::npos;
    };
    if (!digits(whole) || !digits(frac)) {
      throw UsageError(
          fmt::format("{} {}weight {} {} is not a decimal number (expected digits with an optional "
                      "fraction, such as 0.25)",
                      flag, what, out.size() + 1, shown(item)));
    }
    out.push_back(std::strtod(std::string(item).c_str(), nullptr));
    if (comma == list.size()) return out;
    at = comma + 1;
  }
}

std::vector<std::uint64_t> parse_shard_sizes(std::string_view flag, std::string_view spec) {
  if (spec.empty()) {
    throw UsageError(
        fmt::format("{} is empty (expected a comma-separated list of sample counts or a file name)", flag));
  }
  if (spec.find_first_not_of("0123456789,") == std::string_view::npos) return parse_shard_list(flag, spec);
  if (spec.find('\0') != std::string_view::npos) {
    throw UsageError(fmt::format("{} {} contains a NUL byte (expected a list or a file name)", flag, shown(spec)));
  }
  return ShardFile(flag, std::string(spec)).read();
}

}  // namespace cli

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

// What a list holds, for messages: "sample count"/"sample counts", at most `most` entries (`why`).
struct ListKind {
  std::string_view one;
  std::string_view many;
  std::uint64_t most;
  std::string_view why;
};

constexpr ListKind shard_kind{"sample count", "sample counts", limits::shards, "the most shards reads"};
constexpr ListKind length_kind{"length", "lengths", limits::lengths, "the most tokens reads"};
constexpr ListKind source_kind{"sample count", "sample counts", limits::shards, "the most sources mix reads"};

class ShardFile {
 public:
  ShardFile(std::string_view flag, std::string path, const ListKind& kind = shard_kind)
      : flag_(flag), path_(std::move(path)), kind_(kind) {}

  std::vector<std::uint64_t> read() {
    struct stat info {};
    if (::stat(path_.c_str(), &info) != 0) fail_open(errno);
    if (S_ISDIR(info.st_mode)) fail(fmt::format("is a directory (expected a file with one {} per line)", kind_.one));
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
        fail(fmt::format("is larger than {} bytes (expected at most {} {}, one per line)", limits::file_bytes,
                         kind_.most, kind_.many));
      }
      for (std::size_t i = 0; i < got; ++i) take(buffer[i]);
    }
    if (!line_.empty()) end_line();
    if (sizes_.empty()) fail(fmt::format("has no {} (expected one per line)", kind_.many));
    return std::move(sizes_);
  }

 private:
  void take(char c) {
    if (c == '\n') return end_line();
    if (c == '\0') fail_line(fmt::format("a NUL byte (expected text: one {} per line)", kind_.one));
    if (line_.size() == limits::line_bytes) {
      fail_line(fmt::format("longer than {} bytes (expected one {} per line)", limits::line_bytes, kind_.one));
    }
    line_ += c;
  }

  void end_line() {
    const std::string_view text = trim(line_);
    if (!text.empty()) {
      namespace detail = distsampler::detail;
      const detail::DecimalParse p = detail::parse_decimal(text);
      if (p.error != detail::DecimalError::ok) fail_line(fmt::format("{} {}", shown(text), detail::describe(p.error)));
      if (sizes_.size() == kind_.most)
        fail_line(fmt::format("more than {} {} ({})", kind_.most, kind_.many, kind_.why));
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
      throw UsageError(fmt::format("{} {} is neither a comma-separated list of {} nor an existing file", flag_,
                                   shown(path_), kind_.many));
    }
    fail(fmt::format("cannot be opened: {}", std::strerror(error)));
  }

  std::string_view flag_;
  std::string path_;
  ListKind kind_;
  std::string line_;
  std::uint64_t line_number_ = 1;
  std::vector<std::uint64_t> sizes_;
};

}  // namespace

namespace {

std::vector<std::uint64_t> parse_list(std::string_view flag, std::string_view list, const ListKind& kind) {
  namespace detail = distsampler::detail;
  std::vector<std::uint64_t> sizes;
  std::size_t at = 0;
  for (;;) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string_view item = list.substr(at, comma - at);
    if (sizes.size() == kind.most) {
      throw UsageError(fmt::format("{} has more than {} entries ({})", flag, kind.most, kind.why));
    }
    const detail::DecimalParse p = detail::parse_decimal(item);
    if (p.error != detail::DecimalError::ok) {
      throw UsageError(
          fmt::format("{} entry {} {} {}", flag, sizes.size() + 1, shown(item), detail::describe(p.error)));
    }
    sizes.push_back(p.value);
    if (comma == list.size()) return sizes;
    at = comma + 1;
  }
}

std::vector<std::uint64_t> parse_list_or_file(std::string_view flag, std::string_view spec, const ListKind& kind) {
  if (spec.empty()) {
    throw UsageError(
        fmt::format("{} is empty (expected a comma-separated list of {} or a file name)", flag, kind.many));
  }
  if (spec.find_first_not_of("0123456789,") == std::string_view::npos) return parse_list(flag, spec, kind);
  if (spec.find('\0') != std::string_view::npos) {
    throw UsageError(fmt::format("{} {} contains a NUL byte (expected a list or a file name)", flag, shown(spec)));
  }
  return ShardFile(flag, std::string(spec), kind).read();
}

}  // namespace

std::vector<std::uint64_t> parse_shard_list(std::string_view flag, std::string_view list) {
  return parse_list(flag, list, shard_kind);
}

std::vector<std::uint64_t> parse_shard_sizes(std::string_view flag, std::string_view spec) {
  return parse_list_or_file(flag, spec, shard_kind);
}

std::vector<std::uint32_t> parse_lengths(std::string_view flag, std::string_view spec) {
  const std::vector<std::uint64_t> values = parse_list_or_file(flag, spec, length_kind);
  std::vector<std::uint32_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] > UINT32_MAX) {
      throw UsageError(fmt::format("{} entry {} ({}) is above 4294967295 (expected a token count of 32 bits)", flag,
                                   i + 1, values[i]));
    }
    out[i] = static_cast<std::uint32_t>(values[i]);
  }
  return out;
}

std::vector<std::uint64_t> parse_count_list(std::string_view flag, std::string_view list) {
  return parse_list(flag, list, source_kind);
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

}  // namespace cli

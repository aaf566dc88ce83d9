// distsampler files internal: the Python-literal dictionary of a .npy header (descr, fortran_order, shape).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_DETAIL_NPY_HEADER_HPP
#define DISTSAMPLER_FILES_DETAIL_NPY_HEADER_HPP

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../../version.hpp"
#include "file_io.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace files_detail {

/// The three keys of a .npy header. `structured` is set when descr is a list (a record dtype).
struct NpyHeader {
  std::string descr;
  bool structured = false;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
};

/// A recursive-descent reader of the header's dictionary literal, e.g.
/// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }. Throws config_error naming
/// the file on anything else.
class NpyHeaderParser {
 public:
  NpyHeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      skip_space();
      if (key == "descr") {
        seen_descr = true;
        if (peek() == '[') {
          h.structured = true;
          skip_balanced();
        } else {
          h.descr = string_literal();
        }
      } else if (key == "fortran_order") {
        seen_order = true;
        h.fortran_order = boolean();
      } else if (key == "shape") {
        seen_shape = true;
        h.shape = int_tuple();
      } else {
        fail("has an unknown key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_space();
      if (peek() != '}') fail("is malformed at character " + std::to_string(i_));
      break;
    }
    expect('}');
    if (!seen_descr || !seen_order || !seen_shape) fail("lacks one of 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw_shard_error(path_, "the .npy header " + what); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail("is malformed at character " + std::to_string(i_) + " (expected '" + std::string(1, c) + "')");
    ++i_;
  }
  std::string string_literal() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("is malformed at character " + std::to_string(i_) + " (expected a string)");
    const std::size_t end = s_.find(quote, i_ + 1);
    if (end == std::string_view::npos) fail("has an unterminated string");
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    fail("has a fortran_order that is neither True nor False");
  }
  std::vector<std::uint64_t> int_tuple() {
    expect('(');
    std::vector<std::uint64_t> out;
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      std::uint64_t v = 0;
      const std::size_t start = i_;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (UINT64_MAX - 9) / 10) fail("has a dimension too large for 64 bits");
        v = v * 10 + static_cast<std::uint64_t>(peek() - '0');
        ++i_;
      }
      if (i_ == start) fail("has a shape that is not a tuple of non-negative integers");
      out.push_back(v);
      skip_space();
      if (peek() == ',') ++i_;
      else if (peek() != ')') fail("has a shape that is not a tuple of non-negative integers");
    }
    ++i_;
    return out;
  }
  void skip_balanced() {
    int depth = 0;
    do {
      const char c = peek();
      if (c == '\0') fail("has an unterminated descr list");
      if (c == '\'' || c == '"') {
        string_literal();
        continue;
      }
      if (c == '[' || c == '(') ++depth;
      if (c == ']' || c == ')') --depth;
      ++i_;
    } while (depth > 0);
  }

  std::string_view s_;
  const std::string& path_;
  std::size_t i_ = 0;
};

}  // namespace files_detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_DETAIL_NPY_HEADER_HPP

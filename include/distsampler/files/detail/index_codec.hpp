// distsampler files internal: the index cache's binary form (versioned, checksummed) written and read.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_FILES_DETAIL_INDEX_CODEC_HPP
#define DISTSAMPLER_FILES_DETAIL_INDEX_CODEC_HPP

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../../detail/mix.hpp"
#include "../../version.hpp"
#include "../shard_index.hpp"
#include "file_io.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace files_detail {

/// The cache file: the 8-byte magic "DSSHIDX\n", u32 format version, u32 zero, u64 payload
/// bytes, u64 checksum of the payload, then the payload: the key (the shard's absolute
/// path), then the ShardIndex's saved fields in declaration order. Integers are
/// little-endian u64, strings and arrays a u64 length then their items.
inline constexpr std::string_view cache_magic{"DSSHIDX\n", 8};
inline constexpr std::uint64_t cache_version = 3;  // 2: tar members named as WebDataset names them; 3: eos (raw)
inline constexpr std::size_t cache_prefix_bytes = 32;

/// A 64-bit checksum of bytes: four lanes, lane k folding every fourth 8-byte little-endian
/// word through mix64 (independent lanes run in parallel on the CPU), then the lanes, the
/// zero-padded tail and the length mixed together. Identical on every platform.
[[nodiscard]] inline std::uint64_t checksum(std::string_view bytes) noexcept {
  std::uint64_t lane[4] = {0x6473686964786331u, 0x9e3779b97f4a7c15u, 0xbf58476d1ce4e5b9u, 0x94d049bb133111ebu};
  const char* p = bytes.data();
  std::size_t i = 0;
  for (; i + 32 <= bytes.size(); i += 32) {
    for (std::size_t k = 0; k < 4; ++k) lane[k] = detail::mix64(lane[k] ^ load_le(p + i + 8 * k, 8));
  }
  std::uint64_t h = detail::mix64(bytes.size());
  for (; i + 8 <= bytes.size(); i += 8) h = detail::mix64(h ^ load_le(p + i, 8));
  if (i < bytes.size()) h = detail::mix64(h ^ load_le(p + i, bytes.size() - i));
  for (const std::uint64_t l : lane) h = detail::mix64(h ^ l);
  return h;
}

class Encoder {
 public:
  void u64(std::uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    out_.append(b, 8);
  }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s.data(), s.size());
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

/// Reads what Encoder wrote; any overrun or absurd length marks the input bad (the
/// checksum makes that a damaged file, never a crash).
class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}
  std::uint64_t u64() {
    if (in_.size() - at_ < 8) {
      bad_ = true;
      return 0;
    }
    const std::uint64_t v = load_le(in_.data() + at_, 8);
    at_ += 8;
    return v;
  }
  std::string str() {
    const std::uint64_t n = u64();
    if (n > in_.size() - at_) {
      bad_ = true;
      return {};
    }
    std::string s(in_.substr(at_, static_cast<std::size_t>(n)));
    at_ += static_cast<std::size_t>(n);
    return s;
  }
  /// A count of items of at least `min_bytes` each, refused when the rest cannot hold them.
  std::size_t count(std::uint64_t min_bytes) {
    const std::uint64_t n = u64();
    if (n > (in_.size() - at_) / min_bytes) {
      bad_ = true;
      return 0;
    }
    return static_cast<std::size_t>(n);
  }
  /// The next n 8-byte words, or null (and the input marked bad) when fewer remain.
  const char* words(std::size_t n) {
    if (n > (in_.size() - at_) / 8) {
      bad_ = true;
      return nullptr;
    }
    const char* p = in_.data() + at_;
    at_ += 8 * n;
    return p;
  }
  [[nodiscard]] bool ok() const noexcept { return !bad_ && at_ == in_.size(); }
  [[nodiscard]] bool bad() const noexcept { return bad_; }

 private:
  std::string_view in_;
  std::size_t at_ = 0;
  bool bad_ = false;
};

/// The cache file's bytes for `index` under `key`.
[[nodiscard]] inline std::string encode_index(const ShardIndex& index, std::string_view key) {
  Encoder e;
  e.str(key);
  e.str(index.path);
  e.u64(static_cast<std::uint64_t>(index.format));
  e.str(index.data_path);
  e.u64(index.data_size);
  e.u64(index.sources.size());
  for (const FileStamp& s : index.sources) {
    e.str(s.path);
    e.u64(s.size);
    e.u64(static_cast<std::uint64_t>(s.mtime));
  }
  e.u64(index.records.size());
  for (const RecordSpan& r : index.records) {
    e.u64(r.offset);
    e.u64(r.size);
  }
  e.u64(index.keys.size());
  for (const std::string& k : index.keys) e.str(k);
  e.u64(index.member_begin.size());
  for (const std::uint64_t m : index.member_begin) e.u64(m);
  e.u64(index.members.size());
  for (const TarMember& m : index.members) {
    e.str(m.suffix);
    e.u64(m.offset);
    e.u64(m.size);
  }
  e.str(index.dtype);
  e.u64(index.eos);
  e.u64(index.row_shape.size());
  for (const std::uint64_t d : index.row_shape) e.u64(d);
  const std::string payload = std::move(e.bytes());
  Encoder head;
  head.bytes().append(cache_magic.data(), cache_magic.size());
  head.u64(cache_version);  // u32 version + u32 zero, as one little-endian u64
  head.u64(payload.size());
  head.u64(checksum(payload));
  return head.bytes() + payload;
}

/// What a cache file holds: the key it was written under and the index; or why it is unusable.
struct DecodedIndex {
  std::string key;
  ShardIndex index;
  std::string error;  // "" when the file is sound
};

[[nodiscard]] inline DecodedIndex decode_index(std::string_view bytes) {
  DecodedIndex out;
  if (bytes.size() < cache_prefix_bytes || bytes.substr(0, 8) != cache_magic) {
    out.error = "is not a distsampler index file (wrong magic)";
    return out;
  }
  const std::uint64_t version = load_le(bytes.data() + 8, 8);
  if (version != cache_version) {
    out.error = "has index format version " + std::to_string(version) + " (expected " +
                std::to_string(cache_version) + ")";
    return out;
  }
  const std::uint64_t size = load_le(bytes.data() + 16, 8);
  const std::string_view payload = bytes.substr(cache_prefix_bytes);
  if (size != payload.size() || load_le(bytes.data() + 24, 8) != checksum(payload)) {
    out.error = "is damaged (its checksum or length does not match)";
    return out;
  }
  Decoder d(payload);
  ShardIndex& x = out.index;
  out.key = d.str();
  x.path = d.str();
  const std::uint64_t format = d.u64();
  x.format = static_cast<ShardFormat>(format);
  x.data_path = d.str();
  x.data_size = d.u64();
  x.sources.resize(d.count(24));
  for (FileStamp& s : x.sources) {
    s.path = d.str();
    s.size = d.u64();
    s.mtime = static_cast<std::int64_t>(d.u64());
  }
  x.records.resize(d.count(16));
  if (const char* w = d.words(2 * x.records.size())) {
    for (std::size_t i = 0; i < x.records.size(); ++i) {
      x.records[i] = RecordSpan{load_le(w + 16 * i, 8), load_le(w + 16 * i + 8, 8)};
    }
  }
  x.keys.resize(d.count(8));
  for (std::string& k : x.keys) k = d.str();
  x.member_begin.resize(d.count(8));
  for (std::uint64_t& m : x.member_begin) m = d.u64();
  x.members.resize(d.count(24));
  for (TarMember& m : x.members) {
    m.suffix = d.str();
    m.offset = d.u64();
    m.size = d.u64();
  }
  x.dtype = d.str();
  x.eos = d.u64();
  x.row_shape.resize(d.count(8));
  for (std::uint64_t& dim : x.row_shape) dim = d.u64();
  if (!d.ok() || format < 1 || format > 5) out.error = "is damaged (its fields do not parse)";
  return out;
}

}  // namespace files_detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_FILES_DETAIL_INDEX_CODEC_HPP

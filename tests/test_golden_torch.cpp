// distsampler tests: DistributedSampler<TorchRandperm> and TorchRandperm against golden vectors made by real torch.
// SPDX-License-Identifier: MIT
//
// The expected values come from tests/golden/torch_distributed_sampler.txt, written by
// tests/golden/make_torch_golden.py with torch.utils.data.DistributedSampler and
// torch.randperm (the file's header documents its format). CI reads the committed file
// and never needs torch. A mismatch here means we no longer reproduce torch: changing
// this file or the golden file must be a decision, not an accident.
#include <catch2/catch.hpp>

#include <distsampler/distributed/distributed_sampler.hpp>
#include <distsampler/permutation.hpp>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sanitized.hpp"

#ifndef DISTSAMPLER_GOLDEN_DIR
#error "DISTSAMPLER_GOLDEN_DIR must name the tests/golden directory (a string literal, set by CMake)"
#endif

using distsampler::DistributedSampler;
using distsampler::SamplerOptions;
using distsampler::Tail;
using distsampler::TorchRandperm;
using distsampler::World;

namespace {

// Under AddressSanitizer (unoptimised) a TorchRandperm of 100003 values takes about 5 ms,
// and the golden file has 4032 such rows: sanitized builds check every row up to N = 4096
// and every 8th larger row (every code path, a sixth of the time); the unsanitized build
// checks them all.
#if defined(DISTSAMPLER_TEST_SANITIZED)
constexpr bool check_every_large_row = false;
#else
constexpr bool check_every_large_row = true;
#endif

// The coverage make_torch_golden.py generates; the row counts below follow from it.
// A truncated or regenerated-with-less-coverage file fails the count checks.
constexpr std::uint64_t sizes_count = 11;       // N in {0, 1, 2, 3, 7, 10, 16, 100, 1000, 4096, 100003}
constexpr std::uint64_t full_list_sizes = 7;    // those with N <= 16 are stored in full
constexpr std::uint64_t rank_world_pairs = 36;  // W in 1..8, every rank: 1 + 2 + ... + 8
constexpr std::uint64_t seeds_count = 7;        // 0, 1, 42, 2^32, 2^63 - 1, 2^64 - 1, -1
constexpr std::uint64_t epochs_count = 4;       // 0..3
constexpr std::uint64_t per_size = rank_world_pairs * seeds_count * epochs_count * 2 /*drop*/ * 2 /*shuffle*/;
// torch raises where seed + epoch >= 2^64: seed 2^64 - 1, shuffle on, epochs 1..3.
constexpr std::uint64_t errors_per_size = rank_world_pairs * 3 /*epochs*/ * 2 /*drop*/;
constexpr std::uint64_t expected_randperm_rows = 20;  // n in {10, 1000} x 10 seeds
constexpr std::uint64_t expected_list_rows = full_list_sizes * (per_size - errors_per_size);
constexpr std::uint64_t expected_digest_rows = (sizes_count - full_list_sizes) * (per_size - errors_per_size);
constexpr std::uint64_t expected_error_rows = sizes_count * errors_per_size;
static_assert(expected_list_rows == 26712 && expected_digest_rows == 15264 && expected_error_rows == 2376,
              "row counts of the committed golden file");

constexpr std::uint64_t seed_max = 18446744073709551615u;  // 2^64 - 1, torch's -1 mod 2^64

/// One record of the golden file (see its header).
struct Row {
  std::string kind;  // randperm, list, digest or error
  std::size_t line = 0;
  std::uint64_t n = 0, world_size = 0, rank = 0;
  bool shuffle = false, drop_last = false;
  std::string seed_text;   // the Python int given to torch, e.g. "-1"
  std::uint64_t seed = 0;  // seed_text mod 2^64
  std::uint64_t epoch = 0;
  std::uint64_t count = 0;
  std::vector<std::uint64_t> values;  // randperm/list: every value; digest: first k then last k
  std::uint64_t digest = 0;
  std::uint64_t edge = 0;  // k of a digest row
  std::string message;     // error rows

  [[nodiscard]] std::string describe() const {
    std::ostringstream out;
    out << "golden line " << line << ": " << kind << " N=" << n << " W=" << world_size << " rank=" << rank
        << " shuffle=" << shuffle << " drop_last=" << drop_last << " seed=" << seed_text << " epoch=" << epoch;
    return out.str();
  }
};

struct Golden {
  std::string path;
  bool opened = false;
  std::vector<std::string> parse_errors;
  std::vector<Row> randperm, sampler, error;  // sampler = list and digest rows, in file order
  std::uint64_t list_rows = 0, digest_rows = 0;
  bool has_end = false;
  std::uint64_t end_counts[4] = {0, 0, 0, 0};
};

bool parse_u64(const std::string& text, std::uint64_t& out, int base = 10) {
  if (text.empty()) return false;
  std::uint64_t value = 0;
  const auto b = static_cast<std::uint64_t>(base);
  for (const char c : text) {
    std::uint64_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint64_t>(c - '0');
    } else if (base == 16 && c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint64_t>(c - 'a' + 10);
    } else {
      return false;
    }
    if (value > (UINT64_MAX - digit) / b) return false;
    value = value * b + digit;
  }
  out = value;
  return true;
}

bool next_u64(std::istringstream& in, std::uint64_t& out, int base = 10) {
  std::string token;
  return static_cast<bool>(in >> token) && parse_u64(token, out, base);
}

bool next_bool(std::istringstream& in, bool& out) {
  std::uint64_t v = 0;
  if (!next_u64(in, v) || v > 1) return false;
  out = v == 1;
  return true;
}

bool read_values(std::istringstream& in, std::uint64_t count, std::vector<std::uint64_t>& out) {
  out.clear();
  out.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t v = 0;
    if (!next_u64(in, v)) return false;
    out.push_back(v);
  }
  return true;
}

bool at_end(std::istringstream& in) {
  std::string extra;
  return !(in >> extra);
}

// The sampler rows' common prefix: N W rank shuffle drop_last seed seed_u64 epoch.
bool read_key(std::istringstream& in, Row& row) {
  return next_u64(in, row.n) && next_u64(in, row.world_size) && next_u64(in, row.rank) && next_bool(in, row.shuffle) &&
         next_bool(in, row.drop_last) && static_cast<bool>(in >> row.seed_text) && next_u64(in, row.seed) &&
         next_u64(in, row.epoch);
}

bool parse_row(const std::string& line, Row& row) {
  std::istringstream in(line);
  if (!(in >> row.kind)) return false;
  if (row.kind == "randperm") {
    return next_u64(in, row.n) && static_cast<bool>(in >> row.seed_text) && next_u64(in, row.seed) &&
           read_values(in, row.n, row.values) && at_end(in);
  }
  if (row.kind == "list") {
    return read_key(in, row) && next_u64(in, row.count) && read_values(in, row.count, row.values) && at_end(in);
  }
  if (row.kind == "digest") {
    return read_key(in, row) && next_u64(in, row.count) && next_u64(in, row.digest, 16) && next_u64(in, row.edge) &&
           row.edge <= row.count && read_values(in, 2 * row.edge, row.values) && at_end(in);
  }
  if (row.kind == "error") {
    if (!read_key(in, row)) return false;
    std::getline(in >> std::ws, row.message);
    return !row.message.empty();
  }
  return false;
}

Golden load_golden() {
  Golden g;
  g.path = std::string(DISTSAMPLER_GOLDEN_DIR) + "/torch_distributed_sampler.txt";
  std::ifstream file(g.path);
  g.opened = file.is_open();
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(file, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    if (g.has_end) {
      g.parse_errors.push_back("line " + std::to_string(line_no) + ": record after 'end'");
      continue;
    }
    if (line.compare(0, 4, "end ") == 0) {
      std::istringstream in(line.substr(4));
      g.has_end = next_u64(in, g.end_counts[0]) && next_u64(in, g.end_counts[1]) && next_u64(in, g.end_counts[2]) &&
                  next_u64(in, g.end_counts[3]) && at_end(in);
      if (!g.has_end) g.parse_errors.push_back("line " + std::to_string(line_no) + ": malformed 'end'");
      continue;
    }
    Row row;
    row.line = line_no;
    if (!parse_row(line, row)) {
      g.parse_errors.push_back("line " + std::to_string(line_no) + ": malformed: " + line.substr(0, 120));
      continue;
    }
    if (row.kind == "randperm") {
      g.randperm.push_back(std::move(row));
    } else if (row.kind == "error") {
      g.error.push_back(std::move(row));
    } else {
      ++(row.kind == "list" ? g.list_rows : g.digest_rows);
      g.sampler.push_back(std::move(row));
    }
  }
  return g;
}

/// Parsed once for all test cases (about 3 MB).
const Golden& golden() {
  static const Golden g = load_golden();
  return g;
}

// The golden file's order-sensitive digest, reimplemented from its header.
std::uint64_t fmix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

std::uint64_t order_digest(const std::vector<std::uint64_t>& x) {
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    h += fmix64(x[i] + (static_cast<std::uint64_t>(i) + 1) * 0x9E3779B97F4A7C15u);
  }
  return h;
}

std::string join(const std::vector<std::uint64_t>& v, std::size_t from, std::size_t to) {
  std::string out = "[";
  for (std::size_t i = from; i < to && i < v.size(); ++i) {
    if (i > from) out += ' ';
    out += std::to_string(v[i]);
  }
  out += ']';
  return out;
}

DistributedSampler<TorchRandperm> make_sampler(const Row& row, std::uint64_t seed, std::uint64_t epoch) {
  DistributedSampler<TorchRandperm> sampler(
      row.n, World(row.rank, row.world_size),
      SamplerOptions().with_shuffle(row.shuffle).with_seed(seed).with_tail(row.drop_last ? Tail::drop : Tail::pad));
  sampler.set_epoch(epoch);
  return sampler;
}

/// Compares a sampler's output with torch's recorded output in `expected`; empty when equal.
/// `got` receives the sampler's indices.
std::string compare(const Row& expected, const DistributedSampler<TorchRandperm>& sampler,
                    std::vector<std::uint64_t>& got) {
  got = sampler.indices();
  std::ostringstream why;
  if (sampler.size() != expected.count || got.size() != expected.count) {
    why << "size(): torch " << expected.count << ", got " << sampler.size() << " (" << got.size() << " indices)";
    return why.str();
  }
  if (expected.kind == "list") {
    if (got != expected.values) {
      why << "indices: torch " << join(expected.values, 0, expected.values.size()) << ", got "
          << join(got, 0, got.size());
    }
    return why.str();
  }
  const auto k = static_cast<std::size_t>(expected.edge);
  const std::vector<std::uint64_t> first(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(k));
  const std::vector<std::uint64_t> last(got.end() - static_cast<std::ptrdiff_t>(k), got.end());
  const std::vector<std::uint64_t> torch_first(expected.values.begin(),
                                               expected.values.begin() + static_cast<std::ptrdiff_t>(k));
  const std::vector<std::uint64_t> torch_last(expected.values.begin() + static_cast<std::ptrdiff_t>(k),
                                              expected.values.end());
  if (first != torch_first) {
    why << "first " << k << ": torch " << join(torch_first, 0, k) << ", got " << join(first, 0, k) << "; ";
  }
  if (last != torch_last) {
    why << "last " << k << ": torch " << join(torch_last, 0, k) << ", got " << join(last, 0, k) << "; ";
  }
  const std::uint64_t h = order_digest(got);
  if (h != expected.digest) why << "digest: torch " << std::hex << expected.digest << ", got " << h << std::dec;
  return why.str();
}

/// Checks is_padding on every slot of a sampler that matched `expected`; empty when right.
/// torch extends the epoch's order to num_samples * W positions by wrapping around and
/// gives rank r positions r, r + W, ...: slot i is padding iff r + i W >= N (pad tail).
std::string compare_padding(const Row& expected, const DistributedSampler<TorchRandperm>& sampler) {
  std::ostringstream why;
  std::uint64_t flagged = 0;
  for (std::uint64_t i = 0; i < sampler.size(); ++i) {
    const bool padding = !expected.drop_last && expected.rank + i * expected.world_size >= expected.n;
    const bool got = sampler.is_padding(i);
    flagged += got ? 1u : 0u;
    if (got != padding && why.tellp() == 0) {
      why << "is_padding(" << i << ") is " << got << ", expected " << padding << "; ";
    }
  }
  // torch's count fixes the rank's padding: num_samples minus the rank's share of N.
  const std::uint64_t share =
      expected.n > expected.rank ? (expected.n - expected.rank + expected.world_size - 1) / expected.world_size : 0;
  const std::uint64_t torch_padding = expected.drop_last ? 0 : expected.count - share;
  if (flagged != torch_padding) why << flagged << " slots flagged, torch's count implies " << torch_padding;
  return why.str();
}

/// Reports the first few failures in full and counts the rest, so one broken engine
/// does not print 40000 messages.
class Mismatches {
 public:
  void add(const std::string& what) {
    if (count_++ < 20) FAIL_CHECK(what);
  }
  [[nodiscard]] std::uint64_t count() const { return count_; }

 private:
  std::uint64_t count_ = 0;
};

std::vector<std::uint64_t> values_of(const TorchRandperm& p) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = 0; i < p.size(); ++i) out.push_back(p(i));
  return out;
}

}  // namespace

TEST_CASE("the torch golden file is present, well formed and complete", "[golden][torch]") {
  const Golden& g = golden();
  INFO("golden file: " << g.path << " (regenerate with /usr/bin/python3 tests/golden/make_torch_golden.py)");
  REQUIRE(g.opened);
  for (std::size_t i = 0; i < g.parse_errors.size() && i < 10; ++i) UNSCOPED_INFO(g.parse_errors[i]);
  REQUIRE(g.parse_errors.empty());
  REQUIRE(g.has_end);
  REQUIRE(g.randperm.size() == expected_randperm_rows);
  REQUIRE(g.list_rows == expected_list_rows);
  REQUIRE(g.digest_rows == expected_digest_rows);
  REQUIRE(g.error.size() == expected_error_rows);
  CHECK(g.end_counts[0] == expected_randperm_rows);
  CHECK(g.end_counts[1] == expected_list_rows);
  CHECK(g.end_counts[2] == expected_digest_rows);
  CHECK(g.end_counts[3] == expected_error_rows);
}

TEST_CASE("DistributedSampler<TorchRandperm> yields torch's DistributedSampler indices on every golden row",
          "[golden][torch]") {
  // One pass builds each row's sampler once (a TorchRandperm of up to 100003 values) and
  // checks its indices against torch and its padding flags against torch's layout.
  const Golden& g = golden();
  REQUIRE(g.opened);
  REQUIRE(g.sampler.size() == expected_list_rows + expected_digest_rows);

  Mismatches mismatches, padding_mismatches;
  std::vector<std::uint64_t> got;
  std::uint64_t large_rows = 0, checked = 0;
  for (const Row& row : g.sampler) {
    if (row.n > 4096 && large_rows++ % 8 != 0 && !check_every_large_row) continue;
    ++checked;
    const auto sampler = make_sampler(row, row.seed, row.epoch);
    const std::string why = compare(row, sampler, got);
    if (!why.empty()) {
      mismatches.add(row.describe() + ": " + why);
      continue;
    }
    const std::string padding_why = compare_padding(row, sampler);
    if (!padding_why.empty()) padding_mismatches.add(row.describe() + ": " + padding_why);
  }
  CHECK(mismatches.count() == 0);
  CHECK(padding_mismatches.count() == 0);
  CHECK(checked == (check_every_large_row ? g.sampler.size() : g.sampler.size() - large_rows + (large_rows + 7) / 8));
}

TEST_CASE("is_padding flags exactly the duplicates in torch's full lists", "[golden][torch]") {
  const Golden& g = golden();
  REQUIRE(g.opened);
  REQUIRE(!g.sampler.empty());
  Mismatches mismatches;

  // From torch's full lists: across the ranks of one configuration, the slots not
  // flagged as padding hold every index of [0, N) exactly once (pad), or distinct
  // indices, N - N mod W of them (drop); the flagged ones are duplicates.
  using Config = std::tuple<std::uint64_t, std::uint64_t, bool, bool, std::string, std::uint64_t>;
  std::map<Config, std::vector<const Row*>> configs;
  for (const Row& row : g.sampler) {
    if (row.kind == "list") {
      configs[Config{row.n, row.world_size, row.shuffle, row.drop_last, row.seed_text, row.epoch}].push_back(&row);
    }
  }
  REQUIRE(!configs.empty());
  for (const auto& [config, rows] : configs) {
    const Row& first = *rows.front();
    if (rows.size() != first.world_size) {
      mismatches.add(first.describe() + ": golden file lacks some ranks of this configuration");
      continue;
    }
    std::multiset<std::uint64_t> real, padded;
    for (const Row* row : rows) {
      const auto sampler = make_sampler(*row, row->seed, row->epoch);
      if (sampler.size() != row->count) continue;
      for (std::uint64_t i = 0; i < row->count; ++i) {
        (sampler.is_padding(i) ? padded : real).insert(row->values[static_cast<std::size_t>(i)]);
      }
    }
    const std::uint64_t expected_real = first.drop_last ? first.n - first.n % first.world_size : first.n;
    const std::set<std::uint64_t> distinct(real.begin(), real.end());
    bool ok = real.size() == expected_real && distinct.size() == real.size() &&
              (distinct.empty() || *distinct.rbegin() < first.n);
    for (const std::uint64_t p : padded) ok = ok && distinct.count(p) == 1;
    if (!ok) {
      mismatches.add(first.describe() + ": unflagged slots of torch's lists are not each index once (" +
                     std::to_string(real.size()) + " unflagged, " + std::to_string(distinct.size()) + " distinct, " +
                     std::to_string(padded.size()) + " flagged)");
    }
  }
  CHECK(mismatches.count() == 0);
}

TEST_CASE("where torch overflows (seed + epoch >= 2^64) distsampler wraps mod 2^64 and matches torch's wrapped rows",
          "[golden][torch]") {
  // torch raises "Overflow when unpacking long" for seed 2^64 - 1 at epoch e >= 1
  // because the manual seed seed + epoch no longer fits in uint64. distsampler documents
  // that it takes seed + epoch mod 2^64 instead: (2^64 - 1) + e = e - 1 (mod 2^64). torch
  // did produce that generator seed in two other ways, and both rows are in the file:
  //   seed -1 at epoch e  (manual_seed(-1 + e) = manual_seed(e - 1)), and
  //   seed  0 at epoch e - 1.
  // So the wrapped output must equal both of those torch outputs.
  const Golden& g = golden();
  REQUIRE(g.opened);
  REQUIRE(g.error.size() == expected_error_rows);

  std::map<std::string, const Row*> by_key;
  auto key = [](const Row& r, const std::string& seed_text, std::uint64_t epoch) {
    return std::to_string(r.n) + ' ' + std::to_string(r.world_size) + ' ' + std::to_string(r.rank) + ' ' +
           (r.shuffle ? '1' : '0') + ' ' + (r.drop_last ? '1' : '0') + ' ' + seed_text + ' ' + std::to_string(epoch);
  };
  for (const Row& row : g.sampler) by_key[key(row, row.seed_text, row.epoch)] = &row;

  Mismatches mismatches;
  std::vector<std::uint64_t> got;
  for (const Row& row : g.error) {
    // Only the documented overflow is an acceptable torch error.
    if (row.seed != seed_max || row.epoch == 0 || !row.shuffle || row.message.find("Overflow") == std::string::npos) {
      mismatches.add(row.describe() + ": unexpected torch error: " + row.message);
      continue;
    }
    const auto sampler = make_sampler(row, row.seed, row.epoch);
    for (const auto& [seed_text, epoch] : {std::pair<std::string, std::uint64_t>{"-1", row.epoch},
                                           std::pair<std::string, std::uint64_t>{"0", row.epoch - 1}}) {
      const auto found = by_key.find(key(row, seed_text, epoch));
      if (found == by_key.end()) {
        mismatches.add(row.describe() + ": golden file lacks torch's row for seed " + seed_text + " epoch " +
                       std::to_string(epoch));
        continue;
      }
      const std::string why = compare(*found->second, sampler, got);
      if (!why.empty()) mismatches.add(row.describe() + " vs " + found->second->describe() + ": " + why);
    }
  }
  CHECK(mismatches.count() == 0);
}

TEST_CASE("TorchRandperm equals torch.randperm on the golden rows", "[golden][torch]") {
  const Golden& g = golden();
  REQUIRE(g.opened);
  REQUIRE(g.randperm.size() == expected_randperm_rows);
  for (const Row& row : g.randperm) {
    INFO(row.describe());
    CHECK(values_of(TorchRandperm(row.n, row.seed, 0)) == row.values);
    // The manual seed is seed + epoch mod 2^64, so shifting seed into epoch changes nothing.
    CHECK(values_of(TorchRandperm(row.n, row.seed - 3, 3)) == row.values);
  }
}

TEST_CASE("torch's known small vectors hold", "[golden][torch]") {
  SECTION("randperm(10) with seed 42") {
    CHECK(values_of(TorchRandperm(10, 42, 0)) == std::vector<std::uint64_t>{2, 6, 1, 8, 4, 5, 0, 9, 3, 7});
  }
  SECTION("DistributedSampler(N=10, W=4, seed=42) at epoch 1") {
    const std::vector<std::vector<std::uint64_t>> expected = {{8, 5, 2}, {4, 1, 3}, {9, 6, 8}, {0, 7, 4}};
    for (std::uint64_t rank = 0; rank < 4; ++rank) {
      DistributedSampler<TorchRandperm> sampler(10, World(rank, 4), SamplerOptions().with_seed(42));
      sampler.set_epoch(1);
      INFO("rank " << rank);
      CHECK(sampler.size() == 3);
      CHECK(sampler.indices() == expected[static_cast<std::size_t>(rank)]);
      // 10 = 2 * 4 + 2: ranks 2 and 3 pad their third slot.
      CHECK(sampler.is_padding(2) == (rank >= 2));
    }
  }
}

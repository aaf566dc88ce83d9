// Benchmarks of the shard-file indexes: records/s and MB/s per format on generated files, and JSON Lines next to `wc -l`.
// SPDX-License-Identifier: MIT
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <sys/resource.h>
#include <sys/time.h>

#include <distsampler/detail/mix.hpp>
#include <distsampler/files/index_builder.hpp>

namespace {

namespace fs = std::filesystem;
namespace ds = distsampler;

void put_le(std::string& out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string tar_octal(std::uint64_t v, std::size_t width) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llo", static_cast<int>(width - 1), static_cast<unsigned long long>(v));
  return std::string(buf, width - 1) + '\0';
}

void tar_member(std::string& out, const std::string& name, std::size_t size, char fill) {
  std::string h(512, '\0');
  h.replace(0, name.size(), name);
  h.replace(124, 12, tar_octal(size, 12));
  h[156] = '0';
  h.replace(257, 8, std::string("ustar\0" "00", 8));
  h.replace(148, 8, std::string(8, ' '));
  unsigned sum = 0;
  for (const char c : h) sum += static_cast<unsigned char>(c);
  h.replace(148, 8, tar_octal(sum, 7) + ' ');
  out += h;
  out.append(size, fill);
  out.append((512 - size % 512) % 512, '\0');
}

// The generated shards, made once before the benchmarks run and removed after.
struct Corpus {
  fs::path dir;
  std::string jsonl, tar, megatron, npy, raw;

  Corpus() {
    dir = fs::temp_directory_path() /
          ("distsampler-bench-files-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir);
    ds::detail::SplitMix64 rng(42);
    // JSON Lines: 1.2 M lines of 20..220 bytes (about 150 MB).
    jsonl = (dir / "corpus.jsonl").string();
    {
      std::string out;
      const std::string text(256, 'a');
      for (std::uint64_t i = 0; i < 1200000; ++i) {
        out += "{\"id\": " + std::to_string(i) + ", \"text\": \"";
        out.append(text, 0, static_cast<std::size_t>(rng() % 200));
        out += "\"}\n";
      }
      write_file(jsonl, out);
    }
    // tar: 25,000 samples of a 1-3 KB .jpg and a 100-byte .json (about 100 MB).
    tar = (dir / "corpus.tar").string();
    {
      std::string out;
      for (std::uint64_t i = 0; i < 25000; ++i) {
        const std::string key = "train/" + std::to_string(1000000 + i);
        tar_member(out, key + ".jpg", 1024 + static_cast<std::size_t>(rng() % 2048), 'j');
        tar_member(out, key + ".json", 100, 'x');
      }
      out.append(1024, '\0');
      write_file(tar, out);
    }
    // Megatron: 1 M sequences of 8..56 uint16 tokens (about 64 MB of .bin, 12 MB of .idx).
    megatron = (dir / "corpus.idx").string();
    {
      const std::uint64_t n = 1000000;
      std::vector<std::uint64_t> sizes(n);
      std::uint64_t tokens = 0;
      for (auto& s : sizes) tokens += s = 8 + rng() % 49;
      std::string idx("MMIDIDX\0\0", 9);
      put_le(idx, 1, 8);
      idx += '\x08';
      put_le(idx, n, 8);
      put_le(idx, n + 1, 8);
      for (const auto s : sizes) put_le(idx, s, 4);
      std::uint64_t at = 0;
      for (const auto s : sizes) {
        put_le(idx, at, 8);
        at += 2 * s;
      }
      for (std::uint64_t d = 0; d <= n; ++d) put_le(idx, d, 8);
      write_file(megatron, idx);
      write_file((dir / "corpus.bin").string(), std::string(static_cast<std::size_t>(2 * tokens), '\x01'));
    }
    // .npy: 1 M rows of 16 float32 (64 MB).
    npy = (dir / "corpus.npy").string();
    {
      std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 16), }";
      while ((10 + header.size() + 1) % 64 != 0) header += ' ';
      header += '\n';
      std::string out("\x93NUMPY\x01\x00", 8);
      put_le(out, header.size(), 2);
      out += header;
      out.append(std::size_t{1000000} * 64, '\0');
      write_file(npy, out);
    }
    // Raw token file: 25 M uint32 tokens (100 MB), documents of 1..2000 tokens ending with eos 0.
    raw = (dir / "corpus-raw.npy").string();
    {
      std::string out;
      out.reserve(std::size_t{100} << 20);
      std::uint64_t t = 0;
      while (t < 25000000) {
        const std::uint64_t len = 1 + rng() % 2000;
        for (std::uint64_t k = 0; k + 1 < len && t < 25000000; ++k, ++t) put_le(out, 1 + (rng() % 50000), 4);
        if (t < 25000000) {
          put_le(out, 0, 4);
          ++t;
        }
      }
      write_file(raw, out);
    }
  }
  ~Corpus() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

Corpus* corpus = nullptr;

std::uint64_t bytes_of(const ds::ShardIndex& x) {
  std::uint64_t b = 0;
  for (const auto& s : x.sources) b += s.size;
  return b;
}

void index_benchmark(benchmark::State& state, const std::string& path, ds::ShardFormat format,
                     std::string_view dtype = {}, std::uint64_t eos = 0) {
  std::uint64_t records = 0, bytes = 0;
  for (auto _ : state) {
    const ds::ShardIndex x = ds::index_file(path, format, dtype, eos);
    records += x.num_records();
    bytes += bytes_of(x);
    benchmark::DoNotOptimize(x.records.data());
  }
  state.counters["records/s"] = benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  // The dataset's size (every file the index covers) and the records of one index.
  state.counters["MB"] = static_cast<double>(bytes) / 1e6 / static_cast<double>(state.iterations());
  state.counters["records"] = static_cast<double>(records) / static_cast<double>(state.iterations());
}

void BM_IndexJsonl(benchmark::State& state) { index_benchmark(state, corpus->jsonl, ds::ShardFormat::jsonl); }
void BM_IndexTar(benchmark::State& state) { index_benchmark(state, corpus->tar, ds::ShardFormat::tar); }
void BM_IndexMegatron(benchmark::State& state) { index_benchmark(state, corpus->megatron, ds::ShardFormat::megatron); }
void BM_IndexNpy(benchmark::State& state) { index_benchmark(state, corpus->npy, ds::ShardFormat::npy); }
void BM_IndexRaw(benchmark::State& state) {
  index_benchmark(state, corpus->raw, ds::ShardFormat::raw, "uint32", 0);
}

// CPU seconds (user + system) used so far by this process's finished children.
double children_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

// `wc -l` on the same JSON Lines file (a child process per run; its start-up is a millisecond of the total).
// Its CPU time is the child's, reported as cpu_ms per run (Google Benchmark's CPU column is this process's).
void BM_WcLines(benchmark::State& state) {
  const std::string command = "wc -l < '" + corpus->jsonl + "' > /dev/null";
  const auto bytes = static_cast<std::int64_t>(fs::file_size(corpus->jsonl));
  const double cpu_before = children_cpu_seconds();
  for (auto _ : state) {
    if (std::system(command.c_str()) != 0) state.SkipWithError("wc -l failed");
  }
  state.SetBytesProcessed(bytes * static_cast<std::int64_t>(state.iterations()));
  state.counters["cpu_ms"] =
      1000.0 * (children_cpu_seconds() - cpu_before) / static_cast<double>(state.iterations());
}

// Reading the cached index of the JSON Lines file instead of scanning it.
void BM_LoadCachedJsonl(benchmark::State& state) {
  ds::IndexOptions o;
  o.cache_dir = (corpus->dir / "cache").string();
  o.cache = ds::CacheMode::rebuild;
  (void)ds::index_shard(corpus->jsonl, o);
  o.cache = ds::CacheMode::use;
  std::uint64_t records = 0;
  for (auto _ : state) {
    const ds::ShardIndex x = ds::index_shard(corpus->jsonl, o);
    if (!x.from_cache) state.SkipWithError("the index was not read from the cache");
    records += x.num_records();
  }
  state.counters["records/s"] = benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_IndexJsonl)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_WcLines)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_IndexTar)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_IndexMegatron)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_IndexNpy)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_IndexRaw)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_LoadCachedJsonl)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Corpus files;
  corpus = &files;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  corpus = nullptr;
  return 0;
}

// Example: loader workers that prefetch each window of their stream from shard files with few large reads.
// SPDX-License-Identifier: MIT
//
//   shard_prefetch DIR
//
// Writes 300 small binary shard files to DIR (created if missing; each record is 8 bytes,
// the little-endian global index of the sample it stores), then runs a job of 2 nodes x 2
// ranks x 3 workers in one process, one thread per (rank, worker). Each worker serves its
// stream a window of 256 samples at a time: it asks prefetch_plan for the window, issues
// one positioned read per range (ranges of one shard a few records apart are joined), and
// then serves every sample of the window from the buffers it read. It checks that every
// sample is found in the prefetched data and holds the expected index, and, over the job,
// that every sample of the dataset is served exactly once (padding aside). Prints
// "shard prefetch: OK ..." and exits 0 when all holds.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <distsampler/shards/streaming_shard_sampler.hpp>

namespace {

namespace ds = distsampler;

constexpr std::uint64_t nodes = 2, per_node = 2, workers = 3, window = 256, max_gap = 8;

std::vector<std::uint64_t> layout() {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = 0; s < 300; ++s) sizes.push_back(s % 7 == 3 ? 0 : 100 + (s * 37) % 300);
  return sizes;
}

std::string shard_path(const std::string& dir, std::uint64_t shard) {
  char name[32];
  std::snprintf(name, sizeof name, "/shard-%05llu.bin", static_cast<unsigned long long>(shard));
  return dir + name;
}

void put_u64(unsigned char* at, std::uint64_t v) {
  for (int b = 0; b < 8; ++b) at[b] = static_cast<unsigned char>(v >> (8 * b));
}
std::uint64_t get_u64(const unsigned char* at) {
  std::uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<std::uint64_t>(at[b]) << (8 * b);
  return v;
}

bool write_dataset(const std::string& dir, const std::vector<std::uint64_t>& sizes) {
  std::uint64_t index = 0;
  for (std::uint64_t s = 0; s < sizes.size(); ++s) {
    std::vector<unsigned char> bytes(static_cast<std::size_t>(sizes[s] * 8));
    for (std::uint64_t i = 0; i < sizes[s]; ++i) put_u64(&bytes[static_cast<std::size_t>(i * 8)], index++);
    std::ofstream out(shard_path(dir, s), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) return false;
  }
  return true;
}

struct WorkerReport {
  std::uint64_t samples = 0, reads = 0, bytes = 0, errors = 0;
  std::vector<std::uint64_t> served;  // global indices served (padding excluded)
  std::string first_error;
};

void fail(WorkerReport& r, const std::string& what) {
  if (r.errors++ == 0) r.first_error = what;
}

// One loader worker: prefetch a window with the plan, then serve the window's samples.
WorkerReport run_worker(const std::string& dir, const ds::StreamingShardSampler& sampler, std::uint64_t worker) {
  WorkerReport report;
  const std::uint64_t size = sampler.worker_size(worker);
  std::vector<ds::ShardSample> samples(static_cast<std::size_t>(window));
  for (std::uint64_t first = 0; first < size; first += window) {
    const std::uint64_t count = std::min(window, size - first);
    // (shard, begin) -> the bytes of records [begin, end).
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<unsigned char>> buffers;
    for (const ds::ShardRange& r : sampler.prefetch_plan(worker, first, count, max_gap)) {
      std::ifstream in(shard_path(dir, r.shard), std::ios::binary);
      in.seekg(static_cast<std::streamoff>(r.begin * 8));
      std::vector<unsigned char> bytes(static_cast<std::size_t>((r.end - r.begin) * 8));
      in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!in) fail(report, "short read of shard " + std::to_string(r.shard));
      ++report.reads;
      report.bytes += bytes.size();
      buffers.emplace(std::make_pair(r.shard, r.begin), std::move(bytes));
    }
    sampler.fill(worker, first, count, samples.data());
    for (std::uint64_t i = 0; i < count; ++i) {
      const ds::ShardSample& x = samples[static_cast<std::size_t>(i)];
      // The prefetched range holding (shard, offset): the last one beginning at or before it.
      auto it = buffers.upper_bound(std::make_pair(x.shard, x.offset));
      if (it == buffers.begin() || std::prev(it)->first.first != x.shard) {
        fail(report, "sample " + std::to_string(x.index) + " was not prefetched");
        continue;
      }
      --it;
      const std::uint64_t at = x.offset - it->first.second;
      if ((at + 1) * 8 > it->second.size()) {
        fail(report, "sample " + std::to_string(x.index) + " lies past its prefetched range");
        continue;
      }
      const std::uint64_t stored = get_u64(&it->second[static_cast<std::size_t>(at * 8)]);
      if (stored != x.index)
        fail(report, "record of sample " + std::to_string(x.index) + " holds " + std::to_string(stored));
      ++report.samples;
      if (!x.is_padding) report.served.push_back(x.index);
    }
  }
  return report;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: shard_prefetch DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);
  const auto sizes = layout();
  if (!write_dataset(dir, sizes)) {
    std::cerr << "shard prefetch: cannot write the shards to " << dir << '\n';
    return 1;
  }
  const std::uint64_t world_size = nodes * per_node;
  std::vector<ds::StreamingShardSampler> ranks;
  for (std::uint64_t r = 0; r < world_size; ++r) {
    // 64 lanes of blocks of 16 suit this small dataset (about 1000 samples per lane).
    const auto options =
        ds::ShardSamplerOptions().with_seed(11).with_canonical_streams(64).with_max_open_shards(16).with_num_workers(
            workers);
    ranks.emplace_back(sizes, ds::World(r, world_size, r % per_node, per_node), options);
    ranks.back().set_epoch(2);
  }
  std::vector<WorkerReport> reports(static_cast<std::size_t>(world_size * workers));
  std::vector<std::thread> threads;
  for (std::uint64_t r = 0; r < world_size; ++r) {
    for (std::uint64_t w = 0; w < workers; ++w) {
      threads.emplace_back([&, r, w] {
        reports[static_cast<std::size_t>(r * workers + w)] = run_worker(dir, ranks[static_cast<std::size_t>(r)], w);
      });
    }
  }
  for (auto& t : threads) t.join();
  std::uint64_t n = 0, samples = 0, reads = 0, bytes = 0, errors = 0;
  for (const auto s : sizes) n += s;
  std::vector<std::uint64_t> times(static_cast<std::size_t>(n), 0);
  for (const auto& rep : reports) {
    samples += rep.samples;
    reads += rep.reads;
    bytes += rep.bytes;
    errors += rep.errors;
    if (rep.errors != 0) std::cerr << "shard prefetch: " << rep.first_error << '\n';
    for (const auto x : rep.served) ++times[static_cast<std::size_t>(x)];
  }
  std::uint64_t wrong = 0;
  for (const auto t : times) wrong += t == 1 ? 0u : 1u;
  if (errors != 0 || wrong != 0) {
    std::cerr << "shard prefetch: FAILED: " << errors << " bad samples, " << wrong
              << " dataset samples not served exactly once\n";
    return 1;
  }
  std::printf(
      "shard prefetch: OK %llu samples of %llu shards served by %llu workers from %llu reads (%.1f samples "
      "per read, %.2fx the bytes used)\n",
      static_cast<unsigned long long>(samples), static_cast<unsigned long long>(sizes.size()),
      static_cast<unsigned long long>(world_size * workers), static_cast<unsigned long long>(reads),
      static_cast<double>(samples) / static_cast<double>(reads),
      static_cast<double>(bytes) / static_cast<double>(samples * 8));
  return 0;
}

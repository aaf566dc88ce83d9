// Example: write a small sharded dataset, read one rank's streams from the files, and check what all ranks read.
// SPDX-License-Identifier: MIT
//
//   shard_reader write DIR                       writes DIR/shard-NNNNN.txt (one record per line)
//   shard_reader read DIR SEGMENT WORKERS [STOP [STATE_IN]]
//        run as one rank (RANK / WORLD_SIZE from the environment); one thread per worker
//        reads its stream's records from the files into DIR/read-SEGMENT-r<rank>-w<worker>.txt.
//        STOP: "all", or BxS: stop where a data loader taking batches of S from the workers
//        in turn has yielded B batches (so workers stop at different counts, anywhere in a
//        block), and (rank 0) save the state to DIR/state-SEGMENT.txt.
//        STATE_IN: resume from a saved state (any world size and worker count).
//   shard_reader check DIR FILE...               reads the given read files and prints "VERDICT: ..."
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <distsampler/shards/loader_round_robin.hpp>

namespace {

// Deliberately uneven: an empty shard, a tiny one, a large one; fewer shards than some worlds' consumers.
const std::vector<std::uint64_t> shard_sizes{13, 0, 140, 5, 22, 1, 61, 9};

distsampler::ShardSamplerOptions demo_options() {
  distsampler::ShardSamplerOptions o;
  o.seed = 2024;
  o.tail = distsampler::Tail::pad;
  o.canonical_streams = 8;
  o.max_open_shards = 4;
  o.run_length = 4;
  return o;
}

std::string shard_path(const std::string& dir, std::uint64_t shard) {
  char name[32];
  std::snprintf(name, sizeof name, "/shard-%05llu.txt", static_cast<unsigned long long>(shard));
  return dir + name;
}

int write_dataset(const std::string& dir) {
  for (std::uint64_t s = 0; s < shard_sizes.size(); ++s) {
    std::ofstream out(shard_path(dir, s));
    for (std::uint64_t i = 0; i < shard_sizes[s]; ++i) out << "record shard=" << s << " line=" << i << '\n';
    if (!out) {
      std::cerr << "cannot write " << shard_path(dir, s) << '\n';
      return 1;
    }
  }
  return 0;
}

// Reads records by (shard, line), keeping only the files of the ranges in use open.
class ShardFiles {
 public:
  explicit ShardFiles(std::string dir) : dir_(std::move(dir)) {}
  const std::string& record(std::uint64_t shard, std::uint64_t line) {
    auto it = open_.find(shard);
    if (it == open_.end()) {
      std::vector<std::string> lines;
      std::ifstream in(shard_path(dir_, shard));
      for (std::string l; std::getline(in, l);) lines.push_back(l);
      it = open_.emplace(shard, std::move(lines)).first;
    }
    return it->second.at(static_cast<std::size_t>(line));
  }
  void close_all_but(const std::vector<std::uint64_t>& keep) {
    for (auto it = open_.begin(); it != open_.end();) {
      bool wanted = false;
      for (auto k : keep) wanted = wanted || k == it->first;
      it = wanted ? std::next(it) : open_.erase(it);
    }
  }

 private:
  std::string dir_;
  std::map<std::uint64_t, std::vector<std::string>> open_;
};

int read_rank(const std::string& dir, const std::string& segment, std::uint64_t workers, const std::string& stop,
              const std::string& state_in) {
  const auto world = distsampler::World::from_env();
  distsampler::StreamingShardSampler sampler(shard_sizes, world, demo_options().with_num_workers(workers));
  if (!state_in.empty()) {
    std::ifstream in(state_in);
    std::string text;
    std::getline(in, text);
    sampler.resume(distsampler::SamplerState::from_text(text));
  } else {
    sampler.set_epoch(3);
  }
  // How far each worker reads: all of its stream, or what the loader handed out.
  std::vector<std::uint64_t> done;
  std::uint64_t batches = 0, batch_size = 0;
  if (stop == "all") {
    for (std::uint64_t w = 0; w < workers; ++w) done.push_back(sampler.worker_size(w));
  } else {
    const auto x = stop.find('x');
    if (x == std::string::npos) throw std::invalid_argument("STOP must be \"all\" or BxS, got \"" + stop + "\"");
    batches = std::stoull(stop.substr(0, x));
    batch_size = std::stoull(stop.substr(x + 1));
    done = distsampler::loader_worker_done(sampler, batches, batch_size);
  }
  std::vector<std::thread> threads;
  for (std::uint64_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      ShardFiles files(dir);
      const std::uint64_t n = done[static_cast<std::size_t>(w)];
      std::ofstream out(dir + "/read-" + segment + "-r" + std::to_string(world.rank) + "-w" + std::to_string(w) +
                        ".txt");
      // Follow the read plan a block at a time: the loader knows which files to keep open.
      for (std::uint64_t i = 0; i < n; i += sampler.block_size()) {
        std::vector<std::uint64_t> keep;
        for (const auto& r : sampler.read_plan(w, i, sampler.block_size())) keep.push_back(r.shard);
        files.close_all_but(keep);
        for (std::uint64_t j = i; j < std::min(n, i + sampler.block_size()); ++j) {
          const auto x = sampler.sample(w, j);
          out << (x.is_padding ? "pad " : "new ") << files.record(x.shard, x.offset) << '\n';
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  if (stop != "all" && world.rank == 0) {
    std::ofstream(dir + "/state-" + segment + ".txt")
        << distsampler::state_after_batches(sampler, batches, batch_size).to_text() << '\n';
  }
  std::cout << "rank " << world.rank << " of " << world.world_size << ": " << workers << " workers read";
  for (const auto d : done) std::cout << ' ' << d;
  std::cout << " of " << sampler.size() << " samples" << (state_in.empty() ? "" : " (resumed)") << '\n';
  return 0;
}

int check(const std::string& dir, const std::vector<std::string>& files) {
  std::map<std::string, std::uint64_t> seen;
  std::uint64_t padding = 0;
  std::map<std::string, std::uint64_t> per_file;
  for (const auto& f : files) {
    std::ifstream in(dir + "/" + f);
    for (std::string line; std::getline(in, line);) {
      ++per_file[f];
      if (line.compare(0, 4, "pad ") == 0) {
        ++padding;
      } else {
        ++seen[line.substr(4)];
      }
    }
  }
  std::uint64_t total = 0, missing = 0, duplicates = 0;
  for (std::uint64_t s = 0; s < shard_sizes.size(); ++s) {
    for (std::uint64_t i = 0; i < shard_sizes[s]; ++i) {
      ++total;
      const auto it = seen.find("record shard=" + std::to_string(s) + " line=" + std::to_string(i));
      if (it == seen.end()) {
        ++missing;
      } else if (it->second > 1) {
        duplicates += it->second - 1;
      }
    }
  }
  const bool ok = missing == 0 && duplicates == 0 && seen.size() == total;
  std::cout << "VERDICT: " << (ok ? "OK" : "FAILED") << " records " << total << " read " << seen.size() << " missing "
            << missing << " duplicates " << duplicates << " flagged padding " << padding << " files " << per_file.size()
            << '\n';
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "write") return write_dataset(args[1]);
  if (args.size() >= 4 && args.size() <= 6 && args[0] == "read") {
    return read_rank(args[1], args[2], std::stoull(args[3]), args.size() >= 5 ? args[4] : "all",
                     args.size() == 6 ? args[5] : "");
  }
  if (args.size() >= 3 && args[0] == "check") return check(args[1], {args.begin() + 2, args.end()});
  std::cerr << "usage: shard_reader write DIR | read DIR SEGMENT WORKERS [STOP [STATE]] | check DIR FILE...\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "shard_reader: " << e.what() << '\n';
  return 1;
}

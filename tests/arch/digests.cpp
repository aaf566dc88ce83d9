// distsampler tests: one digest line per sampler family, built for several architectures whose outputs must agree.
// SPDX-License-Identifier: MIT
//
// Standard library and the core headers only, so it cross-compiles without fmt or Catch2.
// tests/arch/compare.sh builds it natively, with DISTSAMPLER_PORTABLE_U128, for i686 and
// for s390x (big-endian) and compares the printed lines: no expected value is stored.
#include <distsampler/distsampler.hpp>
#include <distsampler/files/index_builder.hpp>
#include <distsampler/files/index_cache.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace ds = distsampler;

namespace {

// FNV-1a over 64-bit values taken as 8 little-endian bytes, so the digest of a sequence of
// values does not depend on the machine's byte order or on the width of std::size_t.
class Digest {
 public:
  void add(std::uint64_t v) {
    for (int i = 0; i < 64; i += 8) byte(static_cast<std::uint8_t>(v >> i));
  }
  void add(const std::string& text) {
    add(static_cast<std::uint64_t>(text.size()));
    for (const char c : text) byte(static_cast<std::uint8_t>(c));
  }
  void add(const std::vector<std::uint8_t>& bytes) {
    add(static_cast<std::uint64_t>(bytes.size()));
    for (const std::uint8_t b : bytes) byte(b);
  }
  void add_all(const std::vector<std::uint64_t>& values) {
    add(static_cast<std::uint64_t>(values.size()));
    for (const std::uint64_t v : values) add(v);
  }
  void print(const char* family) const {
    std::printf("%s: %016llx (%llu bytes)\n", family, static_cast<unsigned long long>(h_),
                static_cast<unsigned long long>(count_));
  }

 private:
  void byte(std::uint8_t b) {
    h_ = (h_ ^ b) * 0x100000001b3u;
    ++count_;
  }
  std::uint64_t h_ = 0xcbf29ce484222325u;
  std::uint64_t count_ = 0;
};

// Pseudo-random values of a fixed seed, identical everywhere (SplitMix64).
std::vector<std::uint64_t> draws(std::uint64_t seed, std::size_t n, std::uint64_t bound) {
  ds::detail::SplitMix64 g(seed);
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(g() % bound);
  return out;
}

std::vector<std::uint32_t> lengths(std::uint64_t seed, std::size_t n, std::uint32_t longest) {
  std::vector<std::uint32_t> out;
  for (const std::uint64_t v : draws(seed, n, longest)) out.push_back(static_cast<std::uint32_t>(v + 1));
  return out;
}

const ds::Tail tails[] = {ds::Tail::pad, ds::Tail::drop, ds::Tail::uneven};

template <class Permutation>
void distributed(Digest& d, bool shuffle) {
  for (const std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1000}, std::uint64_t{1003},
                                (std::uint64_t{1} << 40) + 7, UINT64_MAX}) {
    if (n > (std::uint64_t{1} << 20) && !shuffle) continue;
    for (const std::uint64_t w : {1u, 3u, 4u}) {
      for (const ds::Tail tail : tails) {
        for (const std::uint64_t epoch : {0u, 1u}) {
          ds::DistributedSampler<Permutation> s(
              n, ds::World(w - 1, w), ds::SamplerOptions().with_shuffle(shuffle).with_seed(7).with_tail(tail));
          s.set_epoch(epoch);
          d.add(s.size());
          const std::uint64_t shown = s.size() < 300 ? s.size() : 300;
          for (std::uint64_t i = 0; i < shown; ++i) {
            d.add(s[i]);
            d.add(s.is_padding(i));
          }
          if (s.size() > 0) d.add(s[s.size() - 1]);
        }
      }
    }
  }
}

void distributed_torch(Digest& d) {
  // Torch's exact order: both generations' large-n rules over small n, materialised.
  for (const std::uint64_t n : {10u, 1000u, 4099u}) {
    for (const std::uint64_t epoch : {0u, 1u, 2u}) {
      ds::DistributedSampler<ds::TorchRandperm> s(n, ds::World(1, 4), ds::SamplerOptions().with_seed(42));
      s.set_epoch(epoch);
      d.add_all(s.indices());
    }
  }
}

void batches(Digest& d, ds::Tail tail) {
  for (const std::uint64_t n : {203u, 1000u}) {
    for (const std::uint64_t w : {1u, 3u}) {
      const auto options =
          ds::BatchSamplerOptions().with_micro_batch_size(4).with_accumulation_steps(2).with_seed(5).with_tail(tail);
      for (std::uint64_t r = 0; r < w; ++r) {
        ds::DistributedBatchSampler<> b(n, ds::World(r, w), options);
        b.set_epoch(3);
        d.add(b.num_steps());
        for (std::uint64_t step = 0; step < b.num_steps(); ++step) {
          for (std::uint64_t k = 0; k < b.micro_batches_in_step(step); ++k) {
            const std::vector<std::uint64_t> mb = b.micro_batch(step, k);
            d.add_all(mb);
            for (std::uint64_t e = 0; e < mb.size(); ++e) d.add(b.is_padding(step, k, e));
          }
        }
        d.add(b.state(b.num_steps() / 2, 1).to_text());
      }
    }
  }
}

void weighted(Digest& d) {
  std::vector<double> weights;
  for (const std::uint64_t v : draws(11, 97, 1000)) weights.push_back(static_cast<double>(v) / 7.0 + 0.1);
  weights[3] = 0;
  for (const bool replacement : {true, false}) {
    for (const std::uint64_t w : {1u, 2u}) {
      for (std::uint64_t r = 0; r < w; ++r) {
        ds::WeightedSampler s(weights, ds::World(r, w),
                              ds::WeightedSamplerOptions()
                                  .with_num_samples(replacement ? 500 : 90)
                                  .with_replacement(replacement)
                                  .with_seed(3));
        for (const std::uint64_t epoch : {0u, 1u}) {
          s.set_epoch(epoch);
          d.add_all(s.indices());
        }
        d.add(s.state(5).to_text());
      }
    }
  }
}

void tokens(Digest& d) {
  const std::vector<std::uint32_t> lens = lengths(13, 700, 1500);
  for (const std::uint64_t w : {1u, 2u}) {
    for (std::uint64_t r = 0; r < w; ++r) {
      auto options = ds::TokenBatchOptions().with_max_tokens(4096).with_accumulation_steps(2).with_window(256);
      options.with_seed(9);
      const ds::TokenBatchSampler s(lens.size(), lens, ds::World(r, w), options);
      d.add(s.num_steps());
      for (std::uint64_t step = 0; step < s.num_steps(); ++step) {
        for (std::uint64_t k = 0; k < s.accumulation_steps(); ++k) {
          const ds::TokenMicroBatch b = s.micro_batch(step, k);
          d.add_all(b.indices);
          d.add(b.tokens);
          d.add(b.padded);
        }
      }
      d.add(s.state(s.num_steps() / 2).to_text());
    }
  }
}

void mixture_run(Digest& d, const ds::MixtureSampler& s, std::uint64_t max_steps) {
  d.add(s.num_steps());
  const std::uint64_t steps = s.num_steps() < max_steps ? s.num_steps() : max_steps;
  for (std::uint64_t step = 0; step < steps; ++step) {
    for (std::uint64_t k = 0; k < s.micro_batches_per_step(); ++k) {
      for (const ds::MixtureIndex& x : s.micro_batch(step, k)) {
        d.add(x.source);
        d.add(x.index);
      }
    }
  }
  d.add(s.state(steps / 2).to_text());
}

void mixtures(Digest& d) {
  const auto base = ds::MixtureOptions().with_seed(21).with_micro_batch_size(3).with_end(ds::MixtureEnd::all_seen);
  for (const std::uint64_t w : {1u, 2u}) {
    for (std::uint64_t r = 0; r < w; ++r) {
      mixture_run(d, ds::MixtureSampler({40, 25, 60}, {0.5, 0.2, 0.3}, ds::World(r, w), base), 1000);
      mixture_run(d,
                  ds::MixtureSampler({70, 33, 91, 12, 5}, {1.0 / 3, 0.1, 2.0 / 7, 0.05, 0.0}, ds::World(r, w),
                                     ds::MixtureOptions(base).with_schedule(
                                         {{4, {0.2, 0.2, 0.2, 0.2, 0.2}}, {9, {0.65, 0.05, 0.1, 0.1, 0.1}}})),
                  1000);
    }
  }
  // Counts near 2^64: the 128-bit count math with both limbs in use.
  const auto big = ds::MixtureOptions().with_seed(5).with_micro_batch_size(1000).with_end(ds::MixtureEnd::steps, 40);
  const std::vector<std::uint64_t> sizes{std::uint64_t{1} << 62, (std::uint64_t{1} << 61) + 3, 999983};
  const ds::MixtureSampler s(sizes, {0.61, 0.39 - 1e-9, 1e-9}, ds::World(0, 1),
                             ds::MixtureOptions(big).with_schedule({{7, {0.1, 0.8, 0.1}}}));
  mixture_run(d, s, 12);
  for (const std::uint64_t p : {UINT64_MAX / 3, UINT64_MAX - 5, std::uint64_t{1} << 63}) {
    for (std::size_t i = 0; i < sizes.size(); ++i) d.add(s.schedule().count(i, p, 77, false));
    const ds::MixtureSlot slot = s.schedule().locate(p, 77, false);
    d.add(slot.source);
    d.add(slot.ordinal);
  }
}

void shards(Digest& d) {
  const std::vector<std::uint64_t> sizes = draws(17, 30, 90);
  for (const std::uint64_t w : {1u, 2u}) {
    for (const ds::Tail tail : tails) {
      for (std::uint64_t r = 0; r < w; ++r) {
        ds::StreamingShardSampler s(sizes, ds::World(r, w),
                                    ds::ShardSamplerOptions().with_num_workers(2).with_seed(4).with_tail(tail));
        s.set_epoch(1);
        for (std::uint64_t worker = 0; worker < 2; ++worker) {
          for (const auto& sample : s.stream(worker)) {
            d.add(sample.shard);
            d.add(sample.offset);
            d.add(sample.index);
            d.add(sample.is_padding);
          }
          for (const ds::ShardRange& range : s.read_plan(worker)) {
            d.add(range.shard);
            d.add(range.begin);
            d.add(range.end);
          }
        }
        d.add(s.state(7).to_text());
      }
    }
  }
}

void packing(Digest& d, ds::PackMode mode) {
  const std::vector<std::uint32_t> lens = lengths(19, 600, 900);
  for (const std::uint64_t w : {1u, 2u}) {
    for (std::uint64_t r = 0; r < w; ++r) {
      ds::PackOptions o;
      o.with_seq_len(512).with_micro_batch_size(2).with_accumulation_steps(2);
      o.with_mode(mode).with_window(200, 16).with_seed(6);
      const ds::PackedSequenceSampler s(lens.size(), lens, ds::World(r, w), o);
      d.add(s.num_steps());
      ds::PackWindow cache;
      for (std::uint64_t step = 0; step < s.num_steps(); ++step) {
        for (std::uint64_t k = 0; k < s.micro_batches_in_step(step); ++k) {
          const ds::PackMicroBatch b = s.micro_batch(step, k, cache);
          d.add_all(b.sequence_begin);
          for (const ds::PackPiece& p : b.pieces) {
            d.add(p.document);
            d.add(p.offset);
            d.add(p.length);
          }
        }
      }
      d.add(s.state(s.num_steps() / 2, 1).to_text());
    }
  }
}

void streams(Digest& d) {
  // Shard s holds 3 + 5 s records, learnt only by reading; a record is kept when its hash says so.
  const std::uint64_t shards_count = 12;
  auto read = [](const ds::StreamRead& r) -> std::optional<std::uint64_t> {
    if (r.record >= 3 + 5 * r.shard) return std::nullopt;
    return ds::detail::mix64(r.shard << 32 ^ r.record ^ r.pass << 56) % 4 == 0 ? 0 : 1;
  };
  const std::uint64_t world = 2, workers = 2;
  std::vector<ds::StreamProgress> progress;
  for (std::uint64_t r = 0; r < world; ++r) {
    ds::StreamSampler s(shards_count, {}, 8, ds::World(r, world), workers);
    for (std::uint64_t w = 0; w < workers; ++w) {
      for (int batch = 0; batch < 30; ++batch) {
        for (const ds::StreamEmit& e : s.next(w, 4, read)) {
          d.add(e.pass);
          d.add(e.shard);
          d.add(e.record);
        }
      }
      progress.push_back(s.progress(w));
    }
  }
  ds::StreamPlan plan(shards_count, {}, 8, world * workers);
  const ds::StreamJobState state = ds::assemble_stream_state(plan, progress, 30);
  d.add(state.to_text());
  // Resumed on another world: the next micro-batches.
  ds::StreamSampler resumed(shards_count, {}, 8, ds::World(0, 3), 1, state);
  for (int batch = 0; batch < 10; ++batch) {
    for (const ds::StreamEmit& e : resumed.next(0, 4, read)) d.add(e.record);
  }
}

void states(Digest& d) {
  // The same states as text and as bytes, round-tripped.
  std::vector<ds::SamplerState> all;
  const auto options = ds::SamplerOptions().with_seed(12);
  all.push_back(ds::DistributedSampler<>(1003, ds::World(1, 4), options).state(100));
  ds::DistributedSampler<> later(UINT64_MAX, ds::World(2, 3), options);
  later.set_epoch(UINT64_MAX - 1);
  all.push_back(later.state(123456789));
  all.push_back(ds::DistributedBatchSampler<>(500, ds::World(0, 2), ds::BatchSamplerOptions().with_micro_batch_size(3))
                    .state(4, 0));
  all.push_back(ds::MixtureSampler({40, 25}, {0.5, 0.5}, ds::World(0, 1), ds::MixtureOptions().with_micro_batch_size(2))
                    .state(3));
  for (const ds::SamplerState& s : all) {
    d.add(s.to_text());
    d.add(s.to_bytes());
    d.add(ds::SamplerState::from_text(s.to_text()).to_text());
    d.add(ds::SamplerState::from_bytes(s.to_bytes()).to_text());
  }
}

// Shard files written byte by byte (little-endian where the formats say so), then indexed:
// the records' spans, tar keys and members, dtypes and row shapes must not depend on the
// host's byte order or size_t. The index cache round-trips on each host too.
class Bytes {
 public:
  Bytes& le(std::uint64_t v, int width) {
    for (int i = 0; i < width; ++i) b.push_back(static_cast<char>(v >> (8 * i) & 0xffu));
    return *this;
  }
  Bytes& text(const std::string& t) {
    b += t;
    return *this;
  }
  void write(const std::string& path) const {
    std::ofstream f(path, std::ios::binary);
    f.write(b.data(), static_cast<std::streamsize>(b.size()));
  }
  std::string b;
};

// One ustar member: a 512-byte header (octal size, checksum) and its data padded to 512.
void tar_member(Bytes& out, const std::string& name, const std::string& data) {
  std::string h(512, '\0');
  std::memcpy(&h[0], name.data(), name.size());
  std::memcpy(&h[100], "0000644", 7);
  std::memcpy(&h[108], "0000000", 7);
  std::memcpy(&h[116], "0000000", 7);
  char field[13];
  std::snprintf(field, sizeof field, "%011llo", static_cast<unsigned long long>(data.size()));
  std::memcpy(&h[124], field, 11);
  std::memcpy(&h[136], "00000000000", 11);
  h[156] = '0';
  std::memcpy(&h[257], "ustar\0" "00", 8);
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (const char c : h) sum += static_cast<unsigned char>(c);
  std::snprintf(field, sizeof field, "%06o", sum);
  std::memcpy(&h[148], field, 7);  // six digits, then NUL; the space stays
  out.text(h).text(data).text(std::string((512 - data.size() % 512) % 512, '\0'));
}

void add_index(Digest& d, const ds::ShardIndex& x) {
  d.add(std::string(ds::format_name(x.format)));
  d.add(x.data_size);
  for (const ds::RecordSpan& r : x.records) {
    d.add(r.offset);
    d.add(r.size);
  }
  for (const std::string& k : x.keys) d.add(k);
  d.add_all(x.member_begin);
  for (const ds::TarMember& m : x.members) {
    d.add(m.suffix);
    d.add(m.offset);
    d.add(m.size);
  }
  d.add(x.dtype);
  d.add_all(x.row_shape);
}

bool files(Digest& d) {
  char dir_template[] = "/tmp/distsampler-digests-XXXXXX";
  const char* made = ::mkdtemp(dir_template);
  if (made == nullptr) return false;
  const std::string dir = made;
  const std::vector<std::uint64_t> sizes = draws(11, 9, 300);
  Bytes jsonl, idx, bin, npy, tar;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    jsonl.text("{\"id\": " + std::to_string(i) + ", \"text\": \"" + std::string(static_cast<std::size_t>(sizes[i] % 40), 'x') + "\"}\n");
  }
  idx.text(std::string("MMIDIDX\0\0", 9)).le(1, 8).le(4, 1).le(sizes.size(), 8).le(sizes.size() + 1, 8);
  std::uint64_t pointer = 0;
  for (const std::uint64_t s : sizes) idx.le(s + 1, 4);
  for (const std::uint64_t s : sizes) {
    idx.le(pointer, 8);
    pointer += (s + 1) * 4;
  }
  for (std::uint64_t i = 0; i <= sizes.size(); ++i) idx.le(i, 8);
  bin.text(std::string(static_cast<std::size_t>(pointer), '\1'));
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (7, 3), }";
  header += std::string(63 - (10 + header.size()) % 64, ' ') + "\n";
  npy.text("\x93NUMPY").le(1, 1).le(0, 1).le(header.size(), 2).text(header).text(std::string(7 * 3 * 4, '\2'));
  for (std::size_t i = 0; i < 5; ++i) {
    const std::string key = "sample" + std::to_string(i);
    tar_member(tar, key + ".txt", std::string(static_cast<std::size_t>(sizes[i]), 't'));
    tar_member(tar, key + ".cls", std::to_string(i % 3));
  }
  tar.text(std::string(1024, '\0'));
  jsonl.write(dir + "/a.jsonl");
  idx.write(dir + "/b.idx");
  bin.write(dir + "/b.bin");
  npy.write(dir + "/c.npy");
  tar.write(dir + "/d.tar");
  bool ok = true;
  for (const char* name : {"a.jsonl", "b.idx", "c.npy", "d.tar"}) {
    const std::string path = dir + "/" + name, cache = path + ".dsidx";
    ds::IndexOptions o;
    o.cache = ds::CacheMode::off;
    const ds::ShardIndex built = ds::index_shard(path, o);
    add_index(d, built);
    ds::save_index(built, cache);
    const std::optional<ds::ShardIndex> loaded = ds::load_index(path, cache);
    if (!loaded || !(*loaded == built)) {
      std::fprintf(stderr, "digests: the cached index of %s differs from the one built\n", name);
      ok = false;
    }
    std::remove(cache.c_str());
    std::remove(path.c_str());
  }
  std::remove((dir + "/b.bin").c_str());
  ::rmdir(dir.c_str());
  return ok;
}

}  // namespace

// On a 32-bit size_t, a stream of more consumers than a vector can index is refused (by the bound of
// 2^20 consumers, which every platform has).
bool refuses_consumers_past_size_t() {
  if (sizeof(std::size_t) >= sizeof(std::uint64_t)) return true;
  const std::string expected =
      "StreamPlan: consumers 4294967296 is too many (expected at most 1048576 consumers, ranks x loader workers: each "
      "pass holds a share per consumer)";
  try {
    const ds::StreamPlan plan(1, {}, 0, std::uint64_t{1} << 32);
  } catch (const ds::config_error& e) {
    if (e.what() == expected) return true;
    std::fprintf(stderr, "digests: StreamPlan said \"%s\" (expected \"%s\")\n", e.what(), expected.c_str());
    return false;
  }
  std::fprintf(stderr, "digests: StreamPlan took 2^32 consumers on a 32-bit size_t (expected a config_error)\n");
  return false;
}

int main() {
  if (!refuses_consumers_past_size_t()) return 1;
  Digest feistel, ordered, torch, weighted_d, tokens_d, mixtures_d, shards_d, concat, best_fit, streams_d, states_d;
  distributed<ds::FeistelPermutation>(feistel, true);
  distributed<ds::FeistelPermutation>(ordered, false);
  distributed_torch(torch);
  feistel.print("distributed_shuffled");
  ordered.print("distributed_ordered");
  torch.print("distributed_torch_randperm");
  for (const ds::Tail tail : tails) {
    Digest b;
    batches(b, tail);
    b.print((std::string("batch_") + std::string(ds::to_string(tail))).c_str());
  }
  weighted(weighted_d);
  weighted_d.print("weighted");
  tokens(tokens_d);
  tokens_d.print("token_batches");
  mixtures(mixtures_d);
  mixtures_d.print("mixtures");
  shards(shards_d);
  shards_d.print("shards");
  packing(concat, ds::PackMode::concat);
  concat.print("packing_concat");
  packing(best_fit, ds::PackMode::best_fit);
  best_fit.print("packing_best_fit");
  streams(streams_d);
  streams_d.print("streams");
  states(states_d);
  states_d.print("states");
  Digest files_d;
  if (!files(files_d)) return 1;
  files_d.print("files");
  // Describes the build; compare.sh leaves this line out of the comparison.
  const std::uint16_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
#if defined(__SIZEOF_INT128__) && !defined(DISTSAMPLER_PORTABLE_U128)
  const char* u128 = "native";
#else
  const char* u128 = "portable";
#endif
  std::printf("build: %s u128, size_t %u bits, %s-endian\n", u128, static_cast<unsigned>(sizeof(std::size_t) * 8),
              first == 1 ? "little" : "big");
  return 0;
}

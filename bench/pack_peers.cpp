// Prints the table of docs/PACKING.md: PackedSequenceSampler next to a Megatron-style index build and Grain-style streaming packers.
// SPDX-License-Identifier: MIT
//
// usage: pack_peers [N ...]          the table for each N (default 1000000 100000000)
//        pack_peers --first N        time to the first sequence at N documents (both modes)
#include <distsampler/packing/detail/best_fit.hpp>
#include <distsampler/packing/packed_sequence_sampler.hpp>

#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "pack_peers.hpp"

namespace {

namespace ds = distsampler;
// CPU time of the process: the machine may be shared, and every packer here runs on one thread.
struct Clock {
  using time_point = double;
  static double now() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  }
};

double seconds_since(double t0) { return Clock::now() - t0; }

// Where the timed loops leave a result, so that none is optimised away.
volatile std::uint64_t result_sink = 0;

// The least CPU time of f() over up to 9 runs, stopping once 1 s has been spent (so a
// millisecond plan is not one noisy reading; a 10 s build runs once). Every packer's plan
// is timed this way.
template <class F>
double best_time(F&& f) {
  double best = 1e300, spent = 0;
  for (int run = 0; run < 9 && spent < 1.0; ++run) {
    const double t0 = Clock::now();
    f();
    const double t = seconds_since(t0);
    best = std::min(best, t);
    spent += t;
  }
  return best;
}

// A standard normal draw (Box-Muller on two SplitMix64 uniforms).
double normal(ds::detail::SplitMix64& rng) {
  const double u = (static_cast<double>(rng() >> 11) + 0.5) / 9007199254740992.0;
  const double v = static_cast<double>(rng() >> 11) / 9007199254740992.0;
  return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
}

std::uint32_t clip(double x, double hi) { return static_cast<std::uint32_t>(std::min(hi, std::max(1.0, x))); }

// "lognormal": lognormal(6.0, 1.0) tokens (median 403), 1..65536. "chat+long": 70% chat turns
// lognormal(4.5, 0.8) (median 90), 30% long documents lognormal(8.0, 1.2) (median 2981), 1..200000.
std::vector<std::uint32_t> make_lengths(const std::string& kind, std::uint64_t n, std::uint64_t seed) {
  ds::detail::SplitMix64 rng(seed);
  std::vector<std::uint32_t> out(static_cast<std::size_t>(n));
  for (auto& v : out) {
    if (kind == "lognormal") {
      v = clip(std::exp(6.0 + normal(rng)), 65536);
    } else {
      const bool chat = rng() % 10 < 7;
      v = chat ? clip(std::exp(4.5 + 0.8 * normal(rng)), 200000) : clip(std::exp(8.0 + 1.2 * normal(rng)), 200000);
    }
  }
  return out;
}

constexpr std::uint64_t seq_len = 4096, micro = 4, world = 64, accum = 4, window = 65536, bins = 64;
constexpr std::uint64_t group = micro * world * accum;

struct Row {
  std::string name;
  double efficiency = 1;
  std::uint64_t dropped = 0, steps = 0, empties = 0, memory = 0, sequences = 0;
  double plan = 0, first = 0, per_sequence_us = 0;
  std::string extra;
};

// Seconds as "12.3 ms" below 1 s, else "4.56 s"; bytes as B, kB or MB.
std::string seconds_text(double t) {
  char out[32];
  if (t < 1) std::snprintf(out, sizeof out, "%.2f ms", t * 1e3);
  else std::snprintf(out, sizeof out, "%.2f s", t);
  return out;
}
std::string bytes_text(std::uint64_t b) {
  char out[32];
  if (b < 1000) std::snprintf(out, sizeof out, "%llu B", static_cast<unsigned long long>(b));
  else if (b < 1000000) std::snprintf(out, sizeof out, "%.1f kB", static_cast<double>(b) / 1e3);
  else std::snprintf(out, sizeof out, "%.2f MB", static_cast<double>(b) / 1e6);
  return out;
}

void print_row(const Row& r) {
  std::printf("| %-38s | %9.4f | %12llu | %7llu | %6llu | %10s | %10s | %10s | %8.2f us | %s |\n",
              r.name.c_str(), r.efficiency, static_cast<unsigned long long>(r.dropped),
              static_cast<unsigned long long>(r.steps), static_cast<unsigned long long>(r.empties),
              seconds_text(r.plan).c_str(), bytes_text(r.memory).c_str(), seconds_text(r.first).c_str(),
              r.per_sequence_us, r.extra.c_str());
}

Row ours(const std::vector<std::uint32_t>& lengths, ds::PackMode mode) {
  Row r;
  r.name = std::string("distsampler ") + std::string(ds::to_string(mode)) + " (D 65536)";
  const ds::PackOptions o = ds::PackOptions().with_seq_len(seq_len).with_micro_batch_size(micro)
                                .with_accumulation_steps(accum).with_mode(mode).with_window(window).with_seed(1);
  std::optional<ds::PackedSequenceSampler> built;
  r.plan = best_time([&] { built.emplace(lengths.size(), lengths, ds::World(0, world), o); });
  const ds::PackedSequenceSampler& s = *built;
  ds::PackMicroBatch first;
  r.first = r.plan + best_time([&] {
    ds::PackWindow fresh;
    first = s.micro_batch(0, 0, fresh);
  });
  ds::PackWindow cache;
  const ds::PackEpochStats& st = s.stats();
  r.efficiency = st.padding_efficiency();
  r.dropped = st.dropped_tokens;
  r.steps = st.steps;
  r.empties = st.empty_sequences;
  r.memory = s.plan_bytes();
  r.sequences = st.sequences;
  // Random access: 200 random steps, each planning its window afresh.
  ds::detail::SplitMix64 rng(5);
  const auto t1 = Clock::now();
  std::uint64_t sink = first.pieces.size();
  for (int i = 0; i < 200; ++i) {
    ds::PackWindow fresh;
    sink += s.micro_batch(pack_bench::below(rng, s.num_steps()), 0, fresh).pieces.size();
  }
  const double random_us = seconds_since(t1) * 1e6 / (200.0 * micro);
  // Walking: every sequence of rank 0's first 200 steps with one cache.
  const auto t2 = Clock::now();
  const std::uint64_t walk = std::min<std::uint64_t>(200, s.num_steps());
  for (std::uint64_t step = 0; step < walk; ++step) {
    for (std::uint64_t k = 0; k < accum; ++k) sink += s.micro_batch(step, k, cache).pieces.size();
  }
  r.per_sequence_us = seconds_since(t2) * 1e6 / static_cast<double>(std::max<std::uint64_t>(1, walk * accum * micro));
  char extra[160];
  std::snprintf(extra, sizeof extra, "random step: %.0f us per sequence; %llu sequences", random_us,
                static_cast<unsigned long long>(st.sequences));
  result_sink = result_sink + sink;
  r.extra = extra;
  return r;
}

// numpy_shuffles: numpy's RandomState as GPTDataset uses it, else a faster SplitMix64 shuffle.
Row megatron(const std::vector<std::uint32_t>& lengths, bool numpy_shuffles) {
  Row r;
  r.name = numpy_shuffles ? "Megatron-style indices, numpy shuffles" : "Megatron-style indices, fast shuffles";
  pack_bench::MegatronIndices m;
  r.plan = best_time([&] {
    m = numpy_shuffles ? pack_bench::megatron_build(lengths, seq_len, pack_bench::NumpyRandomState(1))
                       : pack_bench::megatron_build(lengths, seq_len, pack_bench::FastShuffle(1));
  });
  std::uint64_t tokens = 0;
  const auto t0 = Clock::now();
  if (m.num_samples() > 0) (void)pack_bench::megatron_sample(m, lengths, 0, tokens);
  r.first = r.plan + seconds_since(t0);
  std::uint64_t total = 0;
  for (const auto v : lengths) total += v;
  r.steps = m.num_samples() / group;
  r.dropped = total - r.steps * group * seq_len;  // samples overlap by one token; the partial global batch waits
  r.memory = m.bytes();
  r.sequences = m.num_samples();
  const auto t1 = Clock::now();
  const std::uint64_t walk = std::min<std::uint64_t>(m.num_samples(), 200 * group / world);
  for (std::uint64_t j = 0; j < walk; ++j) (void)pack_bench::megatron_sample(m, lengths, j, tokens);
  r.per_sequence_us = seconds_since(t1) * 1e6 / static_cast<double>(std::max<std::uint64_t>(1, walk));
  r.extra = "indices built on one rank and cached as files";
  result_sink = result_sink + tokens;
  return r;
}

Row grain(const std::vector<std::uint32_t>& lengths, bool best) {
  Row r;
  r.name = std::string("Grain-style streaming ") + (best ? "best-fit" : "first-fit") + " (" + std::to_string(bins) +
           " bins)";
  const ds::FeistelPermutation order(lengths.size(), 1, 0);
  const auto t0 = Clock::now();
  const pack_bench::StreamPacked g = pack_bench::stream_pack(lengths, order, seq_len, bins, best);
  r.plan = 0;  // streaming: nothing before the first sequence, nothing to seek with
  r.first = 0;
  r.per_sequence_us = seconds_since(t0) * 1e6 / static_cast<double>(std::max<std::uint64_t>(1, g.sequences));
  r.efficiency = static_cast<double>(g.tokens) / (static_cast<double>(g.sequences) * seq_len);
  r.steps = g.sequences / group;
  r.sequences = g.sequences;
  r.memory = bins * 8;
  r.extra = "no random access; resume replays the stream; " + std::to_string(g.peak_open) + " open bins";
  return r;
}

// Best-fit decreasing and first-fit decreasing over the same windows of D documents of one Feistel order.
std::string same_windows(const std::vector<std::uint32_t>& lengths) {
  const ds::FeistelPermutation p(lengths.size(), 1, 0);
  ds::detail::BestFitPacker packer(seq_len);
  std::vector<ds::detail::PackItem> items, scratch;
  std::vector<std::uint32_t> sizes, bin_of;
  std::uint64_t bfd = 0, ffd = 0, tokens = 0, better = 0, worse = 0;
  for (std::uint64_t first = 0; first < lengths.size(); first += window) {
    items.clear();
    sizes.clear();
    for (std::uint64_t i = first; i < std::min<std::uint64_t>(lengths.size(), first + window); ++i) {
      const std::uint64_t d = p(i), len = lengths[d];
      for (std::uint64_t off = 0; off < len; off += seq_len) {
        const auto piece = static_cast<std::uint32_t>(std::min(seq_len, len - off));
        items.push_back({d, off, piece});
        sizes.push_back(piece);
        tokens += piece;
      }
    }
    ds::detail::sort_longest_first(items, scratch);
    const std::uint64_t b = packer.pack(items, bin_of), f = pack_bench::first_fit_decreasing(sizes, seq_len);
    bfd += b;
    ffd += f;
    better += b < f ? 1 : 0;
    worse += b > f ? 1 : 0;
  }
  char out[200];
  std::snprintf(out, sizeof out, "same windows: best-fit decreasing %.4f, first-fit decreasing %.4f (windows BFD fewer %llu, more %llu)",
                static_cast<double>(tokens) / (static_cast<double>(bfd) * seq_len),
                static_cast<double>(tokens) / (static_cast<double>(ffd) * seq_len),
                static_cast<unsigned long long>(better), static_cast<unsigned long long>(worse));
  return out;
}

void table(std::uint64_t n) {
  for (const std::string kind : {"lognormal", "chat+long"}) {
    const std::vector<std::uint32_t> lengths = make_lengths(kind, n, 7);
    std::uint64_t total = 0;
    for (const auto v : lengths) total += v;
    std::printf("\nN = %llu documents, %s lengths, %llu tokens; L = %llu, G = %llu x %llu x %llu = %llu sequences, "
                "(G + 1) L = %llu tokens\n\n",
                static_cast<unsigned long long>(n), kind.c_str(), static_cast<unsigned long long>(total),
                static_cast<unsigned long long>(seq_len), static_cast<unsigned long long>(micro),
                static_cast<unsigned long long>(world), static_cast<unsigned long long>(accum),
                static_cast<unsigned long long>(group), static_cast<unsigned long long>((group + 1) * seq_len));
    std::printf("| %-38s | %9s | %12s | %7s | %6s | %10s | %10s | %10s | %11s | notes |\n", "packer", "efficiency",
                "tokens dropped", "steps", "empty", "plan", "plan memory", "first seq", "per seq");
    std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
    print_row(ours(lengths, ds::PackMode::concat));
    print_row(megatron(lengths, true));
    print_row(megatron(lengths, false));
    print_row(ours(lengths, ds::PackMode::best_fit));
    print_row(grain(lengths, false));
    print_row(grain(lengths, true));
    std::printf("\n%s\n", same_windows(lengths).c_str());
    std::fflush(stdout);
  }
}

void first_sequence(std::uint64_t n) {
  const auto t0 = Clock::now();
  const std::vector<std::uint32_t> lengths = make_lengths("lognormal", n, 7);
  std::printf("N = %llu lognormal lengths generated in %.1f s CPU (%.1f GB)\n", static_cast<unsigned long long>(n),
              seconds_since(t0), static_cast<double>(n) * 4 / 1e9);
  for (const ds::PackMode mode : {ds::PackMode::concat, ds::PackMode::best_fit}) {
    const auto t1 = Clock::now();
    const ds::PackOptions o = ds::PackOptions().with_seq_len(seq_len).with_micro_batch_size(micro)
                                  .with_accumulation_steps(accum).with_mode(mode).with_window(window).with_seed(1);
    const ds::PackedSequenceSampler s(n, lengths, ds::World(0, world), o);
    const double built = seconds_since(t1);
    const ds::PackMicroBatch b = s.micro_batch(0, 0);
    std::printf("%-8s: sampler built in %.2f s CPU, first micro-batch after %.2f s; plan %.1f MB; %llu steps (%zu pieces)\n",
                std::string(ds::to_string(mode)).c_str(), built, seconds_since(t1),
                static_cast<double>(s.plan_bytes()) / 1e6, static_cast<unsigned long long>(s.num_steps()),
                b.pieces.size());
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--first") == 0) {
    first_sequence(std::strtoull(argv[2], nullptr, 10));
    return 0;
  }
  std::vector<std::uint64_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {1000000, 100000000};
  for (const std::uint64_t n : sizes) table(n);
  return 0;
}

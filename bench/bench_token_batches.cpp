// Token-budget batching side by side: TokenBatchSampler and transcriptions of three peers' published algorithms.
// SPDX-License-Identifier: MIT
//
// Prints the table of docs/BATCHING.md. Each (distribution, N, method) runs in a forked
// child so its peak memory above the shared lengths array is its own.
//
// Peers (transcribed from their published descriptions, no code copied):
//  - fairseq-style: indices sorted globally by length (random tie-break), batch_by_size's
//    greedy cut ((count + 1) x longest > max_tokens closes a batch), batches shuffled per
//    epoch, rank r takes batches r, r + W, ... and the short ranks get dummy (empty) batches.
//  - HF-style megabatches: a random permutation cut into megabatches of 50 x b samples,
//    each sorted by length (longest first), cut into batches of b = budget / mean length
//    samples, the megabatch with the longest sample first; batch i goes to rank i mod W
//    and the last round is filled with samples from the start (duplicates).
//  - lhotse-style duration buckets: 10 buckets with equal total length estimated from the
//    first 10000 samples of the shuffled stream, a buffer of 20000 samples, each batch
//    taken greedily (count x longest within the budget) from a random bucket that can fill
//    one; batch i goes to rank i mod W, so ranks may end with different step counts.
#include <distsampler/distsampler.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <string>
#include <vector>

namespace ds = distsampler;

namespace {

constexpr std::uint64_t world = 8;

struct Result {
  double efficiency = 0;
  std::uint64_t min_steps = 0, max_steps = 0;
  std::uint64_t dummies = 0;      // empty markers, dummy batches or duplicated samples
  std::uint64_t over_budget = 0;  // micro-batches over the budget
  double mean_ratio = 1, max_ratio = 1;
  double seconds = 0;
  double extra_mb = 0;
};

// CPU seconds of this process: robust to other processes sharing the cores, unlike wall time.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double uniform01(ds::detail::SplitMix64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double normal(ds::detail::SplitMix64& rng) {
  const double u = 1.0 - uniform01(rng), v = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
}

std::uint32_t clip(double x, double hi) {
  return static_cast<std::uint32_t>(std::min(hi, std::max(1.0, std::round(x))));
}

// lognormal: median 256, sigma 1, up to 8192. mixture: 60% median 64 (sigma 0.7), 35% median
// 512 (sigma 0.6), 5% Pareto(1.2) tail from 1024, all up to 16384.
std::vector<std::uint32_t> make_lengths(const std::string& kind, std::uint64_t n) {
  ds::detail::SplitMix64 rng(kind == "lognormal" ? 11 : 12);
  std::vector<std::uint32_t> out(n);
  for (auto& v : out) {
    if (kind == "lognormal") {
      v = clip(256.0 * std::exp(normal(rng)), 8192);
    } else {
      const double u = uniform01(rng);
      if (u < 0.60) {
        v = clip(64.0 * std::exp(0.7 * normal(rng)), 16384);
      } else if (u < 0.95) {
        v = clip(512.0 * std::exp(0.6 * normal(rng)), 16384);
      } else {
        v = clip(1024.0 * std::pow(1.0 - uniform01(rng), -1.0 / 1.2), 16384);
      }
    }
  }
  return out;
}

// Per-step balance over rank token totals (steps where some rank has no token are left out).
struct Balance {
  double sum = 0, max = 1;
  std::uint64_t steps = 0;
  void add(const std::vector<std::uint64_t>& tokens) {
    const auto [lo, hi] = std::minmax_element(tokens.begin(), tokens.end());
    if (*lo == 0) return;
    const double r = static_cast<double>(*hi) / static_cast<double>(*lo);
    sum += r;
    max = std::max(max, r);
    ++steps;
  }
  [[nodiscard]] double mean() const { return steps == 0 ? 1.0 : sum / static_cast<double>(steps); }
};

using Batch = std::vector<std::uint64_t>;

// Scores batch i as read by rank i mod W, one batch at a time (no batch list kept).
class RoundRobinScore {
 public:
  RoundRobinScore(const std::vector<std::uint32_t>& len, std::uint64_t budget) : len_(len), budget_(budget) {}

  void add(const Batch& batch) {
    std::uint64_t t = 0, longest = 0;
    for (const std::uint64_t x : batch) {
      t += len_[x];
      longest = std::max<std::uint64_t>(longest, len_[x]);
    }
    tokens_ += t;
    padded_ += longest * batch.size();
    over_ += longest * batch.size() > budget_ ? 1U : 0U;
    step_[count_ % world] = t;
    if (++count_ % world == 0) close_step();
  }

  void finish(Result& r) {
    if (count_ % world != 0) {
      std::fill(step_.begin() + static_cast<std::ptrdiff_t>(count_ % world), step_.end(), std::uint64_t{0});
      close_step();
    }
    r.efficiency = static_cast<double>(tokens_) / static_cast<double>(padded_);
    r.over_budget = over_;
    r.mean_ratio = balance_.mean();
    r.max_ratio = balance_.max;
  }

  [[nodiscard]] std::uint64_t batches() const noexcept { return count_; }

 private:
  void close_step() {
    balance_.add(step_);
    std::fill(step_.begin(), step_.end(), std::uint64_t{0});
  }

  const std::vector<std::uint32_t>& len_;
  std::uint64_t budget_;
  std::uint64_t tokens_ = 0, padded_ = 0, over_ = 0, count_ = 0;
  std::vector<std::uint64_t> step_ = std::vector<std::uint64_t>(world);
  Balance balance_;
};

void score_round_robin(const std::vector<Batch>& batches, const std::vector<std::uint32_t>& len, std::uint64_t budget,
                       Result& r) {
  RoundRobinScore score(len, budget);
  for (const Batch& b : batches) score.add(b);
  score.finish(r);
}

void shuffle_in_place(std::vector<Batch>& v, std::uint64_t seed) {
  ds::detail::SplitMix64 rng(seed);
  for (std::uint64_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[ds::detail::bounded_draw(rng, i)]);
}

Result run_tokens(const std::vector<std::uint32_t>& len, std::uint64_t budget, std::uint64_t window) {
  Result r;
  const double t0 = cpu_seconds();
  const ds::TokenBatchSampler s(len.size(), len, ds::World(0, world),
                                ds::TokenBatchOptions().with_max_tokens(budget).with_window(window).with_seed(1));
  r.seconds = cpu_seconds() - t0;
  const ds::TokenEpochStats& st = s.stats();
  r.efficiency = st.padding_efficiency();
  r.min_steps = r.max_steps = s.num_steps();
  r.dummies = st.empty_micro_batches;
  r.mean_ratio = st.mean_step_ratio;
  r.max_ratio = st.max_step_ratio;
  return r;
}

Result run_fairseq(const std::vector<std::uint32_t>& len, std::uint64_t budget) {
  Result r;
  const double t0 = cpu_seconds();
  const std::uint64_t n = len.size();
  // Sort by (length, random tie-break): the key packs length and a permuted position.
  std::vector<std::uint64_t> keys(n);
  const ds::FeistelPermutation tie(n, 1, 0);
  for (std::uint64_t i = 0; i < n; ++i) keys[i] = (std::uint64_t{len[i]} << 40) | tie(i);
  std::sort(keys.begin(), keys.end());
  std::vector<Batch> batches;
  Batch cur;
  std::uint64_t longest = 0;
  for (const std::uint64_t k : keys) {
    const std::uint64_t pos = k & ((std::uint64_t{1} << 40) - 1), idx = tie.inverse(pos);
    const std::uint64_t l = std::max<std::uint64_t>(longest, len[idx]);
    if (!cur.empty() && (cur.size() + 1) * l > budget) {
      batches.push_back(std::move(cur));
      cur.clear();
      longest = 0;
    }
    cur.push_back(idx);
    longest = std::max<std::uint64_t>(longest, len[idx]);
  }
  if (!cur.empty()) batches.push_back(std::move(cur));
  keys = {};
  shuffle_in_place(batches, 7);
  r.seconds = cpu_seconds() - t0;
  r.max_steps = r.min_steps = (batches.size() + world - 1) / world;
  r.dummies = r.max_steps * world - batches.size();
  score_round_robin(batches, len, budget, r);
  return r;
}

Result run_hf(const std::vector<std::uint32_t>& len, std::uint64_t budget) {
  Result r;
  const std::uint64_t n = len.size();
  double mean = 0;
  for (const std::uint32_t l : len) mean += l;
  mean /= static_cast<double>(n);
  const std::uint64_t b = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(budget) / mean));
  const double t0 = cpu_seconds();
  std::vector<std::uint64_t> perm(n);
  const ds::FeistelPermutation p(n, 3, 0);
  for (std::uint64_t i = 0; i < n; ++i) perm[i] = p(i);
  const std::uint64_t mult = std::max<std::uint64_t>(1, std::min<std::uint64_t>(n / (b * 4), 50)), mega = mult * b;
  for (std::uint64_t first = 0; first < n; first += mega) {
    const auto a = perm.begin() + static_cast<std::ptrdiff_t>(first);
    const auto e = perm.begin() + static_cast<std::ptrdiff_t>(std::min(n, first + mega));
    std::stable_sort(a, e, [&](std::uint64_t x, std::uint64_t y) { return len[x] > len[y]; });
  }
  // The megabatch holding the longest sample goes first (its longest batch leads it).
  const std::uint64_t top = static_cast<std::uint64_t>(
      std::max_element(perm.begin(), perm.end(), [&](std::uint64_t x, std::uint64_t y) { return len[x] < len[y]; }) -
      perm.begin());
  const std::uint64_t top_mega = top / mega * mega;
  std::rotate(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(top_mega),
              perm.begin() + static_cast<std::ptrdiff_t>(std::min(n, top_mega + mega)));
  std::vector<Batch> batches;
  for (std::uint64_t first = 0; first < n; first += b) {
    batches.emplace_back(perm.begin() + static_cast<std::ptrdiff_t>(first),
                         perm.begin() + static_cast<std::ptrdiff_t>(std::min(n, first + b)));
  }
  // Even batches: the last round is filled from the start of the list.
  std::uint64_t dup = 0, from = 0;
  if (batches.back().size() < b) {
    dup += b - batches.back().size();
    while (batches.back().size() < b) batches.back().push_back(perm[from++]);
  }
  while (batches.size() % world != 0) {
    Batch fill;
    while (fill.size() < b) fill.push_back(perm[from++ % n]);
    dup += b;
    batches.push_back(std::move(fill));
  }
  r.seconds = cpu_seconds() - t0;
  r.min_steps = r.max_steps = batches.size() / world;
  r.dummies = dup;
  score_round_robin(batches, len, budget, r);
  return r;
}

Result run_lhotse(const std::vector<std::uint32_t>& len, std::uint64_t budget) {
  Result r;
  const std::uint64_t n = len.size(), buckets = 10, buffer = 20000;
  const double t0 = cpu_seconds();
  const ds::FeistelPermutation stream(n, 5, 0);
  // Bucket bounds: equal total length over the first 10000 samples of the stream.
  std::vector<std::uint64_t> head;
  for (std::uint64_t i = 0; i < std::min<std::uint64_t>(n, 10000); ++i) head.push_back(len[stream(i)]);
  std::sort(head.begin(), head.end());
  std::uint64_t total = 0, acc = 0;
  for (const std::uint64_t l : head) total += l;
  std::vector<std::uint64_t> bounds;
  for (const std::uint64_t l : head) {
    acc += l;
    if (bounds.size() + 1 < buckets && acc * buckets >= total * (bounds.size() + 1)) bounds.push_back(l);
  }
  std::vector<std::deque<std::uint64_t>> bucket(bounds.size() + 1);
  auto fits_batch = [&](const std::deque<std::uint64_t>& q) {
    std::uint64_t longest = 0, count = 0;
    for (const std::uint64_t x : q) {
      longest = std::max<std::uint64_t>(longest, len[x]);
      if (++count * longest > budget) return true;
    }
    return false;
  };
  ds::detail::SplitMix64 rng(9);
  RoundRobinScore score(len, budget);
  std::uint64_t next = 0, held = 0;
  std::vector<std::size_t> ready;
  for (;;) {
    while (held < buffer && next < n) {
      const std::uint64_t x = stream(next++);
      const auto b = static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), len[x]) - bounds.begin());
      bucket[b].push_back(x);
      ++held;
    }
    ready.clear();
    for (std::size_t b = 0; b < bucket.size(); ++b) {
      if (!bucket[b].empty() && (next == n || fits_batch(bucket[b]))) ready.push_back(b);
    }
    if (ready.empty()) {
      if (held == 0) break;
      for (std::size_t b = 0; b < bucket.size(); ++b) {
        if (ready.empty() || bucket[b].size() > bucket[ready[0]].size()) ready.assign(1, b);
      }
    }
    std::deque<std::uint64_t>& q = bucket[ready[ds::detail::bounded_draw(rng, ready.size())]];
    Batch batch;
    std::uint64_t longest = 0;
    while (!q.empty()) {
      const std::uint64_t l = std::max<std::uint64_t>(longest, len[q.front()]);
      if (!batch.empty() && (batch.size() + 1) * l > budget) break;
      longest = l;
      batch.push_back(q.front());
      q.pop_front();
      --held;
    }
    score.add(batch);
  }
  r.seconds = cpu_seconds() - t0;
  const std::uint64_t count = score.batches();
  r.max_steps = (count + world - 1) / world;
  r.min_steps = count / world;
  r.dummies = r.max_steps * world - count;  // ranks short of a batch in the last step
  score.finish(r);
  return r;
}

std::uint64_t status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::strtoull(line.c_str() + std::strlen(field), nullptr, 10);
  }
  return 0;
}

// Runs `method` in a child; its peak resident memory above the start is its own.
Result measured(const std::string& method, const std::vector<std::uint32_t>& len, std::uint64_t budget,
                std::uint64_t window) {
  int fd[2];
  if (pipe(fd) != 0) std::abort();
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    { std::ofstream("/proc/self/clear_refs") << "5"; }  // resets the peak to the current size
    const std::uint64_t base = status_kb("VmRSS:");
    Result r = method == "tokens"    ? run_tokens(len, budget, window)
               : method == "fairseq" ? run_fairseq(len, budget)
               : method == "hf"      ? run_hf(len, budget)
                                     : run_lhotse(len, budget);
    r.extra_mb = static_cast<double>(status_kb("VmHWM:") - base) / 1024.0;
    if (write(fd[1], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  Result r;
  if (read(fd[0], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) std::abort();
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  // BUDGET [--window M] [--tokens-only | --method NAME] [--lengths KIND] N [N ...]
  // (--method and --lengths run one row per N, for timing one method as a whole process)
  std::uint64_t window = std::uint64_t{1} << 20;
  std::string only_method, only_kind;
  std::vector<std::uint64_t> sizes;
  for (int a = 2; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--window" && a + 1 < argc) {
      window = std::strtoull(argv[++a], nullptr, 10);
    } else if (arg == "--tokens-only") {
      only_method = "tokens";
    } else if (arg == "--method" && a + 1 < argc) {
      only_method = argv[++a];
    } else if (arg == "--lengths" && a + 1 < argc) {
      only_kind = argv[++a];
    } else {
      sizes.push_back(std::strtoull(arg.c_str(), nullptr, 10));
    }
  }
  if (argc < 3 || sizes.empty() || window == 0) {
    std::fprintf(stderr,
                 "usage: bench_token_batches BUDGET [--window M] [--tokens-only | --method tokens|fairseq|hf|lhotse] "
                 "[--lengths lognormal|mixture] N [N ...]\n");
    return 2;
  }
  const std::uint64_t budget = std::strtoull(argv[1], nullptr, 10);
  std::printf("budget %llu padded tokens per micro-batch, world size 8, window %llu\n\n",
              static_cast<unsigned long long>(budget), static_cast<unsigned long long>(window));
  std::printf(
      "| lengths | N | method | padding eff. | steps/rank (min..max) | empty/dummy | over budget | "
      "step ratio mean / max | plan CPU s | extra MB |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::uint64_t n : sizes) {
    for (const std::string kind : {"lognormal", "mixture"}) {
      if (!only_kind.empty() && kind != only_kind) continue;
      const std::vector<std::uint32_t> len = make_lengths(kind, n);
      for (const std::string method : {"tokens", "fairseq", "hf", "lhotse"}) {
        if (!only_method.empty() && method != only_method) continue;
        const Result r = measured(method, len, budget, window);
        std::printf("| %s | %llu | %s | %.5f | %llu..%llu | %llu | %llu | %.3f / %.2f | %.2f | %.1f |\n", kind.c_str(),
                    static_cast<unsigned long long>(n), method.c_str(), r.efficiency,
                    static_cast<unsigned long long>(r.min_steps), static_cast<unsigned long long>(r.max_steps),
                    static_cast<unsigned long long>(r.dummies), static_cast<unsigned long long>(r.over_budget),
                    r.mean_ratio, r.max_ratio, r.seconds, r.extra_mb);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

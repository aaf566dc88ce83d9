// Shared helpers of the shard sampler tests: seeded layouts, one sampler per rank, and the promise checks.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TESTS_SHARD_TEST_UTIL_HPP
#define DISTSAMPLER_TESTS_SHARD_TEST_UTIL_HPP

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <distsampler/detail/bounded.hpp>
#include <distsampler/detail/mix.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>
#include <distsampler/verify.hpp>

namespace shard_test {

using distsampler::SamplerState;
using distsampler::ShardSample;
using distsampler::ShardSamplerOptions;
using distsampler::StreamingShardSampler;
using distsampler::Tail;
using distsampler::World;
using distsampler::detail::HoleLimit;

// A small deterministic generator for test layouts (never std distributions).
struct TestRng {
  std::uint64_t state;
  std::uint64_t next() {
    state += 0x9e3779b97f4a7c15u;
    return distsampler::detail::mix64(state);
  }
  std::uint64_t below(std::uint64_t bound) { return distsampler::detail::mulhi64(next(), bound); }
};

inline std::vector<std::uint64_t> random_sizes(TestRng& rng, std::uint64_t max_shards, std::uint64_t max_size) {
  std::vector<std::uint64_t> sizes(static_cast<std::size_t>(rng.below(max_shards + 1)));
  for (auto& s : sizes) s = rng.below(4) == 0 ? 0 : rng.below(max_size + 1);
  return sizes;
}

// One sampler per rank, each with `workers` workers, at `epoch`.
inline std::vector<StreamingShardSampler> make_ranks(const std::vector<std::uint64_t>& sizes, std::uint64_t world_size,
                                                     std::uint64_t workers, const ShardSamplerOptions& options,
                                                     std::uint64_t epoch) {
  std::vector<StreamingShardSampler> ranks;
  for (std::uint64_t r = 0; r < world_size; ++r) {
    ranks.emplace_back(sizes, World(r, world_size), ShardSamplerOptions(options).with_num_workers(workers));
    ranks.back().set_epoch(epoch);
  }
  return ranks;
}

inline ShardSamplerOptions small_options(std::uint64_t variant, Tail tail, std::uint64_t seed) {
  auto o = ShardSamplerOptions().with_seed(seed).with_tail(tail);
  switch (variant % 4) {
    case 0:
      o.with_canonical_streams(1).with_max_open_shards(1).with_run_length(1);
      break;
    case 1:
      o.with_canonical_streams(4).with_max_open_shards(2).with_run_length(2);
      break;
    case 2:
      o.with_canonical_streams(3).with_max_open_shards(3).with_run_length(1);
      break;
    default:
      o.with_canonical_streams(5).with_max_open_shards(2).with_run_length(3).with_shuffle(variant % 8 != 3);
      break;
  }
  return o;
}

// The set of global-order positions a state marks consumed, from its documented meaning.
inline std::vector<bool> consumed_positions(const SamplerState& st) {
  std::vector<bool> done(static_cast<std::size_t>(st.dataset_size), false);
  for (std::uint64_t p = 0; p < st.consumed; ++p) done[static_cast<std::size_t>(p)] = true;
  for (const auto& r : st.ahead) {
    for (std::uint64_t p = r.begin; p < r.end; ++p) done[static_cast<std::size_t>(p)] = true;
  }
  for (const auto& s : st.strided) {
    for (std::uint64_t i = 0; i < s.count; ++i) {
      for (std::uint64_t p = s.begin + i * s.stride; p < s.begin + i * s.stride + s.length; ++p)
        done[static_cast<std::size_t>(p)] = true;
    }
  }
  return done;
}

// Checks that the read plan of one worker, replayed, yields exactly its stream: ranges
// start in plan order, each is read in increasing consecutive offsets, and no more
// than max_open_shards ranges are open at once; and that fill, for_each and the stream
// iterator give the samples sample() gives. Returns the most ranges open at once.
inline std::uint64_t check_plan_against_stream(const StreamingShardSampler& s, std::uint64_t worker) {
  const auto plan = s.read_plan(worker);
  std::uint64_t total = 0;
  for (const auto& r : plan) total += r.end - r.begin;
  REQUIRE(total == s.worker_size(worker));
  // Replay: a slot must be the first record of the next unstarted range, or the next
  // record of an already started, unfinished range.
  std::vector<std::uint64_t> next(plan.size()), remaining(plan.size());
  for (std::size_t r = 0; r < plan.size(); ++r) {
    next[r] = plan[r].begin;
    remaining[r] = plan[r].end - plan[r].begin;
  }
  std::size_t started = 0;
  std::uint64_t open = 0, max_open = 0;
  for (std::uint64_t i = 0; i < total; ++i) {
    const ShardSample x = s.sample(worker, i);
    std::size_t hit = SIZE_MAX;
    if (started < plan.size() && plan[started].first_sample == i) {
      hit = started++;
      ++open;
      max_open = std::max(max_open, open);
    } else {
      for (std::size_t r = 0; r < started; ++r) {
        if (remaining[r] != 0 && plan[r].shard == x.shard && next[r] == x.offset) {
          hit = r;
          break;
        }
      }
    }
    INFO("worker " << worker << " slot " << i << " shard " << x.shard << " offset " << x.offset);
    REQUIRE(hit != SIZE_MAX);
    REQUIRE(plan[hit].shard == x.shard);
    REQUIRE(next[hit] == x.offset);
    ++next[hit];
    if (--remaining[hit] == 0) --open;
  }
  CHECK(started == plan.size());
  CHECK(max_open <= s.max_open_shards());
  // The batched fill gives the same samples, for the whole stream and for windows of it.
  std::vector<ShardSample> filled(static_cast<std::size_t>(total));
  s.fill(worker, 0, total, filled.data());
  for (std::uint64_t i = 0; i < total; ++i) REQUIRE(filled[static_cast<std::size_t>(i)] == s.sample(worker, i));
  std::vector<ShardSample> walked;
  s.for_each(worker, [&](const ShardSample& x) { walked.push_back(x); });
  REQUIRE(walked == filled);
  // The range-for iterator (chunked) agrees, through pre- and post-increment.
  const auto stream = s.stream(worker);
  REQUIRE(stream.size() == total);
  std::uint64_t slot = 0;
  for (auto it = stream.begin(); it != stream.end(); ++slot) {
    REQUIRE(it.position() == slot);
    const ShardSample here = *it;
    REQUIRE(here == filled[static_cast<std::size_t>(slot)]);
    const auto old = it++;
    REQUIRE(*old == here);
    REQUIRE(old->offset == here.offset);
  }
  REQUIRE(slot == total);
  walked.clear();
  s.for_each(
      worker, [&](const ShardSample& x) { walked.push_back(x); }, total / 3, total);  // clipped at the end
  REQUIRE(walked == std::vector<ShardSample>(filled.begin() + static_cast<std::ptrdiff_t>(total / 3), filled.end()));
  for (std::uint64_t first = 0; first < total; first += 1 + first / 3) {
    const std::uint64_t count = std::min<std::uint64_t>(total - first, 1 + (first * 7) % 23);
    std::vector<ShardSample> part(static_cast<std::size_t>(count));
    s.fill(worker, first, count, part.data());
    for (std::uint64_t i = 0; i < count; ++i) REQUIRE(part[static_cast<std::size_t>(i)] == s.sample(worker, first + i));
  }
  return max_open;
}

// Checks disjoint/covering/balanced of one segment over every consumer, per rank and per worker slot.
inline void check_segment(const std::vector<StreamingShardSampler>& ranks) {
  const auto& s0 = ranks.front();
  const std::uint64_t workers = s0.num_workers(), k_all = s0.consumers();
  const Tail tail = s0.options().tail;
  distsampler::PartitionChecker checker(s0.dataset_size(), k_all, tail);
  std::vector<std::uint64_t> rank_sizes;
  for (const auto& s : ranks) {
    rank_sizes.push_back(s.size());
    for (std::uint64_t wk = 0; wk < workers; ++wk) {
      for (const ShardSample x : s.stream(wk)) {
        REQUIRE(x.shard < s.num_shards());
        REQUIRE(x.offset < s.shard_sizes()[static_cast<std::size_t>(x.shard)]);
        checker.add(s.consumer(wk), x.index, x.is_padding);
      }
    }
  }
  const auto report = checker.finish();
  INFO(report.summary());
  CHECK(report.ok());
  // Ranks: equal sizes, uneven within one. Worker slots: equal on every rank.
  const auto [lo, hi] = std::minmax_element(rank_sizes.begin(), rank_sizes.end());
  CHECK(*hi - *lo <= (tail == Tail::uneven ? 1u : 0u));
  if (tail != Tail::uneven) {
    for (std::uint64_t wk = 0; wk < workers; ++wk) {
      for (const auto& s : ranks) CHECK(s.worker_size(wk) == ranks.front().worker_size(wk));
    }
  }
}

// Torch's DataLoader over iterable workers, simulated step by step: batch j comes from
// the next worker in turn that still has samples; returns samples handed out per worker.
inline std::vector<std::uint64_t> simulate_loader(const std::vector<std::uint64_t>& worker_sizes, std::uint64_t batches,
                                                  std::uint64_t batch_size) {
  std::vector<std::uint64_t> done(worker_sizes.size(), 0);
  std::size_t w = 0;
  for (std::uint64_t j = 0; j < batches; ++j) {
    std::size_t tries = 0;
    while (done[w] == worker_sizes[w]) {
      w = (w + 1) % worker_sizes.size();
      REQUIRE(++tries <= worker_sizes.size());
    }
    done[w] = std::min(worker_sizes[w], done[w] + batch_size);
    w = (w + 1) % worker_sizes.size();
  }
  return done;
}

}  // namespace shard_test

#endif  // DISTSAMPLER_TESTS_SHARD_TEST_UTIL_HPP

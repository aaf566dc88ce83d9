// End-to-end tests of StreamingShardSampler: disjoint, covering, balanced, local and exactly-once on resume.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <distsampler/shards/loader_round_robin.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>
#include <distsampler/verify.hpp>

#include "shard_test_util.hpp"

using namespace shard_test;

TEST_CASE("small shard layouts are disjoint, covering and balanced for every world, worker count and tail",
          "[shards]") {
  TestRng rng{12345};
  for (int layout = 0; layout < 24; ++layout) {
    const auto sizes = random_sizes(rng, 7, 9);
    for (const Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
      for (std::uint64_t w = 1; w <= 6; ++w) {
        for (std::uint64_t workers = 1; workers <= 3; ++workers) {
          const auto options = small_options(static_cast<std::uint64_t>(layout) + w, tail, rng.next());
          INFO("layout " << layout << " shards " << sizes.size() << " W " << w << " workers " << workers << " tail "
                         << distsampler::to_string(tail) << " streams " << options.canonical_streams);
          const auto ranks = make_ranks(sizes, w, workers, options, static_cast<std::uint64_t>(layout % 3));
          check_segment(ranks);
          for (const auto& s : ranks) {
            for (std::uint64_t wk = 0; wk < workers; ++wk) check_plan_against_stream(s, wk);
          }
        }
      }
    }
  }
}

TEST_CASE("fewer shards than consumers and wildly unequal shards still balance", "[shards]") {
  SECTION("three shards, eighteen consumers") {
    for (const Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
      ShardSamplerOptions o;
      o.tail = tail;
      o.seed = 7;
      check_segment(make_ranks({5, 0, 40}, 6, 3, o, 2));
    }
  }
  SECTION("one shard of 10^6 and a thousand of 10") {
    std::vector<std::uint64_t> sizes(1000, 10);
    sizes.insert(sizes.begin() + 500, 1000000);
    ShardSamplerOptions o;
    o.seed = 2024;
    o.max_open_shards = 8;
    o.run_length = 8;  // runs of 8 keep 8 ranges open at once; the default runs of 1 only one
    const auto ranks = make_ranks(sizes, 4, 2, o, 5);
    check_segment(ranks);
    CHECK(ranks[0].size() == ranks[3].size());
    const auto opened = check_plan_against_stream(ranks[1], 1);
    CHECK(opened == o.max_open_shards);
  }
}

TEST_CASE("seeded large layouts keep every promise", "[shards]") {
  TestRng rng{99};
  for (int round = 0; round < 4; ++round) {
    auto sizes = random_sizes(rng, 400, 700);
    ShardSamplerOptions o;
    o.seed = rng.next();
    o.tail = round % 3 == 0 ? Tail::pad : round % 3 == 1 ? Tail::drop : Tail::uneven;
    o.canonical_streams = 1 + rng.below(70);
    o.max_open_shards = 1 + rng.below(std::min<std::uint64_t>(o.canonical_streams, 12));
    o.run_length = 1 + rng.below(16);
    const std::uint64_t w = 1 + rng.below(8), workers = 1 + rng.below(4);
    INFO("round " << round << " W " << w << " workers " << workers);
    const auto ranks = make_ranks(sizes, w, workers, o, rng.next());
    check_segment(ranks);
    check_plan_against_stream(ranks.back(), workers - 1);
  }
}

TEST_CASE("the global order depends on seed, epoch, shard sizes and options, not on world or workers", "[shards]") {
  TestRng rng{4242};
  const auto sizes = random_sizes(rng, 30, 40);
  ShardSamplerOptions o;
  o.seed = 11;
  o.canonical_streams = 6;
  o.max_open_shards = 3;
  o.run_length = 2;
  StreamingShardSampler single(sizes, World(), o);
  single.set_epoch(3);
  const std::uint64_t n = single.dataset_size();
  std::vector<std::uint64_t> order;
  for (std::uint64_t p = 0; p < n; ++p) order.push_back(single.at_global(p).index);
  {
    auto sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (std::uint64_t p = 0; p < n; ++p) REQUIRE(sorted[static_cast<std::size_t>(p)] == p);
  }
  for (std::uint64_t w = 1; w <= 5; ++w) {
    for (std::uint64_t workers = 1; workers <= 3; ++workers) {
      const auto ranks = make_ranks(sizes, w, workers, o, 3);
      for (std::uint64_t p = 0; p < n; ++p)
        REQUIRE(ranks.back().at_global(p).index == order[static_cast<std::size_t>(p)]);
      // After any equal progress d, the state marks exactly the positions read; at block
      // boundaries of the full rounds, they are a prefix of the order.
      const std::uint64_t longest = ranks.front().worker_size(0);
      for (std::uint64_t done = 0; done <= longest; ++done) {
        std::vector<bool> read(static_cast<std::size_t>(n), false);
        for (const auto& s : ranks) {
          for (std::uint64_t wk = 0; wk < workers; ++wk) {
            for (std::uint64_t i = 0; i < std::min(done, s.worker_size(wk)); ++i) {
              const auto x = s.sample(wk, i);
              if (!x.is_padding) read[static_cast<std::size_t>(x.index)] = true;
            }
          }
        }
        const SamplerState st = ranks[static_cast<std::size_t>(done % w)].state(done);
        INFO("W " << w << " workers " << workers << " done " << done << " state " << st.to_text());
        const auto marked = consumed_positions(st);
        for (std::uint64_t p = 0; p < n; ++p) {
          REQUIRE(marked[static_cast<std::size_t>(p)] ==
                  read[static_cast<std::size_t>(order[static_cast<std::size_t>(p)])]);
        }
        const std::uint64_t k = ranks.front().consumers(), b = ranks.front().block_size();
        if (done % b == 0 && done <= (n / k / b) * b) CHECK(st.ahead.empty());
      }
    }
  }
}

TEST_CASE("resuming at random points with other world sizes and worker counts reads each sample exactly once",
          "[shards][resume]") {
  // Segments of random length on random worlds; every consumer stops at its own random
  // point (equal, per worker, per consumer, or where a round-robin loader stops). The
  // state must mark exactly what was read, and the next segment must read the rest.
  TestRng rng{777};
  for (int trial = 0; trial < 150; ++trial) {
    const auto sizes = random_sizes(rng, 12, 30);
    const Tail tail = trial % 3 == 0 ? Tail::pad : trial % 3 == 1 ? Tail::drop : Tail::uneven;
    auto options = small_options(static_cast<std::uint64_t>(trial), tail, rng.next());
    const std::uint64_t epoch = rng.below(5);
    std::uint64_t n = 0;
    for (auto s : sizes) n += s;
    std::vector<std::uint64_t> reads(static_cast<std::size_t>(n), 0);
    std::vector<bool> read_pos(static_cast<std::size_t>(n), false);  // by global-order position
    std::string saved;
    std::uint64_t last_dropped = 0;
    std::uint64_t entry_bound = 0;  // bytes of entries the segments so far may add to a state (see below)
    const int segments = 1 + static_cast<int>(rng.below(5));
    for (int seg = 0; seg < segments; ++seg) {
      const std::uint64_t w = 1 + rng.below(6), workers = 1 + rng.below(3);
      // The segment's holes as spans on some ranks and compact on others (both forms must
      // read the same); `twin` is rank 0 in the other form.
      const auto form = [&](std::uint64_t r) {
        return (r + static_cast<std::uint64_t>(trial + seg)) % 2 == 0 ? HoleLimit::compact() : HoleLimit::spans();
      };
      std::vector<StreamingShardSampler> ranks;
      StreamingShardSampler twin(sizes, World(0, w), ShardSamplerOptions(options).with_num_workers(workers));
      for (std::uint64_t r = 0; r < w; ++r) {
        ranks.emplace_back(sizes, World(r, w), ShardSamplerOptions(options).with_num_workers(workers));
        if (saved.empty()) {
          ranks.back().set_epoch(epoch);
        } else {
          ranks.back().resume(rng.below(2) == 0 ? SamplerState::from_text(saved)
                                                : SamplerState::from_bytes(SamplerState::from_text(saved).to_bytes()),
                              form(r));
        }
      }
      if (saved.empty()) {
        twin.set_epoch(epoch);
      } else {
        twin.resume(SamplerState::from_text(saved), form(1));
      }
      const auto& s0 = ranks.front();
      // The segment is exactly what earlier segments left.
      {
        std::vector<bool> in_segment(static_cast<std::size_t>(n), false);
        for (const auto& r : s0.remaining_ranges()) {
          for (std::uint64_t p = r.begin; p < r.end; ++p) in_segment[static_cast<std::size_t>(p)] = true;
        }
        for (std::uint64_t p = 0; p < n; ++p)
          REQUIRE(in_segment[static_cast<std::size_t>(p)] == !read_pos[static_cast<std::size_t>(p)]);
      }
      // The read plan still replays the stream with at most max_open_shards ranges open,
      // also when the segment has holes.
      for (std::uint64_t wk = 0; wk < workers; ++wk) check_plan_against_stream(ranks.back(), wk);
      const std::uint64_t k = s0.consumers();
      std::vector<std::uint64_t> done(static_cast<std::size_t>(k));
      SamplerState state;
      const bool final_segment = seg + 1 == segments;
      const std::uint64_t how = final_segment ? 0 : rng.below(4);
      if (how == 0) {  // equal progress
        const std::uint64_t d = final_segment ? s0.worker_size(0) : rng.below(s0.worker_size(0) + 1);
        for (std::uint64_t c = 0; c < k; ++c) done[static_cast<std::size_t>(c)] = std::min(d, s0.consumer_size(c));
        state = ranks[static_cast<std::size_t>(rng.below(w))].state(d);
      } else if (how == 1) {  // per worker, equal across ranks
        std::vector<std::uint64_t> per(static_cast<std::size_t>(workers));
        std::uint64_t shortest = UINT64_MAX;
        for (std::uint64_t c = 0; c < k; ++c) shortest = std::min(shortest, s0.consumer_size(c));
        for (auto& d : per) d = rng.below(shortest + 1);
        for (std::uint64_t c = 0; c < k; ++c) done[static_cast<std::size_t>(c)] = per[static_cast<std::size_t>(c / w)];
        state = ranks[static_cast<std::size_t>(rng.below(w))].state(distsampler::WorkerProgress(per));
      } else if (how == 2) {  // every consumer on its own
        for (std::uint64_t c = 0; c < k; ++c) done[static_cast<std::size_t>(c)] = rng.below(s0.consumer_size(c) + 1);
        state = s0.state(distsampler::ConsumerProgress(done));
      } else {  // a round-robin loader on every rank
        const std::uint64_t batch = 1 + rng.below(7);
        std::uint64_t most = 0;
        std::vector<std::vector<std::uint64_t>> rank_sizes(static_cast<std::size_t>(w));
        for (std::uint64_t r = 0; r < w; ++r) {
          std::uint64_t total = 0;
          for (std::uint64_t wk = 0; wk < workers; ++wk) {
            const std::uint64_t size = ranks[static_cast<std::size_t>(r)].worker_size(wk);
            rank_sizes[static_cast<std::size_t>(r)].push_back(size);
            total += (size + batch - 1) / batch;
          }
          most = std::max(most, total);
        }
        const std::uint64_t batches = rng.below(most + 1);
        for (std::uint64_t r = 0; r < w; ++r) {
          std::uint64_t total = 0;
          for (const auto size : rank_sizes[static_cast<std::size_t>(r)]) total += (size + batch - 1) / batch;
          const auto per = simulate_loader(rank_sizes[static_cast<std::size_t>(r)], std::min(batches, total), batch);
          if (batches <= total)
            CHECK(distsampler::loader_worker_done(ranks[static_cast<std::size_t>(r)], batches, batch) == per);
          for (std::uint64_t wk = 0; wk < workers; ++wk)
            done[static_cast<std::size_t>(wk * w + r)] = per[static_cast<std::size_t>(wk)];
        }
        state = distsampler::state_after_batches(ranks[static_cast<std::size_t>(rng.below(w))], batches, batch);
      }
      for (std::uint64_t c = 0; c < k; ++c) {
        const auto& s = ranks[static_cast<std::size_t>(c % w)];
        for (std::uint64_t i = 0; i < done[static_cast<std::size_t>(c)]; ++i) {
          const auto x = s.consumer_sample(c, i);
          if (x.is_padding) continue;
          ++reads[static_cast<std::size_t>(x.index)];
          read_pos[static_cast<std::size_t>(s.consumer_position(c, i))] = true;
        }
      }
      INFO("trial " << trial << " segment " << seg << " how " << how << " state " << state.to_text());
      // The other form: the same position for every slot, the same state at this stop.
      for (std::uint64_t c = 0; c < k; ++c) {
        REQUIRE(twin.consumer_size(c) == s0.consumer_size(c));
        for (std::uint64_t i = 0; i < s0.consumer_size(c); ++i)
          REQUIRE(twin.consumer_position(c, i) == s0.consumer_position(c, i));
      }
      REQUIRE(twin.state(distsampler::ConsumerProgress(done)) == s0.state(distsampler::ConsumerProgress(done)));
      CHECK(state.epoch == epoch);
      CHECK(consumed_positions(state) == read_pos);
      // O(consumers) at any stop: a segment's deal adds at most 1 + 6K ranges (the common
      // rounds; per consumer a front, a partial block, three pieces of the partial round
      // and a tail slot), K strided entries and one range per entry whose first element
      // lies in the segment's lead; storing only merges, or writes entries out as ranges
      // of no more bytes. So the entries take at most 16 (1 + 9K) bytes per segment (16 per
      // range, 32 per strided entry); the blocks consumers are ahead of each other add nothing.
      entry_bound += 16 * (1 + 9 * k);
      CHECK(16 * state.ahead.size() + 32 * state.strided.size() <= entry_bound);
      saved = state.to_text();
      last_dropped = tail == Tail::drop ? (n - s0.start()) % k : 0;
    }
    INFO("trial " << trial << " n " << n << " tail " << distsampler::to_string(tail));
    std::uint64_t missing = 0;
    for (const auto c : reads) {
      REQUIRE(c <= 1);
      missing += c == 0 ? 1u : 0u;
    }
    CHECK(missing == last_dropped);
  }
}

TEST_CASE("with the same world and workers, every stream continues exactly where an equal stop left it",
          "[shards][resume]") {
  TestRng rng{31337};
  for (int trial = 0; trial < 120; ++trial) {
    const auto sizes = random_sizes(rng, 14, 60);
    const Tail tail = trial % 3 == 0 ? Tail::pad : trial % 3 == 1 ? Tail::drop : Tail::uneven;
    const auto options = small_options(static_cast<std::uint64_t>(trial), tail, rng.next());
    const std::uint64_t w = 1 + rng.below(4), workers = 1 + rng.below(3);
    const auto original = make_ranks(sizes, w, workers, options, 1);
    const auto& s0 = original.front();
    const std::uint64_t k = s0.consumers(), b = s0.block_size();
    const std::uint64_t full = (s0.dataset_size() / k / b) * b;  // slots of the full rounds
    // Stop twice at equal counts inside the full rounds, reloading the same world each time.
    const std::uint64_t first_stop = rng.below(full + 1);
    const std::uint64_t second_stop = first_stop + rng.below(full - first_stop + 1);
    SamplerState st = original[static_cast<std::size_t>(rng.below(w))].state(first_stop);
    for (const std::uint64_t stop : {first_stop, second_stop}) {  // the second resumes the resumed segment
      std::vector<StreamingShardSampler> resumed;
      for (std::uint64_t r = 0; r < w; ++r) {
        resumed.emplace_back(sizes, World(r, w), ShardSamplerOptions(options).with_num_workers(workers));
        resumed.back().resume(SamplerState::from_text(st.to_text()));
      }
      INFO("trial " << trial << " W " << w << " workers " << workers << " stop " << stop << " state " << st.to_text());
      for (std::uint64_t r = 0; r < w; ++r) {
        const auto& o = original[static_cast<std::size_t>(r)];
        const auto& s = resumed[static_cast<std::size_t>(r)];
        for (std::uint64_t wk = 0; wk < workers; ++wk) {
          REQUIRE(s.worker_size(wk) == o.worker_size(wk) - stop);
          for (std::uint64_t i = 0; i < s.worker_size(wk); ++i) REQUIRE(s.sample(wk, i) == o.sample(wk, stop + i));
        }
      }
      if (stop == first_stop) st = resumed.front().state(second_stop - first_stop);
    }
  }
}

TEST_CASE("totals up to 2^64 - 1 are accepted and larger ones rejected", "[shards]") {
  const std::uint64_t max = UINT64_MAX;
  StreamingShardSampler big({max - 5, 5}, World(3, 4), ShardSamplerOptions().with_num_workers(2));
  CHECK(big.dataset_size() == max);
  CHECK(big.worker_size(1) == max / 8 + 1);
  const auto x = big.sample(1, big.worker_size(1) - 1);
  CHECK(x.index == (x.shard == 0 ? x.offset : max - 5 + x.offset));
  const auto y = big.sample(0, 123456789);
  CHECK(y.offset < (y.shard == 0 ? max - 5 : 5));
  // A stop inside blocks near 2^64: 8 consumers, blocks of 64, 3 samples each.
  const SamplerState st = big.state(3);
  CHECK(st.consumed == 3);
  REQUIRE(st.ahead.size() == 7);
  CHECK(st.ahead.back() == distsampler::PositionRange{7 * 64, 7 * 64 + 3});
  CHECK(SamplerState::from_bytes(st.to_bytes()) == st);
  StreamingShardSampler resumed({max - 5, 5}, World(0, 3));
  resumed.resume(SamplerState::from_text(st.to_text()));
  CHECK(resumed.start() == 24);
  CHECK(resumed.consumer_position(0, 0) == 3);
  CHECK(resumed.worker_size(0) == (max - 24) / 3 + ((max - 24) % 3 != 0 ? 1 : 0));
  const std::uint64_t last = resumed.worker_size(0) - 1;
  CHECK(resumed.sample(0, last).index < max);
  const SamplerState end = resumed.state(resumed.worker_size(0));
  CHECK(end.consumed == max);
  CHECK(end.ahead.empty());
  CHECK_THROWS_WITH(StreamingShardSampler({max, 1}, World()),
                    "StreamingShardSampler: total samples overflow 64 bits at shard 1 (size 1 after "
                    "18446744073709551615; expected a sum <= 18446744073709551615)");
}

TEST_CASE("bad configuration throws config_error naming the parameter", "[shards][errors]") {
  const std::vector<std::uint64_t> sizes{3, 4};
  auto with = [](auto change) {
    ShardSamplerOptions o;
    change(o);
    return o;
  };
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), ShardSamplerOptions().with_num_workers(0)),
                    "StreamingShardSampler: num_workers is 0 (expected at least 1)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(1, 2), ShardSamplerOptions().with_num_workers(UINT64_MAX)),
                    "StreamingShardSampler: world_size 2 x num_workers 18446744073709551615 overflows 64 bits");
  {
    World w;
    w.rank = 2;
    w.world_size = 2;
    CHECK_THROWS_WITH(StreamingShardSampler(sizes, w),
                      "StreamingShardSampler: rank 2 is out of range for world_size 2 (expected 0..1)");
  }
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), with([](auto& o) { o.tail = static_cast<Tail>(7); })),
                    "StreamingShardSampler: tail 7 is not a Tail (expected pad, drop or uneven)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), with([](auto& o) { o.canonical_streams = 0; })),
                    "StreamingShardSampler: canonical_streams is 0 (expected at least 1)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), with([](auto& o) { o.max_open_shards = 0; })),
                    "StreamingShardSampler: max_open_shards is 0 (expected at least 1)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), with([](auto& o) { o.run_length = 0; })),
                    "StreamingShardSampler: run_length is 0 (expected at least 1)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), with([](auto& o) { o.shuffle_window = 0; })),
                    "StreamingShardSampler: shuffle_window is 0 (expected at least 1)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), with([](auto& o) { o.max_open_shards = 513; })),
                    "StreamingShardSampler: max_open_shards 513 exceeds canonical_streams 512 (expected "
                    "max_open_shards <= canonical_streams)");
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(), with([](auto& o) { o.run_length = UINT64_MAX; })),
                    "StreamingShardSampler: max_open_shards 64 x run_length 18446744073709551615 overflows 64 bits");
  StreamingShardSampler s(sizes, World(), ShardSamplerOptions().with_num_workers(2));
  CHECK_THROWS_WITH(s.worker_size(2),
                    "StreamingShardSampler: worker 2 is out of range for num_workers 2 (expected 0..1)");
  CHECK_THROWS_AS(s.sample(0, 100), std::out_of_range);
  CHECK_THROWS_WITH(s.sample(0, 4), "StreamingShardSampler::sample: position 4 is out of range for worker_size 4");
  ShardSample out[4];
  CHECK_NOTHROW(s.fill(1, 1, 3, out));
  CHECK_THROWS_WITH(s.fill(1, 2, 3, out),
                    "StreamingShardSampler::fill: slots [2, 2 + 3) are out of range for worker_size 4");
  CHECK_THROWS_WITH(s.fill(2, 0, 0, out),
                    "StreamingShardSampler: worker 2 is out of range for num_workers 2 (expected 0..1)");
  CHECK_THROWS_AS(distsampler::StreamingShardSampler(sizes, World(), ShardSamplerOptions().with_num_workers(0)),
                  distsampler::config_error);
}

TEST_CASE("an empty dataset and empty shards give empty, valid streams", "[shards]") {
  for (const Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
    ShardSamplerOptions o;
    o.tail = tail;
    const auto ranks = make_ranks({0, 0, 0}, 3, 2, o, 0);
    for (const auto& s : ranks) CHECK(s.size() == 0);
    check_segment(ranks);
    CHECK(ranks[0].state(0).consumed == 0);
    StreamingShardSampler none({}, World(), o);
    CHECK(none.size() == 0);
    CHECK(none.read_plan(0).empty());
  }
}

TEST_CASE("A state of other or reordered shard sizes is refused naming the shard sizes", "[shards][resume][errors]") {
  const StreamingShardSampler saver({100, 50, 70}, World(0, 2));
  const SamplerState st = saver.state(3);
  StreamingShardSampler reordered({50, 100, 70}, World(0, 2));
  CHECK_THROWS_WITH(reordered.resume(st),
                    Catch::Matchers::StartsWith("StreamingShardSampler::resume: shard sizes differ (state "
                                                "layout "));
  StreamingShardSampler larger({100, 50, 71}, World(0, 2));
  CHECK_THROWS_WITH(larger.resume(st),
                    Catch::Matchers::StartsWith("StreamingShardSampler::resume: dataset_size differs (state 220, "
                                                "sampler 221); shard sizes differ (state layout "));
  StreamingShardSampler same({100, 50, 70}, World(1, 3));
  CHECK_NOTHROW(same.resume(st));
}

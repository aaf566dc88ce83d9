// Tests of shard progress: consumers' counts to a SamplerState, resume, and the strong guarantee.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <distsampler/shards/progress.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>

#include "shard_test_util.hpp"

using namespace shard_test;
using distsampler::ConsumerProgress;
using distsampler::WorkerProgress;

namespace {

// Everything a sampler reads and reports, to compare before and after a failed call.
struct Snapshot {
  std::uint64_t epoch = 0, start = 0;
  std::vector<distsampler::PositionRange> remaining;
  std::vector<std::vector<ShardSample>> streams;
  std::string state;

  explicit Snapshot(const StreamingShardSampler& s)
      : epoch(s.epoch()), start(s.start()), remaining(s.remaining_ranges()), state(s.state(1).to_text()) {
    for (std::uint64_t w = 0; w < s.num_workers(); ++w) {
      streams.emplace_back();
      for (const ShardSample x : s.stream(w)) streams.back().push_back(x);
    }
  }
  bool operator==(const Snapshot& o) const {
    return epoch == o.epoch && start == o.start && remaining == o.remaining && streams == o.streams && state == o.state;
  }
};

}  // namespace

TEST_CASE("a stop inside blocks records the documented ranges, round-trips and is rejected by other layouts",
          "[shard][progress][resume]") {
  ShardSamplerOptions o;
  o.run_length = 2;
  o.max_open_shards = 2;
  o.canonical_streams = 4;
  // 220 samples, 4 consumers, blocks of 4: consumer c reads blocks c, c + 4, ... of the
  // order, so 3 samples each leave [0, 3) done and 3 of each of blocks 1..3 ahead.
  StreamingShardSampler s({100, 50, 0, 70}, World(1, 2), ShardSamplerOptions(o).with_num_workers(2));
  s.set_epoch(4);
  const SamplerState st = s.state(3);
  CHECK(st.consumed == 3);
  CHECK(st.ahead == std::vector<distsampler::PositionRange>{{4, 7}, {8, 11}, {12, 15}});
  CHECK(st.consumed_total() == 12);
  CHECK(st.to_text().rfind("distsampler-state v3 sampler=shard dataset_size=220 seed=0 shuffle=true tail=pad "
                           "engine=shard-shuffle-streams4-open2-run2-window16/3 layout=0x33ede7b3b73c4b19 epoch=4 "
                           "consumed=3 ahead=4-7,8-11,12-15 checksum=0x",
                           0) == 0);
  // At a block boundary of every consumer the state is a plain prefix (no ranges).
  const SamplerState at8 = s.state(8);
  CHECK(at8.consumed == 32);
  CHECK(at8.ahead.empty());
  CHECK(at8.to_bytes().size() == 80 + 5 + at8.engine.size());
  // Per worker: workers 0 (consumers 0, 1) read 5, workers 1 (consumers 2, 3) read 2:
  // blocks 0 and 1 whole, 2 and 3 two each, and one of blocks 4 and 5.
  const SamplerState pw = s.state(WorkerProgress({5, 2}));
  CHECK(pw.consumed == 10);
  CHECK(pw.ahead == std::vector<distsampler::PositionRange>{{12, 14}, {16, 17}, {20, 21}});
  CHECK(s.state(ConsumerProgress({5, 5, 2, 2})) == pw);
  // All done: everything consumed.
  CHECK(s.state(55).consumed == 220);
  CHECK(s.state(55).ahead.empty());

  const auto bytes = st.to_bytes();
  CHECK(bytes.size() == 80 + 5 + st.engine.size() + 16 * 3);
  StreamingShardSampler t({100, 50, 0, 70}, World(0, 3), o);
  t.resume(SamplerState::from_bytes(bytes.data(), bytes.size()));
  CHECK(t.epoch() == 4);
  CHECK(t.start() == 12);
  CHECK(t.remaining_ranges() == std::vector<distsampler::PositionRange>{{3, 4}, {7, 8}, {11, 12}, {15, 220}});
  // The holes before the first untouched block (3, 7, 11 and 15, up to 16) are read
  // first, one per consumer of the 3; then blocks of 4 from position 15 of the segment.
  CHECK(t.consumer_position(0, 0) == 3);
  CHECK(t.consumer_position(1, 0) == 7);
  CHECK(t.consumer_position(2, 0) == 11);
  CHECK(t.consumer_position(0, 1) == 15);
  CHECK(t.consumer_position(0, 3) == 17);
  CHECK(t.consumer_position(1, 1) == 19);
  StreamingShardSampler other_layout({100, 50, 70, 0}, World(), o);
  CHECK_THROWS_AS(other_layout.resume(st), distsampler::state_error);
  auto o2 = o;
  o2.run_length = 3;
  StreamingShardSampler other_options({100, 50, 0, 70}, World(), o2);
  CHECK_THROWS_AS(other_options.resume(st), distsampler::state_error);
  auto o3 = o;
  o3.shuffle = false;
  StreamingShardSampler unshuffled({100, 50, 0, 70}, World(), o3);
  CHECK_THROWS_AS(unshuffled.resume(st), distsampler::state_error);
}

TEST_CASE("a consumer far ahead is one strided entry, and a resumed segment's state trims it",
          "[shard][progress][strided]") {
  ShardSamplerOptions o;
  o.run_length = 2;
  o.max_open_shards = 2;
  o.canonical_streams = 4;
  // 220 samples, 4 consumers, blocks of 4 (as above). Consumer 0 read 20 samples: blocks
  // 0, 4, 8, 12 and 16 of the order, positions [0, 4), [16, 20), [32, 36), [48, 52),
  // [64, 68); consumer 1 read 8: blocks 1 and 5, [4, 8) and [20, 24). So [0, 8) is the
  // prefix, [20, 24) a range, and consumer 0's blocks after its first one strided: begin
  // 16, length 4, stride 16 (4 consumers x 4), count 4.
  StreamingShardSampler s({100, 50, 0, 70}, World(0, 2), ShardSamplerOptions(o).with_num_workers(2));
  s.set_epoch(4);
  const SamplerState st = s.state(ConsumerProgress({20, 8, 0, 0}));
  CHECK(st.consumed == 8);
  CHECK(st.ahead == std::vector<distsampler::PositionRange>{{20, 24}});
  CHECK(st.strided == std::vector<distsampler::StridedRange>{{16, 4, 16, 4}});
  CHECK(st.consumed_total() == 28);
  const std::string text = st.to_text();
  CHECK(text.rfind("distsampler-state v4 sampler=shard dataset_size=220", 0) == 0);
  CHECK(text.find(" consumed=8 ahead=20-24 strided=16-20/16x4 checksum=0x") != std::string::npos);
  CHECK(st.to_bytes().size() == 88 + 5 + st.engine.size() + 16 + 32);
  // Consumers 0 and 1 three blocks each ([0, 8), [16, 24), [32, 40)): as an entry, 40 bytes
  // (32 and the count); as two ranges, 32. The smaller form, version 3, is written.
  const SamplerState two = s.state(ConsumerProgress({12, 12, 0, 0}));
  CHECK(two.consumed == 8);
  CHECK(two.ahead == std::vector<distsampler::PositionRange>{{16, 24}, {32, 40}});
  CHECK(two.strided.empty());
  CHECK(two.written_version() == 3);
  // Resumed on 3 consumers: the segment is the complement, its lead the 40 holes below 68
  // (the first block boundary past everything consumed), 13 per consumer's front.
  StreamingShardSampler t({100, 50, 0, 70}, World(0, 3), o);
  t.resume(SamplerState::from_bytes(st.to_bytes()));
  CHECK(t.start() == 28);
  CHECK(t.remaining_ranges() ==
        std::vector<distsampler::PositionRange>{{8, 16}, {24, 32}, {36, 48}, {52, 64}, {68, 220}});
  CHECK(t.consumer_position(0, 12) == 28);
  // Consumer 0 reads its whole front (G 8..15 and 24..28): with what was consumed before,
  // [0, 29) is done; of the strided entry only the elements past 29 remain.
  const SamplerState next = t.state(ConsumerProgress({13, 0, 0}));
  CHECK(next.consumed == 29);
  CHECK(next.ahead.empty());
  CHECK(next.strided == std::vector<distsampler::StridedRange>{{32, 4, 16, 3}});
  CHECK(next.consumed_total() == 28 + 13);
}

namespace {

// Whether position p is consumed in `st`, from the documented meaning of its fields.
bool marks(const SamplerState& st, std::uint64_t p) {
  if (p < st.consumed) return true;
  for (const auto& r : st.ahead) {
    if (p >= r.begin && p < r.end) return true;
  }
  for (const auto& e : st.strided) {
    if (p >= e.begin && (p - e.begin) / e.stride < e.count && (p - e.begin) % e.stride < e.length) return true;
  }
  return false;
}

// Checks, on a sample of consumers and slots around and below each stop, that `st` marks
// exactly the slots each consumer of `s` read (done[c] of them).
void check_marks_sampled(const StreamingShardSampler& s, const std::vector<std::uint64_t>& done, const SamplerState& st,
                         TestRng& rng) {
  for (std::uint64_t c = 0; c < s.consumers(); c += 1 + rng.below(16)) {
    const std::uint64_t d = done[static_cast<std::size_t>(c)];
    for (std::uint64_t i : {d - 1, d, d + 1, d + 63, d - 64, rng.below(d), d + rng.below(5000)}) {
      INFO("consumer " << c << " done " << d << " slot " << i);
      REQUIRE(marks(st, s.consumer_position(c, i)) == (i < d));
    }
  }
}

}  // namespace

TEST_CASE("at cluster scale a state at any stop is O(consumers) and resumes exactly the complement",
          "[shard][progress][strided][cluster]") {
  // 10^5 shards x 10^5 samples = 10^10, 64 ranks x 8 workers on 8 nodes: 512 consumers, each
  // stopped at its own count, up to 1000 apart. Blocks here are 8 samples, so the slowest
  // and fastest consumer are about 125 blocks apart: one range per block ahead (merged
  // where neighbours' blocks touch) is about 10^4 ranges, 168 KB.
  const std::vector<std::uint64_t> sizes(100000, 100000);
  const auto options = ShardSamplerOptions().with_num_workers(8);
  StreamingShardSampler s(sizes, World(3, 64, 3, 8), options);
  s.set_epoch(1);
  const std::uint64_t k = s.consumers();
  REQUIRE(k == 512);
  TestRng rng{16};
  std::vector<std::uint64_t> done(static_cast<std::size_t>(k));
  std::uint64_t sum = 0;
  for (auto& d : done) sum += d = 5000000 + rng.below(1000);
  const SamplerState st = s.state(ConsumerProgress(done));
  const auto bytes = st.to_bytes();
  INFO("ranges " << st.ahead.size() << " strided " << st.strided.size() << " bytes " << bytes.size());
  // Per consumer at most a partial block (16 bytes) and a strided entry (32 bytes).
  CHECK(bytes.size() < 64 * k + 256);
  CHECK(st.strided.size() <= k);
  CHECK(st.consumed_total() == sum);  // the stops are far from the tail: no padding read
  check_marks_sampled(s, done, st, rng);
  REQUIRE(SamplerState::from_bytes(bytes) == st);
  REQUIRE(SamplerState::from_text(st.to_text()) == st);

  // The spread does not matter: consumers up to 10^6 samples apart.
  std::vector<std::uint64_t> wide = done;
  for (auto& d : wide) d += rng.below(1000000);
  CHECK(s.state(ConsumerProgress(wide)).to_bytes().size() < 64 * k + 256);

  // Resumed on 32 ranks x 4 workers (4 per node): the segment is the complement.
  StreamingShardSampler t(sizes, World(1, 32, 1, 4), ShardSamplerOptions(options).with_num_workers(4));
  t.resume(st);
  CHECK(t.start() == sum);
  CHECK(t.state(0) == st);  // nothing read since: the same state
  for (int j = 0; j < 2000; ++j) {
    const std::uint64_t c = rng.below(t.consumers()), i = j % 2 == 0 ? rng.below(4000) : rng.below(t.consumer_size(c));
    INFO("resumed consumer " << c << " slot " << i);
    REQUIRE(!marks(st, t.consumer_position(c, i)));
  }
  const auto remaining = t.remaining_ranges();
  for (int j = 0; j < 2000; ++j) {
    const std::uint64_t p = rng.below(2 * 5001000 * k);
    const auto it = std::upper_bound(remaining.begin(), remaining.end(), p,
                                     [](std::uint64_t x, const distsampler::PositionRange& r) { return x < r.end; });
    const bool in_segment = it != remaining.end() && it->begin <= p;
    INFO("position " << p);
    REQUIRE(in_segment == !marks(st, p));
  }
  // Its state at another spread composes compactly: at most 48 bytes per consumer of the
  // first segment (its partial block and strided entry) and 80 per consumer of this one
  // (a front, a partial block, a block of the lead and a strided entry).
  std::vector<std::uint64_t> next(static_cast<std::size_t>(t.consumers()));
  std::uint64_t next_sum = sum;
  for (auto& d : next) next_sum += d = rng.below(3000);
  const SamplerState st2 = t.state(ConsumerProgress(next));
  INFO("resumed state: ranges " << st2.ahead.size() << " strided " << st2.strided.size());
  CHECK(st2.to_bytes().size() < 48 * k + 80 * t.consumers() + 256);
  CHECK(st2.consumed_total() == next_sum);
  check_marks_sampled(t, next, st2, rng);
}

TEST_CASE("at cluster scale a resume of consumers 10^6 samples apart stores O(consumers) and reads the complement",
          "[shard][progress][strided][cluster]") {
  // The state of the test above with the consumers up to 10^6 samples apart: 10^7 holes
  // (one per block a consumer was ahead), a few hundred ranges and entries.
  const std::vector<std::uint64_t> sizes(100000, 100000);
  const auto options = ShardSamplerOptions().with_num_workers(8);
  StreamingShardSampler s(sizes, World(3, 64, 3, 8), options);
  s.set_epoch(1);
  const std::uint64_t k = s.consumers();
  TestRng rng{1606};
  std::vector<std::uint64_t> done(static_cast<std::size_t>(k));
  std::uint64_t sum = 0, least = UINT64_MAX, most = 0;
  for (auto& d : done) {
    sum += d = 5000000 + rng.below(1000000);
    least = std::min(least, d);
    most = std::max(most, d);
  }
  const SamplerState st = s.state(ConsumerProgress(done));
  REQUIRE(st.consumed_total() == sum);
  // As spans the segment would hold one per hole: about (most - least) / 8 per consumer.
  REQUIRE((most - least) / s.block_size() * k / 2 > 10000000);
  const auto w2 = ShardSamplerOptions(options).with_num_workers(4);
  StreamingShardSampler t(sizes, World(1, 32, 1, 4), w2);
  const distsampler::RemainingSegment segment = distsampler::RemainingSegment::after(st, t.block_size());
  INFO("ranges " << st.ahead.size() << " strided " << st.strided.size() << " stored " << segment.stored_entries());
  CHECK(segment.compact());
  CHECK(segment.stored_entries() <= 64 * k);
  CHECK(segment.size() == s.dataset_size() - sum);
  t.resume(st);
  CHECK(t.start() == sum);
  CHECK(t.state(0) == st);  // nothing read since: the same state
  // Sampled slots read unmarked positions: in the fronts (the holes), around the lead and anywhere.
  const std::uint64_t front = (segment.lead() / t.consumers());
  REQUIRE(front > 1000000);
  for (int j = 0; j < 600; ++j) {
    const std::uint64_t c = rng.below(t.consumers());
    const std::uint64_t i = j % 3 == 0   ? rng.below(front)
                            : j % 3 == 1 ? front - 1 + rng.below(3)
                                         : rng.below(t.consumer_size(c));
    INFO("resumed consumer " << c << " slot " << i);
    REQUIRE(!marks(st, t.consumer_position(c, i)));
  }
  // A consumer's fill over a stretch of its front equals its samples one by one, and every
  // position it reads is unmarked.
  std::vector<distsampler::ShardSample> out(4096);
  const std::uint64_t at = rng.below(front - out.size());
  t.fill(0, at, out.size(), out.data());
  for (std::uint64_t i = 0; i < out.size(); ++i) {
    REQUIRE(out[static_cast<std::size_t>(i)] == t.sample(0, at + i));
    REQUIRE(!marks(st, t.consumer_position(t.consumer(0), at + i)));
  }
  // Its state at another spread, some consumers still in their fronts, composes compactly
  // (as in the test above), and resumes compactly again.
  std::vector<std::uint64_t> next(static_cast<std::size_t>(t.consumers()));
  std::uint64_t next_sum = sum;
  for (auto& d : next) next_sum += d = rng.below(2) == 0 ? rng.below(3000) : front + rng.below(1000000);
  const SamplerState st2 = t.state(ConsumerProgress(next));
  INFO("resumed state: ranges " << st2.ahead.size() << " strided " << st2.strided.size());
  CHECK(st2.to_bytes().size() < 48 * k + 80 * t.consumers() + 256);
  CHECK(st2.consumed_total() == next_sum);
  check_marks_sampled(t, next, st2, rng);
  // Resumed again: as spans (at most 64 per range or entry of the state, the automatic
  // limit) or compact, O(consumers of both segments) either way.
  const std::uint64_t n2 = st2.ahead.size() + st2.strided.size();
  const distsampler::RemainingSegment again = distsampler::RemainingSegment::after(st2, s.block_size());
  const distsampler::RemainingSegment again_compact =
      distsampler::RemainingSegment::after(st2, s.block_size(), HoleLimit::compact());
  INFO("stored again " << again.stored_entries() << " compact " << again_compact.stored_entries());
  CHECK(again.stored_entries() <= 65 * n2 + 1);
  CHECK(again_compact.stored_entries() <= 64 * (k + t.consumers()));
  CHECK(again_compact.size() == again.size());
  CHECK(again_compact.lead() == again.lead());
  s.resume(st2);
  CHECK(s.start() == next_sum);
  for (int j = 0; j < 300; ++j) {
    const std::uint64_t c = rng.below(k), i = j % 2 == 0 ? rng.below(2000) : rng.below(s.consumer_size(c));
    REQUIRE(!marks(st2, s.consumer_position(c, i)));
  }
}

TEST_CASE("stopping points past a stream's end throw config_error", "[shard][progress][errors]") {
  const auto o = ShardSamplerOptions()
                     .with_run_length(2)
                     .with_max_open_shards(2)
                     .with_canonical_streams(4)
                     .with_tail(Tail::uneven)
                     .with_num_workers(2);
  // 221 samples over 4 consumers, uneven: consumer 0 has 56, the others 55.
  StreamingShardSampler s({100, 51, 0, 70}, World(1, 2), o);
  CHECK_NOTHROW(s.state(56));
  CHECK_THROWS_AS(s.state(57), distsampler::config_error);
  CHECK_THROWS_WITH(s.state(57),
                    "StreamingShardSampler::state: samples_done 57 exceeds the longest worker stream of "
                    "this segment (56 samples)");
  CHECK_THROWS_WITH(s.state(WorkerProgress({1})),
                    "StreamingShardSampler::state: WorkerProgress has 1 entries (expected num_workers = 2)");
  CHECK_THROWS_WITH(s.state(WorkerProgress({56, 0})),
                    "StreamingShardSampler::state: worker 0 read 56 samples, past the end of rank 1's stream of 55 "
                    "(expected at most 55)");
  CHECK_THROWS_WITH(s.state(ConsumerProgress({0, 0, 0})),
                    "StreamingShardSampler::state: ConsumerProgress has 3 entries (expected consumers() = 4)");
  CHECK_THROWS_WITH(s.state(ConsumerProgress({0, 56, 0, 0})),
                    "StreamingShardSampler::state: consumer 1 read 56 samples, past the end of its stream of 55 "
                    "(expected at most 55)");
  CHECK(s.state(ConsumerProgress({56, 55, 55, 55})).consumed == 221);
}

TEST_CASE("states are stable across versions: a state written by an earlier release still resumes",
          "[shard][progress]") {
  // Written by an earlier release (version 1, before the key's fields were explicit) for
  // options whose order the spread lanes leave unchanged (one block per row, m == C): a
  // change that refuses it breaks every saved shard checkpoint of these options.
  const auto kept = ShardSamplerOptions().with_canonical_streams(8).with_max_open_shards(8).with_run_length(8);
  const SamplerState old = SamplerState::from_text(
      "distsampler-state v1 dataset_size=220 seed=0 epoch=0 consumed=3 fingerprint=0x68ee57a5f717993f");
  StreamingShardSampler s({100, 50, 0, 70}, World(), kept);
  s.resume(old);
  CHECK(s.start() == 3);
  CHECK(s.epoch() == 0);
  // Written again it is a version-3 state of the same position.
  const SamplerState again = s.state(0);
  CHECK(again.written_version() == 3);
  CHECK(again.consumed == 3);
  // A version-3 state of an earlier release (order version 2) of the same options loads,
  // and the order is the one it was saved from (epoch 4 began 27 35 75 91 150 158 182 113).
  const SamplerState v3 = SamplerState::from_text(
      "distsampler-state v3 sampler=shard dataset_size=220 seed=0 shuffle=true tail=pad "
      "engine=shard-shuffle-streams8-open8-run8-window16/2 layout=0x33ede7b3b73c4b19 epoch=4 consumed=3 ahead=64-67 "
      "checksum=0xa15006122fda61e5");
  s.resume(v3);
  const std::vector<std::uint64_t> began{27, 35, 75, 91, 150, 158, 182, 113};
  for (std::uint64_t p = 0; p < began.size(); ++p) CHECK(s.at_global(p).index == began[p]);
  // Reordered shards, another tail or other options still refuse the old state.
  StreamingShardSampler reordered({100, 50, 70, 0}, World(), kept);
  CHECK_THROWS_AS(reordered.resume(old), distsampler::state_error);
  StreamingShardSampler dropping({100, 50, 0, 70}, World(), ShardSamplerOptions(kept).with_tail(Tail::drop));
  CHECK_THROWS_AS(dropping.resume(old), distsampler::state_error);
  StreamingShardSampler longer_runs({100, 50, 0, 70}, World(), ShardSamplerOptions(kept).with_run_length(4));
  CHECK_THROWS_AS(longer_runs.resume(old), distsampler::state_error);
}

TEST_CASE("states of an order the spread lanes changed are refused naming the engine version",
          "[shard][progress][errors]") {
  // The earlier default options (64 streams, 8 open, runs of 8) read a block's lanes as
  // neighbours; version 3 spreads them, so their states describe another order.
  const auto old_defaults = ShardSamplerOptions().with_canonical_streams(64).with_max_open_shards(8).with_run_length(8);
  const SamplerState v1 = SamplerState::from_text(
      "distsampler-state v1 dataset_size=220 seed=0 epoch=0 consumed=3 fingerprint=0x8c375a225a23acd9");
  StreamingShardSampler s({100, 50, 0, 70}, World(), old_defaults);
  CHECK_THROWS_WITH(
      s.resume(v1),
      "StreamingShardSampler::resume: engine differs (state shard-shuffle-streams64-open8-run8-window16/1, "
      "sampler shard-shuffle-streams64-open8-run8-window16/3; version 1 and 2 states were written by "
      "version 1 of their engine, whose order this one does not keep) (version 1 state; state "
      "fingerprint 0x8c375a225a23acd9, expected 0x8c375a225a23acd9)");
  const SamplerState v3 = SamplerState::from_text(
      "distsampler-state v3 sampler=shard dataset_size=220 seed=0 shuffle=true tail=pad "
      "engine=shard-shuffle-streams4-open2-run2-window16/2 layout=0x33ede7b3b73c4b19 epoch=4 consumed=3 ahead=4-7 "
      "checksum=0xaaf6cfc2960c3ec8");
  StreamingShardSampler t({100, 50, 0, 70}, World(),
                          ShardSamplerOptions().with_canonical_streams(4).with_max_open_shards(2).with_run_length(2));
  CHECK_THROWS_WITH(t.resume(v3),
                    "StreamingShardSampler::resume: engine differs (state "
                    "shard-shuffle-streams4-open2-run2-window16/2, sampler "
                    "shard-shuffle-streams4-open2-run2-window16/3)");
  CHECK(t.epoch() == 0);
}

TEST_CASE("a resume that throws leaves the sampler reading exactly what it read before", "[shard][progress][errors]") {
  const std::vector<std::uint64_t> sizes{40, 0, 17, 63, 5};
  const auto o = ShardSamplerOptions()
                     .with_seed(7)
                     .with_run_length(2)
                     .with_max_open_shards(2)
                     .with_canonical_streams(3)
                     .with_num_workers(2);
  StreamingShardSampler s(sizes, World(1, 3), o);
  s.set_epoch(6);
  s.resume(s.state(ConsumerProgress({3, 0, 5, 1, 2, 7})));  // a segment with holes
  const Snapshot before(s);
  REQUIRE(before.start != 0);
  // A state of other shards: the fingerprint differs.
  StreamingShardSampler other({40, 0, 17, 64, 5}, World(), o);
  other.set_epoch(9);
  const SamplerState foreign = other.state(4);
  CHECK_THROWS_AS(s.resume(foreign), distsampler::state_error);
  CHECK_THROWS_WITH(s.resume(foreign), Catch::Matchers::StartsWith("StreamingShardSampler::resume: "));
  CHECK(Snapshot(s) == before);
  // A state claiming more than the dataset.
  SamplerState beyond = s.state(0);
  beyond.consumed = 126;
  CHECK_THROWS_AS(s.resume(beyond), distsampler::state_error);
  CHECK(Snapshot(s) == before);
  // Options that differ in the order (run length).
  StreamingShardSampler longer_runs(sizes, World(), ShardSamplerOptions(o).with_run_length(3));
  CHECK_THROWS_AS(s.resume(longer_runs.state(2)), distsampler::state_error);
  CHECK(Snapshot(s) == before);
  CHECK(s.epoch() == 6);
  // The constructor from a state throws the same, and builds what resume builds.
  CHECK_THROWS_WITH(StreamingShardSampler(sizes, World(1, 3), o, foreign),
                    Catch::Matchers::StartsWith("StreamingShardSampler::resume: "));
  const SamplerState good = s.state(2);
  StreamingShardSampler resumed(sizes, World(1, 3), o);
  resumed.resume(good);
  CHECK(Snapshot(StreamingShardSampler(sizes, World(1, 3), o, good)) == Snapshot(resumed));
}

TEST_CASE("set_epoch and resume replace the whole segment", "[shard][progress]") {
  const std::vector<std::uint64_t> sizes{30, 12, 0, 9};
  StreamingShardSampler s(sizes, World(0, 2), ShardSamplerOptions().with_num_workers(2));
  s.set_epoch(3);
  const Snapshot epoch3(s);
  s.resume(s.state(5));
  CHECK(s.epoch() == 3);
  CHECK(s.start() == 20);
  s.set_epoch(3);
  CHECK(Snapshot(s) == epoch3);
  CHECK(s.start() == 0);
}

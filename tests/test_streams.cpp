// Tests of the streams family: pass plans, cursors over shards of unknown size, job states, elastic resume, packing.
// SPDX-License-Identifier: MIT
#include <distsampler/distsampler.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ds = distsampler;

namespace {

// A played dataset: shard record counts (unknown to the sampler) and a keep rule on global indices.
struct StreamsWorld {
  std::vector<std::uint64_t> sizes;
  std::vector<std::uint64_t> offsets;
  std::uint64_t keep_below = UINT64_MAX;  // kept iff mix64(global) < keep_below
  [[nodiscard]] std::uint64_t global(std::uint64_t shard, std::uint64_t record) const {
    return offsets[shard] + record;
  }
  [[nodiscard]] bool kept(std::uint64_t g) const {
    return keep_below == UINT64_MAX || ds::detail::mix64(g) < keep_below;
  }
  [[nodiscard]] std::optional<std::uint64_t> read(const ds::StreamRead& r) const {
    if (r.record >= sizes[r.shard]) return std::nullopt;
    return kept(global(r.shard, r.record)) ? 1 : 0;
  }
  [[nodiscard]] std::set<std::uint64_t> kept_set() const {
    std::set<std::uint64_t> out;
    for (std::uint64_t s = 0; s < sizes.size(); ++s)
      for (std::uint64_t r = 0; r < sizes[s]; ++r)
        if (kept(global(s, r))) out.insert(global(s, r));
    return out;
  }
};

StreamsWorld streams_world(std::uint64_t shards, std::uint64_t max_size, std::uint64_t keep_percent,
                           std::uint64_t seed) {
  ds::detail::SplitMix64 rng(seed);
  StreamsWorld w;
  std::uint64_t at = 0;
  for (std::uint64_t s = 0; s < shards; ++s) {
    const std::uint64_t r = rng();
    w.sizes.push_back(r % 5 == 0 ? 0 : r % (max_size + 1));
    w.offsets.push_back(at);
    at += w.sizes.back();
  }
  if (keep_percent < 100) w.keep_below = UINT64_MAX / 100 * keep_percent;
  return w;
}

// A job run segment by segment on changing worlds, checking every micro-batch as it goes.
struct StreamsJob {
  const StreamsWorld* data = nullptr;
  std::uint64_t micro_batch = 1;
  std::uint64_t seed = 0;
  std::vector<std::uint64_t> hints;
  std::map<std::uint64_t, std::multiset<std::uint64_t>> emitted;  // pass -> global indices
  std::optional<ds::StreamJobState> state;
  std::uint64_t max_drift = 0, max_state_bytes = 0, max_open = 0;
  std::uint64_t min_pass = 0;  // of the last segment's consumers at its end

  // Runs `steps` steps on world x workers, then saves the state (through its text form).
  void segment(std::uint64_t world, std::uint64_t workers, std::uint64_t steps) {
    auto plan = std::make_shared<ds::StreamPlan>(data->sizes.size(), hints, seed, world * workers);
    std::vector<ds::StreamProgress> start(plan->consumers());
    if (state) start = ds::resume_stream(*plan, *state);
    std::vector<ds::StreamCursor> cursors;
    for (std::uint64_t c = 0; c < plan->consumers(); ++c) cursors.emplace_back(plan, c, start[c]);
    auto read = [&](const ds::StreamRead& r) { return data->read(r); };
    for (std::uint64_t t = 0; t < steps; ++t) {
      for (std::uint64_t rank = 0; rank < world; ++rank) {
        ds::StreamCursor& cur = cursors[rank * workers + t % workers];
        const std::vector<ds::StreamEmit> batch = cur.next(micro_batch, read);
        REQUIRE(batch.size() == micro_batch);
        for (const ds::StreamEmit& e : batch) {
          REQUIRE(e.end == e.begin + 1);
          REQUIRE(data->kept(data->global(e.shard, e.record)));
          emitted[e.pass].insert(data->global(e.shard, e.record));
        }
      }
      std::uint64_t lo = UINT64_MAX, hi = 0;
      for (const auto& c : cursors) {
        lo = std::min(lo, c.progress().pass);
        hi = std::max(hi, c.progress().pass);
      }
      max_drift = std::max(max_drift, hi - lo);
      min_pass = lo;
    }
    std::vector<ds::StreamProgress> progress;
    for (const auto& c : cursors) progress.push_back(c.progress());
    const ds::StreamJobState s = ds::assemble_stream_state(*plan, progress);
    const std::string text = s.to_text();
    max_state_bytes = std::max<std::uint64_t>(max_state_bytes, text.size());
    max_open = std::max<std::uint64_t>(max_open, s.open.size());
    state = ds::StreamJobState::from_text(text);
    REQUIRE(state->to_text() == text);
  }

  // Every pass all consumers left holds each kept sample exactly once; later passes at most once.
  void check_passes() const {
    const std::set<std::uint64_t> kept = data->kept_set();
    for (const auto& [pass, got] : emitted) {
      for (const std::uint64_t g : got) REQUIRE(got.count(g) == 1);
      if (pass < min_pass) REQUIRE(std::set<std::uint64_t>(got.begin(), got.end()) == kept);
    }
  }
};

}  // namespace

TEST_CASE("stream consumers emit B kept samples per micro-batch, each kept sample once per pass", "[streams]") {
  ds::detail::SplitMix64 rng(2026);
  for (int round = 0; round < 60; ++round) {
    const std::uint64_t shards = 1 + rng() % 13, world = 1 + rng() % 3, workers = 1 + rng() % 3;
    static const std::uint64_t keeps[] = {100, 60, 25};
    const StreamsWorld data = streams_world(shards, 1 + rng() % 40, keeps[rng() % 3], rng());
    if (data.kept_set().empty()) continue;
    StreamsJob job;
    job.data = &data;
    job.micro_batch = 1 + rng() % 4;
    job.seed = rng() % 5;
    if (rng() % 2 == 0) job.hints = data.sizes;
    const std::uint64_t kept = data.kept_set().size();
    // Enough steps for every consumer to finish a few passes.
    const std::uint64_t steps = (4 * kept) / (job.micro_batch * world) + 4 * workers;
    INFO("round " << round << " shards " << shards << " world " << world << " workers " << workers << " B "
                  << job.micro_batch << " kept " << kept);
    job.segment(world, workers, steps);
    job.check_passes();
    CHECK(job.min_pass >= 1);
    CHECK(job.max_open <= job.max_drift + 1);
    CHECK(job.max_state_bytes <= 160 + 24 * (world * workers) + 24 * (job.max_open * shards * (world * workers)));
  }
}

TEST_CASE("stream states resume on other worlds and worker counts without a repeat or a loss", "[streams]") {
  ds::detail::SplitMix64 rng(77);
  for (int round = 0; round < 40; ++round) {
    const std::uint64_t shards = 1 + rng() % 10;
    const StreamsWorld data = streams_world(shards, 1 + rng() % 30, rng() % 2 ? 100 : 50, rng());
    const std::uint64_t kept = data.kept_set().size();
    if (kept == 0) continue;
    StreamsJob job;
    job.data = &data;
    job.micro_batch = 1 + rng() % 3;
    job.seed = rng();
    INFO("round " << round << " shards " << shards << " kept " << kept);
    std::uint64_t total = 0;
    for (int seg = 0; seg < 4; ++seg) {
      const std::uint64_t world = 1 + rng() % 4, workers = 1 + rng() % 3;
      const std::uint64_t steps = 1 + rng() % (1 + kept / (job.micro_batch * world));
      job.segment(world, workers, steps);
      total += steps;
    }
    job.segment(1 + rng() % 2, 1 + rng() % 2, 3 * kept / job.micro_batch + 8);
    job.check_passes();
    CHECK(job.min_pass >= 1);
  }
}

TEST_CASE("stream consumers drift apart by at most one pass over many passes", "[streams]") {
  // 64 shards of 60..140 records (no hints) or of 0..400 (hints), kept at 50%, 4 to 12 consumers, 30 passes.
  for (const bool hinted : {false, true}) {
    for (const std::uint64_t consumers : {std::uint64_t{4}, std::uint64_t{7}, std::uint64_t{12}}) {
      StreamsWorld data;
      ds::detail::SplitMix64 rng(consumers);
      std::uint64_t at = 0;
      for (int s = 0; s < 64; ++s) {
        data.sizes.push_back(hinted ? rng() % 401 : 60 + rng() % 81);
        data.offsets.push_back(at);
        at += data.sizes.back();
      }
      data.keep_below = UINT64_MAX / 2;
      StreamsJob job;
      job.data = &data;
      job.micro_batch = 4;
      job.seed = 11;
      if (hinted) job.hints = data.sizes;
      job.segment(consumers, 1, 30 * data.kept_set().size() / (4 * consumers));
      job.check_passes();
      INFO("hinted " << hinted << " consumers " << consumers);
      CHECK(job.min_pass >= 28);
      // Measured (docs/STREAMS.md): hints keep shares equal up to a shard; without them
      // shares differ by the sizes' spread and the drift walks (3 passes in 30 at 5 shards a consumer).
      CHECK(job.max_drift <= (hinted || consumers < 12 ? 1u : 3u));
      CHECK(job.max_open <= job.max_drift + 1);
    }
  }
}

TEST_CASE("stream cursors never sit idle with fewer shards than consumers", "[streams]") {
  // One shard of 12 records, 4 consumers: the shard is read by stride, 3 records each per pass.
  StreamsWorld data;
  data.sizes = {12};
  data.offsets = {0};
  auto plan = std::make_shared<ds::StreamPlan>(1, std::vector<std::uint64_t>{}, 3, 4);
  CHECK(plan->parts() == 4);
  for (std::uint64_t c = 0; c < 4; ++c) {
    ds::StreamCursor cur(plan, c);
    auto read = [&](const ds::StreamRead& r) { return data.read(r); };
    const auto batch = cur.next(3, read);
    std::set<std::uint64_t> residues;
    for (const auto& e : batch) {
      CHECK(e.pass == 0);
      residues.insert(e.record % 4);
    }
    CHECK(residues.size() == 1);
    CHECK(cur.progress().pass == 0);  // the end of its part is not known before the next read
    CHECK(cur.stats().records == 3);
  }
}

TEST_CASE("an empty dataset or a filter that keeps nothing is an error after one pass", "[streams]") {
  StreamsWorld data;
  data.sizes = GENERATE(std::vector<std::uint64_t>{0, 0, 0}, std::vector<std::uint64_t>{5, 0, 7});
  data.offsets = {0, data.sizes[0], data.sizes[0] + data.sizes[1]};
  data.keep_below = 0;  // keeps nothing
  auto plan = std::make_shared<ds::StreamPlan>(3, std::vector<std::uint64_t>{}, 1, 2);
  ds::StreamCursor cur(plan, 0);
  auto read = [&](const ds::StreamRead& r) { return data.read(r); };
  CHECK_THROWS_WITH(cur.next(1, read), Catch::Contains("pass 0 of 3 shards has no record with an output") &&
                                           Catch::Contains("the dataset is empty or the filter keeps nothing"));
  CHECK(cur.progress().pass == 0);  // strong guarantee
}

TEST_CASE("stream job states refuse edits, other datasets and bad contents", "[streams]") {
  auto plan = std::make_shared<ds::StreamPlan>(4, std::vector<std::uint64_t>{}, 9, 2);
  StreamsWorld data;
  data.sizes = {3, 4, 5, 6};
  data.offsets = {0, 3, 7, 12};
  ds::StreamCursor a(plan, 0), b(plan, 1);
  auto read = [&](const ds::StreamRead& r) { return data.read(r); };
  (void)a.next(5, read);
  const std::string text = ds::assemble_stream_state(*plan, {a.progress(), b.progress()}).to_text();
  CHECK(text.rfind("distsampler-stream v1 seed=9 shards=4 layout=0x", 0) == 0);
  std::string edited = text;
  edited[edited.find("seed=9") + 5] = '8';
  CHECK_THROWS_WITH(ds::StreamJobState::from_text(edited), Catch::Contains("checksum mismatch"));
  CHECK_THROWS_WITH(ds::StreamJobState::from_text("distsampler-stream v1 seed=1"),
                    Catch::Contains("no checksum= field"));
  const ds::StreamJobState s = ds::StreamJobState::from_text(text);
  ds::StreamPlan other(4, {}, 10, 3), hinted(4, {1, 2, 3, 4}, 9, 3), fewer(3, {}, 9, 3);
  CHECK_THROWS_WITH(s.validate(other), "StreamJobState: seed differs (state 9, sampler 10)");
  CHECK_THROWS_WITH(s.validate(hinted), "StreamJobState: byte sizes differ");
  CHECK_THROWS_WITH(s.validate(fewer), "StreamJobState: shards differs (state 4, sampler 3)");
  CHECK_THROWS_AS(ds::resume_stream(other, s), ds::state_error);
  CHECK_THROWS_WITH(ds::assemble_stream_state(*plan, {a.progress()}),
                    "assemble_stream_state: 1 progress entries for 2 consumers (expected one per consumer)");
  // Contents a checksum cannot vouch for: a hand-made state with a valid checksum.
  auto sealed = [](const std::string& body) {
    ds::StreamJobState fake;
    (void)fake;
    const std::uint64_t sum =
        ds::detail::mix64(ds::detail::fnv1a64(reinterpret_cast<const std::uint8_t*>(body.data()), body.size()));
    return body + " checksum=" + ds::detail::hex64(sum);
  };
  const std::string head = "distsampler-stream v1 seed=9 shards=4 layout=0x0000000000000000 next_pass=2 step=0 open=";
  CHECK_NOTHROW(ds::StreamJobState::from_text(sealed(head + "1:3.0/1@4+0.1/2@0+0.0/2@1 carries=-")));
  CHECK_THROWS_WITH(ds::StreamJobState::from_text(sealed(head + "2:3.0/1@4 carries=-")),
                    Catch::Contains("open pass 2 is not below next_pass 2"));
  CHECK_THROWS_WITH(ds::StreamJobState::from_text(sealed(head + "1:4.0/1@0 carries=-")),
                    Catch::Contains("shard 4 is not below shards 4"));
  CHECK_THROWS_WITH(ds::StreamJobState::from_text(sealed(head + "1:3.0/1@0+3.0/2@0 carries=-")),
                    Catch::Contains("shard 3 has overlapping pieces"));
  CHECK_THROWS_WITH(ds::StreamJobState::from_text(sealed(head + "1:3.2/2@0 carries=-")),
                    Catch::Contains("part 2/2 (expected part < parts)"));
  CHECK_THROWS_WITH(ds::StreamJobState::from_text(sealed(head + "1:1.0/1@0,0:2.0/1@0 carries=-")),
                    Catch::Contains("open pass 0 is out of order"));
  CHECK_THROWS_WITH(ds::StreamJobState::from_text(sealed(head + "- carries=0:1:2:5/5")),
                    Catch::Contains("carry 0:1:2 (expected done < total"));
  CHECK_THROWS_WITH(
      ds::StreamJobState::from_text(sealed(head + "- carries=x")),
      "StreamJobState::from_text: carry pass \"x\" is not a decimal integer (expected only digits 0-9) at offset 98");
}

TEST_CASE("stream plans and cursors refuse bad arguments, naming them", "[streams]") {
  CHECK_THROWS_WITH(ds::StreamPlan(0, {}, 0, 1), "StreamPlan: shards 0 is too few (expected at least 1)");
  CHECK_THROWS_WITH(ds::StreamPlan(2, {}, 0, 0), "StreamPlan: consumers 0 is too few (expected at least 1)");
  CHECK_THROWS_WITH(ds::StreamPlan(2, {1}, 0, 1),
                    "StreamPlan: byte_sizes has 1 entries for 2 shards (expected one per shard, or none)");
  auto plan = std::make_shared<ds::StreamPlan>(2, std::vector<std::uint64_t>{}, 0, 2);
  CHECK_THROWS_WITH(ds::StreamCursor(plan, 2), Catch::Contains("consumer 2 is out of range for consumers 2"));
  CHECK_THROWS_WITH(ds::StreamCursor(nullptr, 0), "StreamCursor: plan is null (expected a StreamPlan)");
  ds::StreamCursor cur(plan, 0);
  CHECK_THROWS_WITH(cur.next(0, [](const ds::StreamRead&) { return std::optional<std::uint64_t>(1); }),
                    "StreamCursor::next: capacity 0 is too small (expected at least 1)");
  CHECK_THROWS_WITH(ds::StreamPacker(0, 8), Catch::Contains("StreamPacker: sequences 0 x sequence_length 8"));
  CHECK_THROWS_WITH(ds::StreamSampler(2, {}, 0, ds::World(0, 1), 0),
                    "StreamSampler: num_workers 0 is too few (expected at least 1)");
}

TEST_CASE("stream plans balance byte hints and deal cumulative loads across passes", "[streams]") {
  // Five equal shards over four consumers: the extra shard of each pass goes round, so after
  // four passes every consumer read exactly five shards.
  ds::StreamPlan plan(5, {}, 1, 4);
  std::vector<std::uint64_t> count(4, 0);
  for (std::uint64_t p = 0; p < 4; ++p)
    for (std::uint64_t c = 0; c < 4; ++c) count[c] += plan.share(p, c).size();
  CHECK(count == std::vector<std::uint64_t>{5, 5, 5, 5});
  // One huge shard and six small: the consumer with the huge one gets nothing else.
  ds::StreamPlan hinted(7, {600, 100, 100, 100, 100, 100, 100}, 2, 2);
  for (std::uint64_t c = 0; c < 2; ++c) {
    const auto& share = hinted.share(0, c);
    const bool has_big = std::any_of(share.begin(), share.end(), [](const ds::StreamPiece& p) { return p.shard == 0; });
    if (has_big) CHECK(share.size() == 1);
    if (!has_big) CHECK(share.size() == 6);
  }
}

TEST_CASE("the packer fills sequences of L tokens and its carried document survives a resume", "[streams]") {
  // Documents of 0..23 tokens (0: dropped by the filter), lengths known only when read.
  const std::vector<std::uint64_t> sizes = {7, 0, 5, 9, 3};
  auto tokens = [](std::uint64_t shard, std::uint64_t record) { return ds::detail::mix64(shard * 131 + record) % 24; };
  auto read = [&](const ds::StreamRead& r) -> std::optional<std::uint64_t> {
    if (r.record >= sizes[r.shard]) return std::nullopt;
    return tokens(r.shard, r.record);
  };
  const ds::StreamPacker packer(2, 16);
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::pair<std::uint64_t, std::uint64_t>>>
      got;  // (pass, doc) -> token ranges
  std::optional<ds::StreamJobState> state;
  std::uint64_t min_pass = 0;
  bool carried_across = false;
  const std::uint64_t worlds[][2] = {{2, 2}, {1, 3}, {3, 1}, {1, 1}};
  const std::uint64_t steps[] = {3, 2, 3, 40};
  for (int seg = 0; seg < 4; ++seg) {
    const std::uint64_t consumers = worlds[seg][0] * worlds[seg][1];
    auto plan = std::make_shared<ds::StreamPlan>(sizes.size(), std::vector<std::uint64_t>{}, 5, consumers);
    std::vector<ds::StreamProgress> start(consumers);
    if (state) start = ds::resume_stream(*plan, *state);
    std::vector<ds::StreamCursor> cursors;
    for (std::uint64_t c = 0; c < consumers; ++c) cursors.emplace_back(plan, c, start[c]);
    for (std::uint64_t t = 0; t < steps[seg]; ++t) {
      for (std::uint64_t rank = 0; rank < worlds[seg][0]; ++rank) {
        const auto seqs = packer.next(cursors[rank * worlds[seg][1] + t % worlds[seg][1]], read);
        REQUIRE(seqs.size() == 2);
        for (const auto& seq : seqs) {
          std::uint64_t n = 0;
          for (const auto& e : seq) {
            n += e.end - e.begin;
            got[{e.pass, e.shard * 1000 + e.record}].push_back({e.begin, e.end});
          }
          REQUIRE(n == 16);
        }
      }
    }
    std::vector<ds::StreamProgress> progress;
    min_pass = UINT64_MAX;
    for (const auto& c : cursors) {
      progress.push_back(c.progress());
      min_pass = std::min(min_pass, c.progress().pass);
    }
    state = ds::StreamJobState::from_text(ds::assemble_stream_state(*plan, progress).to_text());
    if (!state->carries.empty() && seg < 3) carried_across = true;
  }
  CHECK(carried_across);
  CHECK(min_pass >= 2);
  // Every document of a finished pass: its tokens emitted exactly once, in order, in full.
  for (std::uint64_t pass = 0; pass < min_pass; ++pass) {
    for (std::uint64_t s = 0; s < sizes.size(); ++s) {
      for (std::uint64_t r = 0; r < sizes[s]; ++r) {
        auto it = got.find({pass, s * 1000 + r});
        if (tokens(s, r) == 0) {
          CHECK(it == got.end());
          continue;
        }
        REQUIRE(it != got.end());
        std::uint64_t at = 0;
        for (const auto& [b, e] : it->second) {
          CHECK(b == at);
          at = e;
        }
        CHECK(at == tokens(s, r));
      }
    }
  }
}

TEST_CASE("StreamSampler gives each rank its workers' cursors and a key naming the family", "[streams]") {
  const std::vector<std::uint64_t> sizes = {4, 4, 4};
  auto read = [&](const ds::StreamRead& r) -> std::optional<std::uint64_t> {
    if (r.record >= sizes[r.shard]) return std::nullopt;
    return 1;
  };
  ds::StreamSampler r0(3, {}, 1, ds::World(0, 2), 2), r1(3, {}, 1, ds::World(1, 2), 2);
  CHECK(r0.key().sampler == "streams");
  CHECK(r0.key().fingerprint() == r1.key().fingerprint());
  // 3 shards, 4 consumers: each shard in 2 parts of 2 records; 6 pieces dealt 2, 2, 1, 1.
  std::set<std::pair<std::uint64_t, std::uint64_t>> pass0;
  for (int t = 0; t < 4; ++t) {
    for (auto* s : {&r0, &r1}) {
      for (std::uint64_t w = 0; w < 2; ++w) {
        for (const auto& e : s->next(w, 1, read)) {
          if (e.pass == 0) CHECK(pass0.insert({e.shard, e.record}).second);
        }
      }
    }
  }
  CHECK(pass0.size() == 12);  // the whole of pass 0, once
  CHECK_THROWS_WITH(r0.cursor(2), Catch::Contains("worker 2 is out of range for num_workers 2"));
}

// distsampler tests: the transport-free overlap check: sums, expected blocks, verdicts and each sampler's segment walk.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/distsampler.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ds = distsampler;

namespace {

// Every rank's segment_sums of the sampler `make(world)` builds, ranks simulated in one process.
template <class Make>
std::vector<ds::ReadSums> ranks_sums(std::uint64_t world_size, const Make& make) {
  std::vector<ds::ReadSums> out;
  for (std::uint64_t r = 0; r < world_size; ++r) {
    const ds::World world(r, world_size);
    out.push_back(ds::segment_sums(make(world), world));
  }
  return out;
}

// Rank r of a hand-written partition reads lists[r].
std::vector<ds::ReadSums> reading(const std::vector<std::vector<std::uint64_t>>& lists) {
  std::vector<ds::ReadSums> out(lists.size());
  for (std::size_t r = 0; r < lists.size(); ++r) {
    for (const std::uint64_t i : lists[r]) out[r].read(i);
  }
  return out;
}

std::uint64_t total_skips(const std::vector<ds::ReadSums>& sums) {
  std::uint64_t n = 0;
  for (const auto& s : sums) n += s.skips();
  return n;
}

ds::StreamingShardSampler shards(ds::World world, std::uint64_t workers, ds::Tail tail) {
  ds::ShardSamplerOptions o;
  o.seed = 3;
  o.tail = tail;
  o.canonical_streams = 8;
  o.max_open_shards = 2;
  o.run_length = 4;
  return ds::StreamingShardSampler({97, 0, 45, 130}, world, o.with_num_workers(workers));
}

}  // namespace

TEST_CASE("ReadSums counts reads, padding and skips and hashes with two fixed hashes", "[overlap]") {
  // Reference values of SplitMix64 and of MurmurHash3's fmix64 of (x ^ 0x5851f42d4c957f2d).
  CHECK(ds::ReadSums::hash_a(0) == 0xe220a8397b1dcdafu);
  CHECK(ds::ReadSums::hash_a(12345) == 0x22118258a9d111a0u);
  CHECK(ds::ReadSums::hash_b(0) == 0x264304d1257f9540u);
  CHECK(ds::ReadSums::hash_b(1) == 0x5cc80982c981db6bu);
  CHECK(ds::ReadSums::hash_b(12345) == 0xbefd04b9a8f612f0u);
  ds::ReadSums s;
  s.read(1);
  s.read(12345);
  s.padding();
  s.skip(0);
  const ds::ReadSums::Words expected = {2,
                                        0x910a2dec89025cc1u + 0x22118258a9d111a0u,
                                        0x5cc80982c981db6bu + 0xbefd04b9a8f612f0u,
                                        1,
                                        1,
                                        0xe220a8397b1dcdafu,
                                        0x264304d1257f9540u};
  CHECK(s.words() == expected);
  CHECK(s.reads() == 2);
  CHECK(s.padding_slots() == 1);
  CHECK(s.skips() == 1);
  CHECK(ds::ReadSums(expected) == s);
}

TEST_CASE("ReadSums do not depend on order, and merge is associative and commutative", "[overlap]") {
  ds::ReadSums a, b, c, forward, backward;
  for (std::uint64_t i = 0; i < 30; ++i) {
    (i % 3 == 0 ? a : i % 3 == 1 ? b : c).read(i * 7);
    forward.read(i * 7);
    backward.read((29 - i) * 7);
  }
  a.padding();
  c.skip(1000);
  forward.padding();
  forward.skip(1000);
  ds::ReadSums ab_c = a, bc = b, a_bc = a, cba = c;
  ab_c.merge(b);
  ab_c.merge(c);
  bc.merge(c);
  a_bc.merge(bc);
  cba.merge(b);
  cba.merge(a);
  CHECK(ab_c == a_bc);
  CHECK(ab_c == cba);
  CHECK(ab_c == forward);
  backward.padding();
  backward.skip(1000);
  CHECK(backward == forward);
  ds::ReadSums other = forward;
  other.read(0);
  CHECK(other != forward);
}

TEST_CASE("The ranks' blocks of 0..N-1 are the expected sums of the whole range", "[overlap]") {
  ds::ReadSums whole, blocks;
  for (std::uint64_t i = 0; i < 10; ++i) whole.read(9 - i);
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t r = 0; r < 3; ++r) {
    const ds::ReadSums block = ds::block_sums(10, ds::World(r, 3));
    sizes.push_back(block.reads());
    blocks.merge(block);
  }
  CHECK(sizes == std::vector<std::uint64_t>{4, 3, 3});
  CHECK(blocks == whole);
  CHECK(ds::block_sums(2, ds::World(2, 3)).reads() == 0);
  const ds::OverlapWords words = ds::overlap_words(whole, 10, ds::World(1, 3));
  CHECK(words[0] == 10);
  CHECK(words[7] == ds::ReadSums::hash_a(4) + ds::ReadSums::hash_a(5) + ds::ReadSums::hash_a(6));
  CHECK(words[8] == ds::ReadSums::hash_b(4) + ds::ReadSums::hash_b(5) + ds::ReadSums::hash_b(6));
}

TEST_CASE("The verdict passes a partition and names a duplicated, missing or swapped index", "[overlap]") {
  using Lists = std::vector<std::vector<std::uint64_t>>;
  CHECK(ds::check_overlap(reading(Lists{{0, 2, 4, 6, 8}, {9, 7, 5, 3, 1}}), 10).message ==
        "ok: disjoint and covering over 2 ranks (10 reads of 10 expected, 0 padding)");
  const auto duplicated = ds::check_overlap(reading(Lists{{0, 1, 2, 3, 4}, {4, 5, 6, 7, 8, 9}}), 10);
  CHECK_FALSE(duplicated.ok);
  CHECK(duplicated.reads == 11);
  CHECK(duplicated.expected_reads == 10);
  CHECK(duplicated.message == "overlap: 1 extra reads (11 reads of 10 expected, 0 padding)");
  CHECK(ds::check_overlap(reading(Lists{{0, 1, 2, 3, 4}, {5, 6, 7, 8}}), 10).message ==
        "missing: 1 samples not read (9 reads of 10 expected, 0 padding)");
  const auto swapped = ds::check_overlap(reading(Lists{{0, 1, 2, 3, 4}, {4, 6, 7, 8, 9}}), 10);
  CHECK_FALSE(swapped.ok);
  CHECK(swapped.message ==
        "overlap and missing samples: the right number of reads but not of the right indices "
        "(10 reads of 10 expected, 0 padding)");
  // An index outside [0, N) in place of one inside is caught by the sums alone.
  CHECK_FALSE(ds::check_overlap(reading(Lists{{0, 1, 2, 3, 4}, {5, 6, 7, 8, 10}}), 10).ok);
  // Skips reduce what is expected; skipping more than N expects nothing rather than wrapping.
  auto sums = reading(Lists{{0, 1, 2}, {3, 4}});
  sums[1].skip(5);
  sums[1].padding();
  CHECK(ds::check_overlap(sums, 6).message ==
        "ok: disjoint and covering over 2 ranks (5 reads of 5 expected, 1 padding)");
  ds::ReadSums too_many;
  for (std::uint64_t i = 0; i < 3; ++i) too_many.skip(i);
  CHECK(ds::check_overlap({too_many}, 2).message ==
        "overlap and missing samples: the right number of reads but not of the right indices "
        "(0 reads of 0 expected, 0 padding)");
}

TEST_CASE("check_overlap needs one ReadSums per rank", "[overlap][errors]") {
  CHECK_THROWS_AS(ds::check_overlap({}, 10), ds::config_error);
  CHECK_THROWS_WITH(ds::check_overlap({}, 10),
                    "check_overlap: per_rank is empty (expected one ReadSums per rank, at least one)");
}

TEST_CASE("Every sampler family's fresh epoch passes under every tail", "[overlap]") {
  const std::string ok3 = "ok: disjoint and covering over 3 ranks (";
  const std::string ok4 = "ok: disjoint and covering over 4 ranks (";
  auto plain = [](ds::Tail tail) {
    return [tail](ds::World w) {
      ds::DistributedSampler<> s(101, w, ds::SamplerOptions().with_seed(7).with_tail(tail));
      s.set_epoch(2);
      return s;
    };
  };
  CHECK(ds::check_overlap(ranks_sums(3, plain(ds::Tail::pad)), 101).message ==
        ok3 + "101 reads of 101 expected, 1 padding)");
  CHECK(ds::check_overlap(ranks_sums(3, plain(ds::Tail::drop)), 101).message ==
        ok3 + "99 reads of 99 expected, 0 padding)");
  CHECK(ds::check_overlap(ranks_sums(3, plain(ds::Tail::uneven)), 101).message ==
        ok3 + "101 reads of 101 expected, 0 padding)");
  const auto torch = ranks_sums(3, [](ds::World w) {
    return ds::DistributedSampler<ds::TorchRandperm>(10, w,
                                                     ds::SamplerOptions().with_seed(42).with_tail(ds::Tail::drop));
  });
  CHECK(ds::check_overlap(torch, 10).message == ok3 + "9 reads of 9 expected, 0 padding)");

  auto batches = [](ds::Tail tail) {
    return [tail](ds::World w) {
      return ds::DistributedBatchSampler<>(
          500, w,
          ds::BatchSamplerOptions().with_micro_batch_size(3).with_accumulation_steps(2).with_seed(4).with_tail(tail));
    };
  };
  // G = 24: 20 full steps and 20 left over.
  CHECK(ds::check_overlap(ranks_sums(4, batches(ds::Tail::drop)), 500).message ==
        ok4 + "480 reads of 480 expected, 0 padding)");
  CHECK(ds::check_overlap(ranks_sums(4, batches(ds::Tail::pad)), 500).message ==
        ok4 + "500 reads of 500 expected, 4 padding)");
  CHECK(ds::check_overlap(ranks_sums(4, batches(ds::Tail::uneven)), 500).message ==
        ok4 + "500 reads of 500 expected, 0 padding)");

  // 272 samples over 3 ranks x 2 workers: 272 mod 6 = 2.
  auto streams = [](ds::Tail tail) { return [tail](ds::World w) { return shards(w, 2, tail); }; };
  CHECK(ds::check_overlap(ranks_sums(3, streams(ds::Tail::drop)), 272).message ==
        ok3 + "270 reads of 270 expected, 0 padding)");
  CHECK(ds::check_overlap(ranks_sums(3, streams(ds::Tail::pad)), 272).message ==
        ok3 + "272 reads of 272 expected, 4 padding)");
  CHECK(ds::check_overlap(ranks_sums(3, streams(ds::Tail::uneven)), 272).message ==
        ok3 + "272 reads of 272 expected, 0 padding)");
  // The dropped positions are skipped, each by one rank.
  CHECK(total_skips(ranks_sums(3, streams(ds::Tail::drop))) == 2);
  CHECK(total_skips(ranks_sums(4, batches(ds::Tail::drop))) == 20);
}

TEST_CASE("Broken samplers are caught: per-rank seeds, a rank built as another, a missing rank", "[overlap]") {
  const auto seeds = ranks_sums(
      3, [](ds::World w) { return ds::DistributedSampler<>(99, w, ds::SamplerOptions().with_seed(42 + w.rank)); });
  CHECK(ds::check_overlap(seeds, 99).message ==
        "overlap and missing samples: the right number of reads but not of "
        "the right indices (99 reads of 99 expected, 0 padding)");
  const auto local_rank = ranks_sums(4, [](ds::World w) {
    return ds::DistributedSampler<>(100, ds::World(w.rank % 2, 4), ds::SamplerOptions().with_seed(42));
  });
  CHECK(ds::check_overlap(local_rank, 100).message ==
        "overlap and missing samples: the right number of reads but not of the right indices "
        "(100 reads of 100 expected, 0 padding)");
  // The job believes in 4 ranks; 3 were launched.
  std::vector<ds::ReadSums> three;
  for (std::uint64_t r = 0; r < 3; ++r) {
    three.push_back(ds::segment_sums(
        ds::DistributedSampler<>(100, ds::World(r, 4), ds::SamplerOptions().with_tail(ds::Tail::uneven)),
        ds::World(r, 3)));
  }
  CHECK(ds::check_overlap(three, 100).message == "missing: 25 samples not read (75 reads of 100 expected, 0 padding)");
  const auto shard_wrong =
      ranks_sums(3, [](ds::World w) { return shards(ds::World(w.rank == 1 ? 0 : w.rank, 3), 2, ds::Tail::uneven); });
  CHECK(ds::check_overlap(shard_wrong, 272).message.rfind("overlap and missing samples: ", 0) == 0);
}

TEST_CASE("Resumed segments count what was consumed before them exactly once", "[overlap]") {
  // A state after 5 samples per rank on 4 ranks (20 consumed), resumed on 3 ranks under drop: 80 left, 2 dropped.
  const ds::SamplerState state =
      ds::DistributedSampler<>(100, ds::World(0, 4), ds::SamplerOptions().with_seed(42).with_tail(ds::Tail::drop))
          .state(5);
  auto resumed = [&](ds::World w) {
    ds::DistributedSampler<> s(100, w, ds::SamplerOptions().with_seed(42).with_tail(ds::Tail::drop));
    s.resume(state);
    return s;
  };
  const auto sums = ranks_sums(3, resumed);
  CHECK(total_skips(sums) == 22);
  CHECK(ds::check_overlap(sums, 100).message ==
        "ok: disjoint and covering over 3 ranks (78 reads of 78 expected, 0 padding)");
  // Every rank skipping rank 0's share instead of its own counts those twice and the others never.
  std::vector<ds::ReadSums> doubled;
  for (std::uint64_t r = 0; r < 3; ++r) {
    ds::ReadSums reads;
    const auto s = resumed(ds::World(r, 3));
    for (std::uint64_t i = 0; i < s.size(); ++i) reads.read(s[i]);
    const ds::ReadSums own = ds::segment_sums(s, ds::World(r, 3));
    CHECK(own.reads() == reads.reads());
    doubled.push_back(ds::segment_sums(s, ds::World(0, 3)));
  }
  // Rank 0 skips positions 0, 3, ..., 18 and 99 (8 of 22): all three feed them, 24 in all.
  CHECK(total_skips(doubled) == 24);
  CHECK(ds::check_overlap(doubled, 100).message == "overlap: 2 extra reads (78 reads of 76 expected, 0 padding)");

  // Batches: 3 steps and 1 round of G = 12 on 2 ranks (42 consumed), resumed on 4 ranks
  // with G = 12: 458 left, 38 steps, 2 dropped.
  ds::BatchSamplerOptions bo;
  bo.seed = 4;
  const ds::SamplerState batch_state =
      ds::DistributedBatchSampler<>(500, ds::World(0, 2),
                                    ds::BatchSamplerOptions(bo).with_micro_batch_size(3).with_accumulation_steps(2))
          .state(3, 1);
  const auto batch = ranks_sums(4, [&](ds::World w) {
    ds::DistributedBatchSampler<> b(500, w, ds::BatchSamplerOptions(bo).with_micro_batch_size(3));
    b.resume(batch_state);
    return b;
  });
  CHECK(total_skips(batch) == 44);
  CHECK(ds::check_overlap(batch, 500).message ==
        "ok: disjoint and covering over 4 ranks (456 reads of 456 expected, 0 padding)");

  // Shards: a state with ranges ahead of its prefix from 2 ranks x 2 workers, resumed on 3 x 1.
  const ds::SamplerState shard_state = shards(ds::World(0, 2), 2, ds::Tail::drop).state(ds::WorkerProgress({9, 30}));
  CHECK_FALSE(shard_state.ahead.empty());
  const auto shard = ranks_sums(3, [&](ds::World w) {
    auto s = shards(w, 1, ds::Tail::drop);
    s.resume(shard_state);
    return s;
  });
  // 2 x 9 + 2 x 30 consumed, 194 left over 3 consumers: 2 dropped.
  CHECK(total_skips(shard) == 80);
  CHECK(ds::check_overlap(shard, 272).message ==
        "ok: disjoint and covering over 3 ranks (192 reads of 192 expected, 0 padding)");
}

TEST_CASE("Guard records name every library sampler family, the token sampler's included", "[overlap]") {
  // Each family's word is its name, 5 bits a character (a = 1 ... z = 26), first character highest.
  CHECK(ds::guard_family_code("batch") ==
        (std::uint64_t{2} << 55 | std::uint64_t{1} << 50 | std::uint64_t{20} << 45 | std::uint64_t{3} << 40 |
         std::uint64_t{8} << 35));
  const std::vector<std::string> families = {std::string(ds::DistributedSampler<>(10, ds::World(0, 1)).key().sampler),
                                             "batch",
                                             std::string(shards(ds::World(0, 1), 1, ds::Tail::pad).key().sampler),
                                             std::string(ds::TokenBatchSampler::family),
                                             "mixture",
                                             "weighted"};
  CHECK(families[0] == "distributed");
  CHECK(families[2] == "shard");
  std::vector<std::uint64_t> codes;
  for (const std::string& f : families) {
    const std::uint64_t code = ds::guard_family_code(f);
    CHECK(code != 0);
    CHECK(ds::guard_family_name(code) == f);
    for (const std::uint64_t other : codes) CHECK(other != code);
    codes.push_back(code);
  }
  CHECK(ds::guard_family_code("") == 0);
  CHECK(ds::guard_family_name(0) == "custom 0");
  CHECK(ds::guard_family_name(9) == "custom 9");  // a number set by hand, not a packed name
}


namespace {

// 400 samples of 1..60 tokens; samples 7 and 300 of 500 tokens are over the 256-token budget.
std::vector<std::uint32_t> token_lengths() {
  std::vector<std::uint32_t> out(400);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint32_t>(1 + (i * 37 + i / 7) % 60);
  out[7] = out[300] = 500;
  return out;
}

ds::TokenBatchOptions token_options(std::uint64_t accumulation) {
  // Windows of 45: the last holds 400 - 8 x 45 = 40 samples.
  return ds::TokenBatchOptions()
      .with_max_tokens(256)
      .with_window(45)
      .with_accumulation_steps(accumulation)
      .with_seed(11);
}

}  // namespace

TEST_CASE("Token epochs pass the overlap check: empty micro-batches, skipped samples, resumed segments", "[overlap]") {
  const std::vector<std::uint32_t> lengths = token_lengths();
  const auto own = ds::TokenBatchOptions(token_options(2)).with_oversize(ds::Oversize::own_batch);
  const auto fresh = ranks_sums(4, [&](ds::World w) { return ds::TokenBatchSampler(400, lengths, w, own); });
  CHECK(total_skips(fresh) == 0);
  CHECK(ds::check_overlap(fresh, 400).message ==
        "ok: disjoint and covering over 4 ranks (400 reads of 400 expected, 0 padding)");

  // The two samples over the budget are skipped, each by one rank.
  const auto skip = ds::TokenBatchOptions(token_options(2)).with_oversize(ds::Oversize::skip);
  const auto skipped = ranks_sums(4, [&](ds::World w) { return ds::TokenBatchSampler(400, lengths, w, skip); });
  CHECK(total_skips(skipped) == 2);
  CHECK(ds::check_overlap(skipped, 400).message ==
        "ok: disjoint and covering over 4 ranks (398 reads of 398 expected, 0 padding)");

  // Stopped after 3 steps and one round on 4 ranks x 2, resumed on 3 ranks x 1.
  std::uint64_t read_before = 0;
  for (std::uint64_t r = 0; r < 4; ++r) {
    const ds::TokenBatchSampler s(400, lengths, ds::World(r, 4), skip);
    for (std::uint64_t step = 0; step < 3; ++step) {
      read_before += s.micro_batch(step, 0).indices.size() + s.micro_batch(step, 1).indices.size();
    }
    read_before += s.micro_batch(3, 0).indices.size();
  }
  const ds::SamplerState state = ds::TokenBatchSampler(400, lengths, ds::World(0, 4), skip).state(3, 1);
  const auto resumed = ranks_sums(3, [&](ds::World w) {
    ds::TokenBatchSampler s(400, lengths, w, ds::TokenBatchOptions(skip).with_accumulation_steps(1));
    s.resume(state);
    return s;
  });
  CHECK(total_skips(resumed) == read_before + 2);
  CHECK(ds::check_overlap(resumed, 400).message == "ok: disjoint and covering over 3 ranks (" +
                                                       std::to_string(398 - read_before) + " reads of " +
                                                       std::to_string(398 - read_before) + " expected, 0 padding)");

  // A rank built as another reads rank 0's micro-batches twice and its own never.
  const auto wrong = ranks_sums(
      4, [&](ds::World w) { return ds::TokenBatchSampler(400, lengths, ds::World(w.rank == 2 ? 0 : w.rank, 4), own); });
  const ds::GuardReport report = ds::check_overlap(wrong, 400);
  CHECK_FALSE(report.ok);
  CHECK(report.message.rfind("ok: ", 0) == std::string::npos);
}

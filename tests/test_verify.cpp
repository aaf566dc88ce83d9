// distsampler tests: the partition checks catch every kind of broken partition.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <distsampler/distributed/distributed_sampler.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>
#include <distsampler/verify.hpp>

#include <cstdint>
#include <vector>

using distsampler::check_partition;
using distsampler::Tail;
using Lists = std::vector<std::vector<std::uint64_t>>;

TEST_CASE("check_partition accepts a correct partition", "[verify]") {
  const auto report = check_partition(6, Lists{{0, 2, 4}, {1, 3, 5}}, Tail::pad);
  CHECK(report.ok());
  CHECK(report.summary() == "ok: N=6 W=2 tail=pad counts 3..3 padding 0 duplicates 0 missing 0");
  CHECK(report.counts == std::vector<std::uint64_t>{3, 3});
}

TEST_CASE("check_partition reports overlaps", "[verify]") {
  const auto report = check_partition(4, Lists{{0, 1}, {1, 3}}, Tail::uneven);
  CHECK_FALSE(report.ok());
  CHECK_FALSE(report.disjoint());
  CHECK(report.duplicates == 1);
  CHECK(report.duplicate_examples == std::vector<std::uint64_t>{1});
  CHECK(report.missing == 1);
  CHECK(report.missing_examples == std::vector<std::uint64_t>{2});
  CHECK(report.summary() ==
        "FAILED: N=4 W=2 tail=uneven counts 2..2 padding 0 duplicates 1 missing 1: not disjoint: 1 extra reads (e.g. "
        "index 1); not covering: 1 indices never read (expected 0), e.g. index 2");
}

TEST_CASE("check_partition reports imbalance, out-of-range indices and wrong padding", "[verify]") {
  const auto uneven = check_partition(5, Lists{{0, 1, 2, 3}, {4}}, Tail::uneven);
  REQUIRE(uneven.failures.size() == 1);
  CHECK(uneven.failures[0] == "not balanced: rank counts range 1..4 (expected a spread of at most 1)");

  const auto unequal = check_partition(5, Lists{{0, 1, 2}, {3, 4}}, Tail::pad);
  CHECK_FALSE(unequal.ok());
  CHECK(unequal.failures[0] == "not balanced: rank counts range 2..3 (expected a spread of at most 0)");

  const auto range = check_partition(2, Lists{{0, 7}, {1, 9}}, Tail::pad);
  CHECK(range.out_of_range == 2);
  CHECK(range.failures[0] == "2 indices are >= dataset_size 2");

  // Padding must be flagged exactly where the tail policy puts it.
  const auto padded =
      check_partition(5, Lists{{0, 2, 4}, {1, 3, 0}}, Tail::pad, {{false, false, false}, {false, false, true}});
  CHECK(padded.ok());
  CHECK(padded.padding == std::vector<std::uint64_t>{0, 1});
  const auto unflagged = check_partition(5, Lists{{0, 2, 4}, {1, 3, 0}}, Tail::pad);
  CHECK_FALSE(unflagged.ok());
  CHECK(unflagged.duplicates == 1);
  CHECK(unflagged.failures.back() == "padding: 0 slots flagged (expected 1)");

  // drop: exactly N mod W indices go unread.
  CHECK(check_partition(5, Lists{{0, 2}, {1, 3}}, Tail::drop).ok());
  CHECK_FALSE(check_partition(5, Lists{{0}, {1}}, Tail::drop).ok());
}

TEST_CASE("check_samplers catches the per-rank seed bug", "[verify]") {
  // The classic mistake: every rank shuffles with its own seed (42 + rank).
  const std::uint64_t n = 1000, w = 4;
  const auto report = distsampler::check_samplers(n, w, Tail::pad, [&](distsampler::World world) {
    return distsampler::DistributedSampler<>(n, world, distsampler::SamplerOptions().with_seed(42 + world.rank));
  });
  CHECK_FALSE(report.ok());
  CHECK(report.duplicates > 100);
  CHECK(report.missing > 100);
  // The shared seed gives a partition.
  const auto good = distsampler::check_samplers(n, w, Tail::pad, [&](distsampler::World world) {
    return distsampler::DistributedSampler<>(n, world, distsampler::SamplerOptions().with_seed(42));
  });
  CHECK(good.ok());
}

TEST_CASE("check_partition rejects malformed input with messages", "[verify][errors]") {
  CHECK_THROWS_WITH(check_partition(5, Lists{}, Tail::pad),
                    "check_partition: no ranks given (expected at least one list)");
  CHECK_THROWS_WITH(check_partition(5, Lists{{0}, {1}}, Tail::pad, {{false}}),
                    "check_partition: padding has 1 lists for 2 ranks (expected one per rank, or none)");
  CHECK_THROWS_WITH(check_partition(5, Lists{{0}, {1}}, Tail::pad, {{false}, {false, true}}),
                    "check_partition: rank 1 has 1 indices but 2 padding flags (expected equal)");
  CHECK_THROWS_WITH(distsampler::PartitionChecker(5, 0, Tail::pad),
                    "PartitionChecker: world_size is 0 (expected at least 1)");
  distsampler::PartitionChecker checker(5, 2, Tail::pad);
  CHECK_THROWS_WITH(checker.add(2, 0), "PartitionChecker: rank 2 is out of range for world_size 2 (expected 0..1)");
}

TEST_CASE("check_shard_samplers checks every worker stream of every rank", "[verify][shards]") {
  const std::vector<std::uint64_t> sizes{50, 0, 7, 130, 1, 64};  // 252 samples
  distsampler::ShardSamplerOptions o;
  o.seed = 3;
  for (const Tail tail : {Tail::pad, Tail::drop, Tail::uneven}) {
    o.tail = tail;
    const auto report = distsampler::check_shard_samplers(4, [&](distsampler::World w) {
      // 20 consumers.
      distsampler::StreamingShardSampler s(sizes, w, distsampler::ShardSamplerOptions(o).with_num_workers(5));
      s.set_epoch(2);
      return s;
    });
    INFO(report.summary());
    CHECK(report.ok());
    CHECK(report.world_size == 20);
    // 252 = 12 * 20 + 12: pad flags 8 slots, drop leaves 12 unread, uneven spreads by one.
    CHECK(report.padding_total() == (tail == Tail::pad ? 8u : 0u));
    CHECK(report.missing == (tail == Tail::drop ? 12u : 0u));
    CHECK(report.max_count() - report.min_count() == (tail == Tail::uneven ? 1u : 0u));
  }
  o.tail = Tail::pad;
  // The classic bug: every rank builds rank 0's sampler.
  const auto broken = distsampler::check_shard_samplers(3, [&](distsampler::World w) {
    return distsampler::StreamingShardSampler(sizes, distsampler::World(0, w.world_size), o.with_num_workers(2));
  });
  CHECK_FALSE(broken.ok());
  // 6 consumers of 42: ranks 1 and 2 re-read rank 0's 84 samples; 168 are never read.
  CHECK(broken.duplicates == 168);
  CHECK(broken.missing == 168);
}

TEST_CASE("check_shard_samplers refuses inconsistent samplers with a message", "[verify][shards][errors]") {
  const std::vector<std::uint64_t> sizes{10, 20};
  CHECK_THROWS_WITH(distsampler::check_shard_samplers(
                        0, [&](distsampler::World w) { return distsampler::StreamingShardSampler(sizes, w); }),
                    "check_shard_samplers: world_size is 0 (expected at least 1)");
  CHECK_THROWS_WITH(distsampler::check_shard_samplers(
                        2,
                        [&](distsampler::World w) {
                          return distsampler::StreamingShardSampler(
                              sizes, w, distsampler::ShardSamplerOptions().with_num_workers(1 + w.rank));
                        }),
                    "check_shard_samplers: the sampler made for rank 1 has num_workers 2 (expected 1)");
  CHECK_THROWS_WITH(
      distsampler::check_shard_samplers(
          2, [&](distsampler::World) { return distsampler::StreamingShardSampler(sizes, distsampler::World(0, 3)); }),
      "check_shard_samplers: the sampler made for rank 0 has world_size 3 (expected 2)");
  CHECK_THROWS_WITH(distsampler::check_shard_samplers(2,
                                                      [&](distsampler::World w) {
                                                        return distsampler::StreamingShardSampler(
                                                            w.rank == 0 ? sizes : std::vector<std::uint64_t>{10}, w);
                                                      }),
                    "check_shard_samplers: the sampler made for rank 1 has dataset_size 10 (expected 30)");
  CHECK_THROWS_WITH(distsampler::check_shard_samplers(2,
                                                      [&](distsampler::World w) {
                                                        distsampler::ShardSamplerOptions o;
                                                        o.tail = w.rank == 0 ? Tail::pad : Tail::drop;
                                                        return distsampler::StreamingShardSampler(sizes, w, o);
                                                      }),
                    "check_shard_samplers: the sampler made for rank 1 has tail drop (expected pad)");
}

// Tests of ShardCatalog: shard sizes, prefix offsets, the overflow-checked total, the layout hash and index lookup.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include <distsampler/shards/detail/catalog.hpp>
#include <distsampler/shards/detail/epoch_order.hpp>

using distsampler::ShardCatalog;
using distsampler::ShardSample;

TEST_CASE("a catalog knows each shard's offset, the total and which shard holds an index", "[shard][catalog]") {
  const ShardCatalog c({5, 0, 3, 7});
  CHECK(c.num_shards() == 4);
  CHECK(c.sizes() == std::vector<std::uint64_t>{5, 0, 3, 7});
  CHECK(c.total() == 15);
  CHECK(c.shard_size(3) == 7);
  CHECK(c.shard_offset(0) == 0);
  CHECK(c.shard_offset(1) == 5);
  CHECK(c.shard_offset(2) == 5);
  CHECK(c.shard_offset(3) == 8);
  CHECK(c.index(3, 2) == 10);
  // The empty shard 1 holds no index: 5 is the first record of shard 2.
  CHECK(c.locate(4) == ShardSample{0, 4, 4, false});
  CHECK(c.locate(5) == ShardSample{2, 0, 5, false});
  CHECK(c.locate(8) == ShardSample{3, 0, 8, false});
  CHECK(c.locate(14) == ShardSample{3, 6, 14, false});
  for (std::uint64_t i = 0; i < c.total(); ++i) {
    const ShardSample x = c.locate(i);
    REQUIRE(x.offset < c.shard_size(x.shard));
    REQUIRE(c.index(x.shard, x.offset) == i);
  }
  CHECK_THROWS_AS(c.locate(15), distsampler::config_error);
  CHECK_THROWS_WITH(c.locate(15), "ShardCatalog::locate: index 15 is out of range for total 15 (expected 0..14)");
  const ShardCatalog empty;
  CHECK(empty.total() == 0);
  CHECK(empty.num_shards() == 0);
  CHECK_THROWS_WITH(empty.locate(0),
                    "ShardCatalog::locate: index 0 is out of range for total 0 (expected none: total is 0)");
}

TEST_CASE("a catalog's total is checked against 64 bits", "[shard][catalog][errors]") {
  const std::uint64_t max = UINT64_MAX;
  const ShardCatalog full({max - 5, 0, 5});
  CHECK(full.total() == max);
  CHECK(full.locate(max - 1) == ShardSample{2, 4, max - 1, false});
  CHECK_THROWS_AS(ShardCatalog({max, 1}), distsampler::config_error);
  CHECK_THROWS_WITH(ShardCatalog({max, 1}),
                    "ShardCatalog: total samples overflow 64 bits at shard 1 (size 1 after "
                    "18446744073709551615; expected a sum <= 18446744073709551615)");
  CHECK_THROWS_WITH(ShardCatalog({2, max - 2, 1}, "Reader"),
                    "Reader: total samples overflow 64 bits at shard 2 (size 1 after 18446744073709551615; expected "
                    "a sum <= 18446744073709551615)");
}

TEST_CASE("the layout hash tells shard lists apart and is stable across versions", "[shard][catalog]") {
  CHECK(ShardCatalog({100, 50, 0, 70}).layout_hash() == ShardCatalog({100, 50, 0, 70}).layout_hash());
  CHECK(ShardCatalog({100, 50, 0, 70}).layout_hash() != ShardCatalog({100, 50, 70, 0}).layout_hash());
  CHECK(ShardCatalog({100, 50, 0, 70}).layout_hash() != ShardCatalog({100, 50, 0, 70, 0}).layout_hash());
  CHECK(ShardCatalog({220}).layout_hash() != ShardCatalog({100, 120}).layout_hash());
  CHECK(ShardCatalog({1, 2}) == ShardCatalog({1, 2}));
  CHECK(ShardCatalog({1, 2}) != ShardCatalog({2, 1}));
  // Saved states carry the hash in their fingerprint: these values were written by
  // earlier releases and must not change.
  CHECK(ShardCatalog({100, 50, 0, 70}).layout_hash() == 0x33ede7b3b73c4b19u);
  CHECK(ShardCatalog().layout_hash() == 0x813f0174a2367c13u);
  // The defaults before the mixing defaults: the names of states saved with them.
  const auto options =
      distsampler::ShardSamplerOptions().with_canonical_streams(64).with_max_open_shards(8).with_run_length(8);
  CHECK(distsampler::shard_order_name(distsampler::ShardSamplerOptions()) ==
        "shard-shuffle-streams512-open64-run1-window16");
  // Version 3 states name the order's options in the engine and keep the layout apart.
  CHECK(distsampler::shard_order_name(options) == "shard-shuffle-streams64-open8-run8-window16");
  CHECK(distsampler::shard_order_name(distsampler::ShardSamplerOptions(options).with_shuffle(false).with_shuffle_window(
            5)) == "shard-noshuffle-streams64-open8-run8-window1");
  // Version 1 and 2 states fingerprinted this name, so they still load.
  CHECK(distsampler::shard_legacy_order_name(options, ShardCatalog({100, 50, 0, 70})) ==
        "shard-v2 shuffle streams=64 open=8 run=8 window=16 shards=4 layout=0x33ede7b3b73c4b19");
  CHECK(distsampler::shard_legacy_order_name(
            distsampler::ShardSamplerOptions(options).with_shuffle(false).with_shuffle_window(5),
            ShardCatalog({100, 50, 0, 70})) ==
        "shard-v2 noshuffle streams=64 open=8 run=8 window=1 shards=4 layout=0x33ede7b3b73c4b19");
}

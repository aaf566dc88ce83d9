// distsampler tests: the libtorch adapter through make_data_loader, with reshuffling, resume and errors.
// SPDX-License-Identifier: MIT
// torch brings glog, whose CHECK macro would shadow Catch's: use the prefixed names.
#define CATCH_CONFIG_PREFIX_ALL
#include <catch2/catch.hpp>

#include <distsampler/torch.hpp>
#include <torch/data.h>
#include <torch/serialize.h>

#include "index_dataset.hpp"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <vector>

namespace ds = distsampler;

namespace {

using torch_test::IndexDataset;

// Every sampler of these tests is built here, so option spellings change in one place.
ds::SamplerOptions options(std::uint64_t seed, ds::Tail tail) {
  return ds::SamplerOptions().with_seed(seed).with_tail(tail);
}

template <class P = ds::FeistelPermutation>
ds::DistributedBatchSampler<P> batch_core(std::uint64_t n, std::uint64_t micro, ds::World world,
                                          std::uint64_t accumulation, std::uint64_t seed,
                                          ds::Tail tail = ds::Tail::drop, ds::EpochMode mode = ds::EpochMode::manual) {
  ds::BatchSamplerOptions o;
  o.seed = seed;
  o.tail = tail;
  o.epoch_mode = mode;
  return ds::DistributedBatchSampler<P>(
      n, world, ds::BatchSamplerOptions(o).with_micro_batch_size(micro).with_accumulation_steps(accumulation));
}

template <class Loader>
std::vector<std::uint64_t> one_pass(Loader& loader) {
  std::vector<std::uint64_t> seen;
  for (auto& batch : loader) {
    for (auto& example : batch) seen.push_back(static_cast<std::uint64_t>(example.data.template item<std::int64_t>()));
  }
  return seen;
}

template <class Sampler>
std::vector<std::uint64_t> drain(Sampler& s, std::size_t batch) {
  std::vector<std::uint64_t> out;
  while (auto b = s.next(batch)) out.insert(out.end(), b->begin(), b->end());
  return out;
}

// Loads `values` under `key` as an int64 tensor into `sampler`, as a hand-made archive.
template <class Sampler>
void load_raw(Sampler& sampler, const char* key, const std::vector<std::int64_t>& values) {
  torch::serialize::OutputArchive out;
  out.write(key, torch::tensor(values, torch::kInt64), /*is_buffer=*/true);
  std::stringstream stream;
  out.save_to(stream);
  torch::serialize::InputArchive in;
  in.load_from(stream);
  sampler.load(in);
}

}  // namespace

CATCH_TEMPLATE_TEST_CASE("TorchSampler yields this rank's indices in batches", "[torch-adapter]",
                         ds::FeistelPermutation, ds::TorchRandperm) {
  ds::TorchSampler<TestType> s(103, ds::World(1, 4), options(9, ds::Tail::pad));
  s.reset();
  const auto got = drain(s, 5);
  CATCH_CHECK(got == s.sampler().indices());
  CATCH_CHECK(got.size() == 26);
  CATCH_CHECK_FALSE(s.next(5).has_value());
  s.reset(50);  // a new dataset size rebuilds the rank's share
  CATCH_CHECK(drain(s, 7).size() == 13);
}

CATCH_TEST_CASE("set_epoch reaches the DataLoader's copy of the sampler", "[torch-adapter]") {
  const std::size_t n = 64;
  ds::TorchSampler<ds::TorchRandperm> sampler(n, ds::World(0, 2), options(42, ds::Tail::pad));
  auto loader = torch::data::make_data_loader(IndexDataset(n), sampler,
                                              torch::data::DataLoaderOptions().batch_size(4).workers(0));
  const auto epoch0 = one_pass(*loader);
  sampler.set_epoch(1);  // on the caller's object: libtorch's own samplers ignore this
  const auto epoch1 = one_pass(*loader);
  CATCH_CHECK(epoch0 != epoch1);
  ds::DistributedSampler<ds::TorchRandperm> reference(n, ds::World(0, 2), options(42, ds::Tail::pad));
  CATCH_CHECK(epoch0 == reference.indices());
  reference.set_epoch(1);
  CATCH_CHECK(epoch1 == reference.indices());
}

CATCH_TEST_CASE("auto_advance reshuffles every pass without set_epoch", "[torch-adapter]") {
  const std::size_t n = 200;
  ds::TorchSampler<> sampler(n, ds::World(1, 2), options(3, ds::Tail::uneven), ds::EpochMode::auto_advance);
  auto loader = torch::data::make_data_loader(IndexDataset(n), sampler,
                                              torch::data::DataLoaderOptions().batch_size(8).workers(2));
  std::vector<std::vector<std::uint64_t>> passes;
  for (int e = 0; e < 3; ++e) passes.push_back(one_pass(*loader));
  for (std::uint64_t e = 0; e < 3; ++e) {
    ds::DistributedSampler<> reference(n, ds::World(1, 2), options(3, ds::Tail::uneven));
    reference.set_epoch(e);
    auto expected = reference.indices();
    auto got = passes[static_cast<std::size_t>(e)];
    // Worker threads may deliver batches in any order; the set is what matters.
    std::sort(expected.begin(), expected.end());
    std::sort(got.begin(), got.end());
    CATCH_CHECK(got == expected);
  }
  CATCH_CHECK(passes[0] != passes[1]);
  CATCH_CHECK(sampler.epoch() == 2);
}

CATCH_TEST_CASE("save and load through torch's archives resume at the same place", "[torch-adapter]") {
  ds::TorchSampler<> a(1000, ds::World(2, 3), options(11, ds::Tail::drop));
  a.set_epoch(4);
  for (int i = 0; i < 3; ++i) (void)a.next(10);
  std::stringstream stream;
  torch::save(a, stream);

  ds::TorchSampler<> b(1000, ds::World(2, 3), options(11, ds::Tail::drop));
  torch::load(b, stream);
  CATCH_CHECK(b.epoch() == 4);
  CATCH_CHECK(b.state_after(0) == a.state_after(3));
  CATCH_CHECK(b.state_after(0).consumed == 90);  // 3 batches of 10 on each of 3 ranks
  CATCH_CHECK(drain(b, 10) == drain(a, 10));
}

CATCH_TEST_CASE("load rejects state from another dataset or seed", "[torch-adapter][errors]") {
  ds::TorchSampler<> a(1000, ds::World(2, 3), options(11, ds::Tail::drop));
  std::stringstream stream;
  torch::save(a, stream);
  const std::string saved = stream.str();
  auto load_into = [&](ds::TorchSampler<>& s) {
    std::stringstream in(saved);
    torch::load(s, in);
  };
  ds::TorchSampler<> other_size(999, ds::World(2, 3), options(11, ds::Tail::drop));
  CATCH_CHECK_THROWS_WITH(load_into(other_size),
                          Catch::Matchers::StartsWith("TorchSampler::load: DistributedSampler::resume: dataset_size "
                                                      "differs (state 1000, sampler 999)"));
  ds::TorchSampler<> other_seed(1000, ds::World(2, 3), options(12, ds::Tail::drop));
  CATCH_CHECK_THROWS_WITH(load_into(other_seed),
                          Catch::Matchers::StartsWith("TorchSampler::load: DistributedSampler::resume: seed differs "
                                                      "(state 11, sampler 12)"));
  ds::TorchSampler<> other_tail(1000, ds::World(2, 3), options(11, ds::Tail::pad));
  CATCH_CHECK_THROWS_WITH(load_into(other_tail),
                          Catch::Matchers::StartsWith("TorchSampler::load: DistributedSampler::resume: tail differs "
                                                      "(state drop, sampler pad)"));
  CATCH_CHECK_THROWS_WITH(ds::TorchSampler<>(10, ds::World(0, 1), options(0, static_cast<ds::Tail>(9))),
                          "DistributedSampler: tail 9 is not a Tail (expected pad, drop or uneven)");
}

CATCH_TEST_CASE("An archive of the first release (9 fields, fixed world) resumes on another world size",
                "[torch-adapter]") {
  // Saved by rank 2 of 3 at position 30 of epoch 4: 90 positions of the epoch consumed.
  std::vector<unsigned> reads(1000);
  for (std::uint64_t r = 0; r < 3; ++r) {
    ds::DistributedSampler<> before(1000, ds::World(r, 3), options(11, ds::Tail::pad));
    before.set_epoch(4);
    for (std::uint64_t i = 0; i < 30; ++i) ++reads[before[i]];
  }
  for (std::uint64_t r = 0; r < 2; ++r) {
    ds::TorchSampler<> s(1000, ds::World(r, 2), options(11, ds::Tail::pad));
    load_raw(s, "distsampler_state", {1, 1000, 11, 1, 0, 3, 2, 4, 30});
    CATCH_CHECK(s.epoch() == 4);
    CATCH_CHECK(s.state_after(0).consumed == 90);
    for (std::uint64_t index : drain(s, 64)) ++reads[index];
  }
  CATCH_CHECK(std::count(reads.begin(), reads.end(), 1u) == 1000);
}

CATCH_TEST_CASE("TorchBatchSampler feeds a rank's micro-batches through make_data_loader", "[torch-adapter]") {
  const std::size_t n = 300;
  const auto batches = batch_core(n, 4, ds::World(1, 3), 2, 8);
  ds::TorchBatchSampler<> sampler(batches);
  auto loader = torch::data::make_data_loader(IndexDataset(n), sampler,
                                              torch::data::DataLoaderOptions().batch_size(4).workers(0));
  std::vector<std::uint64_t> expected;
  for (std::uint64_t s = 0; s < batches.num_steps(); ++s)
    for (std::uint64_t k = 0; k < 2; ++k)
      for (std::uint64_t index : batches.micro_batch(s, k)) expected.push_back(index);
  CATCH_CHECK(one_pass(*loader) == expected);
  sampler.set_epoch(1);
  CATCH_CHECK(one_pass(*loader) != expected);
}

CATCH_TEST_CASE("TorchBatchSampler resumes elastically from torch's archive: 2 ranks -> 3 ranks", "[torch-adapter]") {
  const std::size_t n = 1000;
  const std::uint64_t micro = 5;
  std::vector<unsigned> reads(n);
  std::string saved;
  // Run 1: 2 ranks x 3 accumulation (global batch 30), stopped after 10 micro-batches each.
  for (std::uint64_t r = 0; r < 2; ++r) {
    ds::TorchBatchSampler<> sampler(batch_core(n, micro, ds::World(r, 2), 3, 4));
    sampler.reset();
    for (int i = 0; i < 10; ++i) {
      const auto batch = sampler.next(micro);
      for (std::size_t index : *batch) ++reads[index];
    }
    std::stringstream stream;
    torch::save(sampler, stream);
    saved = stream.str();  // every rank saves the same state
  }
  // Run 2: 3 ranks x 2 accumulation (global batch 30), loaded before make_data_loader.
  std::uint64_t dropped = 0;
  for (std::uint64_t r = 0; r < 3; ++r) {
    ds::TorchBatchSampler<> sampler(batch_core(n, micro, ds::World(r, 3), 2, 4));
    std::stringstream stream(saved);
    torch::load(sampler, stream);
    dropped = (n - sampler.batches().start()) % sampler.batches().global_batch_size();
    auto loader = torch::data::make_data_loader(IndexDataset(n), sampler,
                                                torch::data::DataLoaderOptions().batch_size(micro).workers(0));
    for (std::uint64_t index : one_pass(*loader)) ++reads[index];
  }
  std::uint64_t once = 0, twice = 0;
  for (unsigned c : reads) {
    once += c == 1 ? 1 : 0;
    twice += c > 1 ? 1 : 0;
  }
  CATCH_CHECK(twice == 0);
  CATCH_CHECK(once == n - dropped);
  // Run 1 stopped after 3 steps (3 x 30 positions) and 1 round of the 4th (5 x 2): 100 consumed.
  CATCH_CHECK(dropped == (n - 100) % 30);
}

CATCH_TEST_CASE("TorchBatchSampler rejects a state of another dataset", "[torch-adapter][errors]") {
  ds::TorchBatchSampler<> a(batch_core(100, 2, ds::World(0, 2), 1, 4));
  std::stringstream stream;
  torch::save(a, stream);
  ds::TorchBatchSampler<> b(batch_core(101, 2, ds::World(0, 2), 1, 4));
  CATCH_CHECK_THROWS_WITH(torch::load(b, stream),
                          Catch::Matchers::StartsWith("TorchBatchSampler::load: DistributedBatchSampler: dataset_size "
                                                      "differs (state 100, sampler 101)"));
}

CATCH_TEST_CASE("load rejects malformed archives with messages", "[torch-adapter][errors]") {
  ds::TorchSampler<> s(1000, ds::World(2, 3), options(11, ds::Tail::pad));
  CATCH_CHECK_THROWS_WITH(load_raw(s, "distsampler_state", {1, 2, 3, 4}),
                          "SamplerState::from_bytes: bad magic (expected \"DSST\"; not a distsampler state)");
  CATCH_CHECK_THROWS_WITH(load_raw(s, "distsampler_state", {68, 83, 83, 84, 1, 0, 0, 0}),
                          "SamplerState::from_bytes: truncated input of 8 bytes (expected at least 56)");
  CATCH_CHECK_THROWS_WITH(load_raw(s, "distsampler_state", {1000}),
                          "TorchSampler::load: 'distsampler_state' holds 1000 (expected bytes 0..255)");
  // An archive of something else: our state_error naming the key, not a c10 error.
  CATCH_CHECK_THROWS_WITH(load_raw(s, "weights", {1, 2}),
                          Catch::Matchers::StartsWith("TorchSampler::load: the archive has no 'distsampler_state'") &&
                              Catch::Matchers::EndsWith("(expected an archive written by this sampler's save)"));
  {
    torch::serialize::OutputArchive out;
    out.write("distsampler_state", torch::zeros({2, 2}, torch::kFloat), /*is_buffer=*/true);
    std::stringstream stream;
    out.save_to(stream);
    torch::serialize::InputArchive in;
    in.load_from(stream);
    CATCH_CHECK_THROWS_WITH(s.load(in),
                            "TorchSampler::load: 'distsampler_state' is not a 1-d int64 tensor (expected "
                            "the bytes of a SamplerState)");
  }
  CATCH_CHECK(s.epoch() == 0);  // unchanged by every failed load
  CATCH_CHECK_THROWS_WITH(load_raw(s, "distsampler_state", {1, 1000, 11, 1, 0, 3, 2, 5, 999}),
                          "TorchSampler::load: 'distsampler_state' holds position 999, past the end of a rank's share "
                          "of 1000 samples over 3 ranks (expected a first-release record)");
  CATCH_CHECK_THROWS_WITH(load_raw(s, "distsampler_state", {1, 1000, 11, 1, 7, 3, 2, 5, 9}),
                          "TorchSampler::load: 'distsampler_state' holds shuffle 1 and tail 7 (expected 0..1 and 0..2 "
                          "in a first-release record)");
  CATCH_CHECK_THROWS_WITH(load_raw(s, "distsampler_state", {1, 1000, 12, 1, 0, 3, 2, 5, 9}),
                          Catch::Matchers::StartsWith("TorchSampler::load: DistributedSampler::resume: seed differs "
                                                      "(state 12, sampler 11)"));

  ds::TorchBatchSampler<> b(batch_core(100, 2, ds::World(0, 2), 1, 4));
  CATCH_CHECK_THROWS_WITH(load_raw(b, "distsampler_batch_state", {300}),
                          "TorchBatchSampler::load: 'distsampler_batch_state' holds 300 (expected bytes 0..255)");
  CATCH_CHECK_THROWS_AS(load_raw(b, "distsampler_batch_state", {1, 2, 3}), ds::state_error);
  CATCH_CHECK_THROWS_WITH(load_raw(b, "distsampler_state", {1, 2, 3}),
                          Catch::Matchers::StartsWith("TorchBatchSampler::load: the archive has no "
                                                      "'distsampler_batch_state'"));
}

namespace {

const std::vector<std::uint64_t> shard_sizes{300, 0, 41, 250, 9, 128};  // 728 samples

ds::ShardSamplerOptions shard_options(ds::Tail tail) {
  ds::ShardSamplerOptions o;
  o.seed = 21;
  o.tail = tail;
  o.canonical_streams = 16;
  o.max_open_shards = 4;
  o.run_length = 4;
  return o;
}

}  // namespace

CATCH_TEST_CASE("TorchShardSampler feeds a rank's shard stream through make_data_loader", "[torch-adapter][shards]") {
  std::vector<unsigned> reads(728);
  for (std::uint64_t r = 0; r < 3; ++r) {
    ds::TorchShardSampler sampler(shard_sizes, ds::World(r, 3), shard_options(ds::Tail::uneven));
    sampler.set_epoch(2);
    std::vector<ds::ShardSample> expected(static_cast<std::size_t>(sampler.sampler().worker_size(0)));
    sampler.sampler().fill(0, 0, expected.size(), expected.data());
    auto loader = torch::data::make_data_loader(IndexDataset(728), sampler,
                                                torch::data::DataLoaderOptions().batch_size(10).workers(2));
    const auto got = one_pass(*loader);
    std::vector<std::uint64_t> want;
    for (const auto& x : expected) want.push_back(x.index);
    // Workers may finish batches out of order; the set and the count are the rank's stream.
    CATCH_CHECK(got.size() == want.size());
    CATCH_CHECK(std::is_permutation(got.begin(), got.end(), want.begin()));
    for (std::uint64_t index : got) ++reads[index];
    // set_epoch on the caller's object reaches the loader's copy.
    sampler.set_epoch(3);
    auto next_epoch = one_pass(*loader);
    std::sort(next_epoch.begin(), next_epoch.end());
    auto first_epoch = got;
    std::sort(first_epoch.begin(), first_epoch.end());
    CATCH_CHECK(next_epoch != first_epoch);
  }
  CATCH_CHECK(std::count(reads.begin(), reads.end(), 1u) == 728);
}

CATCH_TEST_CASE("TorchShardSampler resumes from torch's archive: elastic, and exact on the same world",
                "[torch-adapter][shards]") {
  std::vector<unsigned> reads(728);
  std::string saved;
  // Run 1: 2 ranks, 13 batches of 7 each (91 samples: inside a block of 16).
  for (std::uint64_t r = 0; r < 2; ++r) {
    ds::TorchShardSampler sampler(shard_sizes, ds::World(r, 2), shard_options(ds::Tail::uneven));
    sampler.reset();
    for (int i = 0; i < 13; ++i) {
      const auto batch = sampler.next(7);
      for (std::size_t index : *batch) ++reads[index];
    }
    std::stringstream stream;
    torch::save(sampler, stream);
    saved = stream.str();  // every rank saves the same state
  }
  // On the same world every rank continues exactly where it stopped.
  for (std::uint64_t r = 0; r < 2; ++r) {
    ds::TorchShardSampler uninterrupted(shard_sizes, ds::World(r, 2), shard_options(ds::Tail::uneven));
    uninterrupted.reset();
    for (int i = 0; i < 13; ++i) (void)uninterrupted.next(7);
    ds::TorchShardSampler resumed(shard_sizes, ds::World(r, 2), shard_options(ds::Tail::uneven));
    std::stringstream stream(saved);
    torch::load(resumed, stream);
    resumed.reset();  // the loader's first reset continues the loaded segment
    CATCH_CHECK(drain(resumed, 7) == drain(uninterrupted, 7));
  }
  // Run 2: 3 ranks, loaded before make_data_loader, to the end of the epoch.
  for (std::uint64_t r = 0; r < 3; ++r) {
    ds::TorchShardSampler sampler(shard_sizes, ds::World(r, 3), shard_options(ds::Tail::uneven));
    std::stringstream stream(saved);
    torch::load(sampler, stream);
    CATCH_CHECK(sampler.epoch() == 0);
    auto loader = torch::data::make_data_loader(IndexDataset(728), sampler,
                                                torch::data::DataLoaderOptions().batch_size(8).workers(0));
    for (std::uint64_t index : one_pass(*loader)) ++reads[index];
  }
  CATCH_CHECK(std::count(reads.begin(), reads.end(), 1u) == 728);
}

CATCH_TEST_CASE("TorchShardSampler refuses another dataset size and foreign or malformed state",
                "[torch-adapter][shards][errors]") {
  ds::TorchShardSampler s(shard_sizes, ds::World(0, 2), shard_options(ds::Tail::drop));
  CATCH_CHECK_THROWS_WITH(s.reset(700),
                          "TorchShardSampler::reset: the dataset has 700 samples but the shards hold 728 "
                          "(expected the shard sizes to describe the dataset)");
  CATCH_CHECK_NOTHROW(s.reset(728));
  CATCH_CHECK_THROWS_WITH(load_raw(s, "distsampler_shard_state", {-1}),
                          "TorchShardSampler::load: 'distsampler_shard_state' holds -1 (expected bytes 0..255)");
  CATCH_CHECK_THROWS_AS(load_raw(s, "distsampler_shard_state", {68, 83, 83, 84}), ds::state_error);
  ds::TorchShardSampler other(std::vector<std::uint64_t>{728}, ds::World(0, 2), shard_options(ds::Tail::drop));
  std::stringstream stream;
  torch::save(other, stream);
  const std::string saved = stream.str();
  std::stringstream in(saved);
  CATCH_CHECK_THROWS_WITH(torch::load(s, in),
                          "TorchShardSampler::load: a pass is running (0 batches handed out since it began) (expected "
                          "resume or load before the DataLoader's first iteration or between passes, or a new sampler "
                          "and loader)");
  ds::TorchShardSampler fresh(shard_sizes, ds::World(0, 2), shard_options(ds::Tail::drop));
  std::stringstream in2(saved);
  CATCH_CHECK_THROWS_WITH(torch::load(fresh, in2),
                          Catch::Matchers::StartsWith("TorchShardSampler::load: StreamingShardSampler::resume: "
                                                      "shard sizes differ"));
}

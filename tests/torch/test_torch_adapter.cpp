// distsampler tests: the libtorch adapter through make_data_loader, with reshuffling, resume and errors.
// SPDX-License-Identifier: MIT
#define CATCH_CONFIG_MAIN
// torch brings glog, whose CHECK macro would shadow Catch's: use the prefixed names.
#define CATCH_CONFIG_PREFIX_ALL
#include <catch2/catch.hpp>

#include <distsampler/torch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <vector>

namespace ds = distsampler;

namespace {

// A dataset whose sample i is the tensor [i]: what a loader returns tells which index it read.
struct IndexDataset : torch::data::datasets::Dataset<IndexDataset, torch::data::Example<>> {
  explicit IndexDataset(std::size_t n) : n_(n) {}
  torch::data::Example<> get(std::size_t index) override {
    auto t = torch::tensor({static_cast<std::int64_t>(index)});
    return {t, t};
  }
  torch::optional<std::size_t> size() const override { return n_; }
  std::size_t n_;
};

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

}  // namespace

CATCH_TEMPLATE_TEST_CASE("TorchSampler yields this rank's indices in batches", "[torch-adapter]", ds::FeistelPermutation,
                   ds::TorchRandperm) {
  ds::TorchSampler<TestType> s(103, ds::World(1, 4), {true, 9, ds::Tail::pad});
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
  ds::TorchSampler<ds::TorchRandperm> sampler(n, ds::World(0, 2), {true, 42, ds::Tail::pad});
  auto loader = torch::data::make_data_loader(IndexDataset(n), sampler,
                                              torch::data::DataLoaderOptions().batch_size(4).workers(0));
  const auto epoch0 = one_pass(*loader);
  sampler.set_epoch(1);  // on the caller's object: libtorch's own samplers ignore this
  const auto epoch1 = one_pass(*loader);
  CATCH_CHECK(epoch0 != epoch1);
  ds::DistributedSampler<ds::TorchRandperm> reference(n, ds::World(0, 2), {true, 42, ds::Tail::pad});
  CATCH_CHECK(epoch0 == reference.indices());
  reference.set_epoch(1);
  CATCH_CHECK(epoch1 == reference.indices());
}

CATCH_TEST_CASE("advance_on_reset reshuffles every pass without set_epoch", "[torch-adapter]") {
  const std::size_t n = 200;
  ds::TorchSampler<> sampler(n, ds::World(1, 2), {true, 3, ds::Tail::uneven}, ds::TorchEpochMode::advance_on_reset);
  auto loader = torch::data::make_data_loader(IndexDataset(n), sampler,
                                              torch::data::DataLoaderOptions().batch_size(8).workers(2));
  std::vector<std::vector<std::uint64_t>> passes;
  for (int e = 0; e < 3; ++e) passes.push_back(one_pass(*loader));
  for (std::uint64_t e = 0; e < 3; ++e) {
    ds::DistributedSampler<> reference(n, ds::World(1, 2), {true, 3, ds::Tail::uneven});
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
  ds::TorchSampler<> a(1000, ds::World(2, 3), {true, 11, ds::Tail::drop});
  a.set_epoch(4);
  for (int i = 0; i < 3; ++i) (void)a.next(10);
  std::stringstream stream;
  torch::save(a, stream);

  ds::TorchSampler<> b(1000, ds::World(2, 3), {true, 11, ds::Tail::drop});
  torch::load(b, stream);
  CATCH_CHECK(b.epoch() == 4);
  CATCH_CHECK(b.position() == 30);
  CATCH_CHECK(drain(b, 10) == drain(a, 10));
}

CATCH_TEST_CASE("load rejects state from another dataset, seed or world", "[torch-adapter][errors]") {
  ds::TorchSampler<> a(1000, ds::World(2, 3), {true, 11, ds::Tail::drop});
  std::stringstream stream;
  torch::save(a, stream);
  const std::string saved = stream.str();
  auto load_into = [&](ds::TorchSampler<>& s) {
    std::stringstream in(saved);
    torch::load(s, in);
  };
  ds::TorchSampler<> other_size(999, ds::World(2, 3), {true, 11, ds::Tail::drop});
  CATCH_CHECK_THROWS_WITH(load_into(other_size),
                    "TorchSampler::load: saved dataset_size 1000 differs from this sampler's 999 (expected the same "
                    "dataset, options and world)");
  ds::TorchSampler<> other_seed(1000, ds::World(2, 3), {true, 12, ds::Tail::drop});
  CATCH_CHECK_THROWS_WITH(load_into(other_seed),
                    "TorchSampler::load: saved seed 11 differs from this sampler's 12 (expected the same dataset, "
                    "options and world)");
  ds::TorchSampler<> other_world(1000, ds::World(2, 4), {true, 11, ds::Tail::drop});
  CATCH_CHECK_THROWS_AS(load_into(other_world), ds::state_error);
  CATCH_CHECK_THROWS_WITH(ds::TorchSampler<>(10, ds::World(0, 1), {true, 0, static_cast<ds::Tail>(9)}),
                    "DistributedSampler: tail 9 is not a Tail (expected pad, drop or uneven)");
}

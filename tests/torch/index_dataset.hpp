// distsampler tests: a libtorch dataset whose sample i is the tensor [i], so a batch tells which indices it read.
// it read. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TESTS_TORCH_INDEX_DATASET_HPP
#define DISTSAMPLER_TESTS_TORCH_INDEX_DATASET_HPP

#include <torch/data.h>
#include <torch/serialize.h>

#include <cstddef>
#include <cstdint>

namespace torch_test {

struct IndexDataset : torch::data::datasets::Dataset<IndexDataset, torch::data::Example<>> {
  explicit IndexDataset(std::size_t n) : n_(n) {}
  torch::data::Example<> get(std::size_t index) override {
    auto t = torch::tensor({static_cast<std::int64_t>(index)});
    return {t, t};
  }
  torch::optional<std::size_t> size() const override { return n_; }
  std::size_t n_;
};

}  // namespace torch_test

#endif  // DISTSAMPLER_TESTS_TORCH_INDEX_DATASET_HPP

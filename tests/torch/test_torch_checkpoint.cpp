// distsampler tests: checkpoints through make_data_loader with prefetching workers, and every misuse's message.
// SPDX-License-Identifier: MIT
#define CATCH_CONFIG_PREFIX_ALL
#include <catch2/catch.hpp>

#include <distsampler/torch.hpp>
#include <torch/data.h>
#include <torch/serialize.h>

#include "index_dataset.hpp"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace ds = distsampler;

namespace {

using torch_test::IndexDataset;

std::vector<std::uint64_t> indices_of(const std::vector<torch::data::Example<>>& batch) {
  std::vector<std::uint64_t> out;
  for (const auto& example : batch) out.push_back(static_cast<std::uint64_t>(example.data.item<std::int64_t>()));
  return out;
}

// Every sampler of these tests is built here, so option spellings change in one place.
ds::TorchSampler<> plain(std::uint64_t n, ds::World world, ds::Tail tail = ds::Tail::pad,
                         ds::EpochMode mode = ds::EpochMode::manual) {
  return ds::TorchSampler<>(n, world, ds::SamplerOptions().with_seed(5).with_tail(tail), mode);
}

ds::DistributedBatchSampler<> batch_core(std::uint64_t n, std::uint64_t micro, ds::World world,
                                         std::uint64_t accumulation, ds::Tail tail = ds::Tail::drop) {
  ds::BatchSamplerOptions o;
  o.seed = 6;
  o.tail = tail;
  return ds::DistributedBatchSampler<>(
      n, world, ds::BatchSamplerOptions(o).with_micro_batch_size(micro).with_accumulation_steps(accumulation));
}

const std::vector<std::uint64_t> checkpoint_shard_sizes{300, 0, 41, 250, 9, 128};  // 728 samples

ds::StreamingShardSampler shard_core(ds::World world, std::uint64_t workers) {
  ds::ShardSamplerOptions o;
  o.seed = 21;
  o.tail = ds::Tail::uneven;
  o.canonical_streams = 16;
  o.max_open_shards = 4;
  o.run_length = 4;
  return ds::StreamingShardSampler(checkpoint_shard_sizes, world, ds::ShardSamplerOptions(o).with_num_workers(workers));
}

torch::data::DataLoaderOptions loader_options(std::size_t batch, std::size_t workers) {
  return torch::data::DataLoaderOptions().batch_size(batch).workers(workers);
}

// Runs `consumed` batches of one pass through a loader with prefetching workers, then
// returns what the loop received and the archive saved with that count.
template <class Sampler>
std::pair<std::vector<std::uint64_t>, std::string> stop_after(Sampler& sampler, std::size_t n, std::size_t batch,
                                                              std::size_t workers, std::uint64_t consumed) {
  auto loader = torch::data::make_data_loader(IndexDataset(n), sampler, loader_options(batch, workers));
  std::vector<std::uint64_t> read;
  std::uint64_t received = 0;
  std::string saved;
  for (auto& b : *loader) {
    if (received == consumed) continue;  // drain the rest of the pass unread: the loop stopped
    for (std::uint64_t index : indices_of(b)) read.push_back(index);
    if (++received == consumed) {
      // The workers have fetched ahead of the loop by now.
      CATCH_CHECK(sampler.batches_handed_out() > consumed);
      torch::serialize::OutputArchive archive;
      sampler.save(archive, consumed);
      std::stringstream stream;
      archive.save_to(stream);
      saved = stream.str();
    }
  }
  return {read, saved};
}

template <class Sampler>
std::vector<std::uint64_t> resume_and_finish(Sampler& sampler, const std::string& saved, std::size_t n,
                                             std::size_t batch, std::size_t workers) {
  std::stringstream stream(saved);
  torch::load(sampler, stream);
  auto loader = torch::data::make_data_loader(IndexDataset(n), sampler, loader_options(batch, workers));
  std::vector<std::uint64_t> read;
  for (auto& b : *loader) {
    for (std::uint64_t index : indices_of(b)) read.push_back(index);
  }
  return read;
}

void count(std::vector<unsigned>& reads, const std::vector<std::uint64_t>& indices) {
  for (std::uint64_t index : indices) ++reads.at(static_cast<std::size_t>(index));
}

}  // namespace

CATCH_TEST_CASE("TorchSampler checkpointed through a prefetching DataLoader resumes on 3 ranks exactly once",
                "[torch-checkpoint]") {
  const std::size_t n = 1000;
  std::vector<unsigned> reads(n);
  std::string saved;
  for (std::uint64_t r = 0; r < 2; ++r) {
    auto sampler = plain(n, ds::World(r, 2), ds::Tail::drop);
    auto [read, archive] = stop_after(sampler, n, 16, 2, 7);
    CATCH_CHECK(read.size() == 7 * 16);
    count(reads, read);
    saved = archive;  // every rank saves the same state
  }
  std::uint64_t resumed_reads = 0;
  for (std::uint64_t r = 0; r < 3; ++r) {
    auto sampler = plain(n, ds::World(r, 3), ds::Tail::drop);
    const auto read = resume_and_finish(sampler, saved, n, 10, 2);
    resumed_reads += read.size();
    count(reads, read);
  }
  // 224 consumed; the 776 left split over 3 ranks under drop: 258 each, 2 dropped.
  CATCH_CHECK(resumed_reads == 3 * 258);
  CATCH_CHECK(std::count(reads.begin(), reads.end(), 1u) == static_cast<std::ptrdiff_t>(n - 2));
  CATCH_CHECK(std::count_if(reads.begin(), reads.end(), [](unsigned c) { return c > 1; }) == 0);
}

CATCH_TEST_CASE("TorchSampler with Tail::pad saved and loaded on the same world is the uninterrupted pass",
                "[torch-checkpoint][same-world]") {
  // 669 samples over 2 ranks: rank 1's last slot is padding, a repeat of the epoch's first
  // position; a stop at 5, 17 or 334 must not make it a repeat of the remainder's first.
  const std::size_t n = 669;
  for (std::uint64_t r = 0; r < 2; ++r) {
    auto reference = plain(n, ds::World(r, 2), ds::Tail::pad);
    std::vector<std::uint64_t> whole;
    auto loader = torch::data::make_data_loader(IndexDataset(n), reference, loader_options(1, 0));
    for (auto& b : *loader) {
      for (std::uint64_t index : indices_of(b)) whole.push_back(index);
    }
    for (const std::uint64_t stop : {5u, 17u, 334u}) {
      CATCH_CAPTURE(r, stop);
      auto first = plain(n, ds::World(r, 2), ds::Tail::pad);
      auto [read, archive] = stop_after(first, n, 1, 2, stop);
      auto second = plain(n, ds::World(r, 2), ds::Tail::pad);
      const auto rest = resume_and_finish(second, archive, n, 1, 2);
      CATCH_CHECK(read == std::vector<std::uint64_t>(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(stop)));
      CATCH_CHECK(rest == std::vector<std::uint64_t>(whole.begin() + static_cast<std::ptrdiff_t>(stop), whole.end()));
    }
  }
}

CATCH_TEST_CASE("TorchBatchSampler saved mid-step and loaded on the same shape is the uninterrupted pass",
                "[torch-checkpoint][same-world]") {
  // 120 samples, micro-batch 3, 2 ranks, accumulation 2 (G = 12), pad; a stop after 5
  // micro-batches is inside step 2: the rest is 15 micro-batches, no padding.
  const std::size_t n = 120;
  for (std::uint64_t r = 0; r < 2; ++r) {
    ds::TorchBatchSampler<> reference(batch_core(n, 3, ds::World(r, 2), 2, ds::Tail::pad));
    std::vector<std::uint64_t> whole;
    auto loader = torch::data::make_data_loader(IndexDataset(n), reference, loader_options(3, 0));
    for (auto& b : *loader) {
      for (std::uint64_t index : indices_of(b)) whole.push_back(index);
    }
    CATCH_REQUIRE(whole.size() == 60);
    ds::TorchBatchSampler<> first(batch_core(n, 3, ds::World(r, 2), 2, ds::Tail::pad));
    auto [read, archive] = stop_after(first, n, 3, 2, 5);
    ds::TorchBatchSampler<> second(batch_core(n, 3, ds::World(r, 2), 2, ds::Tail::pad));
    const auto rest = resume_and_finish(second, archive, n, 3, 2);
    CATCH_CHECK(rest.size() == 45);
    CATCH_CHECK(rest == std::vector<std::uint64_t>(whole.begin() + 15, whole.end()));
  }
}

CATCH_TEST_CASE("TorchBatchSampler checkpointed through a prefetching DataLoader resumes with other accumulation",
                "[torch-checkpoint]") {
  const std::size_t n = 1000;
  std::vector<unsigned> reads(n);
  std::string saved;
  for (std::uint64_t r = 0; r < 4; ++r) {
    ds::TorchBatchSampler<> sampler(batch_core(n, 5, ds::World(r, 4), 2));
    auto [read, archive] = stop_after(sampler, n, 5, 2, 9);  // 4 steps and a half
    count(reads, read);
    saved = archive;
  }
  std::uint64_t dropped = 0;
  for (std::uint64_t r = 0; r < 2; ++r) {
    ds::TorchBatchSampler<> sampler(batch_core(n, 5, ds::World(r, 2), 4));
    count(reads, resume_and_finish(sampler, saved, n, 5, 2));
    dropped = n - sampler.batches().layout().read_end();
    // 180 consumed is a round end of 5 x 2 ranks: the epoch's grid of G = 40 goes on, the
    // first resumed step holding the rest of step 4 (2 of its 4 rounds).
    CATCH_CHECK(sampler.batches().micro_batches_in_step(0) == 2);
  }
  CATCH_CHECK(dropped == n % 40);  // what the uninterrupted epoch drops: nothing
  CATCH_CHECK(std::count(reads.begin(), reads.end(), 1u) == static_cast<std::ptrdiff_t>(n - dropped));
  CATCH_CHECK(std::count_if(reads.begin(), reads.end(), [](unsigned c) { return c > 1; }) == 0);
}

CATCH_TEST_CASE("TorchShardSampler serves 2 loader workers per rank and resumes on 3 ranks x 1 worker",
                "[torch-checkpoint][shards]") {
  std::vector<unsigned> reads(728);
  std::string saved;
  for (std::uint64_t r = 0; r < 2; ++r) {
    ds::TorchShardSampler sampler(shard_core(ds::World(r, 2), 2));
    // Batches alternate between the rank's two streams: each batch is one stream's next run.
    {
      auto probe = sampler.sampler();
      std::vector<ds::ShardSample> w0(6), w1(6);
      probe.fill(0, 0, 6, w0.data());
      probe.fill(1, 0, 6, w1.data());
      ds::TorchShardSampler direct(probe);
      const auto b0 = direct.next(6), b1 = direct.next(6);
      for (std::size_t i = 0; i < 6; ++i) {
        CATCH_CHECK((*b0)[i] == w0[i].index);
        CATCH_CHECK((*b1)[i] == w1[i].index);
      }
    }
    auto [read, archive] = stop_after(sampler, 728, 6, 2, 11);
    count(reads, read);
    saved = archive;
  }
  for (std::uint64_t r = 0; r < 3; ++r) {
    ds::TorchShardSampler sampler(shard_core(ds::World(r, 3), 1));
    count(reads, resume_and_finish(sampler, saved, 728, 8, 2));
  }
  CATCH_CHECK(std::count(reads.begin(), reads.end(), 1u) == 728);
}

CATCH_TEST_CASE("A batch sampler resumed before it is wrapped continues its resumed position", "[torch-checkpoint]") {
  const std::size_t n = 200;
  auto first = batch_core(n, 4, ds::World(0, 1), 1);
  const ds::SamplerState state = first.state(10);  // 40 positions consumed
  auto batches = batch_core(n, 4, ds::World(0, 1), 1);
  batches.resume(state);
  ds::TorchBatchSampler<> sampler(batches);
  sampler.set_epoch(0);  // the loop's set_epoch of the resumed epoch keeps the position
  auto loader = torch::data::make_data_loader(IndexDataset(n), sampler, loader_options(4, 0));
  std::vector<std::uint64_t> got;
  for (auto& b : *loader) {
    for (std::uint64_t index : indices_of(b)) got.push_back(index);
  }
  std::vector<std::uint64_t> expected;
  for (std::uint64_t p = 40; p < n; ++p) expected.push_back(first.index_at_position(p));
  CATCH_CHECK(got == expected);
}

CATCH_TEST_CASE("load after make_data_loader, before the loader iterates, reaches the loader", "[torch-checkpoint]") {
  const std::size_t n = 120;
  auto a = plain(n, ds::World(0, 1));
  for (int i = 0; i < 5; ++i) (void)a.next(8);
  std::stringstream stream;
  torch::save(a, stream);  // a read its batches itself: nothing can have been prefetched
  auto b = plain(n, ds::World(0, 1));
  auto loader = torch::data::make_data_loader(IndexDataset(n), b, loader_options(8, 0));
  torch::load(b, stream);
  std::vector<std::uint64_t> got;
  for (auto& batch : *loader) {
    for (std::uint64_t index : indices_of(batch)) got.push_back(index);
  }
  std::vector<std::uint64_t> rest;
  while (auto batch = a.next(8)) rest.insert(rest.end(), batch->begin(), batch->end());
  CATCH_CHECK(got.size() == n - 40);
  CATCH_CHECK(got == rest);
}

CATCH_TEST_CASE("auto_advance: a resumed pass finishes its epoch, the next pass reads the next epoch",
                "[torch-checkpoint]") {
  const std::size_t n = 64;
  auto a = plain(n, ds::World(0, 2), ds::Tail::pad, ds::EpochMode::auto_advance);
  a.set_epoch(3);
  for (int i = 0; i < 2; ++i) (void)a.next(4);
  const ds::SamplerState state = a.state_after(2);
  auto b = plain(n, ds::World(1, 2), ds::Tail::pad, ds::EpochMode::auto_advance);
  b.resume(state);
  auto loader = torch::data::make_data_loader(IndexDataset(n), b, loader_options(4, 2));
  std::size_t first = 0, second = 0;
  for (auto& batch : *loader) first += batch.size();
  CATCH_CHECK(b.epoch() == 3);
  for (auto& batch : *loader) second += batch.size();
  CATCH_CHECK(first == (n - 16) / 2);
  CATCH_CHECK(second == n / 2);
  CATCH_CHECK(b.epoch() == 4);
}

CATCH_TEST_CASE("Checkpoint misuse throws and says what to do", "[torch-checkpoint][errors]") {
  const std::size_t n = 100;
  auto sampler = plain(n, ds::World(0, 1));
  auto loader = torch::data::make_data_loader(IndexDataset(n), sampler, loader_options(10, 0));
  torch::serialize::OutputArchive archive;

  CATCH_SECTION("a count before the first pass begins") {
    CATCH_CHECK_THROWS_WITH(sampler.state_after(1),
                            "TorchSampler::state_after: batches_consumed 1 but the next pass has not begun (expected "
                            "0: set_epoch, resume or load changed the pass after the last reset)");
    CATCH_CHECK(sampler.state_after(0).consumed == 0);
  }
  auto it = loader->begin();
  ++it;
  ++it;  // the loop has received 3 batches (the third is *it)
  CATCH_SECTION("save without a count while the loader reads") {
    CATCH_CHECK_THROWS_WITH(sampler.save(archive),
                            "TorchSampler::save: a copy of this sampler (the DataLoader's) has handed out 3 batches of "
                            "this pass, some perhaps only prefetched (expected save(archive, batches_consumed) or "
                            "state_after(batches_consumed) with the number of batches the training loop received)");
    CATCH_CHECK_NOTHROW(sampler.save(archive, 3));
  }
  CATCH_SECTION("a count beyond what was handed out") {
    CATCH_CHECK_THROWS_WITH(sampler.state_after(4),
                            "TorchSampler::state_after: batches_consumed 4 exceeds the 3 batches handed out in this "
                            "pass (expected 0..3: the batches the training loop received)");
    CATCH_CHECK(sampler.state_after(3).consumed == 30);
  }
  CATCH_SECTION("load or resume while the loader iterates") {
    const ds::SamplerState state = sampler.state_after(1);
    CATCH_CHECK_THROWS_WITH(sampler.resume(state),
                            "TorchSampler::resume: a pass is running (3 batches handed out since it began) (expected "
                            "resume or load before the DataLoader's first iteration or between passes, or a new "
                            "sampler and loader)");
  }
  CATCH_SECTION("two readers of one pass") {
    CATCH_CHECK_THROWS_WITH(sampler.next(10),
                            "TorchSampler::next: another copy of this sampler is reading this pass (copies share their "
                            "progress; expected one sampler per DataLoader, and no next() calls on a sampler a "
                            "DataLoader reads)");
    auto second = torch::data::make_data_loader(IndexDataset(n), sampler, loader_options(10, 0));
    CATCH_CHECK_THROWS_WITH(second->begin(),
                            "TorchSampler::reset: another copy of this sampler is reading its pass (copies share their "
                            "progress; expected one sampler per DataLoader)");
  }
  CATCH_SECTION("set_epoch after the pass began waits for the next pass") {
    sampler.set_epoch(1);
    CATCH_CHECK(sampler.epoch() == 1);
    CATCH_CHECK_THROWS_WITH(sampler.save(archive, 3),
                            "TorchSampler::save: batches_consumed 3 but the next pass has not begun (expected 0: "
                            "set_epoch, resume or load changed the pass after the last reset)");
    std::size_t rest = 0;
    for (; it != loader->end(); ++it) rest += it->size();
    CATCH_CHECK(rest == 80);  // the running pass of epoch 0 continued: batches 3..10
  }
}

CATCH_TEST_CASE("set_epoch refuses to discard a resumed position", "[torch-checkpoint][errors]") {
  auto a = plain(100, ds::World(0, 2));
  for (int i = 0; i < 3; ++i) (void)a.next(5);
  auto b = plain(100, ds::World(1, 2));
  b.resume(a.state_after(3));
  CATCH_CHECK_NOTHROW(b.set_epoch(0));
  CATCH_CHECK_THROWS_WITH(b.set_epoch(1),
                          "TorchSampler::set_epoch: epoch 1 would discard the resumed position in epoch 0 (30 of 100 "
                          "positions consumed; expected set_epoch(0), e.g. a loop starting at epoch(), or a sampler "
                          "built without resuming)");
  // A resumed epoch with nothing left moves on freely.
  auto c = plain(100, ds::World(0, 2));
  c.resume(a.sampler().state(50));
  CATCH_CHECK_NOTHROW(c.set_epoch(1));
  CATCH_CHECK(c.epoch() == 1);
}

CATCH_TEST_CASE("The libtorch adapters refuse what a DataLoader cannot carry", "[torch-checkpoint][errors]") {
  CATCH_CHECK_THROWS_WITH(ds::TorchBatchSampler<>(batch_core(100, 4, ds::World(0, 2), 1, ds::Tail::uneven)),
                          "TorchBatchSampler: tail uneven can leave micro-batches of the last step empty, which a "
                          "libtorch DataLoader cannot carry (expected Tail::drop or Tail::pad)");
  ds::TorchBatchSampler<> batches(batch_core(100, 4, ds::World(0, 2), 1));
  CATCH_CHECK_THROWS_WITH(batches.reset(99),
                          "TorchBatchSampler::reset: the dataset has 99 samples but the batch "
                          "sampler was built for 100 (expected the same dataset size)");
  CATCH_CHECK_THROWS_WITH(ds::TorchSampler<>(10, ds::World(0, 1), ds::SamplerOptions(), static_cast<ds::EpochMode>(7)),
                          "TorchSampler: epoch mode 7 is not an EpochMode (expected manual or auto_advance)");
  auto zero = plain(10, ds::World(0, 1));
  CATCH_CHECK_THROWS_WITH(zero.next(0), "TorchSampler::next: batch_size is 0 (expected at least 1)");
  CATCH_CHECK(zero.next(4)->size() == 4);  // the pass is intact
  ds::TorchShardSampler shards(shard_core(ds::World(0, 1), 2));
  CATCH_CHECK_THROWS_WITH(shards.next(0), "TorchShardSampler::next: batch_size is 0 (expected at least 1)");
  (void)shards.next(5);
  (void)shards.next(6);
  CATCH_CHECK_THROWS_WITH(shards.state_after(2),
                          "TorchShardSampler::state_after: the batch size changed within this pass (expected a "
                          "constant batch_size, as a DataLoader asks, for a state after 2 batches)");
}

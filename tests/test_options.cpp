// distsampler tests: options are set by name; positional braces and swapped constructor arguments do not compile.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <type_traits>
#include <utility>

#include <distsampler/batch/batch_sampler.hpp>
#include <distsampler/distributed/distributed_sampler.hpp>
#include <distsampler/distsampler.hpp>
#include <distsampler/options.hpp>

using distsampler::BatchSamplerOptions;
using distsampler::DistributedBatchSampler;
using distsampler::DistributedSampler;
using distsampler::EpochMode;
using distsampler::SamplerOptions;
using distsampler::Tail;
using distsampler::World;

namespace {

// True when `T{args...}` (list-initialisation) compiles.
template <class Void, class T, class... Args>
struct brace_constructible_impl : std::false_type {};
template <class T, class... Args>
struct brace_constructible_impl<std::void_t<decltype(T{std::declval<Args>()...})>, T, Args...> : std::true_type {};
template <class T, class... Args>
constexpr bool brace_constructible = brace_constructible_impl<void, T, Args...>::value;

}  // namespace

// `{true, 42}` meant pad for one sampler and drop for the other: it no longer compiles.
static_assert(!std::is_aggregate_v<SamplerOptions>);
static_assert(!std::is_aggregate_v<BatchSamplerOptions>);
static_assert(!brace_constructible<SamplerOptions, bool, int>);
static_assert(!brace_constructible<SamplerOptions, bool, int, Tail>);
static_assert(!std::is_constructible_v<SamplerOptions, bool, int>);
static_assert(!brace_constructible<BatchSamplerOptions, bool, int>);
static_assert(!std::is_constructible_v<BatchSamplerOptions, bool, int>);
static_assert(!std::is_convertible_v<int, BatchSamplerOptions>);
static_assert(brace_constructible<SamplerOptions>);  // the check above can tell both cases apart

// `DistributedBatchSampler<>(4, 50000, world)` (micro-batch size and dataset size swapped)
// silently gave 0 steps; the dataset size is now followed by the World, and the micro-batch
// size lives in the options, so neither spelling of the old call compiles.
static_assert(!std::is_constructible_v<DistributedBatchSampler<>, int, int, World>);
static_assert(!std::is_constructible_v<DistributedBatchSampler<>, std::uint64_t, std::uint64_t, World>);
static_assert(!std::is_constructible_v<DistributedBatchSampler<>, std::uint64_t, std::uint64_t, World, std::uint64_t>);
static_assert(!std::is_constructible_v<DistributedBatchSampler<>, std::uint64_t, World>);  // options are required
static_assert(std::is_constructible_v<DistributedBatchSampler<>, std::uint64_t, World, BatchSamplerOptions>);
static_assert(!std::is_constructible_v<DistributedSampler<>, std::uint64_t, std::uint64_t, World>);
static_assert(std::is_constructible_v<DistributedSampler<>, std::uint64_t, World, SamplerOptions>);

// Every sampler names the options type it is built from, and options() returns exactly that type, so generic
// code (bindings, guards, factories) can take `typename S::options_type` without a table of families.
template <class S, class = void>
struct returns_its_options : std::true_type {};  // a sampler without options() (StreamSampler keeps a plan)
template <class S>
struct returns_its_options<S, std::void_t<decltype(std::declval<const S&>().options())>>
    : std::is_same<std::decay_t<decltype(std::declval<const S&>().options())>, typename S::options_type> {};
static_assert(std::is_same_v<distsampler::DistributedSampler<>::options_type, distsampler::SamplerOptions>);
static_assert(std::is_same_v<distsampler::DistributedBatchSampler<>::options_type, distsampler::BatchSamplerOptions>);
static_assert(std::is_same_v<distsampler::WeightedSampler::options_type, distsampler::WeightedSamplerOptions>);
static_assert(std::is_same_v<distsampler::StreamingShardSampler::options_type, distsampler::ShardSamplerOptions>);
static_assert(std::is_same_v<distsampler::TokenBatchSampler::options_type, distsampler::TokenBatchOptions>);
static_assert(std::is_same_v<distsampler::MixtureSampler::options_type, distsampler::MixtureOptions>);
static_assert(std::is_same_v<distsampler::PackedSequenceSampler::options_type, distsampler::PackOptions>);
static_assert(std::is_same_v<distsampler::StreamSampler::options_type, distsampler::StreamOptions>);
static_assert(returns_its_options<distsampler::DistributedSampler<distsampler::TorchRandperm>>::value);
static_assert(returns_its_options<distsampler::DistributedBatchSampler<>>::value);
static_assert(returns_its_options<distsampler::WeightedSampler>::value);
static_assert(returns_its_options<distsampler::StreamingShardSampler>::value);
static_assert(returns_its_options<distsampler::TokenBatchSampler>::value);
static_assert(returns_its_options<distsampler::MixtureSampler>::value);
static_assert(returns_its_options<distsampler::PackedSequenceSampler>::value);

TEST_CASE("SamplerOptions: defaults, setters by name, equality", "[options]") {
  constexpr SamplerOptions defaults;
  static_assert(defaults.shuffle && defaults.seed == 0 && defaults.tail == Tail::pad);
  constexpr SamplerOptions set = SamplerOptions().with_shuffle(false).with_seed(42).with_tail(Tail::uneven);
  static_assert(!set.shuffle && set.seed == 42 && set.tail == Tail::uneven);
  CHECK(set != defaults);
  CHECK(SamplerOptions().with_seed(42) == SamplerOptions().with_seed(42));
  CHECK(SamplerOptions().with_seed(42) != SamplerOptions().with_seed(43));
  CHECK(SamplerOptions().with_tail(Tail::drop) != SamplerOptions());
  CHECK(SamplerOptions().with_shuffle(false) != SamplerOptions());
  SamplerOptions assigned;
  assigned.seed = 7;
  CHECK(assigned == SamplerOptions().with_seed(7));
}

TEST_CASE("BatchSamplerOptions: defaults (tail drop), setters by name, equality", "[options][batch]") {
  constexpr BatchSamplerOptions defaults;
  static_assert(defaults.micro_batch_size == 0 && defaults.accumulation_steps == 1 && defaults.global_batch_size == 0 &&
                defaults.shuffle && defaults.seed == 0 && defaults.tail == Tail::drop &&
                defaults.epoch_mode == EpochMode::manual);
  constexpr BatchSamplerOptions set = BatchSamplerOptions()
                                          .with_micro_batch_size(8)
                                          .with_accumulation_steps(2)
                                          .with_global_batch_size(64)
                                          .with_shuffle(false)
                                          .with_seed(5)
                                          .with_tail(Tail::pad)
                                          .with_epoch_mode(EpochMode::auto_advance);
  static_assert(set.micro_batch_size == 8 && set.accumulation_steps == 2 && set.global_batch_size == 64 &&
                !set.shuffle && set.seed == 5 && set.tail == Tail::pad && set.epoch_mode == EpochMode::auto_advance);
  CHECK(set == BatchSamplerOptions(set));
  CHECK(BatchSamplerOptions(set).with_epoch_mode(EpochMode::manual) != set);
  CHECK(BatchSamplerOptions(set).with_micro_batch_size(4) != set);
  CHECK(BatchSamplerOptions(set).with_global_batch_size(0) != set);
}

TEST_CASE("Tail and EpochMode values are checked where options are taken", "[options][errors]") {
  CHECK(distsampler::parse_tail("uneven") == Tail::uneven);
  CHECK(distsampler::to_string(Tail::drop) == "drop");
  CHECK_THROWS_WITH(distsampler::parse_tail("all", "--tail"),
                    "--tail \"all\" is unknown (expected pad, drop or uneven)");
  CHECK_NOTHROW(distsampler::detail::check_tail(Tail::uneven, "X"));
  CHECK_THROWS_AS(distsampler::detail::check_tail(static_cast<Tail>(3), "X"), distsampler::config_error);
  CHECK_THROWS_WITH(distsampler::detail::check_tail(static_cast<Tail>(3), "X"),
                    "X: tail 3 is not a Tail (expected pad, drop or uneven)");
  CHECK_NOTHROW(distsampler::detail::check_epoch_mode(EpochMode::auto_advance, "Y"));
  CHECK_THROWS_WITH(distsampler::detail::check_epoch_mode(static_cast<EpochMode>(2), "Y"),
                    "Y: epoch_mode 2 is not an EpochMode (expected manual or auto_advance)");
}

// docs/ARCHITECTURE.md, "What size() counts": samples for the samplers that yield samples, optimizer steps for
// the samplers that yield micro-batches (their micro-batches are micro_batch_count()). The expected counts are
// worked out by hand from each configuration.
TEST_CASE("size() counts samples for sample samplers and optimizer steps for step samplers", "[options][names]") {
  namespace ds = distsampler;
  SECTION("DistributedSampler: this rank's samples, padding included (ceil(103 / 4))") {
    const ds::DistributedSampler<> s(103, ds::World(1, 4), ds::SamplerOptions().with_seed(3));
    std::uint64_t read = 0;
    for (auto it = s.begin(); it != s.end(); ++it) ++read;
    CHECK(s.size() == 26);
    CHECK(read == 26);
  }
  SECTION("WeightedSampler: this rank's draws (num_samples 50 over 3 ranks, padded: 17)") {
    const ds::WeightedSampler s({1, 2, 3, 4}, ds::World(1, 3), ds::WeightedSamplerOptions().with_seed(2).with_num_samples(50));
    CHECK(s.size() == 17);
    CHECK(s.indices().size() == 17);
  }
  SECTION("StreamingShardSampler: this rank's samples over its workers (125 samples, 5 consumers, uneven)") {
    const ds::StreamingShardSampler s({40, 25, 60}, ds::World(1, 2),
                                      ds::ShardSamplerOptions().with_num_workers(2).with_tail(ds::Tail::uneven));
    CHECK(s.size() == s.stream(0).size() + s.stream(1).size());
    CHECK(s.size() == 62);  // 125 over 2 ranks: rank 0 takes the odd sample
  }
  SECTION("DistributedBatchSampler: steps of 8 x 2 x 4 = 64 samples, drop tail: 1000 / 64 = 15") {
    const ds::DistributedBatchSampler<> s(
        1000, ds::World(1, 4), ds::BatchSamplerOptions().with_micro_batch_size(8).with_accumulation_steps(2));
    CHECK(s.size() == 15);
    CHECK(s.micro_batch_count() == 30);
  }
  SECTION("MixtureSampler: 80 positions in global batches of 8: 10 steps") {
    const ds::MixtureSampler s({100, 100}, {0.5, 0.5}, ds::World(0, 2),
                               ds::MixtureOptions().with_micro_batch_size(2).with_accumulation_steps(2)
                                   .with_end(ds::MixtureEnd::samples, 80));
    CHECK(s.size() == 10);
    CHECK(s.micro_batch_count() == 20);
  }
  SECTION("PackedSequenceSampler: 10 documents of 8 tokens in sequences of 16 (concat): 5 steps of 1") {
    const std::vector<std::uint32_t> lengths(10, 8);
    const ds::PackedSequenceSampler s(10, lengths, ds::World(0, 1),
                                      ds::PackOptions().with_seq_len(16).with_micro_batch_size(1));
    CHECK(s.size() == 5);
    CHECK(s.num_sequences() == 5);
  }
  SECTION("TokenBatchSampler: size() is num_steps(), and every step has one micro-batch per rank") {
    const std::vector<std::uint32_t> lengths{5, 9, 3, 12, 7, 7, 2, 30, 4, 4, 8};
    const ds::TokenBatchSampler s(11, lengths, ds::World(0, 1), ds::TokenBatchOptions().with_max_tokens(1000));
    CHECK(s.size() == s.num_steps());
    CHECK(s.size() == 1);  // all 11 samples (longest 30: 330 padded tokens) fit one budget of 1000
  }
}

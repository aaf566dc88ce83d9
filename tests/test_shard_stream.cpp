// Tests of shard streams and their iterators: chunked reading, and staying valid across set_epoch and resume.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <distsampler/shards/stream.hpp>
#include <distsampler/shards/streaming_shard_sampler.hpp>

#include "shard_test_util.hpp"

using namespace shard_test;
using distsampler::ShardStreamIterator;

namespace {

std::vector<ShardSample> read_all(const StreamingShardSampler& s, std::uint64_t worker) {
  std::vector<ShardSample> out(static_cast<std::size_t>(s.worker_size(worker)));
  s.fill(worker, 0, out.size(), out.data());
  return out;
}

const std::vector<std::uint64_t> stream_sizes{300, 0, 41, 129, 7};  // 477 samples

}  // namespace

TEST_CASE("a stream iterator kept across set_epoch finishes the epoch it started", "[shard][stream]") {
  StreamingShardSampler s(stream_sizes, World(1, 2));
  const auto epoch0 = read_all(s, 0);
  const auto stream = s.stream(0);
  auto it = stream.begin();
  for (int i = 0; i < 10; ++i) ++it;  // 54 samples of its 64-sample chunk still buffered
  s.set_epoch(1);
  const auto epoch1 = read_all(s, 0);
  REQUIRE(epoch1 != epoch0);
  std::vector<ShardSample> rest;
  for (std::uint64_t guard = 0; it != stream.end() && guard <= epoch0.size(); ++it, ++guard) rest.push_back(*it);
  CHECK(rest == std::vector<ShardSample>(epoch0.begin() + 10, epoch0.end()));
  CHECK(stream.epoch() == 0);
  // The same iterator also stops against the new stream's end.
  auto again = stream.begin();
  std::uint64_t steps = 0;
  for (const auto end = s.stream(0).end(); again != end && steps <= epoch0.size(); ++again) ++steps;
  CHECK(steps == epoch0.size());
  // A new stream reads the new epoch.
  std::vector<ShardSample> fresh;
  for (const ShardSample x : s.stream(0)) fresh.push_back(x);
  CHECK(fresh == epoch1);
}

TEST_CASE("a stream iterator kept across resume stops at the end of its segment", "[shard][stream]") {
  StreamingShardSampler s(stream_sizes, World(0, 2), ShardSamplerOptions().with_num_workers(2));
  s.set_epoch(4);
  const auto before = read_all(s, 1);
  const auto stream = s.stream(1);
  auto it = stream.begin();
  for (int i = 0; i < 100; ++i) ++it;
  // Resuming near the end leaves a much shorter stream: the old iterator is far past it.
  s.resume(s.state(s.worker_size(0) - 3));
  REQUIRE(s.worker_size(1) < 100);
  std::vector<ShardSample> rest;
  for (std::uint64_t guard = 0; it != stream.end() && guard <= before.size(); ++it, ++guard) rest.push_back(*it);
  CHECK(rest == std::vector<ShardSample>(before.begin() + 100, before.end()));
  CHECK(it.at_end());
  CHECK(it == ShardStreamIterator());
  // Against the resumed stream's end it stops as well, at its own end.
  auto old = stream.begin();
  std::uint64_t steps = 0;
  for (const auto end = s.stream(1).end(); old != end && steps <= before.size(); ++old) ++steps;
  CHECK(steps == before.size());
}

TEST_CASE("a stream outlives its sampler and copies of it read the same", "[shard][stream]") {
  std::vector<ShardSample> expected;
  std::unique_ptr<StreamingShardSampler> s = std::make_unique<StreamingShardSampler>(stream_sizes, World(2, 3));
  s->set_epoch(2);
  expected = read_all(*s, 0);
  const auto stream = s->stream(0);
  auto it = stream.begin();
  ++it;
  const auto copy = it;
  s.reset();
  std::vector<ShardSample> got{*stream.begin()};
  for (auto at = copy; at != stream.end(); ++at) got.push_back(*at);
  CHECK(got == expected);
  CHECK(stream.size() == expected.size());
}

TEST_CASE("iterator equality: positions within a stream, every end equal to every end", "[shard][stream]") {
  const StreamingShardSampler s(stream_sizes, World());
  const auto stream = s.stream(0);
  auto a = stream.begin(), b = stream.begin();
  CHECK(a == b);
  ++a;
  CHECK(a != b);
  CHECK(a.position() == 1);
  ++b;
  CHECK(a == b);
  CHECK(stream.end() == ShardStreamIterator());
  CHECK(stream.begin() != ShardStreamIterator());
  CHECK(ShardStreamIterator().at_end());
  const StreamingShardSampler empty(std::vector<std::uint64_t>{0, 0}, World());
  CHECK(empty.stream(0).begin() == empty.stream(0).end());
  CHECK_THROWS_WITH(s.stream(1), "StreamingShardSampler: worker 1 is out of range for num_workers 1 (expected 0..0)");
}

TEST_CASE("moved-from samplers, streams and iterators stay valid and unchanged", "[shard][stream]") {
  StreamingShardSampler s(stream_sizes, World(1, 2), ShardSamplerOptions().with_num_workers(2));
  s.set_epoch(3);
  const auto expected = read_all(s, 1);
  StreamingShardSampler moved(std::move(s));
  CHECK(read_all(moved, 1) == expected);
  // Moving copies: the moved-from objects are documented to stay valid and unchanged.
  CHECK(read_all(s, 1) == expected);
  CHECK(s.epoch() == 3);
  auto stream = moved.stream(1);
  auto it = stream.begin();
  const auto taken_stream = std::move(stream);
  const auto taken_it = std::move(it);
  CHECK(stream.size() == expected.size());
  CHECK(*it == expected.front());
  CHECK(*taken_it == expected.front());
  std::uint64_t n = 0;
  for (auto at = stream.begin(); at != stream.end(); ++at) ++n;
  CHECK(n == expected.size());
  CHECK(taken_stream.size() == expected.size());
}

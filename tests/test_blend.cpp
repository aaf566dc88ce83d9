// distsampler tests: BlendSampler (sources packed on their own, blended by weight as sequences) against a
// reference that materialises every source's passes and the whole order for small N.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <distsampler/blend/blend_sampler.hpp>
#include <distsampler/blend/guard.hpp>
#include <distsampler/mesh_check.hpp>
#include <distsampler/detail/mix.hpp>
#include <distsampler/mixture/schedule.hpp>
#include <distsampler/packing/packed_sequence_sampler.hpp>

// A named namespace keeps the using-directive out of the other files of a unity batch.
namespace blend_tests {
using namespace distsampler;

namespace {

struct Config {
  std::vector<std::vector<std::uint32_t>> lengths;
  std::vector<double> weights;
  BlendOptions options;  // unresolved; the block (mixing_block or G) is filled in by the reference
};

struct RefSequence {
  std::uint64_t source = 0;
  std::uint64_t pass = 0;
  std::vector<PackPiece> pieces;
  friend bool operator==(const RefSequence& a, const RefSequence& b) {
    return a.source == b.source && a.pieces == b.pieces;
  }
};

// The reference: each source's passes packed by a PackedSequenceSampler of its own (one rank,
// seed splitmix64(seed ^ splitmix64(i + 1)), pass q its epoch q), materialised sequence by
// sequence; the order's sources by a MixtureSchedule of its own (the documented phase key).
struct Reference {
  std::vector<RefSequence> order;                         // position -> sequence
  std::vector<std::vector<std::uint64_t>> pass_starts;    // per source: ordinal of each pass's first sequence
  std::uint64_t block = 0;
};

Reference reference(const Config& c, std::uint64_t global_batch) {
  const BlendOptions& o = c.options;
  Reference ref;
  ref.block = o.mixing_block != 0 ? o.mixing_block : global_batch;
  std::vector<std::uint64_t> sizes;
  for (const auto& l : c.lengths) sizes.push_back(l.size());
  const MixtureSchedule schedule(sizes, c.weights, o.schedule, ref.block, "reference");
  const std::uint64_t phase_key = detail::mix64(o.seed ^ detail::splitmix64(0x626c656e64u));
  const std::uint64_t length = o.end_steps * ref.block;
  std::vector<std::vector<RefSequence>> seqs(c.lengths.size());
  ref.pass_starts.assign(c.lengths.size(), {});
  for (std::uint64_t p = 0; p < length; ++p) {
    const MixtureSlot slot = schedule.locate(p, phase_key, !o.shuffle);
    const auto i = static_cast<std::size_t>(slot.source);
    while (seqs[i].size() <= slot.ordinal) {
      PackOptions po;
      po.with_seq_len(o.seq_len).with_mode(o.mode).with_window(o.window, o.chunk).with_micro_batch_size(1)
          .with_shuffle(o.shuffle)
          .with_seed(detail::splitmix64(o.seed ^ detail::splitmix64(static_cast<std::uint64_t>(i) + 1)));
      PackedSequenceSampler pass(c.lengths[i].size(), c.lengths[i], World{0, 1}, po);
      const std::uint64_t q = ref.pass_starts[i].size();
      pass.set_epoch(q);
      ref.pass_starts[i].push_back(seqs[i].size());
      REQUIRE(pass.num_sequences() > 0);
      for (std::uint64_t j = 0; j < pass.num_sequences(); ++j) seqs[i].push_back({i, q, pass.sequence(j)});
    }
    ref.order.push_back(seqs[i][static_cast<std::size_t>(slot.ordinal)]);
  }
  return ref;
}

std::vector<LengthView> views(const Config& c) {
  std::vector<LengthView> out;
  for (const auto& l : c.lengths) out.emplace_back(l);
  return out;
}

// Every sequence the sampler's world reads, in (step, k, rank, e) order.
std::vector<RefSequence> read_all(const BlendSampler& s) {
  std::vector<RefSequence> out;
  BlendCache cache;
  for (std::uint64_t step = 0; step < s.num_steps(); ++step) {
    for (std::uint64_t k = 0; k < s.micro_batches_in_step(step); ++k) {
      for (std::uint64_t r = 0; r < s.world_size(); ++r) {
        const BlendMicroBatch b = s.micro_batch_of(step, k, r, cache);
        for (std::uint64_t e = 0; e < b.sequences(); ++e) {
          RefSequence x;
          x.source = b.sources[static_cast<std::size_t>(e)];
          x.pieces.assign(b.pieces.begin() + static_cast<std::ptrdiff_t>(b.sequence_begin[static_cast<std::size_t>(e)]),
                          b.pieces.begin() + static_cast<std::ptrdiff_t>(b.sequence_begin[static_cast<std::size_t>(e + 1)]));
          out.push_back(std::move(x));
        }
      }
    }
  }
  return out;
}

// A small random blend: 1..4 sources of 2..40 documents, L 4..16, either mode, small
// windows, random weights (one may be 0), 0..2 weight changes, M, W, accumulation 1..3.
Config random_config(std::uint64_t seed, std::uint64_t& world, std::uint64_t& micro, std::uint64_t& accum) {
  detail::SplitMix64 rng(seed);
  Config c;
  const std::uint64_t k = 1 + rng() % 4;
  const std::uint64_t l = 4 + rng() % 13;
  for (std::uint64_t i = 0; i < k; ++i) {
    std::vector<std::uint32_t> lens;
    std::uint64_t sum = 0;
    const std::uint64_t n = 2 + rng() % 39;
    for (std::uint64_t d = 0; d < n; ++d) {
      const std::uint64_t r = rng() % 10;
      lens.push_back(r == 0 ? 0u : static_cast<std::uint32_t>(1 + rng() % (r < 8 ? l : 3 * l)));
      sum += lens.back();
    }
    if (sum < l) lens.push_back(static_cast<std::uint32_t>(l));
    c.lengths.push_back(lens);
    c.weights.push_back(static_cast<double>(1 + rng() % 100));
  }
  if (k > 1 && rng() % 4 == 0) c.weights[static_cast<std::size_t>(rng() % k)] = 0;
  world = 1 + rng() % 3;
  micro = 1 + rng() % 3;
  accum = 1 + rng() % 3;
  BlendOptions& o = c.options;
  o.with_seq_len(l).with_mode(rng() % 2 == 0 ? PackMode::concat : PackMode::best_fit).with_window(8, 2)
      .with_seed(rng()).with_end_steps(4 + rng() % 10).with_micro_batch_size(micro).with_accumulation_steps(accum);
  std::uint64_t step = 0;
  for (std::uint64_t j = rng() % 3; j > 0; --j) {
    step += 1 + rng() % 4;
    std::vector<double> w;
    for (std::uint64_t i = 0; i < k; ++i) w.push_back(static_cast<double>(rng() % 50));
    w[static_cast<std::size_t>(rng() % k)] += 1;
    o.schedule.push_back({step, w});
  }
  return c;
}

// (b): over the reads of each source, every complete pass reads each token (concat: all but
// the pass's last partial sequence) or each document's tokens (best-fit) exactly once.
void check_passes(const Config& c, const Reference& ref, const std::vector<RefSequence>& reads) {
  const std::uint64_t l = c.options.seq_len;
  for (std::size_t i = 0; i < c.lengths.size(); ++i) {
    const auto& lens = c.lengths[i];
    std::vector<std::vector<std::uint32_t>> hits;  // per pass: token hits, flattened per document
    std::vector<std::uint64_t> doc_begin(lens.size() + 1, 0);
    for (std::size_t d = 0; d < lens.size(); ++d) doc_begin[d + 1] = doc_begin[d] + lens[d];
    const std::vector<std::uint64_t>& starts = ref.pass_starts[i];
    std::uint64_t ordinal = 0;
    std::vector<std::uint64_t> per_pass;
    for (const RefSequence& x : reads) {
      if (x.source != i) continue;
      const std::uint64_t q =
          static_cast<std::uint64_t>(std::upper_bound(starts.begin(), starts.end(), ordinal) - starts.begin()) - 1;
      if (hits.size() <= q) {
        hits.resize(static_cast<std::size_t>(q + 1), std::vector<std::uint32_t>(doc_begin.back(), 0));
        per_pass.resize(static_cast<std::size_t>(q + 1), 0);
      }
      std::uint64_t tokens = 0;
      for (const PackPiece& p : x.pieces) {
        REQUIRE(p.document < lens.size());
        REQUIRE(p.offset + p.length <= lens[static_cast<std::size_t>(p.document)]);
        for (std::uint64_t t = 0; t < p.length; ++t) ++hits[q][doc_begin[p.document] + p.offset + t];
        tokens += p.length;
      }
      if (c.options.mode == PackMode::concat) REQUIRE(tokens == l);
      REQUIRE(tokens <= l);
      ++per_pass[q];
      ++ordinal;
    }
    for (std::size_t q = 0; q < hits.size(); ++q) {
      for (const std::uint32_t h : hits[q]) REQUIRE(h <= 1);
      const bool complete = q + 1 < starts.size() && per_pass[q] == starts[q + 1] - starts[q];
      if (!complete) continue;
      std::uint64_t seen = 0;
      for (const std::uint32_t h : hits[q]) seen += h;
      if (c.options.mode == PackMode::best_fit) {
        REQUIRE(seen == doc_begin.back());
      } else {
        REQUIRE(seen == doc_begin.back() / l * l);
      }
    }
  }
}

// (c): every mixing block holds floor or ceil of B w_i sequences of source i (in its
// segment), and every prefix is within 2 of its ideal count.
void check_counts(const Config& c, const Reference& ref, const std::vector<RefSequence>& reads) {
  const std::size_t k = c.lengths.size();
  const std::uint64_t b = ref.block;
  std::vector<double> ideal(k, 0);
  std::vector<std::uint64_t> count(k, 0), in_block(k, 0);
  for (std::uint64_t p = 0; p < reads.size(); ++p) {
    const std::uint64_t step = p / b;
    std::vector<double> w = c.weights;
    for (const WeightChange& ch : c.options.schedule) {
      if (ch.step <= step) w = ch.weights;
    }
    double sum = 0;
    for (const double x : w) sum += x;
    if (p % b == 0) std::fill(in_block.begin(), in_block.end(), 0);
    ++count[static_cast<std::size_t>(reads[p].source)];
    ++in_block[static_cast<std::size_t>(reads[p].source)];
    for (std::size_t i = 0; i < k; ++i) {
      ideal[i] += w[i] / sum;
      REQUIRE(std::fabs(static_cast<double>(count[i]) - ideal[i]) <= 2.0 + 1e-9);
      if ((p + 1) % b == 0) {
        const double share = static_cast<double>(b) * w[i] / sum;
        REQUIRE(static_cast<double>(in_block[i]) >= std::floor(share - 1e-9));
        REQUIRE(static_cast<double>(in_block[i]) <= std::ceil(share + 1e-9));
      }
    }
  }
}

}  // namespace

TEST_CASE("a blend's reads over every rank are the reference order, each source's passes read once", "[blend]") {
  for (std::uint64_t trial = 0; trial < 60; ++trial) {
    std::uint64_t world = 1, micro = 1, accum = 1;
    const Config c = random_config(0xb1e4d + trial, world, micro, accum);
    INFO("trial " << trial << " world " << world << " micro " << micro << " accumulation " << accum << " mode "
                  << to_string(c.options.mode));
    const std::uint64_t g = world * micro * accum;
    const Reference ref = reference(c, g);
    const BlendSampler s(views(c), c.weights, World{0, world}, c.options);
    REQUIRE(s.dataset_size() == ref.order.size());
    REQUIRE(s.global_batch_size() == g);
    REQUIRE(s.num_steps() == c.options.end_steps);
    // (a) disjoint and covering: step after step, (k, rank, e) reads the spec's positions
    // s G + (k W + r) M + e, so the reads in that order are the reference order.
    const std::vector<RefSequence> reads = read_all(s);
    REQUIRE(reads.size() == ref.order.size());
    for (std::size_t p = 0; p < reads.size(); ++p) {
      INFO("position " << p);
      REQUIRE(reads[p] == ref.order[p]);
    }
    check_passes(c, ref, reads);
    check_counts(c, ref, reads);
    // The per-source counts the sampler reports are the reference's.
    for (std::size_t i = 0; i < c.lengths.size(); ++i) {
      std::uint64_t n = 0;
      for (const RefSequence& x : ref.order) n += x.source == i ? 1u : 0u;
      REQUIRE(s.source_sequences(i, s.dataset_size()) == n);
    }
    // Another world and batch shape of the same G reads the same order.
    const BlendSampler one(views(c), c.weights, World{0, 1},
                           BlendOptions(c.options).with_micro_batch_size(g).with_accumulation_steps(1));
    REQUIRE(read_all(one) == reads);
  }
}

TEST_CASE("a blend resumes mid-run on another world size and micro-batch size with exactly the rest", "[blend]") {
  for (std::uint64_t trial = 0; trial < 40; ++trial) {
    std::uint64_t world = 1, micro = 1, accum = 1;
    Config c = random_config(0x5e5 + trial, world, micro, accum);
    const std::uint64_t g = world * micro * accum;
    const Reference ref = reference(c, g);
    const BlendSampler s(views(c), c.weights, World{0, world}, c.options);
    detail::SplitMix64 rng(trial);
    const std::uint64_t steps = rng() % s.num_steps();
    const std::uint64_t k = rng() % s.micro_batches_in_step(steps);
    const SamplerState state = SamplerState::from_text(s.state(steps, k).to_text());
    REQUIRE(state.consumed == steps * g + k * world * micro);
    // The same G as 1 rank x G, or G ranks x 1, or (when even) 2 ranks x G/2.
    const std::vector<std::pair<std::uint64_t, std::uint64_t>> shapes = {{1, g}, {g, 1}, {g % 2 == 0 ? 2 : 1, g % 2 == 0 ? g / 2 : g}};
    for (const auto& [w2, m2] : shapes) {
      INFO("trial " << trial << " resumed at " << state.consumed << " on world " << w2 << " micro " << m2);
      BlendSampler r(views(c), c.weights, World{w2 - 1, w2}, BlendOptions(c.options).with_micro_batch_size(m2)
                                                                 .with_accumulation_steps(1));
      r.resume(state);
      const std::vector<RefSequence> rest = read_all(r);
      REQUIRE(r.start() == state.consumed);
      REQUIRE(rest.size() == ref.order.size() - state.consumed);
      for (std::size_t p = 0; p < rest.size(); ++p) REQUIRE(rest[p] == ref.order[state.consumed + p]);
      // Built from the state: the same.
      const BlendSampler from(views(c), c.weights, World{0, w2},
                              BlendOptions(c.options).with_micro_batch_size(m2).with_accumulation_steps(1), state);
      REQUIRE(read_all(from) == rest);
    }
    // Another G with the run's mixing block kept: the rest of the order, each once, in steps
    // of the new G (the last one spread over the micro-batches, as Tail::uneven).
    BlendSampler other(views(c), c.weights, World{0, 1},
                       BlendOptions(c.options).with_micro_batch_size(g + 1).with_accumulation_steps(1)
                           .with_mixing_block(g), state);
    const std::vector<RefSequence> rest = read_all(other);
    REQUIRE(rest.size() == ref.order.size() - state.consumed);
    for (std::size_t p = 0; p < rest.size(); ++p) REQUIRE(rest[p] == ref.order[state.consumed + p]);
  }
}

TEST_CASE("a blend across weight changes keeps every source's pass exactly once and the counts", "[blend]") {
  // Two sources, fixed: the heavy one runs out and starts its next pass while the weights flip.
  Config c;
  c.lengths = {{5, 9, 0, 13, 7, 2, 11, 4, 8, 6, 3, 12}, {17, 4, 9, 1, 22, 6}};
  c.weights = {0.8, 0.2};
  for (const PackMode mode : {PackMode::concat, PackMode::best_fit}) {
    c.options = BlendOptions();
    c.options.with_seq_len(8).with_mode(mode).with_window(4, 2).with_seed(7).with_micro_batch_size(2)
        .with_accumulation_steps(2).with_end_steps(30).with_schedule({{6, {0.1, 0.9}}, {15, {0.5, 0.5}}});
    const Reference ref = reference(c, 8);
    const BlendSampler s(views(c), c.weights, World{1, 2}, c.options);
    const std::vector<RefSequence> reads = read_all(s);
    REQUIRE(reads == ref.order);
    REQUIRE(ref.pass_starts[0].size() >= 3);  // source 0 went through passes 0, 1 and into 2
    REQUIRE(ref.pass_starts[1].size() >= 3);
    check_passes(c, ref, reads);
    check_counts(c, ref, reads);
    // A cache holds at most one plan per source besides pass 0.
    BlendCache cache;
    for (std::uint64_t p = 0; p < s.dataset_size(); ++p) {
      std::vector<PackPiece> pieces;
      REQUIRE(s.append_sequence(p, cache, pieces) == ref.order[p].source);
      REQUIRE(pieces == ref.order[p].pieces);
      REQUIRE(cache.plans() <= 2);
    }
    // A cache used by another blend (another seed) is cleared, not misread.
    const BlendSampler other(views(c), c.weights, World{0, 2}, BlendOptions(c.options).with_seed(8));
    const Reference other_ref = reference(Config{c.lengths, c.weights, BlendOptions(c.options).with_seed(8)}, 8);
    for (std::uint64_t p = 0; p < other.dataset_size(); p += 7) {
      std::vector<PackPiece> pieces;
      REQUIRE(other.append_sequence(p, cache, pieces) == other_ref.order[p].source);
      REQUIRE(pieces == other_ref.order[p].pieces);
    }
    // A resume after the first change, on another shape.
    const SamplerState state = s.state(9, 1);
    BlendSampler r(views(c), c.weights, World{0, 4}, BlendOptions(c.options).with_micro_batch_size(1), state);
    const std::vector<RefSequence> rest = read_all(r);
    REQUIRE(rest.size() == ref.order.size() - state.consumed);
    REQUIRE(std::equal(rest.begin(), rest.end(), ref.order.begin() + static_cast<std::ptrdiff_t>(state.consumed)));
  }
}

TEST_CASE("a blend refuses bad configs naming the field", "[blend]") {
  const std::vector<std::uint32_t> a = {5, 9, 13, 7}, b = {3, 4, 1}, zeros = {0, 0};
  const std::vector<LengthView> two = {LengthView(a), LengthView(b)};
  const BlendOptions ok = BlendOptions().with_seq_len(4).with_micro_batch_size(2).with_end_steps(5);
  CHECK_NOTHROW(BlendSampler(two, {1, 1}, World{0, 2}, ok));
  CHECK_THROWS_WITH(BlendSampler(two, {1, 1}, World{0, 1}, BlendOptions(ok).with_seq_len(0)),
                    "BlendOptions: seq_len 0 is out of range (expected 1..8388607 tokens per sequence; call with_seq_len)");
  CHECK_THROWS_WITH(BlendSampler(two, {1, 1}, World{0, 1}, BlendOptions(ok).with_end_steps(0)),
                    "BlendOptions: end_steps is 0 (expected at least 1 step; set it with with_end_steps(n))");
  CHECK_THROWS_WITH(BlendSampler(two, {1, 1}, World{0, 1}, BlendOptions(ok).with_tail(Tail::pad)),
                    Catch::StartsWith("BlendOptions: tail pad is not used (expected drop"));
  CHECK_THROWS_WITH(BlendSampler(two, {1, 1}, World{0, 1}, BlendOptions(ok).with_window(4, 8)),
                    "BlendOptions: window 4 is out of range (expected chunk 8..4294967295)");
  CHECK_THROWS_WITH(BlendSampler(two, {1, 1}, World{0, 1}, BlendOptions(ok).with_micro_batch_size(0)),
                    Catch::StartsWith("BlendOptions: micro_batch_size is 0 (expected at least 1"));
  CHECK_THROWS_WITH(BlendSampler(two, {1, 1}, World{0, 2}, BlendOptions(ok).with_global_batch_size(6)),
                    Catch::StartsWith("BlendOptions: global_batch_size 6 is not a multiple of micro_batch_size 2 x world_size 2"));
  CHECK_THROWS_WITH(BlendSampler(two, {1}, World{0, 1}, ok),
                    "BlendSampler: weights has 1 values for 2 sources (expected one weight per source)");
  CHECK_THROWS_WITH(BlendSampler(two, {1, -1}, World{0, 1}, ok),
                    "BlendSampler: weights[1] is -1.000000 (expected a finite weight >= 0)");
  CHECK_THROWS_WITH(BlendSampler({}, {}, World{0, 1}, ok),
                    "BlendSampler: source_sizes is empty (expected at least one source)");
  CHECK_THROWS_WITH(BlendSampler(two, {1, 1}, World{0, 1}, BlendOptions(ok).with_schedule({{0, {1, 2}}})),
                    Catch::StartsWith("BlendSampler: schedule[0] (step 0) is not after step 0"));
  CHECK_THROWS_WITH(BlendSampler(two, {1, 1}, World{0, 1}, BlendOptions(ok).with_end_steps(UINT64_MAX)),
                    "BlendSampler: end_steps 18446744073709551615 x mixing block 2 overflows 64 bits");
  // A source's lengths, as the packing family refuses them, prefixed by the source.
  CHECK_THROWS_WITH(BlendSampler({LengthView(a), LengthView(b)}, {1, 1}, World{0, 1},
                                 BlendOptions(ok).with_mode(PackMode::best_fit).with_split_long(false)),
                    Catch::StartsWith("BlendSampler: sources[0]: PackedSequenceSampler: "));
  CHECK_THROWS_WITH(BlendSampler({LengthView(a), LengthView(b)}, {1, 1}, World{0, 1}, BlendOptions(ok).with_seq_len(9)),
                    "BlendSampler: sources[1] packs into no sequence (8 tokens, seq_len 9; expected at least seq_len "
                    "tokens in concat, at least 1 in best-fit, for a source with a positive weight)");
  CHECK_NOTHROW(BlendSampler({LengthView(a), LengthView(zeros)}, {1, 0}, World{0, 1}, ok));  // weight 0: never read
  CHECK_THROWS_WITH(BlendSampler({LengthView(a), LengthView(zeros)}, {1, 1}, World{0, 1},
                                 BlendOptions(ok).with_mode(PackMode::best_fit)),
                    Catch::StartsWith("BlendSampler: sources[1] packs into no sequence (0 tokens"));
  // Reads out of range.
  const BlendSampler s(two, {1, 1}, World{0, 2}, ok);
  BlendCache cache;
  CHECK_THROWS_WITH(s.micro_batch(5, 0), "BlendSampler::micro_batch: step 5 is out of range for num_steps 5 (expected 0..4)");
  CHECK_THROWS_WITH(s.micro_batch_of(0, 0, 2, cache),
                    "BlendSampler::micro_batch: rank 2 is out of range for world_size 2 (expected 0..1)");
  CHECK_THROWS_WITH(s.locate(20, cache), "BlendSampler::locate: position 20 is out of range for dataset_size 20 (expected 0..19)");
  CHECK_THROWS_WITH(s.source_sequences(2, 0), "BlendSampler: source 2 is out of range for num_sources 2 (expected 0..1)");
  BlendSampler e(two, {1, 1}, World{0, 2}, ok);
  CHECK_THROWS_WITH(e.set_epoch(1), "BlendSampler: epoch 1 is out of range (expected 0: a blend is one run, its "
                                    "sources' passes are its epochs)");
  CHECK_THROWS_WITH(s.state(6), "BlendSampler::state: steps_done 6 exceeds num_steps 5 (expected 0..5)");
}

TEST_CASE("a blend refuses a state of another config naming the field", "[blend]") {
  const std::vector<std::uint32_t> a = {5, 9, 13, 7, 6}, b = {3, 4, 1, 8}, a2 = {5, 9, 13, 7, 7}, a3 = {9, 5, 13, 7, 6};
  const std::vector<LengthView> two = {LengthView(a), LengthView(b)};
  const BlendOptions ok = BlendOptions().with_seq_len(4).with_micro_batch_size(2).with_end_steps(5).with_seed(3);
  const BlendSampler s(two, {1, 1}, World{0, 1}, ok);
  const SamplerState state = s.state(2);
  auto refuses = [&](const std::vector<LengthView>& src, const std::vector<double>& w, const BlendOptions& o) {
    BlendSampler r(src, w, World{0, 1}, o);
    try {
      r.resume(state);
    } catch (const state_error& e) {
      return std::string(e.what());
    }
    return std::string("resumed");
  };
  CHECK(refuses(two, {1, 1}, ok) == "resumed");
  CHECK(refuses({LengthView(a)}, {1}, ok) == "BlendSampler: the number of sources differs (state 2, sampler 1)");
  CHECK(refuses(two, {1, 1}, BlendOptions(ok).with_seq_len(3)) == "BlendSampler: seq_len differs (state 4, sampler 3)");
  CHECK(refuses(two, {1, 1}, BlendOptions(ok).with_mode(PackMode::best_fit)) ==
        "BlendSampler: mode differs (state concat, sampler best-fit)");
  CHECK(refuses(two, {1, 1}, BlendOptions(ok).with_micro_batch_size(1)) ==
        "BlendSampler: mixing block differs (state 2, sampler 1; expected the run's: keep its global batch size, "
        "or set mixing_block to the state's)");
  CHECK(refuses(two, {1, 1}, BlendOptions(ok).with_micro_batch_size(1).with_mixing_block(2)) == "resumed");
  CHECK(refuses(two, {1, 1}, BlendOptions(ok).with_end_steps(6)) ==
        "BlendSampler: end_steps differs (state 5, sampler 6)");
  CHECK(refuses({LengthView(a2), LengthView(b)}, {1, 1}, ok) ==
        "BlendSampler: sources[0] lengths differs (state 40 tokens, sampler 41 tokens)");
  CHECK_THAT(refuses({LengthView(a3), LengthView(b)}, {1, 1}, ok),
             Catch::StartsWith("BlendSampler: sources[0] lengths or window options differ (state hash 0x"));
  CHECK_THAT(refuses(two, {1, 1}, BlendOptions(ok).with_window(4, 2)),
             Catch::StartsWith("BlendSampler: sources[0] lengths or window options differ"));
  CHECK_THAT(refuses(two, {1, 2}, ok), Catch::StartsWith("BlendSampler: weights or schedule differ (state hash 0x"));
  CHECK_THAT(refuses(two, {1, 1}, BlendOptions(ok).with_schedule({{1, {1, 3}}})),
             Catch::StartsWith("BlendSampler: weights or schedule differ"));
  CHECK_THAT(refuses(two, {1, 1}, BlendOptions(ok).with_seed(4)), Catch::Contains("seed differs (state 3, sampler 4)"));
  CHECK_THAT(refuses(two, {1, 1}, BlendOptions(ok).with_shuffle(false)), Catch::Contains("shuffle differs"));
  // Another family's state, a state with its family words cut, another epoch.
  SamplerState other = state;
  other.extra.pop_back();
  BlendSampler r(two, {1, 1}, World{0, 1}, ok);
  CHECK_THROWS_WITH(r.resume(other), "BlendSampler: the state has 9 family words (expected 6 + 2 per source)");
  PackedSequenceSampler pack(4, b, World{0, 1}, PackOptions().with_seq_len(4).with_micro_batch_size(1));
  CHECK_THROWS_WITH(r.resume(pack.state(1)), Catch::Contains("sampler family differs (state pack, sampler blend)"));
  SamplerState epoch = state;
  epoch.epoch = 1;
  epoch.set_key(s.key());
  CHECK_THROWS_WITH(r.resume(SamplerState::from_text(epoch.to_text())),
                    "BlendSampler: epoch 1 is out of range (expected 0: a blend is one run)");
  // A state survives its text and byte forms (version 5: family words).
  CHECK(SamplerState::from_text(state.to_text()) == state);
  CHECK(state.written_version() == 5);
}

TEST_CASE("a blend's guard points prove its ranks disjoint and covering, and name a rank seeded apart", "[blend]") {
  const std::vector<std::uint32_t> a = {5, 9, 13, 7, 6, 11, 3, 20, 4}, b = {3, 4, 1, 8, 30, 2};
  const std::vector<LengthView> two = {LengthView(a), LengthView(b)};
  const BlendOptions ok = BlendOptions().with_seq_len(4).with_micro_batch_size(2).with_accumulation_steps(2)
                              .with_end_steps(6).with_seed(42).with_mode(PackMode::best_fit);
  for (const std::uint64_t w : {1u, 3u}) {
    CAPTURE(w);
    std::vector<ReadSums> sums;
    std::vector<std::vector<std::uint64_t>> records, odd;
    for (std::uint64_t r = 0; r < w; ++r) {
      const BlendSampler s(two, {0.6, 0.4}, World{r, w}, ok);
      sums.push_back(segment_sums(s, World{r, w}));
      records.push_back(mesh_record_of(s));
      odd.push_back(mesh_record_of(BlendSampler(two, {0.6, 0.4}, World{r, w}, BlendOptions(ok).with_seed(r == 1 ? 43 : 42))));
      CHECK(guard_slots_of(s) == s.dataset_size());
      CHECK(guard_shape_of(s).layout == s.layout_hash());
    }
    const GuardReport report = check_overlap(sums, 6 * 2 * 2 * w);
    CHECK(report.ok);
    CHECK(report.message.rfind("ok: disjoint and covering over " + std::to_string(w) + " ranks", 0) == 0);
    const Mesh mesh = Mesh::parse("dp=" + std::to_string(w));
    CHECK(check_mesh_records("guard", mesh, 6 * 2 * 2 * w, records, mesh_key_format).ok);
    if (w == 1) continue;
    CHECK_THROWS_WITH(check_mesh_records("guard", mesh, 6 * 2 * 2 * w, odd, mesh_key_format),
                      "guard: data rank 1 (rank 1) has seed 43, rank 0 has 42 (expected the same on every rank of "
                      "mesh dp=3)");
    // A resumed segment: what was read before it is skipped, so the cover still holds on another world.
    const SamplerState state = BlendSampler(two, {0.6, 0.4}, World{0, w}, ok).state(2, 1);
    std::vector<ReadSums> resumed;
    for (std::uint64_t r = 0; r < 2; ++r) {
      BlendSampler s(two, {0.6, 0.4}, World{r, 2}, BlendOptions(ok).with_micro_batch_size(3), state);
      resumed.push_back(segment_sums(s, World{r, 2}));
    }
    CHECK(check_overlap(resumed, 6 * 2 * 2 * w).ok);
    // A rank that reads a position twice (its sums counted twice) is caught.
    std::vector<ReadSums> twice = sums;
    twice.push_back(sums[0]);
    CHECK_FALSE(check_overlap(twice, 6 * 2 * 2 * w).ok);
  }
}

}  // namespace blend_tests

// distsampler tests: PackedSequenceSampler (concat and best-fit packing, steps, resume, errors) and its packer.
// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <distsampler/detail/mix.hpp>
#include <distsampler/packing/guard.hpp>
#include <distsampler/packing/packed_sequence_sampler.hpp>

// A named namespace keeps the using-directive out of the other files of a unity batch.
namespace pack_tests {
using namespace distsampler;

namespace {

// Random lengths: mostly short, some zero, some long (over a typical L).
std::vector<std::uint32_t> pack_test_lengths(std::uint64_t n, std::uint64_t seed, std::uint32_t longest) {
  detail::SplitMix64 rng(seed);
  std::vector<std::uint32_t> out(static_cast<std::size_t>(n));
  for (auto& v : out) {
    const std::uint64_t r = rng() % 100;
    v = r < 5 ? 0u : static_cast<std::uint32_t>(1 + rng() % (r < 90 ? longest / 4 + 1 : longest));
  }
  return out;
}

struct PackRead {
  std::vector<std::vector<PackPiece>> sequences;  // in (step, k, rank, e) order, empties included
  std::uint64_t empties = 0;
};

// Every micro-batch of every rank of the sampler's world, in step order.
PackRead pack_read_all(const PackedSequenceSampler& s, std::uint64_t from_step = 0, std::uint64_t from_k = 0) {
  PackRead out;
  PackWindow cache;
  for (std::uint64_t step = from_step; step < s.num_steps(); ++step) {
    for (std::uint64_t k = step == from_step ? from_k : 0; k < s.micro_batches_in_step(step); ++k) {
      for (std::uint64_t r = 0; r < s.world_size(); ++r) {
        const PackMicroBatch mb = s.micro_batch_of(step, k, r, cache);
        REQUIRE(mb.sequences() == s.micro_batch_size());
        for (std::uint64_t i = 0; i < mb.sequences(); ++i) {
          out.sequences.emplace_back(mb.pieces.begin() + static_cast<std::ptrdiff_t>(mb.sequence_begin[i]),
                                     mb.pieces.begin() + static_cast<std::ptrdiff_t>(mb.sequence_begin[i + 1]));
          if (mb.empty(i)) {
            ++out.empties;
            CHECK(step + 1 == s.num_steps());  // empty markers only in the last step
          }
        }
      }
    }
  }
  return out;
}

// Adds the pieces' token ranges per document to `cover`; fails on a piece outside its document.
void pack_add_cover(const std::vector<std::vector<PackPiece>>& seqs, const std::vector<std::uint32_t>& lengths,
                    std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>>& cover) {
  for (const auto& seq : seqs) {
    for (const PackPiece& p : seq) {
      REQUIRE(p.document < lengths.size());
      REQUIRE(p.length >= 1);
      REQUIRE(p.offset + p.length <= lengths[p.document]);
      cover[p.document].emplace_back(p.offset, p.offset + p.length);
    }
  }
}

// Tokens covered, after checking that no token is covered twice.
std::uint64_t pack_covered_once(std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>>& cover) {
  std::uint64_t total = 0;
  for (auto& [doc, ranges] : cover) {
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      if (i > 0) REQUIRE(ranges[i - 1].second <= ranges[i].first);
      total += ranges[i].second - ranges[i].first;
    }
  }
  return total;
}

std::uint64_t pack_tokens(const std::vector<PackPiece>& seq) {
  std::uint64_t t = 0;
  for (const PackPiece& p : seq) t += p.length;
  return t;
}

PackOptions pack_opts(PackMode mode, std::uint64_t l, std::uint64_t m, std::uint64_t k, std::uint64_t window,
                      std::uint64_t chunk, std::uint64_t seed) {
  return PackOptions().with_mode(mode).with_seq_len(l).with_micro_batch_size(m).with_accumulation_steps(k)
      .with_window(window, chunk).with_seed(seed);
}

}  // namespace

TEST_CASE("Best-fit decreasing places each piece in the fullest bin that fits, as a multiset reference does",
          "[packing]") {
  for (std::uint64_t trial = 0; trial < 200; ++trial) {
    detail::SplitMix64 rng(trial);
    const std::uint32_t cap = static_cast<std::uint32_t>(1 + rng() % 300);
    std::vector<detail::PackItem> items(static_cast<std::size_t>(rng() % 200));
    for (std::size_t i = 0; i < items.size(); ++i) {
      items[i] = detail::PackItem{i, 0, static_cast<std::uint32_t>(1 + rng() % cap)};
    }
    std::vector<detail::PackItem> scratch, sorted = items;
    detail::sort_longest_first(sorted, scratch);
    for (std::size_t i = 1; i < sorted.size(); ++i) {
      REQUIRE(sorted[i - 1].length >= sorted[i].length);
      if (sorted[i - 1].length == sorted[i].length) REQUIRE(sorted[i - 1].document < sorted[i].document);
    }
    detail::BestFitPacker packer(cap);
    std::vector<std::uint32_t> bin_of;
    const std::uint32_t bins = packer.pack(sorted, bin_of);
    // Reference: rooms in a multiset, the least room that fits.
    std::multiset<std::uint32_t> rooms;
    std::vector<std::uint64_t> used(bins, 0);
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      const auto it = rooms.lower_bound(sorted[i].length);
      const std::uint32_t expected_room = it == rooms.end() ? cap : *it;
      REQUIRE(cap - used[bin_of[i]] == expected_room);  // the chosen bin had exactly that room
      if (it != rooms.end()) rooms.erase(it);
      used[bin_of[i]] += sorted[i].length;
      rooms.insert(static_cast<std::uint32_t>(cap - used[bin_of[i]]));
    }
    REQUIRE(rooms.size() == bins);
    // The counter an epoch plan uses opens as many bins, without placing the items.
    detail::BestFitCounter counter(cap);
    for (const detail::PackItem& it : items) counter.add(it.length);
    REQUIRE(counter.count() == bins);
    REQUIRE(counter.count() == 0);  // emptied by the count
    // A second call on the same packer starts clean.
    std::vector<std::uint32_t> again;
    REQUIRE(packer.pack(sorted, again) == bins);
    REQUIRE(again == bin_of);
  }
}

TEST_CASE("The best-fit counter opens the bins a multiset reference of best-fit decreasing opens, reused across calls",
          "[packing]") {
  // Many items over few lengths: the counter moves whole groups of equal items and bins.
  for (std::uint64_t trial = 0; trial < 300; ++trial) {
    detail::SplitMix64 rng(1000 + trial);
    const std::uint32_t cap = static_cast<std::uint32_t>(1 + rng() % (trial % 3 == 0 ? 9000 : 64));
    detail::BestFitCounter counter(cap);
    for (int call = 0; call < 2; ++call) {
      std::vector<std::uint32_t> lengths(static_cast<std::size_t>(rng() % 3000));
      const std::uint64_t distinct = 1 + rng() % 12;
      std::vector<std::uint32_t> pool(static_cast<std::size_t>(distinct));
      for (auto& v : pool) v = static_cast<std::uint32_t>(1 + rng() % cap);
      for (auto& v : lengths) v = pool[static_cast<std::size_t>(rng() % distinct)];
      std::sort(lengths.rbegin(), lengths.rend());
      std::multiset<std::uint64_t> rooms;
      std::uint64_t bins = 0;
      for (const std::uint32_t x : lengths) {
        const auto it = rooms.lower_bound(x);
        std::uint64_t room = cap;
        if (it != rooms.end()) {
          room = *it;
          rooms.erase(it);
        } else {
          ++bins;
        }
        rooms.insert(room - x);
        counter.add(x);
      }
      REQUIRE(counter.count() == bins);
    }
  }
}

TEST_CASE("Concat packing cuts the shuffled token stream into full sequences read once, dropping less than (G+1)L",
          "[packing]") {
  for (std::uint64_t trial = 0; trial < 60; ++trial) {
    detail::SplitMix64 rng(trial + 100);
    const std::uint64_t n = rng() % 400, l = 1 + rng() % 64, chunk = 1 + rng() % 8;
    const std::uint64_t chunks = 1 + rng() % 6, window = chunk * chunks + rng() % chunk, w = 1 + rng() % 4;
    const std::uint64_t m = 1 + rng() % 3, k = 1 + rng() % 3;
    const auto lengths = pack_test_lengths(n, trial, static_cast<std::uint32_t>(3 * l));
    const PackOptions o = pack_opts(PackMode::concat, l, m, k, window, chunk, trial).with_shuffle(trial % 5 != 0);
    const PackedSequenceSampler s(n, lengths, World{0, w}, o);
    const PackEpochStats& st = s.stats();
    std::uint64_t total = 0;
    for (const auto v : lengths) total += v;
    REQUIRE(st.tokens == total);
    REQUIRE(st.sequences == total / l);
    const std::uint64_t g = m * w * k;
    REQUIRE(s.num_steps() == total / l / g);
    const PackRead read = pack_read_all(s);
    REQUIRE(read.empties == 0);
    std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> cover;
    for (const auto& seq : read.sequences) REQUIRE(pack_tokens(seq) == l);
    pack_add_cover(read.sequences, lengths, cover);
    const std::uint64_t covered = pack_covered_once(cover);
    REQUIRE(covered == s.num_steps() * g * l);
    REQUIRE(st.dropped_tokens == total - covered);
    REQUIRE(st.dropped_tokens < (g + 1) * l);
    REQUIRE(st.padding_efficiency() == Approx(s.num_steps() == 0 ? 1.0 : 1.0));
    // The stream is contiguous: each piece but a sequence's first starts its document, each
    // but its last ends it.
    for (const auto& seq : read.sequences) {
      for (std::size_t i = 0; i < seq.size(); ++i) {
        if (i > 0) REQUIRE(seq[i].offset == 0);
        if (i + 1 < seq.size()) REQUIRE(seq[i].offset + seq[i].length == lengths[seq[i].document]);
      }
    }
  }
}

TEST_CASE("Best-fit packing reads every token of every document once, in sequences of at most L, empties last",
          "[packing]") {
  for (std::uint64_t trial = 0; trial < 60; ++trial) {
    detail::SplitMix64 rng(trial + 200);
    const std::uint64_t n = rng() % 400, l = 1 + rng() % 64, chunk = 1 + rng() % 8;
    const std::uint64_t chunks = 1 + rng() % 6, window = chunk * chunks + rng() % chunk, w = 1 + rng() % 4;
    const std::uint64_t m = 1 + rng() % 3, k = 1 + rng() % 3;
    const auto lengths = pack_test_lengths(n, trial + 7, static_cast<std::uint32_t>(2 * l));
    const PackOptions o = pack_opts(PackMode::best_fit, l, m, k, window, chunk, trial).with_shuffle(trial % 5 != 0);
    const PackedSequenceSampler s(n, lengths, World{0, w}, o);
    const PackEpochStats& st = s.stats();
    const PackRead read = pack_read_all(s);
    const std::uint64_t g = m * w * k;
    REQUIRE(s.num_steps() == (st.sequences + g - 1) / g);
    REQUIRE(read.sequences.size() == s.num_steps() * g);
    REQUIRE(read.empties == st.empty_sequences);
    REQUIRE(read.sequences.size() - read.empties == st.sequences);
    std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> cover;
    for (const auto& seq : read.sequences) REQUIRE(pack_tokens(seq) <= l);
    pack_add_cover(read.sequences, lengths, cover);
    REQUIRE(pack_covered_once(cover) == st.tokens);
    std::uint64_t zeros = 0, longer = 0;
    for (std::uint64_t d = 0; d < n; ++d) {
      zeros += lengths[d] == 0 ? 1u : 0u;
      longer += lengths[d] > l ? 1u : 0u;
      if (lengths[d] > 0) REQUIRE(cover.count(d) == 1);
    }
    REQUIRE(st.skipped_documents == zeros);
    REQUIRE(st.split_documents == longer);
    REQUIRE(st.read_tokens == st.tokens);
    // A document that fits L is never split.
    for (const auto& [doc, ranges] : cover) {
      if (lengths[doc] <= l) REQUIRE(ranges.size() == 1);
    }
    // The last step's real sequences are spread: micro-batches differ by at most one.
    if (s.num_steps() > 0) {
      std::uint64_t lo = UINT64_MAX, hi = 0;
      PackWindow cache;
      for (std::uint64_t kk = 0; kk < k; ++kk) {
        for (std::uint64_t r = 0; r < w; ++r) {
          const PackMicroBatch mb = s.micro_batch_of(s.num_steps() - 1, kk, r, cache);
          lo = std::min(lo, m - mb.empty_sequences());
          hi = std::max(hi, m - mb.empty_sequences());
        }
      }
      REQUIRE(hi - lo <= 1);
    }
  }
}

TEST_CASE("Packed sequences are deterministic, change with the epoch, and are the same on every rank's sampler",
          "[packing]") {
  const auto lengths = pack_test_lengths(3000, 5, 900);
  for (const PackMode mode : {PackMode::concat, PackMode::best_fit}) {
    const PackOptions o = pack_opts(mode, 512, 2, 2, 256, 32, 9);
    const PackedSequenceSampler a(3000, lengths, World{1, 3}, o), b(3000, lengths, World{2, 3}, o);
    const PackRead ra = pack_read_all(a), rb = pack_read_all(b);
    REQUIRE(ra.sequences == rb.sequences);
    PackWindow cache;
    REQUIRE(a.micro_batch(1, 1).pieces == b.micro_batch_of(1, 1, 1, cache).pieces);
    PackedSequenceSampler c(3000, lengths, World{0, 3}, o);
    c.set_epoch(1);
    REQUIRE(pack_read_all(c).sequences != ra.sequences);
    c.set_epoch(0);
    REQUIRE(pack_read_all(c).sequences == ra.sequences);
    // Another seed, another order.
    const PackedSequenceSampler d(3000, lengths, World{0, 3}, PackOptions(o).with_seed(10));
    REQUIRE(pack_read_all(d).sequences != ra.sequences);
  }
}

TEST_CASE("A packing state resumes on another world, micro-batch size or accumulation with every token once",
          "[packing]") {
  for (std::uint64_t trial = 0; trial < 80; ++trial) {
    detail::SplitMix64 rng(trial + 300);
    const PackMode mode = trial % 2 == 0 ? PackMode::concat : PackMode::best_fit;
    const std::uint64_t n = 50 + rng() % 300, l = 4 + rng() % 40, chunk = 1 + rng() % 8;
    const std::uint64_t window = chunk * (1 + rng() % 5);
    const auto lengths = pack_test_lengths(n, trial + 11, static_cast<std::uint32_t>(2 * l));
    const std::uint64_t w1 = 1 + rng() % 4, m1 = 1 + rng() % 3, k1 = 1 + rng() % 3;
    const std::uint64_t w2 = 1 + rng() % 4, m2 = 1 + rng() % 3, k2 = 1 + rng() % 3;
    const PackOptions o1 = pack_opts(mode, l, m1, k1, window, chunk, trial);
    PackedSequenceSampler first(n, lengths, World{0, w1}, o1);
    first.set_epoch(trial % 3);
    const std::uint64_t stop = first.num_steps() == 0 ? 0 : rng() % (first.num_steps() + 1);
    const std::uint64_t kdone = stop < first.num_steps() ? rng() % k1 : 0;
    const SamplerState state = SamplerState::from_text(first.state(stop, kdone).to_text());
    const PackRead all = pack_read_all(first);
    const std::uint64_t g1 = m1 * w1 * k1;
    std::vector<std::vector<PackPiece>> before(all.sequences.begin(),
                                               all.sequences.begin() + static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(
                                                   all.sequences.size(), stop * g1 + kdone * m1 * w1)));
    const PackOptions o2 = pack_opts(mode, l, m2, k2, window, chunk, trial);
    const PackedSequenceSampler second(n, lengths, World{1 % w2, w2}, o2, state);
    REQUIRE(second.epoch() == trial % 3);
    const PackRead after = pack_read_all(second);
    std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> cover;
    pack_add_cover(before, lengths, cover);
    pack_add_cover(after.sequences, lengths, cover);
    const std::uint64_t covered = pack_covered_once(cover);
    if (mode == PackMode::best_fit) {
      REQUIRE(covered == first.stats().tokens);
      std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> later;
      pack_add_cover(after.sequences, lengths, later);
      REQUIRE(pack_covered_once(later) == second.stats().read_tokens);
    } else {
      REQUIRE(covered == first.stats().tokens - second.stats().dropped_tokens);
      REQUIRE(second.stats().dropped_tokens < (m2 * w2 * k2 + 1) * l);
    }
    // Same G: exactly the sequences the uninterrupted run read after the stop.
    const PackedSequenceSampler same(n, lengths, World{0, w1}, o1, state);
    const PackRead cont = pack_read_all(same);
    const PackRead rest = pack_read_all(first, stop, kdone);
    if (kdone == 0) REQUIRE(cont.sequences == rest.sequences);
    REQUIRE(same.state(0).consumed == state.consumed);
  }
}

TEST_CASE("A plan that records every k-th window reads, resumes and counts exactly as one recording every window",
          "[packing]") {
  for (std::uint64_t trial = 0; trial < 40; ++trial) {
    detail::SplitMix64 rng(trial + 900);
    const PackMode mode = trial % 2 == 0 ? PackMode::concat : PackMode::best_fit;
    const std::uint64_t n = 100 + rng() % 400, l = 4 + rng() % 30, chunk = 1 + rng() % 4;
    const std::uint64_t window = chunk * (1 + rng() % 3), limit = 1 + rng() % 4;
    const auto lengths = pack_test_lengths(n, trial + 70, static_cast<std::uint32_t>(2 * l));
    const std::uint64_t w = 1 + rng() % 3, m = 1 + rng() % 3, k = 1 + rng() % 2;
    const PackOptions full = pack_opts(mode, l, m, k, window, chunk, trial);
    const PackOptions small = PackOptions(full).with_plan_limit(limit);
    PackedSequenceSampler a(n, lengths, World{0, w}, full), b(n, lengths, World{0, w}, small);
    a.set_epoch(trial % 3);
    b.set_epoch(trial % 3);
    const std::uint64_t windows = ((n + chunk - 1) / chunk + window / chunk - 1) / (window / chunk);
    REQUIRE(a.plan_stride() == 1);
    REQUIRE(b.plan_stride() == (windows <= limit ? 1 : (windows + limit - 1) / limit));
    REQUIRE(b.plan_bytes() <= (mode == PackMode::best_fit ? 16u : 8u) * (limit + 1));
    REQUIRE(a.plan_bytes() == (mode == PackMode::best_fit ? 16u : 8u) * (windows + 1));
    REQUIRE(b.layout_hash() == a.layout_hash());
    REQUIRE(b.num_steps() == a.num_steps());
    REQUIRE(b.stats().read_tokens == a.stats().read_tokens);
    REQUIRE(pack_read_all(b).sequences == pack_read_all(a).sequences);
    // Random steps, one cache jumping back and forth, and fresh caches.
    PackWindow jumping;
    for (int i = 0; i < 20 && a.num_steps() > 0; ++i) {
      const std::uint64_t step = rng() % a.num_steps(), kk = rng() % a.micro_batches_in_step(step);
      const std::uint64_t r = rng() % w;
      PackWindow fresh;
      const std::vector<PackPiece> want = a.micro_batch_of(step, kk, r, fresh).pieces;
      REQUIRE(b.micro_batch_of(step, kk, r, jumping).pieces == want);
      PackWindow fresh2;
      REQUIRE(b.micro_batch_of(step, kk, r, fresh2).pieces == want);
    }
    std::vector<std::uint64_t> ua, ub;
    PackWindow ca, cb;
    a.for_each_unsequenced(ca, [&ua](std::uint64_t d) { ua.push_back(d); });
    b.for_each_unsequenced(cb, [&ub](std::uint64_t d) { ub.push_back(d); });
    REQUIRE(ub == ua);
    // A state of either resumes on the other with the same rest.
    const std::uint64_t stop = a.num_steps() == 0 ? 0 : rng() % (a.num_steps() + 1);
    const PackedSequenceSampler ra(n, lengths, World{0, w}, full, b.state(stop));
    const PackedSequenceSampler rb(n, lengths, World{0, w}, small, a.state(stop));
    REQUIRE(rb.stats().read_tokens == ra.stats().read_tokens);
    REQUIRE(pack_read_all(rb).sequences == pack_read_all(ra).sequences);
  }
  const std::vector<std::uint32_t> lengths = {3, 4};
  CHECK_THROWS_WITH(PackedSequenceSampler(2, lengths, World{0, 1},
                                          pack_opts(PackMode::concat, 4, 1, 1, 1, 1, 0).with_plan_limit(0)),
                    Catch::Contains("PackOptions: plan_limit 0 is out of range (expected at least 1 window record)"));
}

TEST_CASE("A PackWindow planned by a sampler of another seed or shuffle is planned again, not reused", "[packing]") {
  const auto lengths = pack_test_lengths(400, 3, 60);
  for (const PackMode mode : {PackMode::concat, PackMode::best_fit}) {
    const PackOptions o = pack_opts(mode, 32, 2, 1, 64, 8, 1);
    const PackedSequenceSampler a(400, lengths, World{0, 2}, o), b(400, lengths, World{0, 2}, PackOptions(o).with_seed(2)),
        c(400, lengths, World{0, 2}, PackOptions(o).with_shuffle(false));
    PackWindow shared;
    for (std::uint64_t step = 0; step < std::min<std::uint64_t>(a.num_steps(), 6); ++step) {
      for (const PackedSequenceSampler* s : {&a, &b, &c}) {
        REQUIRE(s->micro_batch(step, 0, shared).pieces == s->micro_batch(step, 0).pieces);
      }
    }
    REQUIRE(a.micro_batch(0, 0).pieces != b.micro_batch(0, 0).pieces);
  }
}

TEST_CASE("resume() of a state of this or another epoch reads as a sampler built from it, and a refused one changes nothing",
          "[packing]") {
  const auto lengths = pack_test_lengths(700, 21, 80);
  for (const PackMode mode : {PackMode::concat, PackMode::best_fit}) {
    const PackOptions o = pack_opts(mode, 40, 2, 2, 48, 8, 3);
    PackedSequenceSampler source(700, lengths, World{0, 2}, o);
    source.set_epoch(2);
    const SamplerState same = source.state(3, 1);
    source.set_epoch(5);
    const SamplerState other = source.state(2);
    for (const SamplerState* st : {&same, &other}) {
      PackedSequenceSampler s(700, lengths, World{1, 2}, o);
      s.set_epoch(st->epoch);  // the same epoch as the state's: resume reuses the plan
      s.resume(*st);
      const PackedSequenceSampler built(700, lengths, World{1, 2}, o, *st);
      REQUIRE(s.epoch() == built.epoch());
      REQUIRE(s.start() == built.start());
      REQUIRE(pack_read_all(s).sequences == pack_read_all(built).sequences);
      PackedSequenceSampler t(700, lengths, World{1, 2}, o);  // another epoch: resume plans the state's
      t.resume(*st);
      REQUIRE(pack_read_all(t).sequences == pack_read_all(built).sequences);
      REQUIRE(t.stats().read_tokens == built.stats().read_tokens);
    }
    PackedSequenceSampler u(700, lengths, World{0, 2}, o);
    const PackRead before = pack_read_all(u);
    SamplerState beyond = same;
    beyond.consumed = u.num_sequences() + 1;
    beyond.set_key(u.key());
    beyond.epoch = 0;
    CHECK_THROWS_WITH(u.resume(beyond), Catch::Contains("exceeds the epoch's"));
    REQUIRE(u.start() == 0);
    REQUIRE(pack_read_all(u).sequences == before.sequences);
  }
}

TEST_CASE("A document cut at the stop of a concat run continues at its offset after resume", "[packing]") {
  const std::vector<std::uint32_t> lengths = {10, 10, 10, 10};
  const PackOptions o = pack_opts(PackMode::concat, 3, 1, 1, 4, 4, 0).with_shuffle(false);
  const PackedSequenceSampler s(4, lengths, World{0, 1}, o);
  REQUIRE(s.num_steps() == 13);
  REQUIRE(s.micro_batch(3, 0).pieces == std::vector<PackPiece>{{0, 9, 1}, {1, 0, 2}});
  const PackedSequenceSampler r(4, lengths, World{0, 1}, o, s.state(3));
  REQUIRE(r.micro_batch(0, 0).pieces == std::vector<PackPiece>{{0, 9, 1}, {1, 0, 2}});
  REQUIRE(r.micro_batch(1, 0).pieces == std::vector<PackPiece>{{1, 2, 3}});
  REQUIRE(r.stats().dropped_tokens == 1);
}

TEST_CASE("Best-fit packs a window by best-fit decreasing: a worked example", "[packing]") {
  // L = 10; lengths sorted: 7 6 5 4 3 2 -> bins {7,3} {6,4} {5,2}; a 23-token document is split 10+10+3.
  const std::vector<std::uint32_t> lengths = {5, 7, 2, 6, 4, 3, 23};
  const PackOptions o = pack_opts(PackMode::best_fit, 10, 1, 1, 8, 8, 0).with_shuffle(false);
  const PackedSequenceSampler s(7, lengths, World{0, 1}, o);
  REQUIRE(s.num_sequences() == 5);  // 10, 10, {7,3}, {6,4}, {5,3,2}
  REQUIRE(s.sequence(0) == std::vector<PackPiece>{{6, 0, 10}});
  REQUIRE(s.sequence(1) == std::vector<PackPiece>{{6, 10, 10}});
  REQUIRE(s.sequence(2) == std::vector<PackPiece>{{1, 0, 7}, {5, 0, 3}});
  REQUIRE(s.sequence(3) == std::vector<PackPiece>{{3, 0, 6}, {4, 0, 4}});
  REQUIRE(s.sequence(4) == std::vector<PackPiece>{{0, 0, 5}, {6, 20, 3}, {2, 0, 2}});
  REQUIRE(s.stats().padding_efficiency() == Approx(50.0 / 50.0));
  REQUIRE(s.stats().split_documents == 1);
}

TEST_CASE("Packing refuses bad options and inputs, naming the parameter", "[packing]") {
  const std::vector<std::uint32_t> lengths = {5, 70, 2};
  const PackOptions ok = pack_opts(PackMode::best_fit, 10, 1, 1, 8, 8, 0);
  CHECK_THROWS_WITH(PackedSequenceSampler(3, lengths, World{0, 1}, PackOptions(ok).with_seq_len(0)),
                    Catch::Contains("PackOptions: seq_len 0 is out of range (expected 1..8388607"));
  CHECK_THROWS_WITH(PackedSequenceSampler(4, lengths, World{0, 1}, ok),
                    Catch::Contains("lengths has 3 values but dataset_size is 4"));
  CHECK_THROWS_WITH(PackedSequenceSampler(3, lengths, World{0, 1}, PackOptions(ok).with_split_long(false)),
                    Catch::Contains("document 1 has 70 tokens, over seq_len 10"));
  CHECK_THROWS_WITH(PackedSequenceSampler(3, lengths, World{0, 1}, PackOptions(ok).with_window(4, 8)),
                    Catch::Contains("window 4 is out of range (expected chunk 8..4294967295)"));
  CHECK_THROWS_WITH(PackedSequenceSampler(3, lengths, World{0, 1}, PackOptions(ok).with_micro_batch_size(0)),
                    Catch::Contains("micro_batch_size is 0"));
  CHECK_THROWS_WITH(PackedSequenceSampler(3, lengths, World{0, 2}, PackOptions(ok).with_global_batch_size(3)),
                    Catch::Contains("global_batch_size 3 is not a multiple of micro_batch_size 1 x world_size 2"));
  CHECK_THROWS_WITH(PackedSequenceSampler(3, lengths, World{0, 1}, PackOptions(ok).with_tail(Tail::pad)),
                    Catch::Contains("tail pad is not used"));
  CHECK_THROWS_WITH(parse_pack_mode("greedy"), "mode \"greedy\" is unknown (expected concat or best-fit)");
  REQUIRE(parse_pack_mode("best-fit") == PackMode::best_fit);
  // Zero-length documents are skipped and counted, split_long off accepts documents that fit.
  const std::vector<std::uint32_t> fits = {0, 4, 0, 9};
  const PackedSequenceSampler s(4, fits, World{0, 1}, PackOptions(ok).with_split_long(false));
  REQUIRE(s.stats().skipped_documents == 2);
  REQUIRE(s.num_sequences() == 2);
  // Global batch resolves accumulation.
  const PackedSequenceSampler gb(3, lengths, World{0, 2}, PackOptions(ok).with_accumulation_steps(1).with_global_batch_size(6));
  REQUIRE(gb.accumulation_steps() == 3);
}

TEST_CASE("Packing bounds a micro-batch and a best-fit window before it allocates for them", "[packing]") {
  // One document of 2^32 - 1 tokens at seq_len 1 made 2^32 pieces in one window (1.6 GB, then out of memory);
  // a micro-batch of 10^9 sequences listed each of them (2.1 GB).
  const PackOptions fit = pack_opts(PackMode::best_fit, 1, 1, 1, 8, 8, 0);
  CHECK_THROWS_WITH(PackedSequenceSampler(1, std::vector<std::uint32_t>{UINT32_MAX}, World{0, 1}, fit),
                    "PackedSequenceSampler: window 0 of epoch 0 holds 4294967295 pieces (its documents cut at seq_len "
                    "1), more than the 4194304 best-fit packs at once (expected a larger seq_len, a smaller window, or "
                    "mode concat)");
  // At the bound it is packed; concat never holds the pieces.
  const PackedSequenceSampler at(1, std::vector<std::uint32_t>{1u << 22}, World{0, 1}, fit);
  CHECK(at.num_sequences() == (std::uint64_t{1} << 22));
  CHECK(PackedSequenceSampler(1, std::vector<std::uint32_t>{UINT32_MAX}, World{0, 1},
                              PackOptions(fit).with_mode(PackMode::concat))
            .num_sequences() == UINT32_MAX);
  const std::vector<std::uint32_t> lengths = {5, 7, 3};
  const PackOptions ten = pack_opts(PackMode::best_fit, 10, 1, 1, 8, 8, 0);
  CHECK_THROWS_WITH(PackedSequenceSampler(3, lengths, World{0, 1}, PackOptions(ten).with_micro_batch_size(1000000000)),
                    "PackOptions: micro_batch_size 1000000000 is out of range (expected 1..1048576 sequences per "
                    "micro-batch)");
  CHECK(PackedSequenceSampler(3, lengths, World{0, 1}, PackOptions(ten).with_micro_batch_size(1u << 20))
            .micro_batch_size() == (1u << 20));
}

TEST_CASE("A packing state of another mode, seq_len or lengths is refused naming the field", "[packing]") {
  const std::vector<std::uint32_t> lengths = {5, 7, 2, 6, 4, 3, 23}, other = {5, 7, 2, 6, 4, 3, 24},
                                   swapped = {7, 5, 2, 6, 4, 3, 23};
  const PackOptions o = pack_opts(PackMode::concat, 4, 1, 1, 8, 4, 0);
  const SamplerState st = PackedSequenceSampler(7, lengths, World{0, 1}, o).state(2);
  REQUIRE(st.sampler == "pack");
  REQUIRE(SamplerState::from_bytes(st.to_bytes()) == st);
  CHECK_THROWS_WITH(PackedSequenceSampler(7, lengths, World{0, 1}, PackOptions(o).with_mode(PackMode::best_fit), st),
                    "PackedSequenceSampler: mode differs (state concat, sampler best-fit)");
  CHECK_THROWS_WITH(PackedSequenceSampler(7, lengths, World{0, 1}, PackOptions(o).with_seq_len(5), st),
                    "PackedSequenceSampler: seq_len differs (state 4, sampler 5)");
  CHECK_THROWS_WITH(PackedSequenceSampler(7, other, World{0, 1}, o, st),
                    "PackedSequenceSampler: document lengths differ (state 50 tokens, sampler 51)");
  CHECK_THROWS_WITH(PackedSequenceSampler(7, swapped, World{0, 1}, o, st),
                    Catch::StartsWith("PackedSequenceSampler: document lengths or window options differ"));
  CHECK_THROWS_WITH(PackedSequenceSampler(7, lengths, World{0, 1}, PackOptions(o).with_window(16, 4), st),
                    Catch::StartsWith("PackedSequenceSampler: document lengths or window options differ"));
  CHECK_THROWS_WITH(PackedSequenceSampler(7, lengths, World{0, 1}, PackOptions(o).with_seed(1), st),
                    Catch::Contains("seed differs (state 0, sampler 1)"));
  CHECK_THROWS_WITH(PackedSequenceSampler(7, lengths, World{0, 1}, o).state(13),
                    Catch::Contains("steps_done 13 exceeds num_steps 12"));
  // A different world and micro-batch size is fine.
  const PackedSequenceSampler r(7, lengths, World{1, 2}, PackOptions(o).with_micro_batch_size(2), st);
  REQUIRE(r.start() == 2);
  REQUIRE(r.num_steps() == 2);
}

TEST_CASE("The overlap check proves every document of a packed epoch or resumed segment started exactly once",
          "[packing]") {
  REQUIRE(guard_family_name(guard_family_code(PackedSequenceSampler::family)) == "pack");
  for (std::uint64_t trial = 0; trial < 24; ++trial) {
    detail::SplitMix64 rng(trial + 900);
    const PackMode mode = trial % 2 == 0 ? PackMode::concat : PackMode::best_fit;
    const std::uint64_t n = 1 + rng() % 300, l = 2 + rng() % 40, w = 1 + rng() % 4, chunk = 1 + rng() % 8;
    const auto lengths = pack_test_lengths(n, trial + 40, static_cast<std::uint32_t>(3 * l));
    const std::uint64_t m = 1 + rng() % 3, k = 1 + rng() % 2;  // one draw per statement part: a fixed order
    const PackOptions o = pack_opts(mode, l, m, k, chunk * 3, chunk, trial);
    const PackedSequenceSampler probe(n, lengths, World{0, w}, o);
    const std::uint64_t stop = probe.num_steps() == 0 ? 0 : rng() % (probe.num_steps() + 1);
    const SamplerState state = probe.state(stop);
    for (const bool resumed : {false, true}) {
      std::vector<ReadSums> per_rank;
      for (std::uint64_t r = 0; r < w; ++r) {
        const PackedSequenceSampler s = resumed ? PackedSequenceSampler(n, lengths, World{r, w}, o, state)
                                                : PackedSequenceSampler(n, lengths, World{r, w}, o);
        per_rank.push_back(segment_sums(s, World{r, w}));
      }
      const GuardReport report = check_overlap(per_rank, n);
      INFO(report.message);
      REQUIRE(report.ok);
    }
    // Every process built as rank 0: each reads rank 0's sequences, so documents repeat or go missing.
    if (w > 1 && probe.num_steps() > 0) {
      std::vector<ReadSums> per_rank;
      for (std::uint64_t r = 0; r < w; ++r) per_rank.push_back(segment_sums(probe, World{r, w}));
      REQUIRE_FALSE(check_overlap(per_rank, n).ok);
    }
  }
}

}  // namespace pack_tests

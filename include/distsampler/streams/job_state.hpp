// distsampler streams family: the job state of a stream of passes, saved as a SamplerState of family "stream".
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STREAMS_JOB_STATE_HPP
#define DISTSAMPLER_STREAMS_JOB_STATE_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../feistel.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "plan.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// A record whose outputs are only partly emitted: outputs [done, total) of shard record
/// `record`, read in `pass`, are still owed (a packer's partial document). Plain data.
struct StreamCarry {
  std::uint64_t pass = 0;
  std::uint64_t shard = 0;
  std::uint64_t record = 0;
  std::uint64_t done = 0;
  std::uint64_t total = 0;
  friend constexpr bool operator==(const StreamCarry& a, const StreamCarry& b) noexcept {
    return a.pass == b.pass && a.shard == b.shard && a.record == b.record && a.done == b.done && a.total == b.total;
  }
};

/// A job's position in its stream of passes, assembled from every consumer's progress
/// (assemble_stream_state): the dataset it belongs to (seed, shards, layout: StreamPlan's),
/// `next_pass` (no consumer has read any of it or of later passes), the unread runs of each
/// pass before it (`open`, sorted by pass; a pass absent from it is fully read), and every
/// carried record. `share` and `step` are informational: the share the saving plan dealt
/// with (a resume re-deals the open runs as they were cut and cuts fresh passes by its own
/// share) and the training steps the loop had received.
///
/// Saved as a SamplerState (to_state(); docs/STATE.md, version 5) of family "stream":
/// dataset_size = shards, the seed, engine feistel, layout, epoch = next_pass, consumed 0, and
/// the family words `share step opens (pass runs (position count part parts offset)...)...
/// carries (pass shard record done total)...`. So its text and byte forms carry the
/// SamplerState header, version and checksum, and refuse what SamplerState refuses with the
/// same messages. O(consumers + shards x open passes) words; with a share among every
/// consumer each consumer's rest of a pass is one run, so O(consumers x open passes).
struct StreamJobState {
  std::uint64_t seed = 0;
  std::uint64_t shards = 0;
  std::uint64_t layout = 0;
  std::uint64_t share = 1;  ///< StreamOptions::share of the saving plan, 0 for every consumer (informational)
  std::uint64_t next_pass = 0;
  /// The largest next_pass a state may hold: 2^48 passes (each reads at least one record, so
  /// no job gets near it), far enough from 2^64 that counting passes on never wraps.
  static constexpr std::uint64_t max_next_pass = std::uint64_t{1} << 48;
  std::uint64_t step = 0;  ///< training steps the loop had received (informational; not checked)
  std::vector<StreamOpenPass> open;
  std::vector<StreamCarry> carries;

  /// The family name the states record ("stream").
  static constexpr std::string_view family = "stream";

  /// The key of a stream state of `shards` shards, `seed` and layout hash `layout` (what
  /// StreamSampler::key() gives and the guards compare). O(1).
  [[nodiscard]] static StateKey key(std::uint64_t shards, std::uint64_t seed, std::uint64_t layout) noexcept {
    StateKey k;
    k.sampler = family;
    k.dataset_size = shards;
    k.seed = seed;
    k.shuffle = true;
    k.engine = FeistelPermutation::name({});
    k.engine_version = FeistelPermutation::format_version;
    k.layout = layout;
    k.layout_name = "byte sizes";
    k.accepts_extra = true;
    return k;
  }

  /// This state as a SamplerState (keyed, version 5). O(size).
  [[nodiscard]] SamplerState to_state() const {
    SamplerState s;
    s.set_key(key(shards, seed, layout));
    s.epoch = next_pass;
    std::vector<std::uint64_t>& w = s.extra;
    w = {share, step, static_cast<std::uint64_t>(open.size())};
    for (const StreamOpenPass& o : open) {
      w.push_back(o.pass);
      w.push_back(o.runs.size());
      for (const StreamRun& r : o.runs) w.insert(w.end(), {r.position, r.count, r.part, r.parts, r.offset});
    }
    w.push_back(carries.size());
    for (const StreamCarry& c : carries) w.insert(w.end(), {c.pass, c.shard, c.record, c.done, c.total});
    return s;
  }

  /// The state a SamplerState holds. Throws state_error, prefixed "StreamJobState", as
  /// SamplerState::validate does for a state of another family or engine (naming each field),
  /// and naming the first problem of the family words: too few or too many, or contents that
  /// are not canonical (open passes increasing and below next_pass; runs sorted, within the
  /// shards, part < parts, runs of one diagonal not touching, a shard's runs of one parts value;
  /// carries with done < total, shard below shards, pass below next_pass). O(words).
  [[nodiscard]] static StreamJobState from_state(const SamplerState& state) {
    state.validate(key(state.dataset_size, state.seed, state.layout), "StreamJobState");
    if (state.consumed != 0) {
      fail("consumed " + std::to_string(state.consumed) + " (expected 0: a stream state counts no positions)");
    }
    StreamJobState s;
    s.seed = state.seed;
    s.shards = state.dataset_size;
    s.layout = state.layout;
    s.next_pass = state.epoch;
    const std::vector<std::uint64_t>& w = state.extra;
    std::size_t at = 0;
    auto next = [&](const char* what) {
      if (at == w.size()) {
        fail("the family words end after " + std::to_string(w.size()) + " (expected " + what + " at word " +
             std::to_string(at) + ")");
      }
      return w[at++];
    };
    s.share = next("the share");
    s.step = next("the step");
    for (std::uint64_t n = next("the count of open passes"), i = 0; i < n; ++i) {
      StreamOpenPass o;
      o.pass = next("an open pass");
      for (std::uint64_t m = next("the count of runs"), k = 0; k < m; ++k) {
        StreamRun r;
        r.position = next("a run position");
        r.count = next("a run count");
        r.part = next("a run part");
        r.parts = next("a run parts");
        r.offset = next("a run offset");
        o.runs.push_back(r);
      }
      s.open.push_back(std::move(o));
    }
    for (std::uint64_t n = next("the count of carries"), i = 0; i < n; ++i) {
      StreamCarry c;
      c.pass = next("a carry pass");
      c.shard = next("a carry shard");
      c.record = next("a carry record");
      c.done = next("a carry done");
      c.total = next("a carry total");
      s.carries.push_back(c);
    }
    if (at != w.size()) {
      fail(std::to_string(w.size() - at) + " family words after the carries (expected exactly " + std::to_string(at) +
           ")");
    }
    s.check_canonical();
    return s;
  }

  /// The text form: to_state().to_text() (`distsampler-state v5 sampler=stream ...`). O(size).
  [[nodiscard]] std::string to_text() const { return to_state().to_text(); }
  /// Parses the text form: SamplerState::from_text (its messages), then from_state.
  [[nodiscard]] static StreamJobState from_text(std::string_view text) {
    return from_state(SamplerState::from_text(text));
  }
  /// The byte form: to_state().to_bytes(). O(size).
  [[nodiscard]] std::vector<std::uint8_t> to_bytes() const { return to_state().to_bytes(); }
  /// Parses the byte form: SamplerState::from_bytes (its messages), then from_state.
  [[nodiscard]] static StreamJobState from_bytes(const std::vector<std::uint8_t>& bytes) {
    return from_state(SamplerState::from_bytes(bytes));
  }

  /// Throws state_error unless this state belongs to `plan`'s dataset (seed, shards and
  /// byte-size hints), naming each field that differs with both values.
  void validate(const StreamPlan& plan) const {
    std::string diff;
    auto field = [&](const char* name, std::uint64_t state, std::uint64_t mine) {
      if (state != mine) {
        diff += std::string(diff.empty() ? "" : "; ") + name + " differs (state " + std::to_string(state) +
                ", sampler " + std::to_string(mine) + ")";
      }
    };
    field("seed", seed, plan.seed());
    field("shards", shards, plan.shards());
    if (diff.empty() && layout != plan.layout()) diff = "byte sizes differ";
    if (!diff.empty()) detail::throw_state_error("StreamJobState: " + diff);
  }

  friend bool operator==(const StreamJobState& a, const StreamJobState& b) { return a.to_state() == b.to_state(); }

 private:
  [[noreturn]] static void fail(const std::string& what) { detail::throw_state_error("StreamJobState: " + what); }

  void check_canonical() const {
    if (next_pass > max_next_pass) {
      fail("next_pass " + std::to_string(next_pass) + " is beyond 2^48 passes (expected a pass a job can reach: "
           "every pass reads at least one record; the state is corrupted or was edited)");
    }
    for (std::size_t i = 0; i < open.size(); ++i) {
      const StreamOpenPass& o = open[i];
      const std::string where = "open pass " + std::to_string(o.pass);
      if (i > 0 && open[i - 1].pass >= o.pass) fail(where + " is out of order (expected increasing passes)");
      if (o.pass >= next_pass) fail(where + " is not below next_pass " + std::to_string(next_pass));
      if (o.runs.empty()) fail(where + " has no runs (expected a fully read pass to be left out)");
      for (std::size_t k = 0; k < o.runs.size(); ++k) {
        const StreamRun& r = o.runs[k];
        const std::string run = where + ": run " + std::to_string(k) + " (" + std::to_string(r.position) + "+" +
                                std::to_string(r.count) + " part " + std::to_string(r.part) + "/" +
                                std::to_string(r.parts) + ")";
        if (r.count == 0 || r.position >= shards || r.count > shards - r.position) {
          fail(run + " is not within shards " + std::to_string(shards) + " (expected 1 or more positions below it)");
        }
        if (r.parts == 0 || r.part >= r.parts) fail(run + " has part >= parts (expected part < parts)");
        if (k > 0) {
          const StreamRun& q = o.runs[k - 1];
          const std::uint64_t dq = q.diagonal(), dr = r.diagonal();
          const bool same = q.parts == r.parts && dq == dr;
          const bool sorted = q.parts != r.parts ? q.parts < r.parts : dq != dr ? dq < dr : q.position < r.position;
          if (!sorted) {
            fail(run + " is out of order (expected runs sorted by parts, part - position mod parts, and position)");
          }
          if (same && q.position + q.count > r.position) fail(run + " overlaps the run before it");
          if (same && q.position + q.count == r.position && r.offset == 0) {
            fail(run + " continues the run before it (expected the two as one run)");
          }
        }
      }
      // A shard is cut one way in a pass: runs of different parts values never share a position.
      std::vector<StreamRun> by_position = o.runs;
      std::sort(by_position.begin(), by_position.end(),
                [](const StreamRun& a, const StreamRun& b) { return a.position < b.position; });
      std::uint64_t reach = 0, reach_parts = 0;
      for (const StreamRun& r : by_position) {
        if (r.position < reach && r.parts != reach_parts) {
          fail(where + ": shard position " + std::to_string(r.position) + " is cut into both " +
               std::to_string(reach_parts) + " and " + std::to_string(r.parts) + " parts (expected one cut)");
        }
        if (r.position + r.count > reach) {
          reach = r.position + r.count;
          reach_parts = r.parts;
        }
      }
    }
    for (const StreamCarry& c : carries) {
      if (c.done >= c.total || c.shard >= shards || c.pass >= next_pass) {
        fail("carry " + std::to_string(c.pass) + ":" + std::to_string(c.shard) + ":" + std::to_string(c.record) +
             " (expected done < total, shard below shards, pass below next_pass)");
      }
    }
  }
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STREAMS_JOB_STATE_HPP

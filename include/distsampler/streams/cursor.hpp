// distsampler streams family: one consumer's cursor, reading records of unknown shards until a micro-batch is full.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STREAMS_CURSOR_HPP
#define DISTSAMPLER_STREAMS_CURSOR_HPP

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../version.hpp"
#include "plan.hpp"
#include "progress.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// One record to read: shard record `record` of `shard`, in `pass`.
struct StreamRead {
  std::uint64_t pass = 0;
  std::uint64_t shard = 0;
  std::uint64_t record = 0;
};

/// Outputs [begin, end) of one record emitted into a micro-batch (a kept sample is one
/// output, [0, 1); a packed document emits its tokens). Plain data.
struct StreamEmit {
  std::uint64_t pass = 0;
  std::uint64_t shard = 0;
  std::uint64_t record = 0;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

/// What a cursor has read so far: records read, reads past a shard's end, reads of the one
/// emptiness probe (see StreamCursor::next).
struct StreamReadStats {
  std::uint64_t records = 0;
  std::uint64_t ends = 0;
  std::uint64_t probe_records = 0;
};

/// One consumer's stream of passes over a StreamPlan: its share of each pass in order, each
/// piece's records in order, reading as many records as it needs to emit a micro-batch of
/// exactly `capacity` outputs. The caller reads: `read(StreamRead)` returns std::nullopt when
/// the shard has no such record (its end, learnt only now), else the record's outputs (0: the
/// read-time filter drops it). A record emitting more than the micro-batch has room for is
/// carried: its rest comes first in the next micro-batch (and survives a state).
///
/// An empty dataset, or a filter that keeps nothing, is found after one pass: when the
/// consumer's share of a fresh pass emitted nothing, it reads the rest of that pass once
/// (only to look; nothing is emitted) and throws config_error if no record of the pass has an
/// output. Once a record with outputs was seen it never looks again; a consumer then spends
/// at most 4 x consumers + 4 fresh passes without an output before it throws config_error.
///
/// The carries of the progress a cursor starts from (a resumed state's) are read back before
/// their rest is emitted: a record the shard no longer has, or with other outputs than the
/// state counted, throws state_error instead of emitting made-up outputs.
///
/// Strong guarantee: if `read` throws, progress() is as before the call. Deterministic.
/// The plan is shared (not thread-safe): one plan per thread.
class StreamCursor {
 public:
  /// Throws config_error for consumer >= plan->consumers() or a null plan.
  StreamCursor(std::shared_ptr<StreamPlan> plan, std::uint64_t consumer, StreamProgress start = {})
      : plan_(std::move(plan)), consumer_(consumer), progress_(std::move(start)),
        unchecked_carries_(progress_.carries.size()) {
    if (!plan_) detail::throw_config_error("StreamCursor: plan is null (expected a StreamPlan)");
    if (consumer_ >= plan_->consumers()) {
      detail::throw_out_of_range("StreamCursor", "consumer", consumer_, "consumers", plan_->consumers());
    }
  }

  [[nodiscard]] std::uint64_t consumer() const noexcept { return consumer_; }
  /// Where the cursor stands after the last micro-batch it emitted.
  [[nodiscard]] const StreamProgress& progress() const noexcept { return progress_; }
  [[nodiscard]] const StreamReadStats& stats() const noexcept { return stats_; }

  /// The next micro-batch: emissions whose outputs add up to exactly `capacity` (>= 1, else
  /// config_error). O(records read + pieces passed + passes dealt).
  template <class Read>
  [[nodiscard]] std::vector<StreamEmit> next(std::uint64_t capacity, Read&& read) {
    if (capacity == 0) detail::throw_config_error("StreamCursor::next: capacity 0 is too small (expected at least 1)");
    StreamProgress p = progress_;
    StreamReadStats st = stats_;
    Probe probe = probe_;
    std::vector<StreamEmit> out;
    std::uint64_t room = capacity;
    std::size_t unchecked = unchecked_carries_;
    while (room > 0) {
      if (!p.carries.empty()) {
        StreamCarry& c = p.carries.front();
        if (unchecked > 0) {
          // A carry of the state this cursor started from: its record must still be there with the
          // outputs the state counted, or the rest emitted would be made up.
          check_carry(c, read(StreamRead{c.pass, c.shard, c.record}));
          ++st.records;
          --unchecked;
        }
        const std::uint64_t n = std::min(room, c.total - c.done);
        out.push_back(StreamEmit{c.pass, c.shard, c.record, c.done, c.done + n});
        c.done += n;
        room -= n;
        if (c.done == c.total) p.carries.erase(p.carries.begin());
        continue;
      }
      const std::vector<StreamPiece>& share = enter(p, probe, read, st);
      const StreamPiece& piece = share[static_cast<std::size_t>(p.position)];
      const StreamRead at{p.pass, piece.shard, piece.record(p.offset)};
      const std::optional<std::uint64_t> outputs = read(at);
      if (!outputs) {
        ++st.ends;
        ++p.position;
        p.offset = 0;
        continue;
      }
      ++st.records;
      ++p.offset;
      if (*outputs == 0) continue;
      probe.found = true;
      probe.emitted_in_pass = true;
      const std::uint64_t n = std::min(room, *outputs);
      out.push_back(StreamEmit{at.pass, at.shard, at.record, 0, n});
      room -= n;
      if (n < *outputs) p.carries.push_back(StreamCarry{at.pass, at.shard, at.record, n, *outputs});
    }
    progress_ = std::move(p);
    stats_ = st;
    probe_ = probe;
    unchecked_carries_ = unchecked;
    return out;
  }

 private:
  struct Probe {
    bool found = false;            // a record with outputs was seen
    bool emitted_in_pass = false;  // this consumer emitted something in its current pass
    std::uint64_t barren = 0;      // fresh passes in a row whose share emitted nothing
  };

  // The share holding the next record to read: advances past finished shares (looking once
  // for an empty dataset), and lifts the offset to the piece's own (a resumed rest).
  template <class Read>
  const std::vector<StreamPiece>& enter(StreamProgress& p, Probe& probe, Read& read, StreamReadStats& st) {
    for (;;) {
      const std::vector<StreamPiece>& share = plan_->share(p.pass, consumer_);
      if (p.position < share.size()) {
        p.offset = std::max(p.offset, share[static_cast<std::size_t>(p.position)].offset);
        return share;
      }
      if (p.pass >= plan_->first_fresh_pass() && !share.empty() && !probe.emitted_in_pass) {
        if (!probe.found) probe.found = look(p.pass, read, st);
        if (!probe.found) {
          detail::throw_config_error("StreamCursor: pass " + std::to_string(p.pass) + " of " +
                                     std::to_string(plan_->shards()) +
                                     " shards has no record with an output (the dataset is empty or the "
                                     "filter keeps nothing)");
        }
        if (++probe.barren > 4 * plan_->consumers() + 4) {
          detail::throw_config_error("StreamCursor: consumer " + std::to_string(consumer_) + " read " +
                                     std::to_string(probe.barren) +
                                     " passes in a row without an output (expected kept records enough "
                                     "for every consumer: fewer consumers, or a laxer filter)");
        }
      } else if (probe.emitted_in_pass) {
        probe.barren = 0;
      }
      probe.emitted_in_pass = false;
      p.pass = plan_->next_pass_after(p.pass);  // over a resumed state's fully read passes at once
      p.position = 0;
      p.offset = 0;
    }
  }

  static void check_carry(const StreamCarry& c, const std::optional<std::uint64_t>& outputs) {
    const std::string carry = "the resumed state carries record " + std::to_string(c.record) + " of shard " +
                              std::to_string(c.shard) + " (pass " + std::to_string(c.pass) + ", " +
                              std::to_string(c.done) + " of " + std::to_string(c.total) + " outputs emitted)";
    if (!outputs) {
      detail::throw_state_error(carry + ", but the shard has no such record: the state does not belong to these "
                                        "files (expected the files it was saved over)");
    }
    if (*outputs != c.total) {
      detail::throw_state_error(carry + ", but that record now has " + std::to_string(*outputs) +
                                " outputs (expected the files, filter and tokenizer the state was saved with)");
    }
  }

  // Reads every other consumer's share of `pass` until a record has an output.
  template <class Read>
  bool look(std::uint64_t pass, Read& read, StreamReadStats& st) {
    for (std::uint64_t c = 0; c < plan_->consumers(); ++c) {
      if (c == consumer_) continue;
      for (const StreamPiece& piece : plan_->share(pass, c)) {
        for (std::uint64_t j = piece.offset;; ++j) {
          const std::optional<std::uint64_t> outputs = read(StreamRead{pass, piece.shard, piece.record(j)});
          if (!outputs) break;
          ++st.probe_records;
          if (*outputs > 0) return true;
        }
      }
    }
    return false;
  }

  std::shared_ptr<StreamPlan> plan_;
  std::uint64_t consumer_;
  StreamProgress progress_;
  StreamReadStats stats_;
  Probe probe_;
  std::size_t unchecked_carries_;  // carries of the start progress not yet read back
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STREAMS_CURSOR_HPP

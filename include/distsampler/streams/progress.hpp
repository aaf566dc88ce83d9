// distsampler streams family: a consumer's progress and the job state assembled from every consumer's (text form,
// checksum). SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STREAMS_PROGRESS_HPP
#define DISTSAMPLER_STREAMS_PROGRESS_HPP

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../detail/mix.hpp"
#include "../error.hpp"
#include "../state/format.hpp"
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

/// Where one consumer stands: in `pass`, at piece `position` of its share, at the piece's
/// record `offset` (StreamPiece::record numbering; the next record to read), with `carries`
/// still to emit before it reads on. What a training loop records per consumer from the last
/// micro-batch it received. Plain data.
struct StreamProgress {
  std::uint64_t pass = 0;
  std::uint64_t position = 0;
  std::uint64_t offset = 0;
  std::vector<StreamCarry> carries;
};

/// A job's position in its stream of passes, assembled from every consumer's progress
/// (assemble_stream_state): the dataset it belongs to (seed, shards, layout: StreamPlan's),
/// `next_pass` (no consumer has read any of it or of later passes), the unread pieces of each
/// pass before it (`open`, sorted by pass; a pass absent from it is fully read), and every
/// carried record. O(consumers + shards x open passes) in size, independent of the world.
///
/// Text form, one line: `distsampler-stream v1 seed=7 shards=5 layout=0x... next_pass=2
/// step=40 open=1:3.0/1@4+0.0/1@0 carries=- checksum=0x...`: open passes `pass:pieces` joined by
/// `,`, pieces `shard.part/parts@offset` joined by `+`, carries `pass:shard:record:done/total`
/// joined by `,` (`-` for none); the checksum (FNV-1a 64 of the text before ` checksum=`,
/// finalised by splitmix64's mixer) refuses any edit. from_text throws state_error naming
/// the first problem; validate() throws state_error naming each field that differs.
struct StreamJobState {
  static constexpr std::uint32_t version = 1;
  std::uint64_t seed = 0;
  std::uint64_t shards = 0;
  std::uint64_t layout = 0;
  std::uint64_t next_pass = 0;
  std::uint64_t step = 0;  ///< training steps the loop had received (informational; not checked)
  std::vector<StreamOpenPass> open;
  std::vector<StreamCarry> carries;

  /// The one-line text form. O(size).
  [[nodiscard]] std::string to_text() const {
    std::string body = "distsampler-stream v" + std::to_string(version) + " seed=" + std::to_string(seed) +
                       " shards=" + std::to_string(shards) + " layout=" + detail::hex64(layout) +
                       " next_pass=" + std::to_string(next_pass) + " step=" + std::to_string(step) + " open=";
    if (open.empty()) body += '-';
    for (std::size_t i = 0; i < open.size(); ++i) {
      body += (i ? "," : "") + std::to_string(open[i].pass) + ":";
      for (std::size_t k = 0; k < open[i].pieces.size(); ++k) {
        const StreamPiece& p = open[i].pieces[k];
        body += (k ? "+" : "") + std::to_string(p.shard) + "." + std::to_string(p.part) + "/" +
                std::to_string(p.parts) + "@" + std::to_string(p.offset);
      }
    }
    body += " carries=";
    if (carries.empty()) body += '-';
    for (std::size_t i = 0; i < carries.size(); ++i) {
      const StreamCarry& c = carries[i];
      body += (i ? "," : "") + std::to_string(c.pass) + ":" + std::to_string(c.shard) + ":" + std::to_string(c.record) +
              ":" + std::to_string(c.done) + "/" + std::to_string(c.total);
    }
    return body + " checksum=" + detail::hex64(checksum_of(body));
  }

  /// Parses and checks the text form: the checksum, then canonical contents (open passes
  /// sorted, below next_pass, non-empty; pieces of a shard in a pass sharing one `parts`,
  /// distinct parts; shards below `shards`; carries with done < total and pass < next_pass).
  [[nodiscard]] static StreamJobState from_text(std::string_view text) {
    try {
      return parse(text);
    } catch (const state_error& e) {
      // The shared reader names SamplerState; this is a stream state.
      std::string message = e.what();
      const std::string_view shared = "SamplerState::from_text: ";
      if (message.compare(0, shared.size(), shared) == 0) fail(message.substr(shared.size()));
      throw;
    }
  }

 private:
  [[nodiscard]] static StreamJobState parse(std::string_view text) {
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    const std::size_t at = text.rfind(" checksum=");
    if (at == std::string_view::npos) fail("no checksum= field");
    {
      detail::StateTextReader tail(text.substr(at));
      tail.literal(" checksum=", "checksum field");
      const std::uint64_t sum = tail.hex16("checksum", true);
      tail.end();
      if (sum != checksum_of(text.substr(0, at))) fail("checksum mismatch (the state was edited or corrupted)");
    }
    detail::StateTextReader r(text.substr(0, at));
    StreamJobState s;
    r.literal("distsampler-stream v1 seed=", "header (version 1)");
    s.seed = r.decimal("seed");
    r.literal(" shards=", "shards");
    s.shards = r.decimal("shards");
    r.literal(" layout=", "layout");
    s.layout = r.hex16("layout", true);
    r.literal(" next_pass=", "next_pass");
    s.next_pass = r.decimal("next_pass");
    r.literal(" step=", "step");
    s.step = r.decimal("step");
    r.literal(" open=", "open");
    if (!r.optional("-")) {
      do {
        StreamOpenPass o;
        o.pass = r.decimal("open pass", ":");
        r.literal(":", "':' after the open pass");
        do {
          StreamPiece p;
          p.shard = r.decimal("piece shard", ".");
          r.literal(".", "'.'");
          p.part = r.decimal("piece part", "/");
          r.literal("/", "'/'");
          p.parts = r.decimal("piece parts", "@");
          r.literal("@", "'@'");
          p.offset = r.decimal("piece offset", "+, ");
          o.pieces.push_back(p);
        } while (r.optional("+"));
        s.open.push_back(std::move(o));
      } while (r.optional(","));
    }
    r.literal(" carries=", "carries");
    if (!r.optional("-")) {
      do {
        StreamCarry c;
        c.pass = r.decimal("carry pass", ":");
        r.literal(":", "':'");
        c.shard = r.decimal("carry shard", ":");
        r.literal(":", "':'");
        c.record = r.decimal("carry record", ":");
        r.literal(":", "':'");
        c.done = r.decimal("carry done", "/");
        r.literal("/", "'/'");
        c.total = r.decimal("carry total", ", ");
        s.carries.push_back(c);
      } while (r.optional(","));
    }
    r.end();
    s.check_canonical();
    return s;
  }

 public:
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

  friend bool operator==(const StreamJobState& a, const StreamJobState& b) { return a.to_text() == b.to_text(); }

 private:
  [[noreturn]] static void fail(const std::string& what) {
    detail::throw_state_error("StreamJobState::from_text: " + what);
  }
  [[nodiscard]] static std::uint64_t checksum_of(std::string_view body) noexcept {
    return detail::mix64(detail::fnv1a64(reinterpret_cast<const std::uint8_t*>(body.data()), body.size()));
  }
  void check_canonical() const {
    for (std::size_t i = 0; i < open.size(); ++i) {
      const StreamOpenPass& o = open[i];
      const std::string where = "open pass " + std::to_string(o.pass);
      if (i > 0 && open[i - 1].pass >= o.pass) fail(where + " is out of order (expected increasing passes)");
      if (o.pass >= next_pass) fail(where + " is not below next_pass " + std::to_string(next_pass));
      std::vector<StreamPiece> sorted = o.pieces;
      std::sort(sorted.begin(), sorted.end(), [](const StreamPiece& a, const StreamPiece& b) {
        return a.shard != b.shard ? a.shard < b.shard : a.part < b.part;
      });
      for (std::size_t k = 0; k < sorted.size(); ++k) {
        const StreamPiece& p = sorted[k];
        if (p.shard >= shards)
          fail(where + ": shard " + std::to_string(p.shard) + " is not below shards " + std::to_string(shards));
        if (p.parts == 0 || p.part >= p.parts) {
          fail(where + ": part " + std::to_string(p.part) + "/" + std::to_string(p.parts) + " (expected part < parts)");
        }
        if (k > 0 && sorted[k - 1].shard == p.shard &&
            (sorted[k - 1].parts != p.parts || sorted[k - 1].part == p.part)) {
          fail(where + ": shard " + std::to_string(p.shard) + " has overlapping pieces");
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

/// The job state after every consumer of `plan` reached `progress[c]` (one entry per
/// consumer, rank-major: consumer = rank * workers + worker), `step` steps into the job. Throws config_error when the
/// count is not plan.consumers(). O(consumers + pieces of the passes between the slowest and
/// the fastest consumer). Deterministic: equal unread rests give equal states.
[[nodiscard]] inline StreamJobState assemble_stream_state(StreamPlan& plan, const std::vector<StreamProgress>& progress,
                                                          std::uint64_t step = 0) {
  if (progress.size() != plan.consumers()) {
    detail::throw_config_error("assemble_stream_state: " + std::to_string(progress.size()) + " progress entries for " +
                               std::to_string(plan.consumers()) + " consumers (expected one per consumer)");
  }
  StreamJobState s;
  s.seed = plan.seed();
  s.shards = plan.shards();
  s.layout = plan.layout();
  s.step = step;
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (const StreamProgress& p : progress) {
    lo = std::min(lo, p.pass);
    hi = std::max(hi, p.pass);
    for (const StreamCarry& c : p.carries) s.carries.push_back(c);
  }
  // Passes a resumed plan holds beyond every consumer are open too, read by none yet.
  hi = std::max(hi, plan.first_fresh_pass() == 0 ? 0 : plan.first_fresh_pass() - 1);
  s.next_pass = hi + 1;
  for (std::uint64_t q = lo; q <= hi; ++q) {
    StreamOpenPass o;
    o.pass = q;
    for (std::uint64_t c = 0; c < plan.consumers(); ++c) {
      const StreamProgress& p = progress[static_cast<std::size_t>(c)];
      if (p.pass > q) continue;
      const std::vector<StreamPiece>& share = plan.share(q, c);
      std::size_t from = 0;
      if (p.pass == q) {
        from = static_cast<std::size_t>(std::min<std::uint64_t>(p.position, share.size()));
        if (from < share.size()) {
          StreamPiece rest = share[from];
          rest.offset = std::max(p.offset, rest.offset);
          o.pieces.push_back(rest);
          ++from;
        }
      }
      for (std::size_t k = from; k < share.size(); ++k) o.pieces.push_back(share[k]);
    }
    if (o.pieces.empty()) continue;
    std::sort(o.pieces.begin(), o.pieces.end(), [](const StreamPiece& a, const StreamPiece& b) {
      return a.shard != b.shard ? a.shard < b.shard : a.part < b.part;
    });
    s.open.push_back(std::move(o));
  }
  std::sort(s.carries.begin(), s.carries.end(), [](const StreamCarry& a, const StreamCarry& b) {
    return a.pass != b.pass ? a.pass < b.pass : a.shard != b.shard ? a.shard < b.shard : a.record < b.record;
  });
  return s;
}

/// `plan` resumed from `state` (validated against it first): re-deals the unread rest of every
/// open pass over the plan's consumers and continues with fresh passes. Returns each consumer's
/// starting progress: the first pass with anything left, and the state's carries dealt round-robin
/// (carry i to consumer i mod consumers). Throws state_error for a state of another dataset.
[[nodiscard]] inline std::vector<StreamProgress> resume_stream(StreamPlan& plan, const StreamJobState& state) {
  state.validate(plan);
  plan.resume(state.next_pass, state.open);
  const std::uint64_t first = state.open.empty() ? state.next_pass : state.open.front().pass;
  std::vector<StreamProgress> out(static_cast<std::size_t>(plan.consumers()));
  for (StreamProgress& p : out) p.pass = first;
  for (std::size_t i = 0; i < state.carries.size(); ++i) out[i % out.size()].carries.push_back(state.carries[i]);
  return out;
}

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STREAMS_PROGRESS_HPP

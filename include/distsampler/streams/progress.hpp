// distsampler streams family: a consumer's progress, the job state assembled from every consumer's, and resume.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STREAMS_PROGRESS_HPP
#define DISTSAMPLER_STREAMS_PROGRESS_HPP

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "../error.hpp"
#include "../feistel.hpp"
#include "../version.hpp"
#include "job_state.hpp"
#include "plan.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

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

namespace detail {

// The canonical runs of a pass's unread `pieces` (pass order `order`): per parts and
// diagonal, the pieces in pass order, a piece continuing the run before it when it is the
// next shard, in the next part, from record 0. O(pieces log pieces).
[[nodiscard]] inline std::vector<StreamRun> stream_runs(const std::vector<StreamPiece>& pieces,
                                                        const FeistelPermutation& order) {
  std::vector<StreamRun> at;
  at.reserve(pieces.size());
  for (const StreamPiece& p : pieces) at.push_back(StreamRun{order.inverse(p.shard), 1, p.part, p.parts, p.offset});
  std::sort(at.begin(), at.end(), [](const StreamRun& a, const StreamRun& b) {
    const std::uint64_t da = a.diagonal(), db = b.diagonal();
    return std::tie(a.parts, da, a.position) < std::tie(b.parts, db, b.position);
  });
  std::vector<StreamRun> runs;
  for (const StreamRun& r : at) {
    if (!runs.empty()) {
      StreamRun& last = runs.back();
      if (last.parts == r.parts && last.diagonal() == r.diagonal() && last.position + last.count == r.position &&
          r.offset == 0) {
        ++last.count;
        continue;
      }
    }
    runs.push_back(r);
  }
  return runs;
}

}  // namespace detail

/// The job state after every consumer of `plan` reached `progress[c]` (one entry per
/// consumer, rank-major: consumer = rank * workers + worker), `step` steps into the job. Throws config_error when the
/// count is not plan.consumers(). O(consumers + pieces of the passes between the slowest and
/// the fastest consumer, times log of that). Deterministic: equal unread rests give equal states.
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
  s.share = plan.share_option();
  for (std::uint64_t q = lo; q <= hi; ++q) {
    std::vector<StreamPiece> pieces;
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
          pieces.push_back(rest);
          ++from;
        }
      }
      for (std::size_t k = from; k < share.size(); ++k) pieces.push_back(share[k]);
    }
    if (pieces.empty()) continue;
    StreamOpenPass o;
    o.pass = q;
    o.runs = detail::stream_runs(pieces, FeistelPermutation(plan.shards(), plan.seed(), q));
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

// distsampler streams family: the pass plan, which consumer reads which shard pieces in each pass of shards of unknown
// size. SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_STREAMS_PLAN_HPP
#define DISTSAMPLER_STREAMS_PLAN_HPP

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "../detail/mix.hpp"
#include "../error.hpp"
#include "../feistel.hpp"
#include "../state/format.hpp"
#include "../version.hpp"
#include "options.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// One consumer's piece of one shard: the shard's records `part + j * parts` for j >= `offset`
/// (every record when parts is 1). A shard is cut into parts only when there are fewer shards
/// than consumers, so that no consumer is idle; `offset` is above 0 for the unread rest of a
/// piece that was being read when a state was saved. Plain data.
struct StreamPiece {
  std::uint64_t shard = 0;
  std::uint64_t part = 0;
  std::uint64_t parts = 1;
  std::uint64_t offset = 0;

  /// The shard record of the piece's j-th record: part + j * parts (saturating at 2^64 - 1,
  /// which no shard reaches).
  [[nodiscard]] constexpr std::uint64_t record(std::uint64_t j) const noexcept {
    return j > (UINT64_MAX - part) / parts ? UINT64_MAX : part + j * parts;
  }
  friend constexpr bool operator==(const StreamPiece& a, const StreamPiece& b) noexcept {
    return a.shard == b.shard && a.part == b.part && a.parts == b.parts && a.offset == b.offset;
  }
  friend constexpr bool operator!=(const StreamPiece& a, const StreamPiece& b) noexcept { return !(a == b); }
};

/// Unread pieces as a saved state records them: of the shards at positions [position,
/// position + count) of the pass's shard order, the one at position + m in part (part + m)
/// mod `parts` (every shard in the same part when parts is 1), the first from its record
/// `offset`, the others from 0. One run holds a consumer's whole rest of a pass when every
/// shard is shared. diagonal() is what the parts of one run share. Plain data.
struct StreamRun {
  std::uint64_t position = 0;
  std::uint64_t count = 1;
  std::uint64_t part = 0;
  std::uint64_t parts = 1;
  std::uint64_t offset = 0;
  /// (part - position) mod parts: equal for the pieces a run can hold (parts >= 1, part < parts).
  [[nodiscard]] constexpr std::uint64_t diagonal() const noexcept {
    return (part + (parts - position % parts)) % parts;
  }
  friend constexpr bool operator==(const StreamRun& a, const StreamRun& b) noexcept {
    return a.position == b.position && a.count == b.count && a.part == b.part && a.parts == b.parts &&
           a.offset == b.offset;
  }
};

/// A pass's unread pieces as a saved state records them (StreamJobState::open): runs sorted
/// by (parts, diagonal, position), runs of one diagonal never touching (they would be one).
struct StreamOpenPass {
  std::uint64_t pass = 0;
  std::vector<StreamRun> runs;
};


/// Which consumer reads which pieces in every pass, for `consumers` consumers (rank x loader
/// worker) over `shards` shards whose record counts are unknown. Pass p walks every shard in
/// the order FeistelPermutation(shards, seed, p); with fewer shards than consumers each shard
/// is cut by stride into ceil(consumers / shards) parts (the part order rotated by the pass).
/// The pieces are dealt heaviest first (ties in that order), each to the consumer with the
/// least load so far (ties to the lower consumer), and each consumer reads its pieces in pass
/// order; the load is the piece's share of its shard's byte size (the
/// hints; every shard weighs 1 without them) summed over every fresh pass of this plan: a
/// consumer that got more in one pass gets less in the next, so consumers do not drift apart.
/// With a share (StreamOptions::share) every shard is cut into max(share, that) parts; when
/// the parts are as many as the consumers, consumer c reads part (c + pass + i) mod consumers
/// of the shard at position i of the pass, in pass order (no greedy deal).
///
/// A plan resumed from a state (resume()) first deals each open pass's unread pieces afresh
/// over its consumers (in pass order, from zero loads), treats the other passes before the
/// state's next_pass as fully read, and deals fresh passes from next_pass on.
///
/// share() is O(shards * parts * log consumers) for each pass dealt the first time (passes
/// are dealt in order and kept until release_before), O(1) after. Memory O(pieces) per kept
/// pass. Deterministic: a pure function of (shards, hints, seed, consumers, state). Not
/// thread-safe: give each thread its own plan (two plans from the same inputs agree).
class StreamPlan {
 public:
  /// The most consumers a plan deals to (2^20: ranks x loader workers). Every dealt pass holds
  /// a share per consumer, so this bounds what a plan allocates before it reads anything.
  static constexpr std::uint64_t max_consumers = std::uint64_t{1} << 20;

  /// Throws config_error when shards or consumers is 0, when consumers is above max_consumers, when byte_sizes is neither empty
  /// nor one size per shard, or when options.share is above consumers.
  StreamPlan(std::uint64_t shards, std::vector<std::uint64_t> byte_sizes, std::uint64_t consumers,
             const StreamOptions& options)
      : shards_(shards), seed_(options.seed), consumers_(consumers), byte_sizes_(std::move(byte_sizes)) {
    if (shards_ == 0) detail::throw_config_error("StreamPlan: shards 0 is too few (expected at least 1)");
    if (consumers_ == 0) detail::throw_config_error("StreamPlan: consumers 0 is too few (expected at least 1)");
    if (consumers_ > max_consumers) {
      detail::throw_config_error("StreamPlan: consumers " + std::to_string(consumers_) +
                                 " is too many (expected at most " + std::to_string(max_consumers) +
                                 " consumers, ranks x loader workers: each pass holds a share per consumer)");
    }
    if (options.share > consumers_) {
      detail::throw_config_error("StreamPlan: share " + std::to_string(options.share) + " is above consumers " +
                                 std::to_string(consumers_) + " (expected 1.." + std::to_string(consumers_) +
                                 ", or share_all)");
    }
    share_option_ = options.share;
    share_ = options.share == StreamOptions::share_all ? consumers_ : options.share;
    if (!byte_sizes_.empty() && byte_sizes_.size() != shards_) {
      detail::throw_config_error("StreamPlan: byte_sizes has " + std::to_string(byte_sizes_.size()) + " entries for " +
                                 std::to_string(shards_) + " shards (expected one per shard, or none)");
    }
    loads_.assign(static_cast<std::size_t>(consumers_), 0);
  }
  /// The plan of StreamOptions{seed} (share 1).
  StreamPlan(std::uint64_t shards, std::vector<std::uint64_t> byte_sizes, std::uint64_t seed, std::uint64_t consumers)
      : StreamPlan(shards, std::move(byte_sizes), consumers, StreamOptions{seed, 1}) {}

  /// Builds the plan that continues `next_pass` and `open` (as StreamJobState records them,
  /// already validated against this dataset) on this plan's consumers. Strong guarantee.
  void resume(std::uint64_t next_pass, const std::vector<StreamOpenPass>& open) {
    std::map<std::uint64_t, std::vector<std::vector<StreamPiece>>> dealt;
    for (const StreamOpenPass& o : open) {
      const FeistelPermutation order(shards_, seed_, o.pass);
      std::vector<std::pair<std::uint64_t, StreamPiece>> at;  // (position, piece)
      for (const StreamRun& r : o.runs) {
        for (std::uint64_t m = 0; m < r.count; ++m) {
          at.emplace_back(r.position + m, StreamPiece{order(r.position + m), (r.part + m % r.parts) % r.parts, r.parts,
                                                      m == 0 ? r.offset : 0});
        }
      }
      std::sort(at.begin(), at.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second.part < b.second.part;
      });
      std::vector<StreamPiece> pieces;
      pieces.reserve(at.size());
      for (const auto& a : at) pieces.push_back(a.second);
      std::vector<std::uint64_t> zero(static_cast<std::size_t>(consumers_), 0);
      dealt[o.pass] = deal(pieces, zero);
    }
    first_fresh_ = next_pass;
    next_deal_ = next_pass;
    dealt_.swap(dealt);
    loads_.assign(static_cast<std::size_t>(consumers_), 0);
  }

  [[nodiscard]] std::uint64_t shards() const noexcept { return shards_; }
  [[nodiscard]] std::uint64_t consumers() const noexcept { return consumers_; }
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  [[nodiscard]] const std::vector<std::uint64_t>& byte_sizes() const noexcept { return byte_sizes_; }
  /// The consumers each shard is cut among (StreamOptions::share; share_all as consumers()).
  [[nodiscard]] std::uint64_t share() const noexcept { return share_; }
  /// StreamOptions::share as given (StreamOptions::share_all kept as such).
  [[nodiscard]] std::uint64_t share_option() const noexcept { return share_option_; }
  /// The first pass dealt in full on this plan's consumers (0, or a resumed state's next_pass);
  /// passes before it hold only what the state left unread.
  [[nodiscard]] std::uint64_t first_fresh_pass() const noexcept { return first_fresh_; }
  /// Parts each shard of a fresh pass is cut into: the share, or ceil(consumers / shards)
  /// when there are fewer shards than consumers and that is more.
  [[nodiscard]] std::uint64_t parts() const noexcept {
    const std::uint64_t idle = shards_ >= consumers_ ? 1 : consumers_ / shards_ + (consumers_ % shards_ != 0 ? 1 : 0);
    return std::max(idle, share_);
  }
  /// A 64-bit hash of the shard count and the byte-size hints (what a state must match).
  [[nodiscard]] std::uint64_t layout() const noexcept {
    std::uint64_t h = detail::hash_field(0xcbf29ce484222325u, "distsampler-streams-layout-v1");
    h = detail::hash_field(h, shards_);
    h = detail::hash_field(h, static_cast<std::uint64_t>(byte_sizes_.size()));
    for (const std::uint64_t b : byte_sizes_) h = detail::hash_field(h, b);
    return detail::mix64(h);
  }

  /// The pieces `consumer` reads in `pass`, in reading order (empty for a pass the resumed
  /// state left fully read). Throws config_error for consumer >= consumers(); passes released
  /// by release_before() are empty. The reference stays valid until release_before(p > pass).
  [[nodiscard]] const std::vector<StreamPiece>& share(std::uint64_t pass, std::uint64_t consumer) {
    if (consumer >= consumers_)
      detail::throw_out_of_range("StreamPlan::share", "consumer", consumer, "consumers", consumers_);
    const auto* shares = dealt(pass);
    return shares == nullptr ? empty_ : (*shares)[static_cast<std::size_t>(consumer)];
  }

  /// The first pass after `pass` that can hold pieces: from first_fresh_pass() on, pass + 1;
  /// before it, the next pass a resumed state left open, else first_fresh_pass(). So a cursor
  /// skips the fully read passes between a state's open passes and its next_pass in one step,
  /// however many there are. O(log passes).
  [[nodiscard]] std::uint64_t next_pass_after(std::uint64_t pass) const noexcept {
    if (pass >= first_fresh_ || first_fresh_ - pass == 1) return pass + 1;
    const auto it = dealt_.upper_bound(pass);
    return it != dealt_.end() && it->first < first_fresh_ ? it->first : first_fresh_;
  }

  /// Forgets the deals of passes before `pass` (what no consumer reads any more). O(log passes).
  void release_before(std::uint64_t pass) {
    released_ = std::max(released_, pass);
    dealt_.erase(dealt_.begin(), dealt_.lower_bound(pass));
  }

 private:
  using Shares = std::vector<std::vector<StreamPiece>>;

  [[nodiscard]] std::uint64_t weight(const StreamPiece& p) const noexcept {
    const std::uint64_t bytes = byte_sizes_.empty() ? 1 : byte_sizes_[static_cast<std::size_t>(p.shard)];
    return std::max<std::uint64_t>(1, bytes / p.parts);
  }

  // The greedy deal, heaviest piece first (ties in pass order), each to the least loaded
  // consumer (ties to the lower index); each share is then read in pass order.
  [[nodiscard]] Shares deal(const std::vector<StreamPiece>& pieces, std::vector<std::uint64_t>& loads) const {
    using Entry = std::pair<std::uint64_t, std::uint64_t>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    for (std::size_t c = 0; c < loads.size(); ++c) heap.emplace(loads[c], c);
    std::vector<std::size_t> by_weight(pieces.size());
    for (std::size_t i = 0; i < pieces.size(); ++i) by_weight[i] = i;
    std::stable_sort(by_weight.begin(), by_weight.end(),
                     [&](std::size_t a, std::size_t b) { return weight(pieces[a]) > weight(pieces[b]); });
    std::vector<std::vector<std::size_t>> picked(loads.size());
    for (const std::size_t i : by_weight) {
      const Entry top = heap.top();
      heap.pop();
      const auto c = static_cast<std::size_t>(top.second);
      picked[c].push_back(i);
      const std::uint64_t w = weight(pieces[i]);
      loads[c] = top.first > UINT64_MAX - w ? UINT64_MAX : top.first + w;
      heap.emplace(loads[c], top.second);
    }
    Shares shares(picked.size());
    for (std::size_t c = 0; c < picked.size(); ++c) {
      std::sort(picked[c].begin(), picked[c].end());
      for (const std::size_t i : picked[c]) shares[c].push_back(pieces[i]);
    }
    return shares;
  }

  [[nodiscard]] const Shares* dealt(std::uint64_t pass) {
    if (pass < released_) return nullptr;
    auto it = dealt_.find(pass);
    if (it != dealt_.end()) return &it->second;
    if (pass < first_fresh_) return nullptr;
    const std::uint64_t s = parts();
    while (next_deal_ <= pass) {
      const FeistelPermutation order(shards_, seed_, next_deal_);
      Shares shares(static_cast<std::size_t>(consumers_));
      if (s == consumers_) {
        // Every consumer reads its part of every shard. The part rotates with the pass and
        // with the shard's position, so the parts holding a shard's last, extra records (the
        // first count mod consumers, unknown before reading) fall on other consumers in each
        // shard instead of on the same few in all of them.
        for (std::uint64_t c = 0; c < consumers_; ++c) {
          std::vector<StreamPiece>& mine = shares[static_cast<std::size_t>(c)];
          mine.reserve(static_cast<std::size_t>(shards_));
          for (std::uint64_t i = 0; i < shards_; ++i) mine.push_back(StreamPiece{order(i), (c + next_deal_ % s + i % s) % s, s, 0});
        }
      } else {
        std::vector<StreamPiece> pieces;
        pieces.reserve(static_cast<std::size_t>(shards_ * s));
        for (std::uint64_t i = 0; i < shards_; ++i) {
          const std::uint64_t shard = order(i);
          for (std::uint64_t k = 0; k < s; ++k) pieces.push_back(StreamPiece{shard, (k + next_deal_) % s, s, 0});
        }
        shares = deal(pieces, loads_);
      }
      if (next_deal_ >= released_) dealt_[next_deal_] = std::move(shares);
      ++next_deal_;
    }
    return &dealt_[pass];
  }

  std::uint64_t shards_, seed_, consumers_, share_ = 1, share_option_ = 1;
  std::vector<std::uint64_t> byte_sizes_;
  std::vector<std::uint64_t> loads_;
  std::map<std::uint64_t, Shares> dealt_;
  std::uint64_t first_fresh_ = 0, next_deal_ = 0, released_ = 0;
  std::vector<StreamPiece> empty_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_STREAMS_PLAN_HPP

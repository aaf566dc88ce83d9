// distsampler blend: what a blend's read gives (BlendSequence, BlendMicroBatch) and the reader's cache (BlendCache).
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_BLEND_CACHE_HPP
#define DISTSAMPLER_BLEND_CACHE_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../batch_layout.hpp"
#include "../detail/checked.hpp"
#include "../detail/mix.hpp"
#include "../error.hpp"
#include "../feistel.hpp"
#include "../lengths.hpp"
#include "../mixture/schedule.hpp"
#include "../options.hpp"
#include "../packing/options.hpp"
#include "../packing/packed_sequence_sampler.hpp"
#include "../packing/window.hpp"
#include "../state.hpp"
#include "../version.hpp"
#include "../worker_schedule.hpp"
#include "../world.hpp"
#include "options.hpp"

DISTSAMPLER_NAMESPACE_BEGIN

/// Where one position of a blend's sequence order comes from: sequence `index` of pass
/// `pass` of source `source`, that source's `ordinal`-th sequence of the run.
struct BlendSequence {
  std::uint64_t source = 0;
  std::uint64_t ordinal = 0;
  std::uint64_t pass = 0;
  std::uint64_t index = 0;
  friend constexpr bool operator==(const BlendSequence& a, const BlendSequence& b) noexcept {
    return a.source == b.source && a.ordinal == b.ordinal && a.pass == b.pass && a.index == b.index;
  }
  friend constexpr bool operator!=(const BlendSequence& a, const BlendSequence& b) noexcept { return !(a == b); }
};

/// One micro-batch a rank reads from a blend: micro_batch_size sequences, sequence i of
/// source `sources[i]`, its pieces (documents of that source) being
/// pieces[sequence_begin[i], sequence_begin[i + 1]).
struct BlendMicroBatch {
  std::vector<std::uint64_t> sources;
  std::vector<PackPiece> pieces;
  std::vector<std::uint64_t> sequence_begin{0};

  /// Sequences in the micro-batch.
  [[nodiscard]] std::uint64_t sequences() const noexcept { return sources.size(); }
  /// Tokens of sequence i (< sequences()). O(pieces of it).
  [[nodiscard]] std::uint64_t tokens(std::uint64_t i) const noexcept {
    std::uint64_t t = 0;
    for (std::uint64_t p = sequence_begin[static_cast<std::size_t>(i)];
         p < sequence_begin[static_cast<std::size_t>(i + 1)]; ++p)
      t += pieces[static_cast<std::size_t>(p)].length;
    return t;
  }
};

/// What a blend's reads plan, per source: the packing plan of the pass read last (one
/// PackedSequenceSampler of one rank, at that pass), its planned window, and, in best-fit,
/// where each pass planned so far starts among the source's sequences (8 bytes per pass).
/// Pass the same BlendCache to successive calls so reading in order plans each pass and
/// window once. Holds no reference to the sampler; a cache of another blend (other
/// settings, seed, shuffle or lengths memory) is recognised and cleared. Not thread-safe: one BlendCache per thread.
class BlendCache {
 public:
  /// Passes whose plan this cache holds now, over every source (at most one per source).
  [[nodiscard]] std::size_t plans() const noexcept {
    std::size_t n = 0;
    for (const Source& s : sources_) n += s.pass.has_value() ? 1u : 0u;
    return n;
  }

 private:
  friend class BlendSampler;
  struct Source {
    std::optional<PackedSequenceSampler> pass;  // the plan of the pass read last
    PackWindow window;
    std::vector<std::uint64_t> starts;  // best-fit: ordinal of pass q's first sequence; last: end of the known passes
  };
  std::uint64_t identity_ = 0;
  std::vector<Source> sources_;
};

DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_BLEND_CACHE_HPP

// distsampler libtorch internals: the pass a sampler shares with its copies, and states in torch's archives.
// SPDX-License-Identifier: MIT
#ifndef DISTSAMPLER_TORCH_PASS_HPP
#define DISTSAMPLER_TORCH_PASS_HPP

#include <torch/data/samplers/base.h>
#include <torch/serialize/archive.h>
#include <torch/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../distsampler.hpp"

DISTSAMPLER_NAMESPACE_BEGIN
namespace detail {

// A SamplerState as an int64 tensor of its bytes under `key` in torch's archive.
inline void write_state(torch::serialize::OutputArchive& archive, const char* key, const SamplerState& state) {
  const auto bytes = state.to_bytes();
  std::vector<std::int64_t> values(bytes.begin(), bytes.end());
  archive.write(key, torch::tensor(values, torch::kInt64), /*is_buffer=*/true);
}

// The int64 tensor under `key`, or state_error (prefixed by `who`) naming the key when the
// archive has none: never a raw c10 error.
inline torch::Tensor read_tensor(torch::serialize::InputArchive& archive, const char* key, const std::string& who) {
  torch::Tensor tensor;
  bool found = false;
  std::string reason;
  try {
    found = archive.try_read(key, tensor, /*is_buffer=*/true);
  } catch (const std::exception& e) {
    reason = e.what();
    reason = reason.substr(0, reason.find('\n'));
  }
  if (!found || !tensor.defined()) {
    throw_state_error(who + ": the archive has no '" + key + "'" + (reason.empty() ? "" : " (" + reason + ")") +
                      " (expected an archive written by this sampler's save)");
  }
  if (tensor.dim() != 1 || tensor.scalar_type() != torch::kInt64) {
    throw_state_error(who + ": '" + key + "' is not a 1-d int64 tensor (expected the bytes of a SamplerState)");
  }
  return tensor.contiguous();
}

// The SamplerState whose bytes write_state wrote as `tensor` (from read_tensor);
// state_error (prefixed by `who`) for anything else.
inline SamplerState state_from_tensor(const torch::Tensor& tensor, const char* key, const std::string& who) {
  const auto* values = tensor.data_ptr<std::int64_t>();
  std::vector<std::uint8_t> bytes;
  bytes.reserve(static_cast<std::size_t>(tensor.numel()));
  for (std::int64_t i = 0; i < tensor.numel(); ++i) {
    if (values[i] < 0 || values[i] > 255) {
      throw_state_error(who + ": '" + key + "' holds " + std::to_string(values[i]) + " (expected bytes 0..255)");
    }
    bytes.push_back(static_cast<std::uint8_t>(values[i]));
  }
  return SamplerState::from_bytes(bytes.data(), bytes.size());
}

// Where the pass of a shared adapter stands.
enum class PassPhase {
  idle,       // no pass began since construction
  running,    // reset() began a pass and next() has not yet run out
  exhausted,  // next() ran out; the next reset() begins another pass
};

// What the next reset() does before its pass (pending changes never touch a running pass).
enum class PassPending {
  none,     // rewind the epoch (manual) or advance it (auto_advance)
  keep,     // read the core as it is (as constructed, or resumed before it was wrapped)
  epoch,    // set_epoch(pending_epoch)
  segment,  // swap in `next`, a resumed copy of the core
};

// The state a sampler shares with its copies: make_data_loader's copy reads the pass, the
// caller's object saves it. Every member is guarded by `mutex`.
template <class Core, class Progress>
struct SharedPass {
  SharedPass(Core c, EpochMode m) : core(std::move(c)), mode(m) {}

  std::mutex mutex;
  Core core;                 // the sampler the current pass reads
  std::optional<Core> next;  // PassPending::segment: what the next pass reads
  EpochMode mode;
  PassPending pending = PassPending::keep;
  std::uint64_t pending_epoch = 0;
  PassPhase phase = PassPhase::idle;
  std::uint64_t driver = 0;  // id of the copy that began the current pass; 0 once it is destroyed
  std::uint64_t handed = 0;  // batches next() returned in the current pass
  Progress progress;         // the adapter's position within the pass
};

// A fresh id per adapter object, so the shared pass knows which copy reads it.
inline std::uint64_t next_adapter_id() noexcept {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

// The libtorch sampler interface over a SharedPass. `Derived` supplies, as static members:
//   name                                  "TorchSampler" (messages)
//   begin(Core&, Progress&)               rewind the progress for a new pass
//   take(Core&, Progress&, size_t)        the next batch, or nullopt at the end of the pass
//   state_at(Core&, Progress&, batches)   the job's state after `batches` batches of the pass
//   resume_core(Core&, state)             Core::resume (throws state_error)
//   set_core_epoch(Core&, epoch)          Core::set_epoch
//   segment_empty(Core&)                  true when a pass of the core reads nothing on any rank
//   decode(tensor, who, const Core&)      the SamplerState an archive's tensor holds
template <class Derived, class Core, class Progress>
class SharedPassSampler : public torch::data::samplers::Sampler<std::vector<std::size_t>> {
 public:
  using BatchRequestType = std::vector<std::size_t>;

  SharedPassSampler(const SharedPassSampler& other) : shared_(other.shared_), id_(next_adapter_id()) {}
  SharedPassSampler(SharedPassSampler&& other) noexcept : shared_(other.shared_), id_(other.id_) {
    other.id_ = next_adapter_id();  // the moved-from object no longer stands for this reader
  }
  SharedPassSampler& operator=(const SharedPassSampler& other) {
    if (this != &other) {
      release();
      shared_ = other.shared_;
    }
    return *this;
  }
  SharedPassSampler& operator=(SharedPassSampler&& other) noexcept {
    if (this != &other) {
      release();
      shared_ = other.shared_;
      id_ = other.id_;
      other.id_ = next_adapter_id();
    }
    return *this;
  }
  ~SharedPassSampler() override { release(); }

  /// The epoch this sampler reads: the current pass's, or the one set_epoch/resume/load
  /// selected for the next pass.
  [[nodiscard]] std::uint64_t epoch() const {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    return pending_epoch();
  }

  /// The library sampler this adapter reads: a snapshot of the current pass's, or of the
  /// next pass's while set_epoch, resume or load is pending (what the guards check). The
  /// same for every adapter, so tools need no per-adapter code. O(copying the sampler).
  [[nodiscard]] Core core() const { return snapshot(); }

  /// Batches next() has returned in the current pass (over all copies).
  [[nodiscard]] std::uint64_t batches_handed_out() const {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    return shared_->pending == PassPending::none ? shared_->handed : 0;
  }

  /// Selects the epoch of the next pass, for this object and every copy (the DataLoader's
  /// included): the next reset() begins it; a running pass is not disturbed. Selecting the
  /// epoch the next pass already reads changes nothing, so `set_epoch(epoch())` after a
  /// resume keeps the resumed position. Throws state_error when a resumed position that
  /// still has samples to read would be discarded for another epoch.
  void set_epoch(std::uint64_t epoch) {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    SharedPass<Core, Progress>& s = *shared_;
    const bool waiting = s.pending != PassPending::none;
    if (waiting && pending_epoch() == epoch) return;
    const Core& pending = pending_core();
    const bool resumed = waiting && s.pending != PassPending::epoch && pending.start() != 0;
    if (resumed && !Derived::segment_empty(pending)) {
      throw_state_error(std::string(Derived::name) + "::set_epoch: epoch " + std::to_string(epoch) +
                        " would discard the resumed position in epoch " + std::to_string(pending.epoch()) + " (" +
                        std::to_string(pending.start()) + " of " + std::to_string(pending.dataset_size()) +
                        " positions consumed; expected set_epoch(" + std::to_string(pending.epoch()) +
                        "), e.g. a loop starting at epoch(), or a sampler built without resuming)");
    }
    s.next.reset();
    s.pending = PassPending::epoch;
    s.pending_epoch = epoch;
  }

  /// Continues `state` (saved by any rank of a run on any world size; see the sampler's
  /// own resume) in the next pass, for this object and every copy. Call it before the
  /// DataLoader iterates, or between passes. Throws state_error when the state belongs to
  /// another dataset or options (the sampler is unchanged), or while a pass is running
  /// (a copy is reading it: resume before the loader's first iteration, or build a new
  /// sampler and loader).
  void resume(const SamplerState& state) { resume_as(state, "resume", false); }

  /// The state after the training loop consumed the first `batches_consumed` batches of
  /// the current pass on every rank (count what the loop received, not what the loader
  /// fetched: its workers run ahead). Before the next pass begins, only 0 is valid and
  /// gives the state the next pass starts from. Throws config_error when
  /// batches_consumed exceeds the batches handed out so far in this pass.
  [[nodiscard]] SamplerState state_after(std::uint64_t batches_consumed) const {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    return state_locked(batches_consumed, "state_after");
  }

  /// Writes state_after(batches_consumed) into torch's archive.
  void save(torch::serialize::OutputArchive& archive, std::uint64_t batches_consumed) const {
    SamplerState state;
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      state = state_locked(batches_consumed, "save");
    }
    write_state(archive, Derived::key, state);
  }

  /// torch's save without a count: exact only when nothing can have been prefetched.
  /// Writes the state the next pass starts from when no pass is running (or a change is
  /// pending), or the whole pass so far when this object itself read it with next();
  /// throws state_error when a copy (a DataLoader, whose workers fetch ahead) reads the
  /// pass: use save(archive, batches_consumed) then.
  void save(torch::serialize::OutputArchive& archive) const override {
    SamplerState state;
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      const SharedPass<Core, Progress>& s = *shared_;
      if (s.pending == PassPending::none && s.driver != id_) {
        throw_state_error(std::string(Derived::name) + "::save: a copy of this sampler (the DataLoader's) has " +
                          "handed out " + std::to_string(s.handed) + " batches of this pass, some perhaps only " +
                          "prefetched (expected save(archive, batches_consumed) or state_after(batches_consumed) " +
                          "with the number of batches the training loop received)");
      }
      state = state_locked(s.pending == PassPending::none ? s.handed : 0, "save");
    }
    write_state(archive, Derived::key, state);
  }

  /// Reads what save wrote and resumes it (see resume). Throws state_error for an archive
  /// without this sampler's key, malformed or foreign state, or while a pass is running.
  void load(torch::serialize::InputArchive& archive) override {
    const std::string who = std::string(Derived::name) + "::load";
    const torch::Tensor tensor = read_tensor(archive, Derived::key, who);
    resume_as(Derived::decode(tensor, who, snapshot()), "load", true);
  }

  /// The next batch of the current pass (a DataLoader calls this after reset()); a sampler
  /// that never began a pass begins one. nullopt once the pass has run out. Throws
  /// state_error when another copy is reading the current pass (one sampler per loader).
  torch::optional<BatchRequestType> next(std::size_t batch_size) override {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    SharedPass<Core, Progress>& s = *shared_;
    if (s.phase == PassPhase::idle) begin_locked();
    if (s.driver != id_ && s.driver != 0) {
      throw_state_error(std::string(Derived::name) + "::next: another copy of this sampler is reading this pass " +
                        "(copies share their progress; expected one sampler per DataLoader, and no next() calls " +
                        "on a sampler a DataLoader reads)");
    }
    s.driver = id_;
    if (s.phase == PassPhase::exhausted) return torch::nullopt;
    auto batch = Derived::take(s.core, s.progress, batch_size, s.handed);
    if (batch) {
      ++s.handed;
    } else {
      s.phase = PassPhase::exhausted;
    }
    return batch;
  }

 protected:
  SharedPassSampler(Core core, EpochMode mode)
      : shared_(std::make_shared<SharedPass<Core, Progress>>(std::move(core), mode)), id_(next_adapter_id()) {
    if (mode != EpochMode::manual && mode != EpochMode::auto_advance) {
      throw_config_error(std::string(Derived::name) + ": epoch mode " + std::to_string(static_cast<int>(mode)) +
                         " is not an EpochMode (expected manual or auto_advance)");
    }
  }

  // reset(): applies what is pending, then `adjust(core)` (a new dataset size), then begins a pass.
  template <class Adjust>
  void reset_pass(Adjust&& adjust) {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    SharedPass<Core, Progress>& s = *shared_;
    if (s.phase == PassPhase::running && s.driver != id_ && s.driver != 0) {
      throw_state_error(std::string(Derived::name) + "::reset: another copy of this sampler is reading its pass " +
                        "(copies share their progress; expected one sampler per DataLoader)");
    }
    Core core = s.phase == PassPhase::idle || s.pending != PassPending::none ? pending_core() : s.core;
    switch (s.pending) {
      case PassPending::keep:
      case PassPending::segment:
        break;
      case PassPending::epoch:
        Derived::set_core_epoch(core, s.pending_epoch);
        break;
      case PassPending::none:
        if (s.mode == EpochMode::auto_advance) {
          if (core.epoch() == UINT64_MAX) {
            throw_config_error(std::string(Derived::name) + "::reset: epoch " + std::to_string(core.epoch()) +
                               " cannot advance (expected an epoch below 18446744073709551615)");
          }
          Derived::set_core_epoch(core, core.epoch() + 1);
        } else {
          Derived::set_core_epoch(core, core.epoch());
        }
        break;
    }
    adjust(core);
    s.core = std::move(core);
    s.next.reset();
    s.pending = PassPending::none;
    begin_locked();
  }

  // The core a caller may inspect: the next pass's while a change is pending, else the current one.
  [[nodiscard]] Core snapshot() const {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    const Core& c = pending_core();
    return shared_->pending == PassPending::epoch ? with_epoch(c, shared_->pending_epoch) : c;
  }

 private:
  void resume_as(const SamplerState& state, const char* what, bool prefix_core_errors) {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    SharedPass<Core, Progress>& s = *shared_;
    const std::string who = std::string(Derived::name) + "::" + what;
    if (s.phase == PassPhase::running) {
      throw_state_error(who + ": a pass is running (" + std::to_string(s.handed) + " batches handed out since it " +
                        "began) (expected resume or load before the DataLoader's first iteration or between passes, " +
                        "or a new sampler and loader)");
    }
    Core resumed = s.core;
    try {
      Derived::resume_core(resumed, state);
    } catch (const state_error& e) {
      if (!prefix_core_errors) throw;
      throw_state_error(who + ": " + e.what());
    }
    s.next.emplace(std::move(resumed));
    s.pending = PassPending::segment;
  }

  [[nodiscard]] std::uint64_t pending_epoch() const noexcept {
    return shared_->pending == PassPending::epoch ? shared_->pending_epoch : pending_core().epoch();
  }

  [[nodiscard]] const Core& pending_core() const noexcept {
    const SharedPass<Core, Progress>& s = *shared_;
    return s.pending == PassPending::segment ? *s.next : s.core;
  }

  [[nodiscard]] static Core with_epoch(Core c, std::uint64_t epoch) {
    Derived::set_core_epoch(c, epoch);
    return c;
  }

  void begin_locked() {
    SharedPass<Core, Progress>& s = *shared_;
    if (s.phase == PassPhase::idle) {
      // The first pass reads what is pending (construction, set_epoch or resume).
      if (s.pending == PassPending::epoch) Derived::set_core_epoch(s.core, s.pending_epoch);
      if (s.pending == PassPending::segment) s.core = std::move(*s.next);
      s.next.reset();
      s.pending = PassPending::none;
    }
    Derived::begin(s.core, s.progress);
    s.phase = PassPhase::running;
    s.driver = id_;
    s.handed = 0;
  }

  [[nodiscard]] SamplerState state_locked(std::uint64_t batches, const char* what) const {
    const SharedPass<Core, Progress>& s = *shared_;
    if (s.pending != PassPending::none) {
      if (batches != 0) {
        throw_config_error(std::string(Derived::name) + "::" + what + ": batches_consumed " + std::to_string(batches) +
                           " but the next pass has not begun (expected 0: set_epoch, resume or load changed the pass "
                           "after the last reset)");
      }
      const Core& c = pending_core();
      return Derived::state_at(s.pending == PassPending::epoch ? with_epoch(c, s.pending_epoch) : c, Progress{}, 0);
    }
    if (batches > s.handed) {
      throw_config_error(std::string(Derived::name) + "::" + what + ": batches_consumed " + std::to_string(batches) +
                         " exceeds the " + std::to_string(s.handed) + " batches handed out in this pass (expected 0.." +
                         std::to_string(s.handed) + ": the batches the training loop received)");
    }
    return Derived::state_at(s.core, s.progress, batches);
  }

  void release() noexcept {
    if (!shared_) return;
    std::lock_guard<std::mutex> lock(shared_->mutex);
    if (shared_->driver == id_) shared_->driver = 0;  // a destroyed loader no longer holds the pass
  }

  std::shared_ptr<SharedPass<Core, Progress>> shared_;
  std::uint64_t id_;
};

}  // namespace detail
DISTSAMPLER_NAMESPACE_END

#endif  // DISTSAMPLER_TORCH_PASS_HPP

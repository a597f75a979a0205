// Where a training step's time goes: wall time and the recording thread's
// CPU time split into phases, for benchmarks (bench/train_bench prints it)
// and for anyone asking why a step is slow.
//
// Code marks a phase with a scope:
//
//   Tensor RmsNorm(...) {
//     profile::Scope scope(profile::Phase::kKernels);
//     ...
//   }
//
// Time is charged exclusively to the innermost open scope: a matmul inside
// an op's scope is the matmul's, an allocation inside it the allocator's,
// and the op keeps only the rest. Time outside every scope (the autograd
// graph's bookkeeping, views, the caller's own code) is what the caller
// measured minus Totals()'s sum. Only the thread that called Enable(true)
// records (the one that runs the step); scopes on oneTBB's workers, inside
// a parallel kernel, are already inside the caller's scope.
//
// CPU time is the recording thread's own (CLOCK_THREAD_CPUTIME_ID, exact):
// below its wall time where that thread waits, e.g. for a worker still
// busy with its share of a parallel kernel. The workers' CPU time is not
// split by phase: Linux advances another thread's CPU clock only when it
// is descheduled or at a timer tick, far coarser than a phase.
//
// Disabled (the default), a scope costs one relaxed atomic load. Enabled,
// it reads two clocks (about 0.1-1 us) at each boundary: profile a step
// separately from the steps you time.
#ifndef ROTOR_CORE_PROFILE_H_
#define ROTOR_CORE_PROFILE_H_

#include <array>
#include <atomic>
#include <cstdint>

namespace rotor {
namespace profile {

enum class Phase {
  kMatmul,     // the matrix products (core/ops/gemm.h), bf16 rounding too
  kAttention,  // the attention kernels
  kKernels,    // elementwise, norms, activations, RoPE, loss, reductions
  kCopies,     // layout copies (Contiguous, CopyFrom) and zero-fills
  kOptimizer,  // gradient clipping and AdamW
  kAllocator,  // the buffer pool (core/tensor.h)
};
inline constexpr int kNumPhases = 6;

// "matmul", "attention", ... (for tables).
const char* PhaseName(Phase phase);

struct Totals {
  std::array<double, kNumPhases> wall_seconds{};
  std::array<double, kNumPhases> cpu_seconds{};  // the recording thread's
  std::array<int64_t, kNumPhases> scopes{};
  double wall(Phase p) const { return wall_seconds[static_cast<int>(p)]; }
  double cpu(Phase p) const { return cpu_seconds[static_cast<int>(p)]; }
};

// Starts (on this thread) or stops recording; Reset clears the totals.
void Enable(bool on);
void Reset();
Totals Snapshot();

// CPU time so far, in seconds: of the whole process (user + system, all
// threads; exact over a step, not over a phase), and of the calling thread.
double ProcessCpuSeconds();
double ThreadCpuSeconds();

namespace internal {
extern std::atomic<bool> enabled;
}

class Scope {
 public:
  explicit Scope(Phase phase)
      : phase_(phase),
        active_(internal::enabled.load(std::memory_order_relaxed)) {
    if (active_) Open();
  }
  ~Scope() {
    if (active_) Close();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  void Open();
  void Close();
  // Charges the time since the last (re)start to this scope's phase.
  void ChargeUntil(double wall, double cpu);

  Phase phase_;
  bool active_;
  Scope* parent_ = nullptr;
  double wall_start_ = 0.0;
  double cpu_start_ = 0.0;
};

}  // namespace profile
}  // namespace rotor

#endif  // ROTOR_CORE_PROFILE_H_

#include "core/profile.h"

#include <time.h>

#include <chrono>
#include <mutex>
#include <thread>

namespace rotor {
namespace profile {

namespace internal {
std::atomic<bool> enabled{false};
}  // namespace internal

namespace {

// Written by the recording thread only; Snapshot copies under the mutex.
std::mutex totals_mutex;
Totals totals;
std::thread::id recording_thread;
thread_local Scope* innermost = nullptr;

double WallSeconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

double ClockSeconds(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * now.tv_nsec;
}

}  // namespace

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kMatmul:
      return "matmul (sgemm)";
    case Phase::kAttention:
      return "attention kernels";
    case Phase::kKernels:
      return "elementwise, norms, RoPE, loss";
    case Phase::kCopies:
      return "copies and zero-fills";
    case Phase::kOptimizer:
      return "optimizer (clip + AdamW)";
    case Phase::kAllocator:
      return "allocator";
  }
  return "?";
}

double ProcessCpuSeconds() { return ClockSeconds(CLOCK_PROCESS_CPUTIME_ID); }
double ThreadCpuSeconds() { return ClockSeconds(CLOCK_THREAD_CPUTIME_ID); }

void Enable(bool on) {
  if (on) recording_thread = std::this_thread::get_id();
  internal::enabled.store(on, std::memory_order_relaxed);
}

void Reset() {
  std::lock_guard<std::mutex> lock(totals_mutex);
  totals = Totals();
}

Totals Snapshot() {
  std::lock_guard<std::mutex> lock(totals_mutex);
  return totals;
}

void Scope::Open() {
  if (std::this_thread::get_id() != recording_thread) {
    active_ = false;
    return;
  }
  wall_start_ = WallSeconds();
  cpu_start_ = ThreadCpuSeconds();
  parent_ = innermost;
  if (parent_ != nullptr) parent_->ChargeUntil(wall_start_, cpu_start_);
  innermost = this;
  std::lock_guard<std::mutex> lock(totals_mutex);
  ++totals.scopes[static_cast<int>(phase_)];
}

void Scope::Close() {
  const double wall = WallSeconds();
  const double cpu = ThreadCpuSeconds();
  ChargeUntil(wall, cpu);
  innermost = parent_;
  if (parent_ != nullptr) {  // the parent resumes now
    parent_->wall_start_ = wall;
    parent_->cpu_start_ = cpu;
  }
}

void Scope::ChargeUntil(double wall, double cpu) {
  std::lock_guard<std::mutex> lock(totals_mutex);
  totals.wall_seconds[static_cast<int>(phase_)] += wall - wall_start_;
  totals.cpu_seconds[static_cast<int>(phase_)] += cpu - cpu_start_;
}

}  // namespace profile
}  // namespace rotor

// Highway implementation of core/kernels/softmax.h. Compiled once per SIMD
// target (foreach_target.h re-includes this file); HWY_EXPORT tables the
// per-target functions and each dispatch wrapper below picks the best one
// the CPU supports. Each per-target function splits rows over threads
// itself, so dispatch happens once per call, not once per row.
#include "core/kernels/softmax.h"

#include <cmath>

#include "core/kernels/row_split.h"
#include "core/parallel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/softmax.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target helpers, after highway.h:
#include "core/kernels/row_math-inl.h"
#include "core/kernels/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// Each kernel is a function for one row plus a loop over the rows that
// ParallelFor hands this thread. A row is small enough to stay in L1/L2
// across a kernel's passes, so memory sees each array once.

// y = exp(x - max) / sum: a max pass, an exp-and-sum pass that stores the
// exps (and prefetches the next row), and a pass scaling by 1 / sum.
void SoftmaxRow(const float* x, float* y, size_t n, const float* next_row) {
  const float shift = Max(x, n);
  const float inverse_sum =
      1.0f / SumExpShifted<true>(x, y, n, shift, next_row);
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
    hn::StoreU(hn::Mul(hn::LoadU(d, y + i), hn::Set(d, inverse_sum)), d, y + i);
  });
}

// dx = y * (dy - sum(dy * y))
void SoftmaxBackwardRow(const float* HWY_RESTRICT y,
                        const float* HWY_RESTRICT dy, float* HWY_RESTRICT dx,
                        size_t n) {
  const float dot = Dot(dy, y, n);
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
    const auto centered = hn::Sub(hn::LoadU(d, dy + i), hn::Set(d, dot));
    hn::StoreU(hn::Mul(hn::LoadU(d, y + i), centered), d, dx + i);
  });
}

// y = x - (max + log(sum exp(x - max)))
void LogSoftmaxRow(const float* x, float* y, size_t n, const float* next_row) {
  const float shift = Max(x, n);
  const float logsumexp =
      shift + std::log(SumExpShifted<false>(x, nullptr, n, shift, next_row));
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
    hn::StoreU(hn::Sub(hn::LoadU(d, x + i), hn::Set(d, logsumexp)), d, y + i);
  });
}

// dx = dy - exp(y) * sum(dy)
void LogSoftmaxBackwardRow(const float* HWY_RESTRICT y,
                           const float* HWY_RESTRICT dy, float* HWY_RESTRICT dx,
                           size_t n) {
  const float sum = Sum(dy, n);
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
    const auto p = ExpKeepNaN(d, hn::LoadU(d, y + i));
    const auto g = hn::NegMulAdd(p, hn::Set(d, sum), hn::LoadU(d, dy + i));
    hn::StoreU(g, d, dx + i);
  });
}

// The two row loops: every row of x (and its successor, for the prefetch)
// through a forward row function, every row of y, dy, dx through a backward
// one. The row function is a template argument, so the calls are direct.
template <void (*kForwardRow)(const float*, float*, size_t, const float*)>
void ForwardRows(const float* x, float* y, size_t rows, size_t cols) {
  const auto body = [&](int64_t begin, int64_t end) HWY_ATTR {
    for (int64_t r = begin; r < end; ++r) {
      kForwardRow(x + r * cols, y + r * cols, cols,
                  NextRowOrSelf(x, r, rows, cols));
    }
  };
  ParallelFor(rows, RowsPerTask(cols), body);
}

template <void (*kBackwardRow)(const float*, const float*, float*, size_t)>
void BackwardRows(const float* y, const float* dy, float* dx, size_t rows,
                  size_t cols) {
  const auto body = [&](int64_t begin, int64_t end) HWY_ATTR {
    for (int64_t r = begin; r < end; ++r) {
      kBackwardRow(y + r * cols, dy + r * cols, dx + r * cols, cols);
    }
  };
  ParallelFor(rows, RowsPerTask(cols), body);
}

void SoftmaxForward(const float* x, float* y, size_t rows, size_t cols) {
  ForwardRows<SoftmaxRow>(x, y, rows, cols);
}

void SoftmaxBackward(const float* y, const float* dy, float* dx, size_t rows,
                     size_t cols) {
  BackwardRows<SoftmaxBackwardRow>(y, dy, dx, rows, cols);
}

void LogSoftmaxForward(const float* x, float* y, size_t rows, size_t cols) {
  ForwardRows<LogSoftmaxRow>(x, y, rows, cols);
}

void LogSoftmaxBackward(const float* y, const float* dy, float* dx, size_t rows,
                        size_t cols) {
  BackwardRows<LogSoftmaxBackwardRow>(y, dy, dx, rows, cols);
}

const char* SoftmaxTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rotor {
namespace kernels {

HWY_EXPORT(SoftmaxForward);
HWY_EXPORT(SoftmaxBackward);
HWY_EXPORT(LogSoftmaxForward);
HWY_EXPORT(LogSoftmaxBackward);
HWY_EXPORT(SoftmaxTarget);

void SoftmaxForward(const float* x, float* y, size_t rows, size_t cols) {
  HWY_DYNAMIC_DISPATCH(SoftmaxForward)(x, y, rows, cols);
}
void SoftmaxBackward(const float* y, const float* dy, float* dx, size_t rows,
                     size_t cols) {
  HWY_DYNAMIC_DISPATCH(SoftmaxBackward)(y, dy, dx, rows, cols);
}
void LogSoftmaxForward(const float* x, float* y, size_t rows, size_t cols) {
  HWY_DYNAMIC_DISPATCH(LogSoftmaxForward)(x, y, rows, cols);
}
void LogSoftmaxBackward(const float* y, const float* dy, float* dx, size_t rows,
                        size_t cols) {
  HWY_DYNAMIC_DISPATCH(LogSoftmaxBackward)(y, dy, dx, rows, cols);
}
const char* SoftmaxTarget() { return HWY_DYNAMIC_DISPATCH(SoftmaxTarget)(); }

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

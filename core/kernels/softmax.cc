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

// One row: y = exp(x - max) / sum. Three passes over a row that stays in
// the L1/L2 cache, so memory sees one read of x and one write of y.
void SoftmaxRow(const float* x, float* y, size_t n) {
  const float shift = Max(x, n);
  const float inverse_sum = 1.0f / SumExpShifted<true>(x, y, n, shift);
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
    hn::StoreU(hn::Mul(hn::LoadU(d, y + i), hn::Set(d, inverse_sum)), d, y + i);
  });
}

void SoftmaxForward(const float* x, float* y, size_t rows, size_t cols) {
  ParallelFor(rows, RowsPerTask(cols),
              [&](int64_t begin, int64_t end) HWY_ATTR {
                for (int64_t r = begin; r < end; ++r) {
                  SoftmaxRow(x + r * cols, y + r * cols, cols);
                }
              });
}

void SoftmaxBackward(const float* HWY_RESTRICT y, const float* HWY_RESTRICT dy,
                     float* HWY_RESTRICT dx, size_t rows, size_t cols) {
  ParallelFor(rows, RowsPerTask(cols),
              [&](int64_t begin, int64_t end) HWY_ATTR {
                for (int64_t r = begin; r < end; ++r) {
                  const float* yr = y + r * cols;
                  const float* dyr = dy + r * cols;
                  float* dxr = dx + r * cols;
                  const float dot = Dot(dyr, yr, cols);
                  ForEachVector(cols, [&](auto d, size_t i) HWY_ATTR {
                    const auto centered =
                        hn::Sub(hn::LoadU(d, dyr + i), hn::Set(d, dot));
                    hn::StoreU(hn::MulAdd(hn::LoadU(d, yr + i), centered,
                                          hn::LoadU(d, dxr + i)),
                               d, dxr + i);
                  });
                }
              });
}

void LogSoftmaxForward(const float* x, float* y, size_t rows, size_t cols) {
  ParallelFor(
      rows, RowsPerTask(cols), [&](int64_t begin, int64_t end) HWY_ATTR {
        for (int64_t r = begin; r < end; ++r) {
          const float* xr = x + r * cols;
          float* yr = y + r * cols;
          const float shift = Max(xr, cols);
          const float logsumexp =
              shift + std::log(SumExpShifted<false>(xr, nullptr, cols, shift));
          ForEachVector(cols, [&](auto d, size_t i) HWY_ATTR {
            hn::StoreU(hn::Sub(hn::LoadU(d, xr + i), hn::Set(d, logsumexp)), d,
                       yr + i);
          });
        }
      });
}

void LogSoftmaxBackward(const float* HWY_RESTRICT y,
                        const float* HWY_RESTRICT dy, float* HWY_RESTRICT dx,
                        size_t rows, size_t cols) {
  ParallelFor(
      rows, RowsPerTask(cols), [&](int64_t begin, int64_t end) HWY_ATTR {
        for (int64_t r = begin; r < end; ++r) {
          const float* yr = y + r * cols;
          const float* dyr = dy + r * cols;
          float* dxr = dx + r * cols;
          const float sum = Sum(dyr, cols);
          ForEachVector(cols, [&](auto d, size_t i) HWY_ATTR {
            // dx += dy - exp(y) * sum
            const auto p = hn::Exp(d, hn::LoadU(d, yr + i));
            const auto g =
                hn::NegMulAdd(p, hn::Set(d, sum), hn::LoadU(d, dyr + i));
            hn::StoreU(hn::Add(hn::LoadU(d, dxr + i), g), d, dxr + i);
          });
        }
      });
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

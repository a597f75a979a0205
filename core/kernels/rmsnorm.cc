// Highway implementation of core/kernels/rmsnorm.h (file anatomy as in
// core/kernels/softmax.cc: per-target bodies, HWY_EXPORT, one dispatch
// wrapper per function).
#include "core/kernels/rmsnorm.h"

#include <algorithm>
#include <cmath>

#include "core/kernels/row_split.h"
#include "core/parallel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/rmsnorm.cc"
#include "hwy/aligned_allocator.h"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target helpers, after highway.h:
#include "core/kernels/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// Rows per block of the dweight reduction. Fixed (not derived from the
// thread count) so the summation order, and hence dweight, never changes.
constexpr size_t kRowsPerBlock = 32;

// One row: y = x * rstd * weight; returns rstd. `next_row` is only
// prefetched: it is the row the following call reads first, and asking for
// it while this row is written keeps reads and writes flowing together.
float RmsNormRow(const float* HWY_RESTRICT x, const float* HWY_RESTRICT weight,
                 float* HWY_RESTRICT y, size_t n, float eps,
                 const float* next_row) {
  const float mean_sq = n == 0 ? 0.0f : SumOfSquares(x, n) / n;
  const float s = 1.0f / std::sqrt(mean_sq + eps);
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
    hwy::Prefetch(next_row + i);
    const auto normalized = hn::Mul(hn::LoadU(d, x + i), hn::Set(d, s));
    hn::StoreU(hn::Mul(normalized, hn::LoadU(d, weight + i)), d, y + i);
  });
  return s;
}

void RmsNormForward(const float* HWY_RESTRICT x,
                    const float* HWY_RESTRICT weight, float* HWY_RESTRICT y,
                    float* HWY_RESTRICT rstd, size_t rows, size_t cols,
                    float eps) {
  const auto body = [&](int64_t begin, int64_t end) HWY_ATTR {
    for (int64_t r = begin; r < end; ++r) {
      const float* next_row = r + 1 < static_cast<int64_t>(rows)
                                  ? x + (r + 1) * cols
                                  : x + r * cols;
      rstd[r] =
          RmsNormRow(x + r * cols, weight, y + r * cols, cols, eps, next_row);
    }
  };
  ParallelFor(rows, RowsPerTask(cols), body);
}

void AddRmsNormForward(const float* HWY_RESTRICT x,
                       const float* HWY_RESTRICT residual,
                       const float* HWY_RESTRICT weight,
                       float* HWY_RESTRICT sum, float* HWY_RESTRICT y,
                       float* HWY_RESTRICT rstd, size_t rows, size_t cols,
                       float eps) {
  const auto body = [&](int64_t begin, int64_t end) HWY_ATTR {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * cols;
      const float* rr = residual + r * cols;
      float* hr = sum + r * cols;
      ForEachVector(cols, [&](auto d, size_t i) HWY_ATTR {
        hn::StoreU(hn::Add(hn::LoadU(d, xr + i), hn::LoadU(d, rr + i)), d,
                   hr + i);
      });
      // The row just written is in L1; prefetch the next row of x.
      rstd[r] = RmsNormRow(hr, weight, y + r * cols, cols, eps,
                           NextRowOrSelf(x, r, rows, cols));
    }
  };
  ParallelFor(rows, RowsPerTask(cols), body);
}

// sum_i a[i] * b[i] * c[i].
float Dot3(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b,
           const float* HWY_RESTRICT c, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto sum = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto ab = hn::Mul(hn::LoadU(d, a + i), hn::LoadU(d, b + i));
    sum = hn::MulAdd(ab, hn::LoadU(d, c + i), sum);
  }
  float total = ReduceSum(d, sum);
  for (; i < n; ++i) total += a[i] * b[i] * c[i];
  return total;
}

// One row of the backward pass, with s = rstd of the row:
//   dx = [addend +] s * w * dy - (s^3 / n) * (sum_j dy_j w_j x_j) * x
//   partial += dy * x * s          (this row's share of dweight)
template <bool kAdd>
void RmsNormBackwardRow(const float* HWY_RESTRICT x,
                        const float* HWY_RESTRICT weight, float s,
                        const float* HWY_RESTRICT dy,
                        const float* HWY_RESTRICT addend,
                        float* HWY_RESTRICT dx, float* HWY_RESTRICT partial,
                        size_t n) {
  const float k = s * s * s * Dot3(dy, weight, x, n) / n;
  ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
    const auto xv = hn::LoadU(d, x + i);
    const auto dyv = hn::LoadU(d, dy + i);
    const auto g =
        hn::Mul(hn::Mul(hn::Set(d, s), hn::LoadU(d, weight + i)), dyv);
    const auto norm_dx = hn::NegMulAdd(hn::Set(d, k), xv, g);
    hn::StoreU(kAdd ? hn::Add(hn::LoadU(d, addend + i), norm_dx) : norm_dx, d,
               dx + i);
    const auto p =
        hn::MulAdd(hn::Mul(dyv, xv), hn::Set(d, s), hn::LoadU(d, partial + i));
    hn::StoreU(p, d, partial + i);
  });
}

// RmsNormBackward, and with kAdd AddRmsNormBackward (addend = dsum).
template <bool kAdd>
void RmsNormBackwardRows(const float* HWY_RESTRICT x,
                         const float* HWY_RESTRICT weight,
                         const float* HWY_RESTRICT rstd,
                         const float* HWY_RESTRICT dy,
                         const float* HWY_RESTRICT addend,
                         float* HWY_RESTRICT dx, float* HWY_RESTRICT dweight,
                         size_t rows, size_t cols) {
  if (cols == 0) return;
  if (rows == 0) {
    std::fill(dweight, dweight + cols, 0.0f);
    return;
  }
  const size_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  // partial[b * cols + i] = sum over the rows of block b of dy * x * rstd.
  auto partial = hwy::AllocateAligned<float>(blocks * cols);
  const auto block_body = [&](int64_t begin, int64_t end) HWY_ATTR {
    for (int64_t b = begin; b < end; ++b) {
      float* pb = partial.get() + b * cols;
      std::fill(pb, pb + cols, 0.0f);
      const size_t row_end = std::min(rows, (b + 1) * kRowsPerBlock);
      for (size_t r = b * kRowsPerBlock; r < row_end; ++r) {
        RmsNormBackwardRow<kAdd>(x + r * cols, weight, rstd[r], dy + r * cols,
                                 addend + r * cols, dx + r * cols, pb, cols);
      }
    }
  };
  const int64_t blocks_per_task =
      std::max<int64_t>(1, kMinFloatsPerTask / (kRowsPerBlock * cols));
  ParallelFor(blocks, blocks_per_task, block_body);

  // dweight = partial_0 + partial_1 + ... in block order; columns are
  // independent, so splitting them over threads changes nothing.
  const int64_t cols_per_task =
      std::max<int64_t>(1, kMinFloatsPerTask / blocks);
  ParallelFor(cols, cols_per_task, [&](int64_t begin, int64_t end) HWY_ATTR {
    ForEachVector(end - begin, [&](auto d, size_t offset) HWY_ATTR {
      const size_t i = begin + offset;
      auto total = hn::LoadU(d, partial.get() + i);
      for (size_t b = 1; b < blocks; ++b) {
        total = hn::Add(total, hn::LoadU(d, partial.get() + b * cols + i));
      }
      hn::StoreU(total, d, dweight + i);
    });
  });
}

void RmsNormBackward(const float* HWY_RESTRICT x,
                     const float* HWY_RESTRICT weight,
                     const float* HWY_RESTRICT rstd,
                     const float* HWY_RESTRICT dy, float* HWY_RESTRICT dx,
                     float* HWY_RESTRICT dweight, size_t rows, size_t cols) {
  RmsNormBackwardRows<false>(x, weight, rstd, dy, x, dx, dweight, rows, cols);
}

void AddRmsNormBackward(const float* HWY_RESTRICT sum,
                        const float* HWY_RESTRICT weight,
                        const float* HWY_RESTRICT rstd,
                        const float* HWY_RESTRICT dy,
                        const float* HWY_RESTRICT dsum, float* HWY_RESTRICT dh,
                        float* HWY_RESTRICT dweight, size_t rows, size_t cols) {
  RmsNormBackwardRows<true>(sum, weight, rstd, dy, dsum, dh, dweight, rows,
                            cols);
}

const char* RmsNormTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rotor {
namespace kernels {

HWY_EXPORT(RmsNormForward);
HWY_EXPORT(RmsNormBackward);
HWY_EXPORT(AddRmsNormForward);
HWY_EXPORT(AddRmsNormBackward);
HWY_EXPORT(RmsNormTarget);

void RmsNormForward(const float* x, const float* weight, float* y, float* rstd,
                    size_t rows, size_t cols, float eps) {
  HWY_DYNAMIC_DISPATCH(RmsNormForward)(x, weight, y, rstd, rows, cols, eps);
}
void RmsNormBackward(const float* x, const float* weight, const float* rstd,
                     const float* dy, float* dx, float* dweight, size_t rows,
                     size_t cols) {
  HWY_DYNAMIC_DISPATCH(RmsNormBackward)
  (x, weight, rstd, dy, dx, dweight, rows, cols);
}
void AddRmsNormForward(const float* x, const float* residual,
                       const float* weight, float* sum, float* y, float* rstd,
                       size_t rows, size_t cols, float eps) {
  HWY_DYNAMIC_DISPATCH(AddRmsNormForward)
  (x, residual, weight, sum, y, rstd, rows, cols, eps);
}
void AddRmsNormBackward(const float* sum, const float* weight,
                        const float* rstd, const float* dy, const float* dsum,
                        float* dh, float* dweight, size_t rows, size_t cols) {
  HWY_DYNAMIC_DISPATCH(AddRmsNormBackward)
  (sum, weight, rstd, dy, dsum, dh, dweight, rows, cols);
}
const char* RmsNormTarget() { return HWY_DYNAMIC_DISPATCH(RmsNormTarget)(); }

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

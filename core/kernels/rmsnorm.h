// RMSNorm over the last dimension of a row-major [rows, cols] float array:
// Highway kernels with dynamic dispatch (core/kernels/rmsnorm.cc), parallel
// over rows. Scalar references: core/kernels/rmsnorm_scalar.h.
//
// Arrays are contiguous (row r starts at r * cols) and may be unaligned;
// outputs must not alias inputs.
#ifndef ROTOR_CORE_KERNELS_RMSNORM_H_
#define ROTOR_CORE_KERNELS_RMSNORM_H_

#include <cstddef>

namespace rotor {
namespace kernels {

// x: [rows, cols], weight: [cols] -> y: [rows, cols], rstd: [rows]
//   rstd[r] = 1 / sqrt(mean_i x[r, i]^2 + eps)   (mean of no values = 0)
//   y[r, i] = x[r, i] * rstd[r] * weight[i]
// rstd is the state the backward pass needs.
void RmsNormForward(const float* x, const float* weight, float* y, float* rstd,
                    size_t rows, size_t cols, float eps);

// Given dy = dL/dy and the forward's rstd, writes
// clang-format off
//   dx[r, i]   = rstd[r] * weight[i] * dy[r, i]
//                - rstd[r]^3 / cols * x[r, i] * sum_j dy[r, j] weight[j] x[r, j]
//   dweight[i] = sum_r dy[r, i] * x[r, i] * rstd[r]
// clang-format on
// dweight is a sum across rows: rows are grouped in fixed blocks of 32 whose
// partial sums are computed in parallel and then added in block order, so
// the result is bitwise the same for any thread count.
void RmsNormBackward(const float* x, const float* weight, const float* rstd,
                     const float* dy, float* dx, float* dweight, size_t rows,
                     size_t cols);

// The residual add of a pre-norm block fused with the norm that follows it:
// x, residual: [rows, cols], weight: [cols] -> sum, y: [rows, cols],
// rstd: [rows]
//   sum[r, i] = x[r, i] + residual[r, i]
//   y, rstd   = RmsNormForward(sum)
// Each row of sum is written and normed while it is in cache; the bits are
// those of the add followed by RmsNormForward.
void AddRmsNormForward(const float* x, const float* residual,
                       const float* weight, float* sum, float* y, float* rstd,
                       size_t rows, size_t cols, float eps);

// Its backward, given dy = dL/dy and dsum = dL/dsum from the sum's other
// users (the residual stream), writes the gradient of the sum, which is
// also that of x and of residual:
//   dh[r, i]   = dsum[r, i] + (RmsNormBackward's dx[r, i] at x = sum)
//   dweight[i] = RmsNormBackward's dweight
// in one pass, bitwise RmsNormBackward followed by the add.
void AddRmsNormBackward(const float* sum, const float* weight,
                        const float* rstd, const float* dy, const float* dsum,
                        float* dh, float* dweight, size_t rows, size_t cols);

// Name of the Highway target this family dispatches to.
const char* RmsNormTarget();

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_RMSNORM_H_

// Softmax and log-softmax over the last dimension of a row-major
// [rows, cols] float array: Highway kernels with dynamic dispatch
// (core/kernels/softmax.cc), parallel over rows. Scalar references:
// core/kernels/softmax_scalar.h.
//
// All arrays are contiguous [rows, cols] (row r starts at r * cols) and may
// be unaligned. Forward outputs may alias their input exactly; backward
// outputs must not alias anything.
#ifndef ROTOR_CORE_KERNELS_SOFTMAX_H_
#define ROTOR_CORE_KERNELS_SOFTMAX_H_

#include <cstddef>

namespace rotor {
namespace kernels {

// y[r, i] = exp(x[r, i] - m_r) / sum_j exp(x[r, j] - m_r),  m_r = max_j x[r, j]
// Subtracting the row maximum keeps exp <= 1: no overflow for any finite
// input ([1000, 0] gives [1, 0]); -inf entries give 0. A row of only -inf
// gives NaN (0/0), as in PyTorch, and a NaN entry makes its row NaN.
void SoftmaxForward(const float* x, float* y, size_t rows, size_t cols);

// Given y = softmax(x) and dy = dL/dy, writes dL/dx:
//   dx[r, i] = y[r, i] * (dy[r, i] - sum_j dy[r, j] * y[r, j])
void SoftmaxBackward(const float* y, const float* dy, float* dx, size_t rows,
                     size_t cols);

// y[r, i] = x[r, i] - lse_r,  lse_r = m_r + log(sum_j exp(x[r, j] - m_r))
void LogSoftmaxForward(const float* x, float* y, size_t rows, size_t cols);

// Given y = log_softmax(x) and dy, writes dL/dx:
//   dx[r, i] = dy[r, i] - exp(y[r, i]) * sum_j dy[r, j]
void LogSoftmaxBackward(const float* y, const float* dy, float* dx, size_t rows,
                        size_t cols);

// Name of the Highway target this family dispatches to ("AVX3", "AVX2", ...).
const char* SoftmaxTarget();

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_SOFTMAX_H_

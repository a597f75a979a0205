// Scalar references for core/kernels/softmax.h, templated on the element type
// (float, double, std::complex<double>). Same formulas, one row at a time.
#ifndef ROTOR_CORE_KERNELS_SOFTMAX_SCALAR_H_
#define ROTOR_CORE_KERNELS_SOFTMAX_SCALAR_H_

#include <cmath>
#include <cstddef>

#include "core/kernels/scalar_math.h"

namespace rotor {
namespace kernels {

template <typename T>
void SoftmaxForwardRef(const T* x, T* y, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    const T shift = MaxRealRef(xr, cols);
    T sum = 0;
    for (size_t i = 0; i < cols; ++i) {
      yr[i] = std::exp(xr[i] - shift);
      sum += yr[i];
    }
    for (size_t i = 0; i < cols; ++i) yr[i] /= sum;
  }
}

template <typename T>
void SoftmaxBackwardRef(const T* y, const T* dy, T* dx, size_t rows,
                        size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const T* yr = y + r * cols;
    const T* dyr = dy + r * cols;
    T dot = 0;
    for (size_t i = 0; i < cols; ++i) dot += dyr[i] * yr[i];
    for (size_t i = 0; i < cols; ++i) dx[r * cols + i] = yr[i] * (dyr[i] - dot);
  }
}

template <typename T>
void LogSoftmaxForwardRef(const T* x, T* y, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T shift = MaxRealRef(xr, cols);
    T sum = 0;
    for (size_t i = 0; i < cols; ++i) sum += std::exp(xr[i] - shift);
    const T logsumexp = shift + std::log(sum);
    for (size_t i = 0; i < cols; ++i) y[r * cols + i] = xr[i] - logsumexp;
  }
}

template <typename T>
void LogSoftmaxBackwardRef(const T* y, const T* dy, T* dx, size_t rows,
                           size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const T* yr = y + r * cols;
    const T* dyr = dy + r * cols;
    T sum = 0;
    for (size_t i = 0; i < cols; ++i) sum += dyr[i];
    for (size_t i = 0; i < cols; ++i) {
      dx[r * cols + i] = dyr[i] - std::exp(yr[i]) * sum;
    }
  }
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_SOFTMAX_SCALAR_H_

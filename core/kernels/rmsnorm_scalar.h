// Scalar references for core/kernels/rmsnorm.h, templated on the element type
// (float, double, std::complex<double>).
#ifndef ROTOR_CORE_KERNELS_RMSNORM_SCALAR_H_
#define ROTOR_CORE_KERNELS_RMSNORM_SCALAR_H_

#include <cmath>
#include <cstddef>

namespace rotor {
namespace kernels {

template <typename T>
void RmsNormForwardRef(const T* x, const T* weight, T* y, T* rstd, size_t rows,
                       size_t cols, double eps) {
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T sum_sq = 0;
    for (size_t i = 0; i < cols; ++i) sum_sq += xr[i] * xr[i];
    const T mean_sq = cols == 0 ? T(0) : sum_sq / T(double(cols));
    rstd[r] = T(1) / std::sqrt(mean_sq + T(eps));
    for (size_t i = 0; i < cols; ++i)
      y[r * cols + i] = xr[i] * rstd[r] * weight[i];
  }
}

template <typename T>
void RmsNormBackwardRef(const T* x, const T* weight, const T* rstd, const T* dy,
                        T* dx, T* dweight, size_t rows, size_t cols) {
  for (size_t i = 0; i < cols; ++i) dweight[i] = T(0);
  for (size_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    T dot = 0;  // sum_j dy_j w_j x_j
    for (size_t i = 0; i < cols; ++i) dot += dyr[i] * weight[i] * xr[i];
    const T s = rstd[r];
    const T k = s * s * s * dot / T(double(cols));
    for (size_t i = 0; i < cols; ++i) {
      dx[r * cols + i] = s * weight[i] * dyr[i] - k * xr[i];
      dweight[i] += dyr[i] * xr[i] * s;
    }
  }
}

template <typename T>
void AddRmsNormForwardRef(const T* x, const T* residual, const T* weight,
                          T* sum, T* y, T* rstd, size_t rows, size_t cols,
                          double eps) {
  for (size_t i = 0; i < rows * cols; ++i) sum[i] = x[i] + residual[i];
  RmsNormForwardRef(sum, weight, y, rstd, rows, cols, eps);
}

template <typename T>
void AddRmsNormBackwardRef(const T* sum, const T* weight, const T* rstd,
                           const T* dy, const T* dsum, T* dh, T* dweight,
                           size_t rows, size_t cols) {
  RmsNormBackwardRef(sum, weight, rstd, dy, dh, dweight, rows, cols);
  for (size_t i = 0; i < rows * cols; ++i) dh[i] = dsum[i] + dh[i];
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_RMSNORM_SCALAR_H_

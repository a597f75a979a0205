// Scalar reference for core/kernels/adamw.h, templated on the element type
// (float, double).
#ifndef ROTOR_CORE_KERNELS_ADAMW_SCALAR_H_
#define ROTOR_CORE_KERNELS_ADAMW_SCALAR_H_

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/kernels/adamw.h"

namespace rotor {
namespace kernels {

// One array of AdamWUpdate, decay set (hyper.weight_decay applies).
template <typename T>
void AdamWUpdateRef(T* param, const T* grad, T* m, T* v, size_t n,
                    const AdamWHyperparams& hyper, int64_t step) {
  const T lr = hyper.lr, beta1 = hyper.beta1, beta2 = hyper.beta2;
  const T bias_correction1 = T(1) - std::pow(beta1, T(step));
  const T bias_correction2 = T(1) - std::pow(beta2, T(step));
  const T step_size = lr / bias_correction1;
  const T bias_correction2_sqrt = std::sqrt(bias_correction2);
  for (size_t i = 0; i < n; ++i) {
    const T g = T(hyper.grad_scale) * grad[i];
    param[i] *= T(1) - lr * T(hyper.weight_decay);
    m[i] = beta1 * m[i] + (T(1) - beta1) * g;
    v[i] = beta2 * v[i] + (T(1) - beta2) * g * g;
    const T denominator =
        std::sqrt(v[i]) / bias_correction2_sqrt + T(hyper.eps);
    param[i] -= step_size * m[i] / denominator;
  }
}

// SumOfSquaresOfSpans in element order, in double.
inline double SumOfSquaresOfSpansRef(const FloatSpan* spans, size_t count) {
  double sum = 0.0;
  for (size_t s = 0; s < count; ++s) {
    for (size_t i = 0; i < spans[s].n; ++i) {
      sum += static_cast<double>(spans[s].data[i]) * spans[s].data[i];
    }
  }
  return sum;
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ADAMW_SCALAR_H_

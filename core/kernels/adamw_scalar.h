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

template <typename T>
void AdamWUpdateRef(T* param, const T* grad, T* m, T* v, size_t n,
                    const AdamWHyperparams& hyper, int64_t step) {
  const T lr = hyper.lr, beta1 = hyper.beta1, beta2 = hyper.beta2;
  const T bias_correction1 = T(1) - std::pow(beta1, T(step));
  const T bias_correction2 = T(1) - std::pow(beta2, T(step));
  const T step_size = lr / bias_correction1;
  const T bias_correction2_sqrt = std::sqrt(bias_correction2);
  for (size_t i = 0; i < n; ++i) {
    param[i] *= T(1) - lr * T(hyper.weight_decay);
    m[i] = beta1 * m[i] + (T(1) - beta1) * grad[i];
    v[i] = beta2 * v[i] + (T(1) - beta2) * grad[i] * grad[i];
    const T denominator =
        std::sqrt(v[i]) / bias_correction2_sqrt + T(hyper.eps);
    param[i] -= step_size * m[i] / denominator;
  }
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ADAMW_SCALAR_H_

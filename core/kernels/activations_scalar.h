// Scalar references for core/kernels/activations.h, templated on the element
// type (float, double, std::complex<double>).
#ifndef ROTOR_CORE_KERNELS_ACTIVATIONS_SCALAR_H_
#define ROTOR_CORE_KERNELS_ACTIVATIONS_SCALAR_H_

#include <cstddef>

#include "core/kernels/scalar_math.h"

namespace rotor {
namespace kernels {

template <typename T>
void SiluForwardRef(const T* x, T* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] * SigmoidRef(x[i]);
}

template <typename T>
void SiluBackwardRef(const T* x, const T* dy, T* dx, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const T s = SigmoidRef(x[i]);
    dx[i] = dy[i] * s * (T(1) + x[i] * (T(1) - s));
  }
}

template <typename T>
void SwiGluForwardRef(const T* gate, const T* up, T* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = gate[i] * SigmoidRef(gate[i]) * up[i];
}

template <typename T>
void SwiGluBackwardRef(const T* gate, const T* up, const T* dout, T* dgate,
                       T* dup, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const T s = SigmoidRef(gate[i]);
    dgate[i] = dout[i] * up[i] * s * (T(1) + gate[i] * (T(1) - s));
    dup[i] = dout[i] * gate[i] * s;
  }
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ACTIVATIONS_SCALAR_H_

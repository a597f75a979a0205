// Scalar references for core/kernels/vector_ops.h, templated on the element
// type so tests can run them in double.
#ifndef ROTOR_CORE_KERNELS_VECTOR_OPS_SCALAR_H_
#define ROTOR_CORE_KERNELS_VECTOR_OPS_SCALAR_H_

#include <cstddef>

namespace rotor {
namespace kernels {

template <typename T>
void AxpyRef(T alpha, const T* x, T* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

template <typename T>
void ScaleRef(T alpha, T* x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] *= alpha;
}

template <typename T>
void AddRef(const T* a, const T* b, T* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void SubRef(const T* a, const T* b, T* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
}

template <typename T>
void DivRef(const T* a, const T* b, T* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] / b[i];
}

template <typename T>
void MulRef(const T* a, const T* b, T* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_VECTOR_OPS_SCALAR_H_

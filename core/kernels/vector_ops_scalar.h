// Scalar references for core/kernels/vector_ops.h, templated on the element
// type so tests can run them in double.
#ifndef ROTOR_CORE_KERNELS_VECTOR_OPS_SCALAR_H_
#define ROTOR_CORE_KERNELS_VECTOR_OPS_SCALAR_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/kernels/convert_scalar.h"

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

// ExpForBf16's twin, float only: the same steps (simd-inl.h), with fused
// multiply-adds as on targets that have them.
inline float ExpForBf16Ref(float x) {
  const float t = std::min(x * 1.44269504088896341f, 127.0f);
  if (!(t >= -125.0f)) return 0.0f;   // and NaN, as the clamped vectors
  const float n = std::nearbyint(t);  // to nearest, ties to even
  const float f = t - n;
  float p = 0.009570099413394928f;
  p = std::fma(p, f, 0.05591785907745361f);
  p = std::fma(p, f, 0.240247443318367f);
  p = std::fma(p, f, 0.6931217908859253f);
  p = std::fma(p, f, 0.9999992847442627f);
  // 2^n into the exponent: n * 2^23 added to the bits (mod 2^32, as the
  // vectors' integer lanes).
  return FloatFromBits(BitsOfFloat(p) +
                       static_cast<uint32_t>(static_cast<int32_t>(n)) *
                           (1u << 23));
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_VECTOR_OPS_SCALAR_H_

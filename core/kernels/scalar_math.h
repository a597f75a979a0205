// Helpers for the templated scalar references (*_scalar.h). The references
// run on float (what the Highway kernels are tested against), double and
// std::complex<double> (complex-step derivatives in tests), so anything that
// compares values (a maximum, a sign test) compares real parts: for a complex
// x + ih the branch taken is the one for x, and the tiny imaginary part only
// carries the derivative.
#ifndef ROTOR_CORE_KERNELS_SCALAR_MATH_H_
#define ROTOR_CORE_KERNELS_SCALAR_MATH_H_

#include <cmath>
#include <complex>
#include <cstddef>

namespace rotor {
namespace kernels {

inline float RealPart(float x) { return x; }
inline double RealPart(double x) { return x; }
inline double RealPart(const std::complex<double>& x) { return x.real(); }

// The real part of max_i x[i] as a T (-inf for n == 0): softmax-style
// kernels subtract it as a constant shift for numerical stability.
template <typename T>
T MaxRealRef(const T* x, size_t n) {
  auto max = -HUGE_VAL;
  for (size_t i = 0; i < n; ++i) {
    if (RealPart(x[i]) > max) max = RealPart(x[i]);
  }
  return T(max);
}

// sigmoid(x) = 1 / (1 + exp(-x)), in the form that never overflows:
// with e = exp(-|x|), sigmoid = 1 / (1 + e) for x >= 0, e / (1 + e) else.
template <typename T>
T SigmoidRef(T x) {
  const bool non_negative = RealPart(x) >= 0;
  const T e = std::exp(non_negative ? -x : x);
  return (non_negative ? T(1) : e) / (T(1) + e);
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_SCALAR_MATH_H_

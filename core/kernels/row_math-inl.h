// Per-target helpers for the row-wise kernels (softmax, cross entropy,
// activations): sums of exponentials and the sigmoid. Re-included once per
// target by foreach_target.h, hence the toggle guard. Include after
// "hwy/highway.h" and "hwy/contrib/math/math-inl.h".
#if defined(ROTOR_CORE_KERNELS_ROW_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ROTOR_CORE_KERNELS_ROW_MATH_INL_H_
#undef ROTOR_CORE_KERNELS_ROW_MATH_INL_H_
#else
#define ROTOR_CORE_KERNELS_ROW_MATH_INL_H_
#endif

#include <stddef.h>

#include "core/kernels/simd-inl.h"
#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// e^x, lane by lane. hn::Exp alone returns 0 for NaN (and below -104, so
// -inf gives exactly 0); keeping NaN as NaN lets a diverged value show up in
// the loss instead of vanishing from a softmax.
template <class D>
HWY_INLINE hn::Vec<D> ExpKeepNaN(D d, hn::Vec<D> x) {
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Exp(d, x));
}

// exp(x - shift), lane by lane.
template <class D>
HWY_INLINE hn::Vec<D> ExpShifted(D d, hn::Vec<D> x, float shift) {
  return ExpKeepNaN(d, hn::Sub(x, hn::Set(d, shift)));
}

// Returns sum_i exp(x[i] - shift); with kStore, also writes each term to
// y[i] (y may be x). Meanwhile prefetches the n floats at `prefetch` (the
// next row; exp is slow enough to hide its memory reads). Full vectors
// first, then a one-lane tail, so no masked loads are needed.
template <bool kStore>
HWY_INLINE float SumExpShifted(const float* x, float* y, size_t n, float shift,
                               const float* prefetch) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto sum = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hwy::Prefetch(prefetch + i);
    const auto e = ExpShifted(d, hn::LoadU(d, x + i), shift);
    if (kStore) hn::StoreU(e, d, y + i);
    sum = hn::Add(sum, e);
  }
  float total = ReduceSum(d, sum);
  const hn::CappedTag<float, 1> d1;
  for (; i < n; ++i) {
    const auto e = ExpShifted(d1, hn::LoadU(d1, x + i), shift);
    if (kStore) hn::StoreU(e, d1, y + i);
    total += hn::GetLane(e);
  }
  return total;
}

// sum_i x[i].
HWY_INLINE float Sum(const float* x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto sum = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) sum = hn::Add(sum, hn::LoadU(d, x + i));
  float total = ReduceSum(d, sum);
  for (; i < n; ++i) total += x[i];
  return total;
}

// sigmoid(x) = 1 / (1 + exp(-x)), evaluated as s / (1 + e) with
// e = exp(-|x|) <= 1 and s = 1 (x >= 0) or e (x < 0): exp never overflows
// and hn::Exp stays inside its valid range for every x.
template <class D>
HWY_INLINE hn::Vec<D> Sigmoid(D d, hn::Vec<D> x) {
  const auto e = hn::Exp(d, hn::Neg(hn::Abs(x)));
  const auto one = hn::Set(d, 1.0f);
  const auto numerator = hn::IfThenElse(hn::Ge(x, hn::Zero(d)), one, e);
  return hn::Div(numerator, hn::Add(one, e));
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#endif  // ROTOR_CORE_KERNELS_ROW_MATH_INL_H_ toggle

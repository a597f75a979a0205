// Per-target SIMD helpers shared by rotor's Highway kernels. Re-included once
// per target by foreach_target.h, hence the toggle guard (Highway's "-inl.h"
// convention). Include after "hwy/highway.h".
#if defined(ROTOR_CORE_KERNELS_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ROTOR_CORE_KERNELS_SIMD_INL_H_
#undef ROTOR_CORE_KERNELS_SIMD_INL_H_
#else
#define ROTOR_CORE_KERNELS_SIMD_INL_H_
#endif

#include <math.h>
#include <stddef.h>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Strip-mining: calls body(d, i) for i = 0, N, 2N, ... with the full vector
// tag d, then for the remaining elements one at a time with a one-lane tag.
// The same body handles both, so the tail needs no masked loads (which fault
// on SSE4/AVX2 in Highway 1.0.3) and no padding. body must be a generic
// lambda marked HWY_ATTR that loads and stores with LoadU/StoreU.
template <class Body>
HWY_INLINE void ForEachVector(size_t n, const Body& body) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) body(d, i);
  const hn::CappedTag<float, 1> d1;
  for (; i < n; ++i) body(d1, i);
}

// Sum of the lanes of v, as a scalar.
template <class D>
HWY_INLINE float ReduceSum(D d, hn::Vec<D> v) {
  return hn::GetLane(hn::SumOfLanes(d, v));
}

// Largest lane of v, as a scalar.
template <class D>
HWY_INLINE float ReduceMax(D d, hn::Vec<D> v) {
  return hn::GetLane(hn::MaxOfLanes(d, v));
}

// sum_i x[i] * y[i], accumulated in float in vector-width partial sums.
HWY_INLINE float Dot(const float* HWY_RESTRICT x, const float* HWY_RESTRICT y,
                     size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto sum0 = hn::Zero(d);
  auto sum1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    sum0 = hn::MulAdd(hn::LoadU(d, x + i), hn::LoadU(d, y + i), sum0);
    sum1 = hn::MulAdd(hn::LoadU(d, x + i + lanes), hn::LoadU(d, y + i + lanes),
                      sum1);
  }
  for (; i + lanes <= n; i += lanes) {
    sum0 = hn::MulAdd(hn::LoadU(d, x + i), hn::LoadU(d, y + i), sum0);
  }
  float sum = ReduceSum(d, hn::Add(sum0, sum1));
  for (; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

// sum_i x[i] * x[i].
HWY_INLINE float SumOfSquares(const float* HWY_RESTRICT x, size_t n) {
  return Dot(x, x, n);
}

// max_i x[i] (-inf for n == 0).
HWY_INLINE float Max(const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  auto max = hn::Set(d, -HUGE_VALF);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) max = hn::Max(max, hn::LoadU(d, x + i));
  float result = ReduceMax(d, max);
  for (; i < n; ++i) result = x[i] > result ? x[i] : result;
  return result;
}

// exp(x) to bfloat16's needs (vector_ops.h ExpForBf16; scalar twin
// ExpForBf16Ref in vector_ops_scalar.h): exp(x) = 2^t, t = x log2(e), as
// 2^n 2^f with n = round(t) and f = t - n in [-1/2, 1/2], 2^f by a degree-4
// polynomial fitted for relative error (2.6e-6 on its range) and 2^n added
// to the exponent's bits. About half the operations of hn::Exp (degree 6,
// two-part reduction, two scalings). Relative error below 2^-17 for x in
// [-86.5, 0], finite up to x = 88; 0 where t < -125, x below about -86.6
// (and for -inf). t is clamped to [-126, 127] first, so the exponent's
// integer arithmetic stays in range for any input.
template <class D>
HWY_INLINE hn::Vec<D> ExpForBf16(D d, hn::Vec<D> x) {
  const hn::RebindToSigned<D> di;
  const auto t = hn::Min(hn::Max(hn::Mul(x, hn::Set(d, 1.44269504088896341f)),
                                 hn::Set(d, -126.0f)),
                         hn::Set(d, 127.0f));
  const auto n = hn::Round(t);
  const auto f = hn::Sub(t, n);
  auto p = hn::Set(d, 0.009570099413394928f);
  p = hn::MulAdd(p, f, hn::Set(d, 0.05591785907745361f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.240247443318367f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.6931217908859253f));
  p = hn::MulAdd(p, f, hn::Set(d, 0.9999992847442627f));
  const auto scaled = hn::BitCast(
      d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::ConvertTo(di, n))));
  return hn::IfThenZeroElse(hn::Lt(t, hn::Set(d, -125.0f)), scaled);
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#endif  // ROTOR_CORE_KERNELS_SIMD_INL_H_ toggle

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

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#endif  // ROTOR_CORE_KERNELS_SIMD_INL_H_ toggle

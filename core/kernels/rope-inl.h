// Per-target RoPE row rotations shared by the RoPE kernels (rope.cc) and the
// attention kernels, which rotate query and key tiles as they load them
// (attention.cc). Re-included once per target by foreach_target.h, hence the
// toggle guard (Highway's "-inl.h" convention). Include after
// "hwy/highway.h". The math: core/kernels/rope.h and docs/rope.md.
#if defined(ROTOR_CORE_KERNELS_ROPE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ROTOR_CORE_KERNELS_ROPE_INL_H_
#undef ROTOR_CORE_KERNELS_ROPE_INL_H_
#else
#define ROTOR_CORE_KERNELS_ROPE_INL_H_
#endif

#include <stddef.h>

#include <cstring>

#include "core/kernels/rope.h"
#include "core/kernels/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// (y0, y1) = R(theta) (x0, x1), or R(-theta) = R(theta)^T when kInverse:
//   forward:  y0 = x0 c - x1 s,   y1 = x1 c + x0 s
//   inverse:  y0 = x0 c + x1 s,   y1 = x1 c - x0 s
// where c = a cos theta and s = a sin theta come from the table.
template <bool kInverse, class V>
HWY_INLINE void Rotate(V c, V s, V x0, V x1, V& y0, V& y1) {
  if (kInverse) {
    y0 = hn::MulAdd(x1, s, hn::Mul(x0, c));
    y1 = hn::NegMulAdd(x0, s, hn::Mul(x1, c));
  } else {
    y0 = hn::NegMulAdd(x1, s, hn::Mul(x0, c));
    y1 = hn::MulAdd(x0, s, hn::Mul(x1, c));
  }
}

// One row, split-half layout: pair i is (x[i], x[i + half]), half = r/2.
// cos_sin is the table row [cos 0..half-1, sin 0..half-1]. x and y may be
// the same row.
template <bool kInverse, bool kAccumulate>
HWY_INLINE void RotateSplitHalf(const float* cos_sin, size_t half,
                                const float* x, float* y) {
  const float* sin = cos_sin + half;
  ForEachVector(half, [&](auto d, size_t i) HWY_ATTR {
    const auto c = hn::LoadU(d, cos_sin + i);
    const auto s = hn::LoadU(d, sin + i);
    const auto x0 = hn::LoadU(d, x + i);
    const auto x1 = hn::LoadU(d, x + half + i);
    auto y0 = x0;
    auto y1 = x1;
    Rotate<kInverse>(c, s, x0, x1, y0, y1);
    if (kAccumulate) {
      y0 = hn::Add(hn::LoadU(d, y + i), y0);
      y1 = hn::Add(hn::LoadU(d, y + half + i), y1);
    }
    hn::StoreU(y0, d, y + i);
    hn::StoreU(y1, d, y + half + i);
  });
}

// One row, interleaved layout: pair i is (x[2i], x[2i + 1]). Whole vectors
// de-interleave with LoadInterleaved2 (even lanes -> x0, odd -> x1); the
// tail takes one pair at a time with one-lane loads (no masked loads, which
// may fault on SSE4/AVX2 in Highway 1.0.3).
template <bool kInverse, bool kAccumulate>
HWY_INLINE void RotateInterleaved(const float* cos_sin, size_t half,
                                  const float* x, float* y) {
  const float* sin = cos_sin + half;
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= half; i += lanes) {
    const auto c = hn::LoadU(d, cos_sin + i);
    const auto s = hn::LoadU(d, sin + i);
    auto x0 = hn::Zero(d);
    auto x1 = hn::Zero(d);
    hn::LoadInterleaved2(d, x + 2 * i, x0, x1);
    auto y0 = x0;
    auto y1 = x1;
    Rotate<kInverse>(c, s, x0, x1, y0, y1);
    if (kAccumulate) {
      auto old0 = hn::Zero(d);
      auto old1 = hn::Zero(d);
      hn::LoadInterleaved2(d, y + 2 * i, old0, old1);
      y0 = hn::Add(old0, y0);
      y1 = hn::Add(old1, y1);
    }
    hn::StoreInterleaved2(y0, y1, d, y + 2 * i);
  }
  const hn::CappedTag<float, 1> d1;
  for (; i < half; ++i) {
    const auto c = hn::LoadU(d1, cos_sin + i);
    const auto s = hn::LoadU(d1, sin + i);
    const auto x0 = hn::LoadU(d1, x + 2 * i);
    const auto x1 = hn::LoadU(d1, x + 2 * i + 1);
    auto y0 = x0;
    auto y1 = x1;
    Rotate<kInverse>(c, s, x0, x1, y0, y1);
    if (kAccumulate) {
      y0 = hn::Add(hn::LoadU(d1, y + 2 * i), y0);
      y1 = hn::Add(hn::LoadU(d1, y + 2 * i + 1), y1);
    }
    hn::StoreU(y0, d1, y + 2 * i);
    hn::StoreU(y1, d1, y + 2 * i + 1);
  }
}

// Channels [r, head_dim) pass through: y = x (nothing to do in place), or
// y += x when accumulating a gradient.
template <bool kAccumulate>
HWY_INLINE void PassThrough(const float* x, float* y, size_t n) {
  if (kAccumulate) {
    ForEachVector(n, [&](auto d, size_t i) HWY_ATTR {
      hn::StoreU(hn::Add(hn::LoadU(d, y + i), hn::LoadU(d, x + i)), d, y + i);
    });
  } else if (x != y && n > 0) {
    std::memcpy(y, x, n * sizeof(float));
  }
}

// y = R(theta) x for one row of head_dim = 2 * half + pass channels in
// `layout` (the first 2 * half rotated, the last `pass` copied); cos_sin is
// the position's table row. x and y must not overlap.
template <bool kInverse>
HWY_INLINE void RotateRow(RopeLayout layout, const float* cos_sin, size_t half,
                          size_t pass, const float* x, float* y) {
  if (layout == RopeLayout::kSplitHalf) {
    RotateSplitHalf<kInverse, /*kAccumulate=*/false>(cos_sin, half, x, y);
  } else {
    RotateInterleaved<kInverse, /*kAccumulate=*/false>(cos_sin, half, x, y);
  }
  PassThrough</*kAccumulate=*/false>(x + 2 * half, y + 2 * half, pass);
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#endif  // ROTOR_CORE_KERNELS_ROPE_INL_H_ toggle

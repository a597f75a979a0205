// Highway implementation of core/kernels/convert.h (file anatomy as in
// core/kernels/vector_ops.cc). Every conversion is integer work on 32-bit
// lanes, one lane per element (but for one exact float product in F16ToF32):
// 16-bit patterns are widened with PromoteTo on load and narrowed with
// DemoteTo on store. Highway 1.0.3's own float16 and
// bfloat16 conversions are not used: its emulated half -> float (targets
// without F16C: SSE4, SSSE3, SCALAR) turns inf and NaN into finite numbers,
// and its float -> bfloat16 truncates instead of rounding.
//
// The decoders write large outputs with streaming stores (StoreConverted
// below): converting a bfloat16 model file into float32 tensors that are
// not read right away took about 20% less time with them.
#include "core/kernels/convert.h"

#include <stdint.h>

#include "core/kernels/row_split.h"
#include "core/parallel.h"
#include "hwy/cache_control.h"  // FlushStream

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/convert.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target helpers, after highway.h:
#include "core/kernels/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// The 16-bit patterns at p, one per lane of the float tag d, widened to
// 32-bit lanes (zero-extended).
template <class D>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> LoadWidened(D d,
                                                        const uint16_t* p) {
  const hn::Rebind<uint16_t, D> d16;
  return hn::PromoteTo(hn::RebindToUnsigned<D>(), hn::LoadU(d16, p));
}

// Decoded outputs of more floats than this (1 MiB, about a core's L2 cache
// on current x86 CPUs) are written with streaming stores. Loading SmolLM2-135M
// was fastest with this bound: with 4 MiB its MLP matrices (3.5 MB as
// float32) were not streamed, and lowering it to 256 KiB gained nothing.
constexpr size_t kStreamingFloats = size_t{1} << 18;

// out[i] = convert(d, i) for i in [begin, end), where convert is a generic
// lambda (HWY_ATTR) returning the float vector of elements i .. i +
// Lanes(d) - 1, called with the full vector tag and, like ForEachVector's
// tail, with a one-lane tag. With `streaming`, full vectors are stored with
// Stream: a non-temporal store sends the line to memory without first
// reading it into the cache, as an ordinary store must, which saves a third
// of the memory traffic of a decode whose output is not read back soon.
// Stream wants an address aligned to the vector, so the elements before the
// first aligned one take the one-lane path, and FlushStream orders the
// streamed stores before whatever this thread stores next (ParallelFor's
// join then publishes them to the caller).
template <class Convert>
HWY_INLINE void StoreConverted(float* HWY_RESTRICT out, size_t begin,
                               size_t end, bool streaming,
                               const Convert& convert) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const size_t lanes = hn::Lanes(d);
  size_t i = begin;
  if (streaming) {
    const uintptr_t vector_bytes = lanes * sizeof(float);
    for (; i < end && reinterpret_cast<uintptr_t>(out + i) % vector_bytes != 0;
         ++i) {
      hn::StoreU(convert(d1, i), d1, out + i);
    }
    for (; i + lanes <= end; i += lanes) hn::Stream(convert(d, i), d, out + i);
    hwy::FlushStream();
  }
  for (; i + lanes <= end; i += lanes) hn::StoreU(convert(d, i), d, out + i);
  for (; i < end; ++i) hn::StoreU(convert(d1, i), d1, out + i);
}

// bfloat16 -> float32: the 16 bits move to the top half.
void BF16ToF32(const uint16_t* HWY_RESTRICT in, float* HWY_RESTRICT out,
               size_t n) {
  const bool streaming = n > kStreamingFloats;
  ParallelFor(n, kMinFloatsPerTask, [&](int64_t begin, int64_t end) HWY_ATTR {
    StoreConverted(out, begin, end, streaming, [&](auto d, size_t i) HWY_ATTR {
      return hn::BitCast(d, hn::ShiftLeft<16>(LoadWidened(d, in + i)));
    });
  });
}

// IEEE half -> float32, as F16ToF32Ref (convert_scalar.h) but branch-free:
// all three results are computed and the exponent picks one. A subnormal
// m * 2^-24 (0 < m < 2^10) is found in float arithmetic instead of
// normalising m bit by bit: m converts to float exactly and the product is
// a normal float, so it is exact too (and 0 gives +0).
void F16ToF32(const uint16_t* HWY_RESTRICT in, float* HWY_RESTRICT out,
              size_t n) {
  const bool streaming = n > kStreamingFloats;
  ParallelFor(n, kMinFloatsPerTask, [&](int64_t begin, int64_t end) HWY_ATTR {
    StoreConverted(out, begin, end, streaming, [&](auto d, size_t i) HWY_ATTR {
      const hn::RebindToUnsigned<decltype(d)> du;
      const hn::RebindToSigned<decltype(d)> di;
      const auto half = LoadWidened(d, in + i);
      const auto sign = hn::ShiftLeft<16>(hn::And(half, hn::Set(du, 0x8000)));
      const auto exponent =
          hn::And(hn::ShiftRight<10>(half), hn::Set(du, 0x1f));
      const auto mantissa =
          hn::ShiftLeft<13>(hn::And(half, hn::Set(du, 0x3ff)));
      const auto normal =
          hn::Or(hn::ShiftLeft<23>(hn::Add(exponent, hn::Set(du, 127 - 15))),
                 mantissa);
      const auto inf_or_nan = hn::Or(hn::Set(du, 0x7f800000), mantissa);
      const auto subnormal = hn::BitCast(
          du, hn::Mul(hn::ConvertTo(
                          d, hn::BitCast(di, hn::ShiftRight<13>(mantissa))),
                      hn::Set(d, 0x1p-24f)));
      auto magnitude =
          hn::IfThenElse(hn::Eq(exponent, hn::Zero(du)), subnormal, normal);
      magnitude = hn::IfThenElse(hn::Eq(exponent, hn::Set(du, 0x1f)),
                                 inf_or_nan, magnitude);
      return hn::BitCast(d, hn::Or(sign, magnitude));
    });
  });
}

// float32 -> bfloat16 with ties to even, as F32ToBF16Ref (convert_scalar.h):
// top half of bits + 0x7fff + (1 if the top half is odd), or for a NaN the
// top half with the quiet bit 0x40 set. The NaN test is on the bits
// (|bits| > inf's bits, in signed lanes where both sides are positive), not
// a float compare, so nothing depends on the floating-point environment.
void F32ToBF16(const float* HWY_RESTRICT in, uint16_t* HWY_RESTRICT out,
               size_t n) {
  ParallelFor(n, kMinFloatsPerTask, [&](int64_t begin, int64_t end) HWY_ATTR {
    ForEachVector(end - begin, [&](auto d, size_t offset) HWY_ATTR {
      const hn::RebindToUnsigned<decltype(d)> du;
      const hn::RebindToSigned<decltype(d)> di;
      const hn::Rebind<uint16_t, decltype(d)> d16;
      const size_t i = begin + offset;
      const auto bits = hn::BitCast(du, hn::LoadU(d, in + i));
      const auto top = hn::ShiftRight<16>(bits);
      const auto odd = hn::And(top, hn::Set(du, 1));
      const auto rounded =
          hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du, 0x7fff), odd)));
      const auto quiet_nan = hn::Or(top, hn::Set(du, 0x40));
      const auto magnitude =
          hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7fffffff)));
      const auto is_nan = hn::Gt(magnitude, hn::Set(di, 0x7f800000));
      const auto result = hn::IfThenElse(is_nan, hn::BitCast(di, quiet_nan),
                                         hn::BitCast(di, rounded));
      // Every lane is in [0, 0xffff], so the saturating demotion is exact.
      hn::StoreU(hn::DemoteTo(d16, result), d16, out + i);
    });
  });
}

const char* ConvertTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rotor {
namespace kernels {

HWY_EXPORT(BF16ToF32);
HWY_EXPORT(F16ToF32);
HWY_EXPORT(F32ToBF16);
HWY_EXPORT(ConvertTarget);

void BF16ToF32(const uint16_t* in, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(BF16ToF32)(in, out, n);
}
void F16ToF32(const uint16_t* in, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(F16ToF32)(in, out, n);
}
void F32ToBF16(const float* in, uint16_t* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(F32ToBF16)(in, out, n);
}
const char* ConvertTarget() { return HWY_DYNAMIC_DISPATCH(ConvertTarget)(); }

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

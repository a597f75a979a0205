// Scalar twins of core/kernels/convert.h, one element at a time, in integer
// bit manipulation only (no float arithmetic, so no rounding mode or
// flush-to-zero setting can change them). Formats: see convert.h.
#ifndef ROTOR_CORE_KERNELS_CONVERT_SCALAR_H_
#define ROTOR_CORE_KERNELS_CONVERT_SCALAR_H_

#include <cstdint>
#include <cstring>

namespace rotor {
namespace kernels {

inline float FloatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

inline uint32_t BitsOfFloat(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// bfloat16 is the top half of a float32.
inline float BF16ToF32Ref(uint16_t bf16) {
  return FloatFromBits(uint32_t{bf16} << 16);
}

// IEEE half -> float32. Both formats are sign | exponent | mantissa; the
// mantissa moves up 23 - 10 = 13 bits and the exponent is re-biased by
// 127 - 15 = 112, except
//   exponent 31 (inf, NaN) -> 255, the payload kept;
//   exponent 0, mantissa m != 0 (subnormal, m * 2^-24): normalised, m is
//     shifted up until its leading 1 reaches the implicit bit 10, and each
//     shift lowers the exponent by one.
inline float F16ToF32Ref(uint16_t f16) {
  const uint32_t sign = uint32_t{f16 & 0x8000u} << 16;
  int exponent = (f16 >> 10) & 0x1f;
  uint32_t mantissa = f16 & 0x3ffu;
  if (exponent == 0x1f) {
    return FloatFromBits(sign | 0x7f800000u | mantissa << 13);
  }
  if (exponent == 0) {
    if (mantissa == 0) return FloatFromBits(sign);  // +-0
    exponent = 1;  // a subnormal's scale is that of the smallest normal
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;  // down to -9 for m = 1, still > -112
    }
    mantissa &= 0x3ffu;  // the leading 1 becomes the implicit bit
  }
  const auto biased = static_cast<uint32_t>(exponent + 127 - 15);
  return FloatFromBits(sign | biased << 23 | mantissa << 13);
}

// float32 -> bfloat16, to nearest with ties to even. Keeping the top 16 bits
// truncates; adding 0x7fff, plus 1 when the kept part is odd, first carries
// into the kept part exactly when the dropped 16 bits are above half
// (0x8000), or at half with an odd kept part. A carry out of the mantissa
// raises the exponent, which is the right rounding, up to inf past the
// largest bfloat16. Bits order finite floats of one sign by magnitude, so
// this works for subnormals too. A NaN could round to inf or flip its sign,
// so it is truncated instead, with the quiet bit (bit 6) set so that a
// payload only in the dropped bits still leaves a NaN.
inline uint16_t F32ToBF16Ref(float value) {
  const uint32_t bits = BitsOfFloat(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>(bits >> 16 | 0x40u);
  }
  const uint32_t odd = (bits >> 16) & 1;
  return static_cast<uint16_t>((bits + 0x7fffu + odd) >> 16);
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_CONVERT_SCALAR_H_

// Conversions between float32 and the 16-bit float formats of model files,
// Highway-vectorised with dynamic dispatch (core/kernels/convert.cc) and
// parallel over chunks of the array. Scalar twins:
// core/kernels/convert_scalar.h.
//
// A 16-bit value travels as its bit pattern in a uint16_t:
//   bfloat16  sign 1 | exponent 8 (bias 127) | mantissa 7: the top half of
//             a float32, so it has float32's range with 8 bits of precision;
//   float16   IEEE half: sign 1 | exponent 5 (bias 15) | mantissa 10,
//             largest finite 65504, subnormals down to 2^-24.
//
// Arrays hold n elements, may be unaligned and must not overlap. The results
// are exact bit manipulations, so they do not depend on the target or the
// thread count. The decoders write outputs of more than 1 MiB with streaming
// (non-temporal) stores, which bypass the cache: the right choice for a
// model being loaded, whose weights are not read right away.
#ifndef ROTOR_CORE_KERNELS_CONVERT_H_
#define ROTOR_CORE_KERNELS_CONVERT_H_

#include <cstddef>
#include <cstdint>

namespace rotor {
namespace kernels {

// out[i] = the float32 of bfloat16 in[i]: its bits shifted into the top half.
// Exact for every pattern (NaN payloads included).
void BF16ToF32(const uint16_t* in, float* out, size_t n);

// out[i] = the float32 of IEEE half in[i], exactly: normals and subnormals
// keep their value, +-0 and +-inf their sign, and a NaN stays a NaN with its
// sign and its 10-bit payload in the top of float32's mantissa.
void F16ToF32(const uint16_t* in, float* out, size_t n);

// out[i] = in[i] rounded to bfloat16, to nearest with ties to even, as
// PyTorch's .to(torch.bfloat16): values from halfway between the largest
// bfloat16 (0x7f7f, about 3.39e38) and 2^128 up become inf; +-inf stay
// +-inf; a NaN becomes a quiet NaN with its sign and the top of its payload
// (never inf).
void F32ToBF16(const float* in, uint16_t* out, size_t n);

// Name of the Highway target the conversion dispatch chose ("AVX3", "AVX2",
// "SSE4", "SSSE3", "SCALAR", ...): tests use it to prove which target ran.
const char* ConvertTarget();

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_CONVERT_H_

// Scalar twin of core/kernels/bf16_tile_product.h: the same packing and the
// same chain of float32 additions, one plain loop per formula, so tests can
// hold the AVX512_BF16 kernels to it bit for bit.
#ifndef ROTOR_CORE_KERNELS_BF16_TILE_PRODUCT_SCALAR_H_
#define ROTOR_CORE_KERNELS_BF16_TILE_PRODUCT_SCALAR_H_

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/kernels/convert_scalar.h"

namespace rotor {
namespace kernels {

// x with a denormal replaced by a zero of its sign (DAZ and FTZ).
inline float FlushDenormalRef(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

// VCVTNE2PS2BF16's rounding: F32ToBF16Ref (to nearest even, NaN quiet) of x
// with denormals read as zero.
inline uint16_t RoundBf16Ref(float x) {
  return F32ToBF16Ref(FlushDenormalRef(x));
}

inline uint32_t PairRef(float even, float odd) {
  return uint32_t{RoundBf16Ref(even)} | uint32_t{RoundBf16Ref(odd)} << 16;
}

inline void PackBf16RowsRef(const float* a, size_t lda, size_t rows,
                            size_t depth, uint32_t* out, size_t out_row) {
  for (size_t m = 0; m < rows; ++m) {
    for (size_t k = 0; k < depth; k += 2) {
      const float odd = k + 1 < depth ? a[m * lda + k + 1] : 0.0f;
      out[m * out_row + k / 2] = PairRef(a[m * lda + k], odd);
    }
  }
}

inline void PackBf16PairRowsRef(const float* b, size_t ldb, size_t depth,
                                size_t cols, size_t padded, uint32_t* out,
                                size_t ldo) {
  for (size_t k = 0; k < depth; k += 2) {
    for (size_t n = 0; n < padded; ++n) {
      const bool in = n < cols;
      const float even = in ? b[k * ldb + n] : 0.0f;
      const float odd = in && k + 1 < depth ? b[(k + 1) * ldb + n] : 0.0f;
      out[(k / 2) * ldo + n] = PairRef(even, odd);
    }
  }
}

// One VDPBF16PS lane: acc + a_odd b_odd, then + a_even b_even (products
// exact in float32, each sum rounded and flushed).
inline float DotPairRef(float acc, uint32_t a, uint32_t b) {
  const float odd = BF16ToF32Ref(static_cast<uint16_t>(a >> 16)) *
                    BF16ToF32Ref(static_cast<uint16_t>(b >> 16));
  const float even = BF16ToF32Ref(static_cast<uint16_t>(a)) *
                     BF16ToF32Ref(static_cast<uint16_t>(b));
  acc = FlushDenormalRef(FlushDenormalRef(acc) + odd);
  return FlushDenormalRef(acc + even);
}

inline void Bf16TileProductRef(bool accumulate, size_t rows, size_t cols,
                               size_t pairs, float alpha, const uint32_t* a,
                               size_t a_row, size_t a_col, const uint32_t* b,
                               size_t ldb, float* c, size_t ldc) {
  for (size_t m = 0; m < rows; ++m) {
    for (size_t n = 0; n < cols; ++n) {
      float acc = accumulate ? c[m * ldc + n] : 0.0f;
      for (size_t j = 0; j < pairs; ++j) {
        acc = DotPairRef(acc, a[m * a_row + j * a_col], b[j * ldb + n]);
      }
      c[m * ldc + n] = accumulate ? acc : acc * alpha;
    }
  }
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_BF16_TILE_PRODUCT_SCALAR_H_

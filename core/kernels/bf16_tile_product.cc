// AVX512_BF16 intrinsics for core/kernels/bf16_tile_product.h (why not
// Highway: the header). Every function that uses them carries kTarget, so
// the rest of rotor stays free of AVX-512 code.
#include "core/kernels/bf16_tile_product.h"

#include <immintrin.h>

#include <algorithm>

namespace rotor {
namespace kernels {

namespace {

#define ROTOR_BF16_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

constexpr size_t kLanes = 16;  // floats, or pairs, in a 512-bit vector

// Lanes [0, count) of a vector, count <= 16.
inline __mmask16 FirstLanes(size_t count) {
  return count >= kLanes ? __mmask16(0xffff)
                         : static_cast<__mmask16>((1u << count) - 1);
}

// The register tile of the tile product: kRows x kVecs vectors of C stay in
// registers over every pair j. Per pair, kVecs loads of packed B's row j
// and kRows broadcasts of a pair of A serve kRows * kVecs VDPBF16PS (GEMM's
// outer-product micro-kernel, as tile_product-inl.h in float32). masks[v]
// holds the columns of vector v that exist (the last may be partial).
template <size_t kRows, size_t kVecs, bool kAccumulate>
ROTOR_BF16_TARGET inline void MicroTile(size_t pairs, const uint32_t* a,
                                        size_t a_row, size_t a_col,
                                        const uint32_t* b, size_t ldb,
                                        float alpha, float* c, size_t ldc,
                                        const __mmask16* masks) {
  __m512 acc[kRows][kVecs];
#pragma GCC unroll 8
  for (size_t m = 0; m < kRows; ++m) {
#pragma GCC unroll 4
    for (size_t v = 0; v < kVecs; ++v) {
      acc[m][v] = kAccumulate ? _mm512_maskz_loadu_ps(masks[v],
                                                      c + m * ldc + v * kLanes)
                              : _mm512_setzero_ps();
    }
  }
  for (size_t j = 0; j < pairs; ++j) {
    __m512bh row[kVecs];
#pragma GCC unroll 4
    for (size_t v = 0; v < kVecs; ++v) {
      row[v] = (__m512bh)_mm512_loadu_si512(b + j * ldb + v * kLanes);
    }
    const uint32_t* a_j = a + j * a_col;
#pragma GCC unroll 8
    for (size_t m = 0; m < kRows; ++m) {
      const __m512bh weight =
          (__m512bh)_mm512_set1_epi32(static_cast<int>(a_j[m * a_row]));
#pragma GCC unroll 4
      for (size_t v = 0; v < kVecs; ++v) {
        acc[m][v] = _mm512_dpbf16_ps(acc[m][v], weight, row[v]);
      }
    }
  }
  const __m512 valpha = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
  for (size_t m = 0; m < kRows; ++m) {
#pragma GCC unroll 4
    for (size_t v = 0; v < kVecs; ++v) {
      _mm512_mask_storeu_ps(
          c + m * ldc + v * kLanes, masks[v],
          kAccumulate ? acc[m][v] : _mm512_mul_ps(acc[m][v], valpha));
    }
  }
}

// Rows [m, rows) of a column block of kVecs vectors: blocks of kRows rows,
// then halving blocks for the rest (kRows a power of two).
template <size_t kRows, size_t kVecs, bool kAccumulate>
ROTOR_BF16_TARGET inline void RowBlocks(size_t rows, size_t pairs,
                                        const uint32_t* a, size_t a_row,
                                        size_t a_col, const uint32_t* b,
                                        size_t ldb, float alpha, float* c,
                                        size_t ldc, const __mmask16* masks,
                                        size_t& m) {
  for (; m + kRows <= rows; m += kRows) {
    MicroTile<kRows, kVecs, kAccumulate>(pairs, a + m * a_row, a_row, a_col, b,
                                         ldb, alpha, c + m * ldc, ldc, masks);
  }
  if constexpr (kRows > 1) {
    RowBlocks<kRows / 2, kVecs, kAccumulate>(rows, pairs, a, a_row, a_col, b,
                                             ldb, alpha, c, ldc, masks, m);
  }
}

// 16 of the 32 vector registers hold accumulators: 4 rows x 4 vectors, 8 x
// 2 and 8 x 1, as the float32 tiles on AVX-512.
template <size_t kVecs, bool kAccumulate>
ROTOR_BF16_TARGET inline void ColumnBlock(size_t rows, size_t pairs,
                                          const uint32_t* a, size_t a_row,
                                          size_t a_col, const uint32_t* b,
                                          size_t ldb, float alpha, float* c,
                                          size_t ldc, const __mmask16* masks) {
  constexpr size_t kRows = std::min<size_t>(8, 16 / kVecs);
  size_t m = 0;
  RowBlocks<kRows, kVecs, kAccumulate>(rows, pairs, a, a_row, a_col, b, ldb,
                                       alpha, c, ldc, masks, m);
}

template <bool kAccumulate>
ROTOR_BF16_TARGET void Product(size_t rows, size_t cols, size_t pairs,
                               float alpha, const Bf16TileOperands& o) {
  const size_t vecs = (cols + kLanes - 1) / kLanes;
  __mmask16 masks[4];
  size_t v = 0;
  auto block = [&](auto vecs_in_block) ROTOR_BF16_TARGET {
    constexpr size_t kVecs = decltype(vecs_in_block)::value;
    for (size_t i = 0; i < kVecs; ++i) {
      masks[i] = FirstLanes(cols - (v + i) * kLanes);
    }
    ColumnBlock<kVecs, kAccumulate>(rows, pairs, o.a, o.a_row, o.a_col,
                                    o.b + v * kLanes, o.ldb, alpha,
                                    o.c + v * kLanes, o.ldc, masks);
    v += kVecs;
  };
  while (v + 4 <= vecs) block(std::integral_constant<size_t, 4>());
  if (v + 2 <= vecs) block(std::integral_constant<size_t, 2>());
  if (v < vecs) block(std::integral_constant<size_t, 1>());
}

// Interleaves the 16 bfloat16 of lo's and hi's lanes: (lo_i, hi_i) as pair
// i. cvtne2ps gives [lo_0 .. lo_15, hi_0 .. hi_15]; the permutation picks
// lo_i for element 2i and hi_i for 2i + 1.
ROTOR_BF16_TARGET inline __m512i PairsOf(__m512 lo, __m512 hi) {
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11,
                                         26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(order, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

}  // namespace

bool Bf16DotSupported() {
  static const bool supported = __builtin_cpu_supports("avx512f") &&
                                __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512vl") &&
                                __builtin_cpu_supports("avx512dq") &&
                                __builtin_cpu_supports("avx512bf16");
  return supported;
}

bool Bf16DotOutrunsFloat32() {
  return Bf16DotSupported() && __builtin_cpu_is("amd");
}

size_t Bf16PackedColumns(size_t cols) {
  return (cols + kLanes - 1) / kLanes * kLanes;
}

ROTOR_BF16_TARGET void PackBf16Rows(const float* a, size_t lda, size_t rows,
                                    size_t depth, uint32_t* out,
                                    size_t out_row) {
  // Two vectors of floats make one of 16 pairs, in order: (x_2j, x_2j+1).
  constexpr size_t kStep = 2 * kLanes;
  for (size_t m = 0; m < rows; ++m) {
    const float* row = a + m * lda;
    uint32_t* pairs = out + m * out_row;
    for (size_t k = 0; k < depth; k += kStep) {
      const size_t left = depth - k;
      const __m512 lo = _mm512_maskz_loadu_ps(FirstLanes(left), row + k);
      const __m512 hi = left > kLanes
                            ? _mm512_maskz_loadu_ps(FirstLanes(left - kLanes),
                                                    row + k + kLanes)
                            : _mm512_setzero_ps();
      // [lo_0 .. lo_15, hi_0 .. hi_15] is the row's order already.
      const __m512i packed = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
      _mm512_mask_storeu_epi32(pairs + k / 2, FirstLanes((left + 1) / 2),
                               packed);
    }
  }
}

ROTOR_BF16_TARGET void PackBf16PairRows(const float* b, size_t ldb,
                                        size_t depth, size_t cols,
                                        uint32_t* out, size_t ldo) {
  const size_t padded = Bf16PackedColumns(cols);
  for (size_t k = 0; k < depth; k += 2) {
    const float* even = b + k * ldb;
    const float* odd = k + 1 < depth ? even + ldb : nullptr;
    uint32_t* pairs = out + (k / 2) * ldo;
    for (size_t n = 0; n < padded; n += kLanes) {
      const __mmask16 mask = FirstLanes(cols - std::min(cols, n));
      const __m512 lo = _mm512_maskz_loadu_ps(mask, even + n);
      const __m512 hi = odd != nullptr ? _mm512_maskz_loadu_ps(mask, odd + n)
                                       : _mm512_setzero_ps();
      _mm512_storeu_si512(pairs + n, PairsOf(lo, hi));
    }
  }
}

ROTOR_BF16_TARGET void Bf16TileProduct(bool accumulate, size_t rows,
                                       size_t cols, size_t pairs, float alpha,
                                       const Bf16TileOperands& operands) {
  if (accumulate) {
    Product<true>(rows, cols, pairs, alpha, operands);
  } else {
    Product<false>(rows, cols, pairs, alpha, operands);
  }
}

}  // namespace kernels
}  // namespace rotor

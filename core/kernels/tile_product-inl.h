// Per-target register-tiled tile products, the matrix products inside the
// attention kernels (core/kernels/attention.cc), and the body of the
// dispatched TileProduct of core/kernels/tile_product.h. Re-included once
// per target by foreach_target.h, hence the toggle guard (Highway's
// "-inl.h" convention). Include after "hwy/highway.h". The tile shapes and
// what they reach: docs/attention.md, part 9.
#if defined(ROTOR_CORE_KERNELS_TILE_PRODUCT_INL_H_) == \
    defined(HWY_TARGET_TOGGLE)
#ifdef ROTOR_CORE_KERNELS_TILE_PRODUCT_INL_H_
#undef ROTOR_CORE_KERNELS_TILE_PRODUCT_INL_H_
#else
#define ROTOR_CORE_KERNELS_TILE_PRODUCT_INL_H_
#endif

#include <stddef.h>

#include <algorithm>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The tile product (core/kernels/tile_product.h):
//   C[m, n] = alpha * sum_{k < depth} A(m, k) B[k, n]     (kAccumulate false)
//   C[m, n] += sum_{k < depth} A(m, k) B[k, n]            (kAccumulate true)
// for m < rows, n < cols, with A(m, k) = a[m * a_row + k * a_col] (so A may
// be read transposed: p^T and ds^T are a_row = 1, a_col = the tile's row
// length), B's rows b + k * ldb of cols contiguous floats and C's rows
// c + m * ldc. Every product of the attention kernels is one:
//   scores  S  = scale * Q K^T   A = Q tile,   B = K tile transposed [D, keys]
//   dp         = dO V^T          A = dO tile,  B = V tile transposed
//   out       += P V             A = P,        B = V rows
//   dv        += P^T dO          A = P^T,      B = dO rows
//   dk        += ds^T Q          A = ds^T,     B = Q rows
//   dq        += ds K            A = ds,       B = K rows
// A register tile of kRows x kVecs vectors of C stays in registers over the
// whole depth: per k, kVecs vector loads of B's row and kRows broadcasts of
// A serve kRows * kVecs FMAs (GEMM's outer-product micro-kernel). Each
// element of C is one chain of FMAs over k in order, whatever the tile
// shape, so the blocking below changes no bit, and a masked (zero) weight
// adds exactly nothing.
template <size_t kRows, size_t kVecs, bool kAccumulate, class D>
HWY_INLINE void MicroTile(D d, size_t depth, const float* HWY_RESTRICT a,
                          size_t a_row, size_t a_col,
                          const float* HWY_RESTRICT b, size_t ldb, float alpha,
                          float* HWY_RESTRICT c, size_t ldc) {
  const size_t lanes = hn::Lanes(d);
  // The loops over the register tile are unrolled in full, so that acc
  // lives in registers.
  hn::Vec<D> acc[kRows][kVecs];
  HWY_UNROLL(8)
  for (size_t m = 0; m < kRows; ++m) {
    HWY_UNROLL(4)
    for (size_t v = 0; v < kVecs; ++v) {
      acc[m][v] =
          kAccumulate ? hn::LoadU(d, c + m * ldc + v * lanes) : hn::Zero(d);
    }
  }
  for (size_t k = 0; k < depth; ++k) {
    hn::Vec<D> row[kVecs];
    HWY_UNROLL(4)
    for (size_t v = 0; v < kVecs; ++v) {
      row[v] = hn::LoadU(d, b + k * ldb + v * lanes);
    }
    const float* a_k = a + k * a_col;
    HWY_UNROLL(8)
    for (size_t m = 0; m < kRows; ++m) {
      const auto weight = hn::Set(d, a_k[m * a_row]);
      HWY_UNROLL(4)
      for (size_t v = 0; v < kVecs; ++v) {
        acc[m][v] = hn::MulAdd(weight, row[v], acc[m][v]);
      }
    }
  }
  const auto valpha = hn::Set(d, alpha);
  HWY_UNROLL(8)
  for (size_t m = 0; m < kRows; ++m) {
    HWY_UNROLL(4)
    for (size_t v = 0; v < kVecs; ++v) {
      hn::StoreU(kAccumulate ? acc[m][v] : hn::Mul(acc[m][v], valpha), d,
                 c + m * ldc + v * lanes);
    }
  }
}

// Registers a target holds for accumulators: 16 of its 32 vector registers
// on AVX-512 (leaving room for B's row and the broadcast), 8 of 16 on AVX2
// and SSE4. Tile shapes measured at D = 32, 64 and 128 on AVX-512 and AVX2
// (docs/attention.md, part 9): 4 rows x 4 vectors and 8 x 2 on AVX-512,
// 4 x 2 and 8 x 1 on AVX2.
#if HWY_TARGET <= HWY_AVX3
constexpr size_t kAccumulators = 16;
#else
constexpr size_t kAccumulators = 8;
#endif
constexpr size_t kMaxTileVecs = kAccumulators >= 16 ? 4 : 2;

// Rows [0, rows) of a column block of kVecs vectors: blocks of kRows rows,
// then halving blocks for the rest (kRows is a power of two).
template <size_t kRows, size_t kVecs, bool kAccumulate, class D>
HWY_INLINE void RowBlocks(D d, size_t rows, size_t depth,
                          const float* HWY_RESTRICT a, size_t a_row,
                          size_t a_col, const float* HWY_RESTRICT b, size_t ldb,
                          float alpha, float* HWY_RESTRICT c, size_t ldc,
                          size_t& m) {
  for (; m + kRows <= rows; m += kRows) {
    MicroTile<kRows, kVecs, kAccumulate>(d, depth, a + m * a_row, a_row, a_col,
                                         b, ldb, alpha, c + m * ldc, ldc);
  }
  if constexpr (kRows > 1) {
    RowBlocks<kRows / 2, kVecs, kAccumulate>(d, rows, depth, a, a_row, a_col, b,
                                             ldb, alpha, c, ldc, m);
  }
}

// One column block of kVecs vectors of d, over all the rows.
template <size_t kVecs, bool kAccumulate, class D>
HWY_INLINE void ColumnBlock(D d, size_t rows, size_t depth,
                            const float* HWY_RESTRICT a, size_t a_row,
                            size_t a_col, const float* HWY_RESTRICT b,
                            size_t ldb, float alpha, float* HWY_RESTRICT c,
                            size_t ldc) {
  constexpr size_t kRows = std::min<size_t>(8, kAccumulators / kVecs);
  size_t m = 0;
  RowBlocks<kRows, kVecs, kAccumulate>(d, rows, depth, a, a_row, a_col, b, ldb,
                                       alpha, c, ldc, m);
}

// C (+)= A B as described above, for any rows and cols: column blocks of
// kMaxTileVecs vectors, then narrower ones, then the cols % lanes last
// columns with one-lane vectors (no masked loads, which fault on SSE4 and
// AVX2 in Highway 1.0.3).
template <bool kAccumulate>
void TileProduct(size_t rows, size_t cols, size_t depth,
                 const float* HWY_RESTRICT a, size_t a_row, size_t a_col,
                 const float* HWY_RESTRICT b, size_t ldb, float alpha,
                 float* HWY_RESTRICT c, size_t ldc) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t n = 0;
  for (; n + kMaxTileVecs * lanes <= cols; n += kMaxTileVecs * lanes) {
    ColumnBlock<kMaxTileVecs, kAccumulate>(d, rows, depth, a, a_row, a_col,
                                           b + n, ldb, alpha, c + n, ldc);
  }
  if constexpr (kMaxTileVecs > 2) {
    if (n + 2 * lanes <= cols) {
      ColumnBlock<2, kAccumulate>(d, rows, depth, a, a_row, a_col, b + n, ldb,
                                  alpha, c + n, ldc);
      n += 2 * lanes;
    }
  }
  if (n + lanes <= cols) {
    ColumnBlock<1, kAccumulate>(d, rows, depth, a, a_row, a_col, b + n, ldb,
                                alpha, c + n, ldc);
    n += lanes;
  }
  const hn::CappedTag<float, 1> d1;
  for (; n < cols; ++n) {
    ColumnBlock<1, kAccumulate>(d1, rows, depth, a, a_row, a_col, b + n, ldb,
                                alpha, c + n, ldc);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#endif  // ROTOR_CORE_KERNELS_TILE_PRODUCT_INL_H_

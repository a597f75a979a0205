// The register-tiled matrix product on small tiles that the attention
// kernels run for every one of their products (S = scale Q K^T, P V, P^T dO,
// ds^T Q, ds K), dispatched to the best Highway target; scalar twin in
// core/kernels/tile_product_scalar.h. The attention kernels call the
// per-target body (core/kernels/tile_product-inl.h) directly; this entry
// point serves tests and benchmarks.
//
//   C[m, n] = alpha * sum_{k < depth} A(m, k) B[k, n]   (accumulate false)
//   C[m, n] += sum_{k < depth} A(m, k) B[k, n]          (accumulate true)
// for m < rows, n < cols, where A(m, k) = a[m * a_row + k * a_col] (A
// row-major is a_row = lda, a_col = 1; A transposed is a_row = 1, a_col =
// lda), row k of B is b + k * ldb (cols contiguous floats) and row m of C is
// c + m * ldc. Any sizes and alignments.
//
// Bits: each element of C is one chain of fused multiply-adds over k in
// order (on targets with FMA), whatever the register blocking, so a sub-block
// of a product gives the same bits as the whole, and a zero weight adds
// exactly nothing.
#ifndef ROTOR_CORE_KERNELS_TILE_PRODUCT_H_
#define ROTOR_CORE_KERNELS_TILE_PRODUCT_H_

#include <cstddef>

namespace rotor {
namespace kernels {

struct TileOperands {
  const float* a = nullptr;
  size_t a_row = 0;
  size_t a_col = 0;
  const float* b = nullptr;
  size_t ldb = 0;
  float* c = nullptr;
  size_t ldc = 0;
};

void TileProduct(bool accumulate, size_t rows, size_t cols, size_t depth,
                 float alpha, const TileOperands& operands);

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_TILE_PRODUCT_H_

// Scalar twin of core/kernels/tile_product.h, templated on the element type
// T so tests can run it in double: one plain loop per formula.
#ifndef ROTOR_CORE_KERNELS_TILE_PRODUCT_SCALAR_H_
#define ROTOR_CORE_KERNELS_TILE_PRODUCT_SCALAR_H_

#include <cstddef>

namespace rotor {
namespace kernels {

// C[m, n] = alpha * sum_k A(m, k) B[k, n], or C[m, n] += sum_k A(m, k)
// B[k, n] with accumulate; A(m, k) = a[m * a_row + k * a_col].
template <typename T>
void TileProductRef(bool accumulate, size_t rows, size_t cols, size_t depth,
                    T alpha, const T* a, size_t a_row, size_t a_col, const T* b,
                    size_t ldb, T* c, size_t ldc) {
  for (size_t m = 0; m < rows; ++m) {
    for (size_t n = 0; n < cols; ++n) {
      T sum = 0;
      for (size_t k = 0; k < depth; ++k) {
        sum += a[m * a_row + k * a_col] * b[k * ldb + n];
      }
      c[m * ldc + n] = accumulate ? c[m * ldc + n] + sum : alpha * sum;
    }
  }
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_TILE_PRODUCT_SCALAR_H_

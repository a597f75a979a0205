// The one sgemm entry point of the ops (core/ops/matmul.cc and
// core/ops/linear_cross_entropy.cc): OpenBLAS cblas_sgemm on row-major
// matrices, split over row blocks of C on rotor's threads.
//
// OpenBLAS runs single-threaded (core/parallel.cc) and each product is split
// over row blocks of C with rotor::ParallelFor, one sgemm per block. Rows of
// C are independent (no float is reduced across threads) and the blocks
// depend only on the shape (m, n, k), so results are bitwise the same at any
// thread count, on every OpenBLAS kernel. They are not the same for another
// number of rows: OpenBLAS rounds a row differently by its place in the call
// and the call's row count (gemm.cc), so a row of a [12, n] product and the
// same row in a [5, n] product may differ in the last bits.
#ifndef ROTOR_CORE_OPS_GEMM_H_
#define ROTOR_CORE_OPS_GEMM_H_

#include <cblas.h>

#include <cstdint>

namespace rotor {
namespace internal {

// The rows of each block ParallelGemm cuts C [m, n] = op(A) [m, k] op(B)
// [k, n] into (the last block may be shorter); m when the product is one
// call. A function of the shape alone (gemm.cc says why and how).
int64_t GemmBlockRows(int64_t m, int64_t n, int64_t k);

// C [m, n] (ld = n) = op(A) [m, k] op(B) [k, n] + beta C, where op(X) is X
// (CblasNoTrans, X stored [rows, cols] with leading dimension ld) or X^T
// (CblasTrans). With beta 0, C is not read. Extents beyond BLAS's int throw,
// naming `op`.
void ParallelGemm(CBLAS_TRANSPOSE a_trans, CBLAS_TRANSPOSE b_trans, int64_t m,
                  int64_t n, int64_t k, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c,
                  const char* op);

}  // namespace internal
}  // namespace rotor

#endif  // ROTOR_CORE_OPS_GEMM_H_

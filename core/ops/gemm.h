// The one sgemm entry point of the ops (core/ops/matmul.cc and
// core/ops/linear_cross_entropy.cc): OpenBLAS cblas_sgemm on row-major
// matrices, split over row blocks of C on rotor's threads.
//
// OpenBLAS runs single-threaded (core/parallel.cc) and each product is split
// over row blocks of C with rotor::ParallelFor, one sgemm per block. Rows of
// C are independent (no float is reduced across threads) and the blocks
// depend only on the thread count, so results are bitwise reproducible at a
// fixed thread count.
#ifndef ROTOR_CORE_OPS_GEMM_H_
#define ROTOR_CORE_OPS_GEMM_H_

#include <cblas.h>

#include <cstdint>

namespace rotor {
namespace internal {

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

// The one matrix-product entry point of the ops (core/ops/matmul.cc and
// core/ops/linear_cross_entropy.cc), and the two switches that say how it
// multiplies: which library (the backend) and in which precision.
//
//   backend    oneDNN (`matmul` primitives, core/ops/gemm_onednn.cc) where
//              rotor was built with it, the default: near the FMA peak of
//              every ISA it dispatches to (AVX2, AVX-512, AVX512_BF16,
//              AMX); OpenBLAS cblas_sgemm (core/ops/gemm_openblas.cc), the
//              reference and the fallback. Chosen by the build
//              (ROTOR_DEFAULT_GEMM), then the environment (ROTOR_GEMM=
//              onednn|openblas), then SetGemmBackend.
//   precision  float32, or bfloat16 operands with float32 accumulation and
//              a float32 result (PyTorch autocast's matmuls): each operand
//              rounded to nearest even (kernels::F32ToBF16), oneDNN only.
//
// Threads and bits: the backend runs single-threaded and each product is
// split over row blocks of C with rotor::ParallelFor, one library call per
// block. Rows of C are independent (no float is reduced across threads) and
// the blocks depend only on the shape (m, n, k), so results are bitwise the
// same at any thread count, with either backend and on every OpenBLAS
// kernel. They are not the same for another number of rows: a library
// rounds a row by its place in the call and the call's row count (gemm.cc),
// so a row of a [12, n] product and the same row in a [5, n] product may
// differ in the last bits; nor across backends or precisions.
#ifndef ROTOR_CORE_OPS_GEMM_H_
#define ROTOR_CORE_OPS_GEMM_H_

#include <cblas.h>

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace rotor {

enum class GemmBackend { kOneDnn, kOpenBlas };
enum class MatmulPrecision { kFloat32, kBfloat16 };

// "onednn", "openblas"; "fp32", "bf16".
const char* GemmBackendName(GemmBackend backend);
const char* MatmulPrecisionName(MatmulPrecision precision);
// The backend or precision a name means (as above), or false.
bool ParseGemmBackend(const std::string& name, GemmBackend* backend);
bool ParseMatmulPrecision(const std::string& name, MatmulPrecision* precision);

// Whether this build has oneDNN (the build option ROTOR_WITH_ONEDNN).
bool OneDnnBuilt();

// The backend every product uses from now on. The first call of
// ActiveGemmBackend reads ROTOR_GEMM (throws on another value, or on
// "onednn" in a build without it); unset, the build's default.
GemmBackend ActiveGemmBackend();
// Throws, naming the build option, for oneDNN in a build without it; and
// for OpenBLAS while the precision is bf16.
void SetGemmBackend(GemmBackend backend);

// The precision every product uses from now on (float32 by default).
// bf16 needs the oneDNN backend and a CPU it runs bf16 on: otherwise this
// throws, naming what is missing (BfloatMatmulProblem), and the precision
// stays as it was.
MatmulPrecision ActiveMatmulPrecision();
void SetMatmulPrecision(MatmulPrecision precision);
// Why bf16 products cannot run here ("" when they can): no oneDNN in this
// build, the OpenBLAS backend, or a CPU without the instructions oneDNN
// runs bf16 on (AVX-512 F/BW/VL/DQ at least).
std::string BfloatMatmulProblem();

// Whether attention's tile products run in bf16 too (kernels::
// AttentionShape::bf16): in bf16 precision, where bf16 tiles outrun float32
// ones (kernels::Bf16DotOutrunsFloat32: AVX512_BF16 on AMD). Elsewhere a
// bf16 run's attention stays float32, as its softmax, norms and loss.
bool AttentionTilesInBf16();

// Sets a precision for a scope and restores the one before at its end, as
// `with torch.autocast(...)` does.
class MatmulPrecisionScope {
 public:
  explicit MatmulPrecisionScope(MatmulPrecision precision);
  ~MatmulPrecisionScope();
  MatmulPrecisionScope(const MatmulPrecisionScope&) = delete;
  MatmulPrecisionScope& operator=(const MatmulPrecisionScope&) = delete;

 private:
  MatmulPrecision previous_;
};

// What runs the products now, for benchmark and log lines: "onednn fp32
// (avx512_core_amx)", "openblas fp32 (Haswell)", "onednn bf16
// (brg:avx512_core_bf16), attention bf16".
std::string GemmDescription();

namespace internal {

// The rows of each block ParallelGemm cuts C [m, n] = op(A) [m, k] op(B)
// [k, n] into (the last block may be shorter); m when the product is one
// call. A function of the shape alone (gemm.cc says why and how).
int64_t GemmBlockRows(int64_t m, int64_t n, int64_t k);

// A matrix operand of ParallelGemm, stored [rows, cols] row-major with
// leading dimension ld: its float32 values, and, when a caller multiplies
// the same matrix several times in bf16, the same matrix already rounded
// to bfloat16 in the same layout (BfloatCopy), which a bf16 product then
// reads instead of rounding the floats again. A dense copy (ld = cols)
// gives the same bits as rounding in the product, which packs the copy so;
// a copy with another leading dimension may not (oneDNN may sum in another
// order), though always the same bits for the same call.
struct GemmOperand {
  const float* data = nullptr;
  int64_t ld = 0;
  // The rounded matrix in data's layout (so, from RoundedCopy, only for a
  // dense data: ld = cols), or null.
  const uint16_t* bf16 = nullptr;
};

// The dense matrix x [rows, cols] (leading dimension cols) rounded to
// bfloat16 (to nearest even, kernels::F32ToBF16) in parallel, held by
// `holder`: made once for several products (core/ops/matmul.cc rounds a
// linear layer's weight once for its forward and backward, and dY once for
// dX and dW; LinearCrossEntropy its weight once for all its chunks).
struct BfloatCopy {
  Tensor holder;
  const uint16_t* data = nullptr;
};
BfloatCopy RoundedCopy(const float* x, int64_t rows, int64_t cols);

// C [m, n] (ld = n) = op(A) [m, k] op(B) [k, n] + beta C, where op(X) is X
// (CblasNoTrans, X stored [rows, cols] with leading dimension ld) or X^T
// (CblasTrans), with the active backend and precision. With beta 0, C is
// not read. Extents beyond BLAS's int throw, naming `op`. In bf16, an
// operand without a rounded copy is rounded for this product alone.
void ParallelGemm(CBLAS_TRANSPOSE a_trans, CBLAS_TRANSPOSE b_trans, int64_t m,
                  int64_t n, int64_t k, const GemmOperand& a,
                  const GemmOperand& b, float beta, float* c, const char* op);
inline void ParallelGemm(CBLAS_TRANSPOSE a_trans, CBLAS_TRANSPOSE b_trans,
                         int64_t m, int64_t n, int64_t k, const float* a,
                         int64_t lda, const float* b, int64_t ldb, float beta,
                         float* c, const char* op) {
  ParallelGemm(a_trans, b_trans, m, n, k, GemmOperand{a, lda},
               GemmOperand{b, ldb}, beta, c, op);
}

}  // namespace internal
}  // namespace rotor

#endif  // ROTOR_CORE_OPS_GEMM_H_

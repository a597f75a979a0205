// The backends behind core/ops/gemm.h, one file each: a single-threaded
// product of one row block of C. core/ops/gemm.cc cuts a product into
// blocks, runs them on rotor's threads and calls one of these per block.
#ifndef ROTOR_CORE_OPS_GEMM_BACKENDS_H_
#define ROTOR_CORE_OPS_GEMM_BACKENDS_H_

#include <cblas.h>

#include <cstdint>
#include <string>

namespace rotor {
namespace internal {

// C [m, n] (leading dimension ldc) = op(A) [m, k] op(B) [k, n] + beta C, as
// BLAS says it: op(X) is X stored [rows, cols] with leading dimension ld
// (CblasNoTrans) or the transpose of X stored that way (CblasTrans). `a` and
// `b` are float32, or bfloat16 bit patterns (uint16_t) in a bf16 product.
struct GemmBlock {
  CBLAS_TRANSPOSE a_trans = CblasNoTrans, b_trans = CblasNoTrans;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t lda = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  float beta = 0.0f;
  float* c = nullptr;
  int64_t ldc = 0;
};

// core/ops/gemm_openblas.cc: cblas_sgemm (float32 only).
void OpenBlasGemm(const GemmBlock& block, const char* op);
// OpenBLAS's kernel set ("Haswell", "SkylakeX", ...).
std::string OpenBlasCoreName();

// core/ops/gemm_onednn.cc (built with ROTOR_WITH_ONEDNN): a oneDNN matmul
// primitive, float32 or bf16 operands with a float32 result, made once per
// thread and shape and kept.
void OneDnnGemm(const GemmBlock& block, bool bf16, const char* op);
// The implementation oneDNN picks for a block ("brg:avx512_core",
// "brg:avx512_core_amx", "gemm:jit", ...), or why it has none
// ("unimplemented: ...") in that precision.
std::string OneDnnImplementation(const GemmBlock& block, bool bf16);
// A typical block of a training step: the fused q, k, v projection of
// configs/default.yaml, 4096 x 320 x 192.
GemmBlock TypicalGemmBlock();
// Whether oneDNN runs bf16 matmuls on this CPU.
bool OneDnnRunsBf16();
// The CPU's ISA as oneDNN names it ("avx2", "avx512_core_bf16", ...).
std::string OneDnnIsa();

}  // namespace internal
}  // namespace rotor

#endif  // ROTOR_CORE_OPS_GEMM_BACKENDS_H_

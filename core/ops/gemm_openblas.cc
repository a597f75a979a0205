// The OpenBLAS backend of core/ops/gemm.h, the reference: one row block of C
// as one single-threaded cblas_sgemm (rotor keeps OpenBLAS's own thread pool
// at one thread, core/parallel.cc),
//
//   C [m, n] = op(A) [m, k] op(B) [k, n] + beta C   (row-major, float32).
#include <cblas.h>

#include <climits>

#include "core/error.h"
#include "core/memory_limit.h"
#include "core/ops/gemm_backends.h"

namespace rotor {
namespace internal {

namespace {

int BlasInt(int64_t v, const char* op) {
  ROTOR_CHECK(v <= INT_MAX, op, ": extent ", v, " is too large for BLAS");
  return static_cast<int>(v);
}

// OpenBLAS (0.3.x, as Debian ships it) mallocs a work buffer of BUFFER_SIZE
// = 128 MiB for each thread on its first sgemm, and when that malloc fails it
// retries forever (blas_memory_alloc): under an address-space limit
// (`ulimit -v`, `prlimit --as`) a run would hang instead of failing. So
// before a thread's first sgemm, check that the buffer, and the 64 MiB malloc
// arena glibc gives a new thread, still fit, and fail with a message if not.
constexpr uint64_t kBlasThreadAddressSpace = uint64_t{192} << 20;

void CheckBlasWorkBufferFits(const char* op) {
  thread_local bool checked = false;
  if (checked) return;
  CheckAddressSpaceLeft(kBlasThreadAddressSpace, op, "OpenBLAS",
                        "for the work buffer of each thread that multiplies "
                        "matrices");
  checked = true;
}

}  // namespace

void OpenBlasGemm(const GemmBlock& block, const char* op) {
  CheckBlasWorkBufferFits(op);
  cblas_sgemm(CblasRowMajor, block.a_trans, block.b_trans, BlasInt(block.m, op),
              BlasInt(block.n, op), BlasInt(block.k, op), 1.0f,
              static_cast<const float*>(block.a), BlasInt(block.lda, op),
              static_cast<const float*>(block.b), BlasInt(block.ldb, op),
              block.beta, block.c, BlasInt(block.ldc, op));
}

std::string OpenBlasCoreName() {
  const char* name = openblas_get_corename();
  return name == nullptr ? "unknown" : name;
}

}  // namespace internal
}  // namespace rotor

#include "core/ops/gemm.h"

#include <algorithm>
#include <climits>

#include "core/error.h"
#include "core/memory_limit.h"
#include "core/parallel.h"
#include "core/profile.h"

namespace rotor {
namespace internal {

namespace {

// How a product is cut into row blocks of C, one single-threaded sgemm each.
// The cut depends on the shape alone, never on the thread count: OpenBLAS
// rounds a row of C by where it falls in the call and by how many rows the
// call has. On the Haswell and Zen kernels nearly every sub-product of a
// 100-row product gives other bits than the same rows of the whole one, on
// SkylakeX the small products do, on Sandybridge none
// (build/bench/gemm_blocks_bench). So the same calls must run whatever the
// thread count: threads only decide who runs which block.
//
// A product smaller than kMinParallelFlops multiply-adds, or with fewer than
// 2 * kMinBlockRows rows, is one call. Otherwise it is 2, 4, 8 or 16 blocks
// (a power of two, so 1, 2, 4, 8 or 16 threads share them evenly), the most
// that leave each block kMinRowsPerManyBlocks rows once there are more than
// two: every block repacks the other operand, a cost that falls with the
// rows of work per block (build/bench/gemm_blocks_bench measures it).
// Blocks are whole multiples of kGemmRowAlign rows (micro-kernel tiles).
constexpr int64_t kGemmRowAlign = 16;
constexpr int64_t kMinParallelFlops = int64_t{1} << 18;
constexpr int64_t kMinBlockRows = 64;
constexpr int64_t kMinRowsPerManyBlocks = 512;
constexpr int64_t kMaxGemmBlocks = 16;

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
  const uint64_t left = AddressSpaceLeft();
  ROTOR_CHECK(left >= kBlasThreadAddressSpace, op, ": OpenBLAS needs ",
              FormatBytes(kBlasThreadAddressSpace),
              " of address space for the work buffer of each thread that "
              "multiplies matrices, but only ",
              FormatBytes(left),
              " is left under the address-space limit (RLIMIT_AS); raise "
              "it (ulimit -v) or use fewer threads");
  checked = true;
}

}  // namespace

int64_t GemmBlockRows(int64_t m, int64_t n, int64_t k) {
  if (m * n * k < kMinParallelFlops || m < 2 * kMinBlockRows) return m;
  int64_t blocks = 2;
  while (blocks < kMaxGemmBlocks && m >= 2 * blocks * kMinRowsPerManyBlocks) {
    blocks *= 2;
  }
  const int64_t per_block = (m + blocks - 1) / blocks;
  return (per_block + kGemmRowAlign - 1) / kGemmRowAlign * kGemmRowAlign;
}

// C [m, n] (ld = n) = op(A) [m, k] op(B) [k, n] + beta C, split over row
// blocks of C: block [r0, r1) reads rows r0.. of op(A), which start at
// a + r0 * lda when A is stored as is and at a + r0 when A is stored
// transposed (op(A) = A^T, so its rows are A's columns).
void ParallelGemm(CBLAS_TRANSPOSE a_trans, CBLAS_TRANSPOSE b_trans, int64_t m,
                  int64_t n, int64_t k, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c,
                  const char* op) {
  profile::Scope scope(profile::Phase::kMatmul);
  if (k == 0) {  // an empty sum: C = beta C, with C unread when beta is 0
    if (beta == 0.0f) std::fill(c, c + m * n, 0.0f);
    return;
  }
  const int64_t block = GemmBlockRows(m, n, k);
  const int64_t blocks = (m + block - 1) / block;
  ParallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r0 = i * block, rows = std::min(block, m - r0);
      const float* a_rows = a + (a_trans == CblasNoTrans ? r0 * lda : r0);
      CheckBlasWorkBufferFits(op);
      cblas_sgemm(CblasRowMajor, a_trans, b_trans, BlasInt(rows, op),
                  BlasInt(n, op), BlasInt(k, op), 1.0f, a_rows,
                  BlasInt(lda, op), b, BlasInt(ldb, op), beta, c + r0 * n,
                  BlasInt(n, op));
    }
  });
}

}  // namespace internal
}  // namespace rotor

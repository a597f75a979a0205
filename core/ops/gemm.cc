#include "core/ops/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "core/error.h"
#include "core/kernels/bf16_tile_product.h"
#include "core/kernels/convert.h"
#include "core/ops/gemm_backends.h"
#include "core/parallel.h"
#include "core/profile.h"
#include "core/tensor.h"

namespace rotor {

// ---- The switches --------------------------------------------------------

namespace {

constexpr int kUnresolved = -1;
std::atomic<int> active_backend{kUnresolved};
std::atomic<int> active_precision{static_cast<int>(MatmulPrecision::kFloat32)};

GemmBackend BuildDefaultBackend() {
#if ROTOR_WITH_ONEDNN && ROTOR_DEFAULT_GEMM_ONEDNN
  return GemmBackend::kOneDnn;
#else
  return GemmBackend::kOpenBlas;
#endif
}

void CheckBuilt(GemmBackend backend, const char* where) {
  ROTOR_CHECK(backend != GemmBackend::kOneDnn || OneDnnBuilt(), where,
              ": this rotor was built without oneDNN (cmake "
              "-DROTOR_WITH_ONEDNN=OFF, or libdnnl-dev was missing): use "
              "openblas, or install libdnnl-dev and rebuild");
}

}  // namespace

const char* GemmBackendName(GemmBackend backend) {
  return backend == GemmBackend::kOneDnn ? "onednn" : "openblas";
}

const char* MatmulPrecisionName(MatmulPrecision precision) {
  return precision == MatmulPrecision::kBfloat16 ? "bf16" : "fp32";
}

bool ParseGemmBackend(const std::string& name, GemmBackend* backend) {
  for (GemmBackend b : {GemmBackend::kOneDnn, GemmBackend::kOpenBlas}) {
    if (name == GemmBackendName(b)) {
      *backend = b;
      return true;
    }
  }
  return false;
}

bool ParseMatmulPrecision(const std::string& name, MatmulPrecision* precision) {
  for (MatmulPrecision p :
       {MatmulPrecision::kFloat32, MatmulPrecision::kBfloat16}) {
    if (name == MatmulPrecisionName(p)) {
      *precision = p;
      return true;
    }
  }
  return false;
}

bool OneDnnBuilt() { return ROTOR_WITH_ONEDNN; }

GemmBackend ActiveGemmBackend() {
  int backend = active_backend.load(std::memory_order_relaxed);
  if (backend != kUnresolved) return static_cast<GemmBackend>(backend);
  GemmBackend chosen = BuildDefaultBackend();
  if (const char* env = std::getenv("ROTOR_GEMM"); env != nullptr) {
    ROTOR_CHECK(ParseGemmBackend(env, &chosen), "ROTOR_GEMM is '", env,
                "': expected onednn or openblas");
    CheckBuilt(chosen, "ROTOR_GEMM=onednn");
  }
  // Two threads resolving at once choose the same.
  active_backend.store(static_cast<int>(chosen), std::memory_order_relaxed);
  return chosen;
}

void SetGemmBackend(GemmBackend backend) {
  CheckBuilt(backend, "the onednn matmul backend");
  ROTOR_CHECK(backend == GemmBackend::kOneDnn ||
                  ActiveMatmulPrecision() == MatmulPrecision::kFloat32,
              "the openblas matmul backend multiplies in float32 only, but "
              "the matmul precision is bf16");
  active_backend.store(static_cast<int>(backend), std::memory_order_relaxed);
}

MatmulPrecision ActiveMatmulPrecision() {
  return static_cast<MatmulPrecision>(
      active_precision.load(std::memory_order_relaxed));
}

std::string BfloatMatmulProblem() {
  if (!OneDnnBuilt()) {
    return "bf16 matmuls run on oneDNN, and this rotor was built without "
           "it (cmake -DROTOR_WITH_ONEDNN=OFF, or libdnnl-dev was missing)";
  }
  if (ActiveGemmBackend() != GemmBackend::kOneDnn) {
    return "bf16 matmuls run on oneDNN, but the matmul backend is openblas "
           "(ROTOR_GEMM or --gemm)";
  }
#if ROTOR_WITH_ONEDNN
  if (!internal::OneDnnRunsBf16()) {
    return StrCat(
        "oneDNN has no bf16 matmul on this CPU (its instruction set: ",
        internal::OneDnnIsa(),
        "): bf16 needs AVX-512 (F, BW, VL and DQ; AVX512_BF16 or AMX run it "
        "at full speed)");
  }
#endif
  return "";
}

void SetMatmulPrecision(MatmulPrecision precision) {
  if (precision == MatmulPrecision::kBfloat16) {
    const std::string problem = BfloatMatmulProblem();
    ROTOR_CHECK(problem.empty(), "precision bf16: ", problem);
  }
  active_precision.store(static_cast<int>(precision),
                         std::memory_order_relaxed);
}

MatmulPrecisionScope::MatmulPrecisionScope(MatmulPrecision precision)
    : previous_(ActiveMatmulPrecision()) {
  SetMatmulPrecision(precision);
}

MatmulPrecisionScope::~MatmulPrecisionScope() {
  active_precision.store(static_cast<int>(previous_),
                         std::memory_order_relaxed);
}

bool AttentionTilesInBf16() {
  return ActiveMatmulPrecision() == MatmulPrecision::kBfloat16 &&
         kernels::Bf16DotOutrunsFloat32();
}

std::string GemmDescription() {
  const MatmulPrecision precision = ActiveMatmulPrecision();
  std::string kernels;
#if ROTOR_WITH_ONEDNN
  if (ActiveGemmBackend() == GemmBackend::kOneDnn) {
    kernels = internal::OneDnnImplementation(
        internal::TypicalGemmBlock(), precision == MatmulPrecision::kBfloat16);
  }
#endif
  if (kernels.empty()) kernels = internal::OpenBlasCoreName();
  std::string text = StrCat(GemmBackendName(ActiveGemmBackend()), " ",
                            MatmulPrecisionName(precision), " (", kernels, ")");
  if (precision == MatmulPrecision::kBfloat16) {
    text += AttentionTilesInBf16() ? ", attention bf16" : ", attention fp32";
  }
  return text;
}

// ---- The product ---------------------------------------------------------

namespace internal {

namespace {

// How a product is cut into row blocks of C, one single-threaded library
// call each. The cut depends on the shape alone, never on the thread count:
// a library rounds a row of C by where it falls in the call and by how many
// rows the call has. On OpenBLAS's Haswell and Zen kernels nearly every
// sub-product of a 100-row product gives other bits than the same rows of
// the whole one, on SkylakeX the small products do, on Sandybridge none
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

// X [rows, cols] (leading dimension ld) rounded to bfloat16 into `out`,
// packed (leading dimension cols), in parallel over rows.
void RoundToBfloat(const float* x, int64_t rows, int64_t cols, int64_t ld,
                   uint16_t* out) {
  if (ld == cols) {
    kernels::F32ToBF16(x, out, static_cast<size_t>(rows * cols));
    return;
  }
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / cols);
  ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      kernels::F32ToBF16(x + r * ld, out + r * cols, static_cast<size_t>(cols));
    }
  });
}

// A float buffer from rotor's pool holding `count` bfloat16 values.
Tensor BfloatBuffer(int64_t count) { return Tensor::Empty({(count + 1) / 2}); }

}  // namespace

BfloatCopy RoundedCopy(const float* x, int64_t rows, int64_t cols) {
  profile::Scope scope(profile::Phase::kMatmul);
  BfloatCopy copy;
  copy.holder = BfloatBuffer(rows * cols);
  auto* out = reinterpret_cast<uint16_t*>(copy.holder.data());
  RoundToBfloat(x, rows, cols, cols, out);
  copy.data = out;
  return copy;
}

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
// element r0 * lda of A when A is stored as is and at element r0 when A is
// stored transposed (op(A) = A^T, so its rows are A's columns). In bf16, A
// and B are first rounded whole (each once per product, in parallel) into
// packed copies with the same layout.
void ParallelGemm(CBLAS_TRANSPOSE a_trans, CBLAS_TRANSPOSE b_trans, int64_t m,
                  int64_t n, int64_t k, const GemmOperand& a,
                  const GemmOperand& b, float beta, float* c, const char* op) {
  profile::Scope scope(profile::Phase::kMatmul);
  if (k == 0) {  // an empty sum: C = beta C, with C unread when beta is 0
    if (beta == 0.0f) std::fill(c, c + m * n, 0.0f);
    return;
  }
  [[maybe_unused]] const GemmBackend backend = ActiveGemmBackend();
  const bool bf16 = ActiveMatmulPrecision() == MatmulPrecision::kBfloat16;
  GemmBlock whole{a_trans, b_trans, m,    n,    k, a.data,
                  a.ld,    b.data,  b.ld, beta, c, n};
  size_t element_bytes = sizeof(float);
  Tensor a_bf16, b_bf16;  // rounded copies made here, while the product runs
  if (bf16) {
    // An operand stored [rows, cols]: its rounded copy, given or made here
    // (packed, leading dimension cols).
    const auto rounded = [](const GemmOperand& x, int64_t rows, int64_t cols,
                            Tensor& made, const void*& data, int64_t& ld) {
      if (x.bf16 != nullptr) {
        data = x.bf16, ld = x.ld;
        return;
      }
      made = BfloatBuffer(rows * cols);
      auto* out = reinterpret_cast<uint16_t*>(made.data());
      RoundToBfloat(x.data, rows, cols, x.ld, out);
      data = out, ld = cols;
    };
    rounded(a, a_trans == CblasNoTrans ? m : k, a_trans == CblasNoTrans ? k : m,
            a_bf16, whole.a, whole.lda);
    rounded(b, b_trans == CblasNoTrans ? k : n, b_trans == CblasNoTrans ? n : k,
            b_bf16, whole.b, whole.ldb);
    element_bytes = sizeof(uint16_t);
  }
  const int64_t block_rows = GemmBlockRows(m, n, k);
  const int64_t blocks = (m + block_rows - 1) / block_rows;
  ParallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r0 = i * block_rows;
      GemmBlock block = whole;
      block.m = std::min(block_rows, m - r0);
      const int64_t a_offset = a_trans == CblasNoTrans ? r0 * whole.lda : r0;
      block.a = static_cast<const char*>(whole.a) + a_offset * element_bytes;
      block.c = c + r0 * n;
#if ROTOR_WITH_ONEDNN
      if (backend == GemmBackend::kOneDnn) {
        OneDnnGemm(block, bf16, op);
        continue;
      }
#endif
      OpenBlasGemm(block, op);
    }
  });
}

}  // namespace internal
}  // namespace rotor

// The matmul seam (core/ops/gemm.h) with each backend and precision: values
// against a product in double, the stated bound of bf16 products, the same
// bits at any thread count, and the switches' refusals.
//
// Bounds, for C = op(A) op(B) + beta C0 over k terms, with
// S = sum_p |a_ip| |b_pj| + |beta c0_ij| and u32 = 2^-24 (float32's unit
// roundoff):
//   float32:  |C - C_exact| <= (k + 2) u32 S     (k sums in any order, the
//             beta term, the store);
//   bf16:     each operand is rounded to nearest with 8 significant bits,
//             a relative error of at most u16 = 2^-8, so a product a b
//             becomes a b (1 + d), |d| <= 2 u16 + u16^2; then the float32
//             sums as above:
//             |C - C_exact| <= (2 u16 + u16^2) S + (k + 2) u32 S.
//             And against the exact product of the rounded operands (what
//             the hardware multiplies exactly into float32), the float32
//             bound alone.
#include "core/ops/gemm.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernels/bf16_tile_product.h"
#include "core/kernels/convert.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

constexpr double kU32 = 1.0 / (1 << 24);
constexpr double kU16 = 1.0 / (1 << 8);

// The backend and precision for a scope, then the ones before.
class GemmSettings {
 public:
  GemmSettings(GemmBackend backend, MatmulPrecision precision)
      : backend_(ActiveGemmBackend()), precision_(ActiveMatmulPrecision()) {
    SetMatmulPrecision(MatmulPrecision::kFloat32);
    SetGemmBackend(backend);
    SetMatmulPrecision(precision);
  }
  ~GemmSettings() {
    SetMatmulPrecision(MatmulPrecision::kFloat32);
    SetGemmBackend(backend_);
    SetMatmulPrecision(precision_);
  }

 private:
  GemmBackend backend_;
  MatmulPrecision precision_;
};

std::vector<GemmBackend> BuiltBackends() {
  std::vector<GemmBackend> backends = {GemmBackend::kOpenBlas};
  if (OneDnnBuilt()) backends.push_back(GemmBackend::kOneDnn);
  return backends;
}

// Whether bf16 runs here with oneDNN (it needs AVX-512).
bool BfloatRuns() {
  if (!OneDnnBuilt()) return false;
  GemmSettings onednn(GemmBackend::kOneDnn, MatmulPrecision::kFloat32);
  return BfloatMatmulProblem().empty();
}

struct Problem {
  int64_t m, n, k;
  bool a_trans, b_trans;
  int64_t pad;  // extra elements per stored row (lda, ldb beyond the width)
  float beta;
  std::vector<float> a, b, c0;
  int64_t lda, ldb;
};

Problem MakeProblem(int64_t m, int64_t n, int64_t k, bool a_trans, bool b_trans,
                    int64_t pad, float beta, std::mt19937& rng) {
  Problem p{m, n, k, a_trans, b_trans, pad, beta, {}, {}, {}, 0, 0};
  const int64_t a_rows = a_trans ? k : m, a_cols = a_trans ? m : k;
  const int64_t b_rows = b_trans ? n : k, b_cols = b_trans ? k : n;
  p.lda = a_cols + pad, p.ldb = b_cols + pad;
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  p.a.resize(a_rows * p.lda);
  p.b.resize(b_rows * p.ldb);
  p.c0.resize(m * n);
  for (float& x : p.a) x = uniform(rng);
  for (float& x : p.b) x = uniform(rng);
  for (float& x : p.c0) x = uniform(rng);
  return p;
}

float OpA(const Problem& p, const std::vector<float>& a, int64_t i, int64_t q) {
  return p.a_trans ? a[q * p.lda + i] : a[i * p.lda + q];
}
float OpB(const Problem& p, const std::vector<float>& b, int64_t q, int64_t j) {
  return p.b_trans ? b[j * p.ldb + q] : b[q * p.ldb + j];
}

std::vector<float> RunProduct(const Problem& p) {
  std::vector<float> c = p.c0;
  internal::ParallelGemm(p.a_trans ? CblasTrans : CblasNoTrans,
                         p.b_trans ? CblasTrans : CblasNoTrans, p.m, p.n, p.k,
                         p.a.data(), p.lda, p.b.data(), p.ldb, p.beta, c.data(),
                         "test");
  return c;
}

std::vector<float> Bfloat(const std::vector<float>& x) {
  std::vector<uint16_t> bits(x.size());
  std::vector<float> rounded(x.size());
  kernels::F32ToBF16(x.data(), bits.data(), x.size());
  kernels::BF16ToF32(bits.data(), rounded.data(), x.size());
  return rounded;
}

// Checks every element of `c` against the exact product of `a` and `b` (in
// double) within relative_bound * S + (k + 2) u32 S.
void ExpectWithinBound(const Problem& p, const std::vector<float>& c,
                       const std::vector<float>& a, const std::vector<float>& b,
                       double relative_bound, const std::string& what) {
  int reported = 0;
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double exact = p.beta * double(p.c0[i * p.n + j]);
      double s = std::fabs(exact);
      for (int64_t q = 0; q < p.k; ++q) {
        const double x = OpA(p, a, i, q), y = OpB(p, b, q, j);
        exact += x * y;
        s += std::fabs(x * y);
      }
      const double bound = (relative_bound + (p.k + 2) * kU32) * s;
      const double error = std::fabs(c[i * p.n + j] - exact);
      if (error > bound && reported++ < 3) {
        ADD_FAILURE() << what << ": C[" << i << ", " << j
                      << "] = " << c[i * p.n + j] << ", exactly " << exact
                      << ": error " << error << " above the bound " << bound;
      }
    }
  }
}

std::string Describe(const Problem& p, GemmBackend backend,
                     MatmulPrecision precision) {
  return StrCat(GemmBackendName(backend), " ", MatmulPrecisionName(precision),
                " ", p.m, "x", p.n, "x", p.k, " a_trans ", p.a_trans,
                " b_trans ", p.b_trans, " pad ", p.pad, " beta ", p.beta);
}

struct Size {
  int64_t m, n, k;
};
// One element; odd sizes under one vector; one block with tails in every
// dimension; and products cut into 2 and 4 row blocks (GemmBlockRows).
const Size kSizes[] = {{1, 1, 1},     {7, 13, 5},    {33, 17, 65},
                       {130, 70, 90}, {300, 90, 70}, {2100, 24, 20}};

template <typename Check>
void ForEveryProblem(const Check& check) {
  std::mt19937 rng(31);
  for (const Size size : kSizes) {
    for (const bool a_trans : {false, true}) {
      for (const bool b_trans : {false, true}) {
        for (const float beta : {0.0f, 1.0f}) {
          for (const int64_t pad : {0, 3}) {
            check(MakeProblem(size.m, size.n, size.k, a_trans, b_trans, pad,
                              beta, rng));
          }
        }
      }
    }
  }
}

TEST(GemmBackends, Float32MatchesTheProductInDouble) {
  for (const GemmBackend backend : BuiltBackends()) {
    GemmSettings settings(backend, MatmulPrecision::kFloat32);
    ForEveryProblem([&](const Problem& p) {
      ExpectWithinBound(p, RunProduct(p), p.a, p.b, 0.0,
                        Describe(p, backend, MatmulPrecision::kFloat32));
    });
  }
}

TEST(GemmBackends, BfloatStaysWithinItsStatedBound) {
  if (!BfloatRuns()) GTEST_SKIP() << "no bf16 matmul here";
  GemmSettings settings(GemmBackend::kOneDnn, MatmulPrecision::kBfloat16);
  int64_t differs_from_float32 = 0;
  ForEveryProblem([&](const Problem& p) {
    const std::string what =
        Describe(p, GemmBackend::kOneDnn, MatmulPrecision::kBfloat16);
    const std::vector<float> c = RunProduct(p);
    ExpectWithinBound(p, c, p.a, p.b, 2 * kU16 + kU16 * kU16, what);
    // The operands really are rounded: the product of the rounded operands
    // is met within float32's bound alone.
    ExpectWithinBound(p, c, Bfloat(p.a), Bfloat(p.b), 0.0,
                      what + " (rounded operands)");
    std::vector<float> float32;
    {
      MatmulPrecisionScope fp32(MatmulPrecision::kFloat32);
      float32 = RunProduct(p);
    }
    differs_from_float32 += c != float32;
  });
  EXPECT_GT(differs_from_float32, 0) << "bf16 gave float32's bits everywhere";
}

// An operand rounded once (RoundedCopy, as Linear rounds dY for dX and dW):
// dense, it gives the bits of one the product rounds itself (which packs
// it the same way), as it is or transposed; as a column range of a wider
// rounded matrix (a fused layer's part of dY), it is the product of the
// rounded operands within float32's bound (oneDNN may sum in another order
// for another leading dimension, so not the same bits).
TEST(GemmBackends, ARoundedCopyIsTheRoundedOperand) {
  if (!BfloatRuns()) GTEST_SKIP() << "no bf16 matmul here";
  GemmSettings settings(GemmBackend::kOneDnn, MatmulPrecision::kBfloat16);
  std::mt19937 rng(41);
  for (const Size size : {Size{300, 90, 70}, Size{33, 17, 129}}) {
    for (const bool a_trans : {false, true}) {
      for (const int64_t column : {0, 5}) {
        // A's stored rows are lda = width + pad wide; op(A) reads the
        // columns [column, column + width).
        const int64_t pad = column == 0 ? 0 : column + 3;
        const Problem p =
            MakeProblem(size.m, size.n, size.k, a_trans, false, pad, 1.0f, rng);
        const std::string what =
            Describe(p, GemmBackend::kOneDnn, MatmulPrecision::kBfloat16) +
            " from column " + std::to_string(column);
        const int64_t a_rows = a_trans ? size.k : size.m;
        const internal::BfloatCopy copy =
            internal::RoundedCopy(p.a.data(), a_rows, p.lda);
        const CBLAS_TRANSPOSE trans = a_trans ? CblasTrans : CblasNoTrans;
        std::vector<float> given = p.c0;
        internal::ParallelGemm(trans, CblasNoTrans, p.m, p.n, p.k,
                               {p.a.data() + column, p.lda, copy.data + column},
                               {p.b.data(), p.ldb}, p.beta, given.data(),
                               "test");
        if (column == 0) {
          EXPECT_TRUE(given == RunProduct(p)) << what;
          continue;
        }
        // p's A, shifted to start at `column`, for the bound's reference.
        Problem shifted = p;
        std::copy(p.a.begin() + column, p.a.end(), shifted.a.begin());
        ExpectWithinBound(shifted, given, Bfloat(shifted.a), Bfloat(p.b), 0.0,
                          what);
      }
    }
  }
}

// Every thread count runs the same calls (GemmBlockRows), so the same bits,
// with each backend and precision (the coretypes suite runs this once per
// OpenBLAS core type).
TEST(GemmBackends, SameBitsAtAnyThreadCount) {
  std::vector<std::pair<GemmBackend, MatmulPrecision>> settings;
  for (const GemmBackend backend : BuiltBackends()) {
    settings.push_back({backend, MatmulPrecision::kFloat32});
  }
  if (BfloatRuns()) {
    settings.push_back({GemmBackend::kOneDnn, MatmulPrecision::kBfloat16});
  }
  std::mt19937 rng(37);
  for (const auto& [backend, precision] : settings) {
    GemmSettings scope(backend, precision);
    for (const Size size :
         {Size{300, 90, 70}, Size{1100, 33, 40}, Size{4200, 20, 16}}) {
      for (const bool a_trans : {false, true}) {
        for (const float beta : {0.0f, 1.0f}) {
          const Problem p = MakeProblem(size.m, size.n, size.k, a_trans,
                                        !a_trans, 0, beta, rng);
          const std::vector<float> one =
              test::RunAtThreads(1, [&] { return RunProduct(p); });
          for (const int threads : {2, 3}) {
            EXPECT_TRUE(test::RunAtThreads(
                            threads, [&] { return RunProduct(p); }) == one)
                << Describe(p, backend, precision) << " at " << threads
                << " threads";
          }
        }
      }
    }
  }
}

TEST(GemmBackends, NamesParseBothWays) {
  for (const GemmBackend backend :
       {GemmBackend::kOneDnn, GemmBackend::kOpenBlas}) {
    GemmBackend parsed = GemmBackend::kOneDnn;
    ASSERT_TRUE(ParseGemmBackend(GemmBackendName(backend), &parsed));
    EXPECT_EQ(parsed, backend);
  }
  for (const MatmulPrecision precision :
       {MatmulPrecision::kFloat32, MatmulPrecision::kBfloat16}) {
    MatmulPrecision parsed = MatmulPrecision::kFloat32;
    ASSERT_TRUE(ParseMatmulPrecision(MatmulPrecisionName(precision), &parsed));
    EXPECT_EQ(parsed, precision);
  }
  GemmBackend backend;
  EXPECT_FALSE(ParseGemmBackend("mkl", &backend));
  MatmulPrecision precision;
  EXPECT_FALSE(ParseMatmulPrecision("fp16", &precision));
}

// bf16 is oneDNN's alone: refused on OpenBLAS, naming it, and OpenBLAS is
// refused while bf16 is on; a refusal changes nothing.
TEST(GemmBackends, BfloatNeedsOneDnnAndSaysSo) {
  {
    GemmSettings openblas(GemmBackend::kOpenBlas, MatmulPrecision::kFloat32);
    // Without oneDNN in the build, the message says so; with it, it names
    // the backend that was chosen instead.
    ROTOR_EXPECT_ERROR(SetMatmulPrecision(MatmulPrecision::kBfloat16),
                       "precision bf16: ",
                       OneDnnBuilt() ? "the matmul backend is openblas"
                                     : "this rotor was built without it");
    EXPECT_EQ(ActiveMatmulPrecision(), MatmulPrecision::kFloat32);
  }
  if (!BfloatRuns()) GTEST_SKIP() << "no bf16 matmul here";
  GemmSettings bf16(GemmBackend::kOneDnn, MatmulPrecision::kBfloat16);
  ROTOR_EXPECT_ERROR(SetGemmBackend(GemmBackend::kOpenBlas),
                     "openblas matmul backend multiplies in float32 only");
  EXPECT_EQ(ActiveGemmBackend(), GemmBackend::kOneDnn);
}

TEST(GemmBackends, DescriptionNamesBackendPrecisionAndKernels) {
  for (const GemmBackend backend : BuiltBackends()) {
    GemmSettings settings(backend, MatmulPrecision::kFloat32);
    const std::string text = GemmDescription();
    EXPECT_EQ(text.rfind(StrCat(GemmBackendName(backend), " fp32 ("), 0), 0u)
        << text;
  }
}

// A bf16 run's attention multiplies in bf16 exactly where bf16 tiles
// outrun float32 ones (AVX512_BF16 on AMD), and the description says which.
TEST(GemmBackends, AttentionTilesFollowThePrecisionWhereTheyOutrunFloat32) {
  EXPECT_FALSE(AttentionTilesInBf16());
  if (!BfloatRuns()) GTEST_SKIP() << "no bf16 matmul here";
  GemmSettings bf16(GemmBackend::kOneDnn, MatmulPrecision::kBfloat16);
  EXPECT_EQ(AttentionTilesInBf16(), kernels::Bf16DotOutrunsFloat32());
  const std::string text = GemmDescription();
  EXPECT_NE(text.find(AttentionTilesInBf16() ? ", attention bf16"
                                             : ", attention fp32"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace rotor

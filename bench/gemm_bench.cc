// The matmul backends (core/ops/gemm.h) at a training step's own products,
// against the machine's FMA peak measured in the same run. For each linear
// layer y = x W^T of a step (x [rows, in], W [out, in]), its three
// products, as rotor's ops call them:
//
//   forward  y [rows, out]  = x W^T        (A as is, B transposed)
//   dx       dx [rows, in]  = dy W         (A as is, B as is)
//   dW       dW [out, in]   = dy^T x       (A transposed, B as is)
//
// each through internal::ParallelGemm (so cut into GemmBlockRows's blocks),
// one thread, best of 5 in thread CPU time; with, for oneDNN, the
// implementation it picks for the first block. The shapes are those of
// configs/default.yaml (16 x 256 token rows) and of SmolLM2-135M at 2,048
// rows (bench_util.h StepShapes). % peak is over the float32 FMA peak;
// bf16's limit is twice that (AVX512_BF16's dot products; AMX more).
//
//   build/bench/gemm_bench [--backend onednn|openblas|both]
//                          [--precision fp32|bf16|both] [--model
//                          default|smol|both]
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/error.h"
#include "core/ops/gemm.h"
#include "core/ops/gemm_backends.h"
#include "core/parallel.h"
#include "core/profile.h"

namespace rotor {
namespace {

struct Product {
  const char* name;
  CBLAS_TRANSPOSE a_trans, b_trans;
  int64_t m, n, k;
};

// The three products of x [rows, in] W^T, W [out, in].
std::vector<Product> ProductsOf(const bench::LinearShape& s) {
  return {{"forward", CblasNoTrans, CblasTrans, s.rows, s.out, s.in},
          {"dx", CblasNoTrans, CblasNoTrans, s.rows, s.in, s.out},
          {"dW", CblasTrans, CblasNoTrans, s.out, s.in, s.rows}};
}

// GFLOP/s of one product through ParallelGemm, best of 5 (thread CPU time).
double Gflops(const Product& p) {
  const int64_t a_size = p.m * p.k, b_size = p.k * p.n;
  std::vector<float> a(a_size, 0.5f), b(b_size, 0.25f), c(p.m * p.n);
  const int64_t lda = p.a_trans == CblasNoTrans ? p.k : p.m;
  const int64_t ldb = p.b_trans == CblasNoTrans ? p.n : p.k;
  double best = 1e30;
  for (int r = 0; r < 6; ++r) {  // the first is the warm-up
    const double start = profile::ThreadCpuSeconds();
    internal::ParallelGemm(p.a_trans, p.b_trans, p.m, p.n, p.k, a.data(), lda,
                           b.data(), ldb, 0.0f, c.data(), "gemm_bench");
    if (r > 0) best = std::min(best, profile::ThreadCpuSeconds() - start);
  }
  return 2.0 * p.m * p.n * p.k / best / 1e9;
}

std::string Implementation(const Product& p, bool bf16) {
  if (ActiveGemmBackend() != GemmBackend::kOneDnn) {
    return internal::OpenBlasCoreName();
  }
  internal::GemmBlock block;
  block.a_trans = p.a_trans, block.b_trans = p.b_trans;
  block.m = internal::GemmBlockRows(p.m, p.n, p.k), block.n = p.n;
  block.k = p.k;
  block.lda = p.a_trans == CblasNoTrans ? p.k : p.m;  // as ParallelGemm's
  block.ldb = p.b_trans == CblasNoTrans ? p.n : p.k;
  block.ldc = p.n;
  return internal::OneDnnImplementation(block, bf16);
}

int Main(int argc, char** argv) {
  std::string backends = "both", precisions = "both", models = "both";
  const char* usage =
      "usage: gemm_bench [--backend onednn|openblas|both] [--precision "
      "fp32|bf16|both] [--model default|smol|both]\n";
  if (argc % 2 == 0) {  // a flag without its value, or --help
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--backend") {
      backends = argv[i + 1];
    } else if (flag == "--precision") {
      precisions = argv[i + 1];
    } else if (flag == "--model") {
      models = argv[i + 1];
    } else {
      std::fprintf(stderr, "gemm_bench: unknown flag %s\n%s", flag.c_str(),
                   usage);
      return 2;
    }
  }
  const auto one_of = [](const std::string& value,
                         std::initializer_list<const char*> allowed) {
    for (const char* name : allowed) {
      if (value == name) return true;
    }
    return false;
  };
  if (!one_of(backends, {"onednn", "openblas", "both"}) ||
      !one_of(precisions, {"fp32", "bf16", "both"}) ||
      !one_of(models, {"default", "smol", "both"})) {
    std::fprintf(stderr, "gemm_bench: unknown value\n%s", usage);
    return 2;
  }
  SetNumThreads(1);
  const bench::FmaPeak peak = bench::MeasureFmaPeak();
  std::printf("matmuls at a step's shapes on %s, one thread\n",
              bench::CpuModelName().c_str());
  std::printf(
      "FMA peak: %.1f GFLOP/s (%s, %d floats); bf16 dot products "
      "(VDPBF16PS): %.1f GFLOP/s (0: no AVX512_BF16)\n\n",
      peak.gflops, peak.target, peak.lanes, bench::Bf16DotPeakGflops());
  std::printf("%-8s %-9s %-5s %-8s %18s %9s %7s  %s\n", "model", "backend",
              "prec", "product", "m x n x k", "GFLOP/s", "% peak",
              "implementation");
  for (const bench::BenchConfig& c : bench::Configs()) {
    const char* model = c.name.c_str();
    if (c.name != "default" && c.name != "smol") continue;
    if (models != "both" && models != c.name) continue;
    const nn::TransformerConfig& config = c.model;
    const int64_t rows = c.batch * c.seq;
    for (GemmBackend backend : {GemmBackend::kOneDnn, GemmBackend::kOpenBlas}) {
      if (backends != "both" && backends != GemmBackendName(backend)) continue;
      if (backend == GemmBackend::kOneDnn && !OneDnnBuilt()) continue;
      SetMatmulPrecision(MatmulPrecision::kFloat32);
      SetGemmBackend(backend);
      for (MatmulPrecision precision :
           {MatmulPrecision::kFloat32, MatmulPrecision::kBfloat16}) {
        if (precisions != "both" &&
            precisions != MatmulPrecisionName(precision))
          continue;
        if (precision == MatmulPrecision::kBfloat16 &&
            !BfloatMatmulProblem().empty())
          continue;
        SetMatmulPrecision(precision);
        double flops = 0, seconds = 0;
        for (const bench::LinearShape& s : bench::StepShapes(config, rows)) {
          for (const Product& p : ProductsOf(s)) {
            const double gflops = Gflops(p);
            const double f = 2.0 * p.m * p.n * p.k * s.count;
            flops += f, seconds += f / (gflops * 1e9);
            char shape[64];
            std::snprintf(shape, sizeof shape, "%lldx%lldx%lld",
                          static_cast<long long>(p.m),
                          static_cast<long long>(p.n),
                          static_cast<long long>(p.k));
            std::printf(
                "%-8s %-9s %-5s %-8s %18s %9.1f %6.0f%%  %s\n", model,
                GemmBackendName(backend), MatmulPrecisionName(precision),
                p.name, shape, gflops, 100 * gflops / peak.gflops,
                Implementation(p, precision == MatmulPrecision::kBfloat16)
                    .c_str());
          }
        }
        std::printf("%-8s %-9s %-5s %-8s %18s %9.1f %6.0f%%\n", model,
                    GemmBackendName(backend), MatmulPrecisionName(precision),
                    "step", "(weighted)", flops / seconds / 1e9,
                    100 * flops / seconds / 1e9 / peak.gflops);
      }
      SetMatmulPrecision(MatmulPrecision::kFloat32);
    }
  }
  return 0;
}

}  // namespace
}  // namespace rotor

int main(int argc, char** argv) {
  return rotor::bench::RunMain("gemm_bench",
                               [&] { return rotor::Main(argc, argv); });
}

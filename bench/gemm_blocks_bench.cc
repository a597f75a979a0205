// Why and at what cost ParallelGemm (core/ops/gemm.cc) cuts every product
// into row blocks by its shape alone. Two tables, for the OpenBLAS kernels
// this process runs (OPENBLAS_CORETYPE=Haswell etc. picks another set):
//
//   rows  For C [100, n] = A [100, k] B^T, every sub-product of rows
//         [r0, r0 + rows) as its own sgemm call (5,050 calls): how many
//         give bits that differ from the same rows of the whole product.
//         Zero means a row's bits do not depend on the call it is in.
//   cost  One thread, a training step's products (the forward y = x W^T and
//         the weight gradient dW = dy^T x at configs/default.yaml's and
//         SmolLM2-135M's shapes): GFLOP/s of one sgemm call and of
//         ParallelGemm's shape-only cut into blocks, and their ratio: the
//         1-thread price of running the same calls at every thread count.
//
//   build/bench/gemm_blocks_bench
#include <cblas.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bench/bench_util.h"
#include "core/ops/gemm.h"
#include "core/parallel.h"

namespace {

void RowsTable() {
  std::printf("rows: sub-products of a 100-row product whose bits differ\n");
  std::printf("%6s %6s %10s %10s\n", "n", "k", "B [n,k]", "B [k,n]");
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  const int m = 100;
  for (const auto& [n, k] :
       {std::pair{257, 32}, {32, 257}, {64, 64}, {192, 512}}) {
    std::vector<float> a(m * k), b(n * k);
    for (float& x : a) x = normal(rng);
    for (float& x : b) x = normal(rng);
    int differ[2] = {0, 0};
    for (const int b_trans : {1, 0}) {
      auto product = [&](int r0, int rows, float* c) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans,
                    b_trans ? CblasTrans : CblasNoTrans, rows, n, k, 1.0f,
                    a.data() + r0 * k, k, b.data(), b_trans ? k : n, 0.0f, c,
                    n);
      };
      std::vector<float> whole(m * n), part(m * n);
      product(0, m, whole.data());
      for (int r0 = 0; r0 < m; ++r0) {
        for (int rows = 1; r0 + rows <= m; ++rows) {
          product(r0, rows, part.data());
          differ[b_trans] += std::memcmp(part.data(), whole.data() + r0 * n,
                                         sizeof(float) * rows * n) != 0;
        }
      }
    }
    std::printf("%6d %6d %10d %10d   of %d\n", n, k, differ[1], differ[0],
                m * (m + 1) / 2);
  }
}

void CostTable() {
  rotor::SetNumThreads(1);
  std::printf("\ncost at one thread, GFLOP/s\n");
  std::printf("%-28s %7s %8s %8s %8s\n", "product", "blocks", "1 call", "cut",
              "ratio");
  struct Product {
    const char* name;
    bool a_trans;  // dW = dy^T x reads dy [rows, out] transposed
    int64_t m, n, k;
  };
  const Product products[] = {
      {"default y=xW^T 4096x512x192", false, 4096, 512, 192},
      {"default dW 512x192x4096", true, 512, 192, 4096},
      {"default dW 192x192x4096", true, 192, 192, 4096},
      {"smol y=xW^T 2048x1536x576", false, 2048, 1536, 576},
      {"smol dW 1536x576x2048", true, 1536, 576, 2048},
      {"smol dW 576x576x2048", true, 576, 576, 2048},
  };
  for (const Product& p : products) {
    std::vector<float> a(p.m * p.k, 0.5f), b(p.k * p.n, 0.25f), c(p.m * p.n);
    const int64_t lda = p.a_trans ? p.m : p.k;
    const double flops = 2.0 * p.m * p.n * p.k;
    const double one = rotor::bench::BestSeconds([&] {
      cblas_sgemm(CblasRowMajor, p.a_trans ? CblasTrans : CblasNoTrans,
                  CblasNoTrans, p.m, p.n, p.k, 1.0f, a.data(), lda, b.data(),
                  p.n, 0.0f, c.data(), p.n);
    });
    const double cut = rotor::bench::BestSeconds([&] {
      rotor::internal::ParallelGemm(p.a_trans ? CblasTrans : CblasNoTrans,
                                    CblasNoTrans, p.m, p.n, p.k, a.data(), lda,
                                    b.data(), p.n, 0.0f, c.data(), "bench");
    });
    const int64_t block = rotor::internal::GemmBlockRows(p.m, p.n, p.k);
    std::printf("%-28s %7lld %8.1f %8.1f %8.3f\n", p.name,
                static_cast<long long>((p.m + block - 1) / block),
                flops / one / 1e9, flops / cut / 1e9, one / cut);
  }
}

}  // namespace

int main() {
  std::printf("OpenBLAS kernels: %s\n\n", openblas_get_corename());
  RowsTable();
  CostTable();
  return 0;
}

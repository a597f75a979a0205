// The attention kernels' tile product (core/kernels/tile_product.h), per
// Highway target, against its scalar twin in double: row-major and
// transposed A, written and accumulated C, every tile shape the blocking
// picks (rows and columns around the register tile and the vector widths,
// one-lane tails), padded leading dimensions and misaligned pointers. And
// the property the attention kernels' equal bits rest on: a sub-block of a
// product is bitwise the same as that part of the whole product, and zero
// weights add exactly nothing.
#include "core/kernels/tile_product.h"

#include <random>
#include <string>
#include <vector>

#include "core/kernels/tile_product_scalar.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::MisalignedFloats;

struct Case {
  size_t rows, cols, depth;
  bool transposed_a;  // A(m, k) = a[k * lda + m]
  bool accumulate;
};

std::string Describe(const Case& c, size_t misalign) {
  return "rows=" + std::to_string(c.rows) + " cols=" + std::to_string(c.cols) +
         " depth=" + std::to_string(c.depth) +
         (c.transposed_a ? " A^T" : " A") + (c.accumulate ? " C+=" : " C=") +
         " misalign=" + std::to_string(misalign);
}

// A, B and C with leading dimensions padded past their widths (3 floats),
// as tiles inside larger arrays are.
struct Operands {
  Operands(const Case& c, size_t misalign, std::mt19937& rng)
      : lda((c.transposed_a ? c.rows : c.depth) + 3),
        ldb(c.cols + 3),
        ldc(c.cols + 3),
        a((c.transposed_a ? c.depth : c.rows) * lda, misalign, rng),
        b(c.depth * ldb, misalign, rng),
        c(c.rows * ldc, misalign, rng) {}
  kernels::TileOperands Of(const Case& k) {
    return {a.data(),
            k.transposed_a ? 1 : lda,
            k.transposed_a ? lda : 1,
            b.data(),
            ldb,
            c.data(),
            ldc};
  }
  size_t lda, ldb, ldc;
  MisalignedFloats a, b, c;
};

ROTOR_PER_TARGET_SUITE(TileProductKernel);

ROTOR_PER_TARGET_TEST(TileProductKernel, MatchesScalarTwin) {
  std::mt19937 rng(41);
  for (size_t rows : {1, 3, 4, 7, 8, 13, 64}) {
    for (size_t cols : {1, 5, 8, 16, 31, 34, 64, 128, 130}) {
      for (size_t depth : {1, 6, 64}) {
        for (bool transposed_a : {false, true}) {
          for (bool accumulate : {false, true}) {
            const Case k{rows, cols, depth, transposed_a, accumulate};
            for (size_t misalign : test::KernelTestMisalignments()) {
              Operands in(k, misalign, rng);
              std::vector<double> a(in.a.data(), in.a.data() + in.a.size());
              std::vector<double> b(in.b.data(), in.b.data() + in.b.size());
              std::vector<double> c(in.c.data(), in.c.data() + in.c.size());
              const double alpha = 0.375;
              kernels::TileProductRef<double>(
                  accumulate, rows, cols, depth, alpha, a.data(),
                  transposed_a ? 1 : in.lda, transposed_a ? in.lda : 1,
                  b.data(), in.ldb, c.data(), in.ldc);
              kernels::TileProduct(accumulate, rows, cols, depth, alpha,
                                   in.Of(k));
              // Only the rows x cols block changes; the padding keeps its
              // values.
              test::ExpectNear(in.c.data(), c.data(), c.size(), 1e-5, 1e-5,
                               Describe(k, misalign));
              if (HasFatalFailure()) return;
            }
          }
        }
      }
    }
  }
}

// Rows [m0, rows) and columns [n0, cols) computed alone give bitwise that
// part of the whole product: the blocking (register tiles, narrower column
// blocks, one-lane tails) never changes an element's chain of sums.
ROTOR_PER_TARGET_TEST(TileProductKernel, SubBlocksEqualTheWholeBitwise) {
  std::mt19937 rng(42);
  for (bool accumulate : {false, true}) {
    const Case k{64, 70, 64, false, accumulate};
    Operands in(k, 1, rng);
    const std::vector<float> c0(in.c.data(), in.c.data() + in.c.size());
    kernels::TileProduct(accumulate, k.rows, k.cols, k.depth, 0.5f, in.Of(k));
    const std::vector<float> whole(in.c.data(), in.c.data() + in.c.size());
    for (size_t m0 : {1, 5, 12}) {
      for (size_t n0 : {1, 7, 17, 33}) {
        std::copy(c0.begin(), c0.end(), in.c.data());
        kernels::TileOperands part = in.Of(k);
        part.a += m0 * in.lda;
        part.b += n0;
        part.c += m0 * in.ldc + n0;
        kernels::TileProduct(accumulate, k.rows - m0, k.cols - n0, k.depth,
                             0.5f, part);
        for (size_t m = m0; m < k.rows; ++m) {
          for (size_t n = n0; n < k.cols; ++n) {
            ASSERT_EQ(in.c.data()[m * in.ldc + n], whole[m * in.ldc + n])
                << "m0=" << m0 << " n0=" << n0 << " at " << m << ", " << n;
          }
        }
      }
    }
  }
}

// Weights that are 0 (masked keys) leave C as a shorter product leaves it:
// depth 64 with the last 24 weights of every row 0 equals depth 40, bitwise.
ROTOR_PER_TARGET_TEST(TileProductKernel, ZeroWeightsAddNothing) {
  std::mt19937 rng(43);
  const Case k{13, 34, 64, false, true};
  Operands in(k, 0, rng);
  for (size_t m = 0; m < k.rows; ++m) {
    for (size_t j = 40; j < 64; ++j) in.a.data()[m * in.lda + j] = 0.0f;
  }
  const std::vector<float> c0(in.c.data(), in.c.data() + in.c.size());
  kernels::TileProduct(true, k.rows, k.cols, 64, 1.0f, in.Of(k));
  const std::vector<float> full(in.c.data(), in.c.data() + in.c.size());
  std::copy(c0.begin(), c0.end(), in.c.data());
  kernels::TileProduct(true, k.rows, k.cols, 40, 1.0f, in.Of(k));
  EXPECT_TRUE(full ==
              std::vector<float>(in.c.data(), in.c.data() + in.c.size()));
}

}  // namespace
}  // namespace rotor

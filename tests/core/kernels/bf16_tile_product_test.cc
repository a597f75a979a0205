// The bfloat16 tile products of the attention kernels
// (core/kernels/bf16_tile_product.h) against their scalar twin, bit for bit:
// both packers at odd depths and widths from misaligned floats, the product
// at every tile shape the blocking picks (partial last vectors, row tails),
// written and accumulated; sub-blocks equal the whole, and the rounding
// error against double stays within bfloat16's bound. Skipped, naming the
// instruction set, on a CPU without AVX512_BF16.
#include "core/kernels/bf16_tile_product.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/kernels/bf16_tile_product_scalar.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::MisalignedFloats;

TEST(Bf16TilePack, RowsMatchTheTwin) {
  ROTOR_SKIP_WITHOUT_BF16_DOT();
  std::mt19937 rng(51);
  for (size_t depth : {1, 2, 15, 16, 17, 31, 32, 33, 64, 65, 100}) {
    for (size_t misalign : {0, 1, 3}) {
      const size_t rows = 5, lda = depth + 3, out_row = (depth + 1) / 2 + 2;
      MisalignedFloats a(rows * lda, misalign, rng);
      std::vector<uint32_t> got(rows * out_row, 7u), want(rows * out_row, 7u);
      kernels::PackBf16Rows(a.data(), lda, rows, depth, got.data(), out_row);
      kernels::PackBf16RowsRef(a.data(), lda, rows, depth, want.data(),
                               out_row);
      ASSERT_EQ(got, want) << "depth " << depth << " misalign " << misalign;
    }
  }
}

TEST(Bf16TilePack, PairRowsMatchTheTwin) {
  ROTOR_SKIP_WITHOUT_BF16_DOT();
  std::mt19937 rng(52);
  for (size_t depth : {1, 2, 3, 32, 63, 64}) {
    for (size_t cols : {1, 15, 16, 17, 40, 64, 72}) {
      for (size_t misalign : {0, 2}) {
        const size_t ldb = cols + 5;
        const size_t padded = kernels::Bf16PackedColumns(cols);
        const size_t ldo = padded + 16, pairs = (depth + 1) / 2;
        MisalignedFloats b(depth * ldb, misalign, rng);
        std::vector<uint32_t> got(pairs * ldo, 7u), want(pairs * ldo, 7u);
        kernels::PackBf16PairRows(b.data(), ldb, depth, cols, got.data(), ldo);
        kernels::PackBf16PairRowsRef(b.data(), ldb, depth, cols, padded,
                                     want.data(), ldo);
        ASSERT_EQ(got, want) << "depth " << depth << " cols " << cols;
      }
    }
  }
}

// Rounding follows VCVTNE2PS2BF16: ties to even, NaN stays NaN, denormals
// become signed zeros.
TEST(Bf16TilePack, RoundsToNearestEvenAndFlushesDenormals) {
  ROTOR_SKIP_WITHOUT_BF16_DOT();
  const std::vector<float> values = {1.0f + 0x1p-8f,  // tie: to 1.0 (even)
                                     1.0f + 0x3p-8f,  // tie: up to 1 + 2^-6
                                     -0x1p-140f,      // denormal: -0
                                     NAN,
                                     3.0e38f,
                                     -2.5f};
  std::vector<uint32_t> pairs(values.size() / 2);
  kernels::PackBf16Rows(values.data(), values.size(), 1, values.size(),
                        pairs.data(), pairs.size());
  EXPECT_EQ(pairs[0], 0x3f823f80u);  // (1.0, 1 + 2^-6)
  EXPECT_EQ(pairs[1], 0x7fc08000u);  // (-0, the NaN made quiet)
  std::vector<uint32_t> want(pairs.size());
  kernels::PackBf16RowsRef(values.data(), values.size(), 1, values.size(),
                           want.data(), want.size());
  EXPECT_EQ(pairs, want);
}

// Packed operands for rows x cols x depth, A row-major or transposed.
struct Packed {
  Packed(size_t rows, size_t cols, size_t depth, bool transposed_a,
         std::mt19937& rng)
      : pairs((depth + 1) / 2),
        ldb(kernels::Bf16PackedColumns(cols) + 16),
        a_floats(rows * depth, 1, rng),
        b_floats(depth * cols, 3, rng),
        b(pairs * ldb) {
    kernels::PackBf16PairRowsRef(b_floats.data(), cols, depth, cols,
                                 kernels::Bf16PackedColumns(cols), b.data(),
                                 ldb);
    if (transposed_a) {  // A^T stored [depth, rows]
      a_row = 1, a_col = kernels::Bf16PackedColumns(rows);
      a.resize(pairs * a_col);
      kernels::PackBf16PairRowsRef(a_floats.data(), rows, depth, rows, a_col,
                                   a.data(), a_col);
    } else {
      a_row = pairs + 1, a_col = 1;
      a.resize(rows * a_row);
      kernels::PackBf16RowsRef(a_floats.data(), depth, rows, depth, a.data(),
                               a_row);
    }
  }
  size_t pairs, ldb, a_row = 0, a_col = 0;
  MisalignedFloats a_floats, b_floats;
  std::vector<uint32_t> a, b;
};

TEST(Bf16TileProduct, MatchesTheTwinBitwise) {
  ROTOR_SKIP_WITHOUT_BF16_DOT();
  std::mt19937 rng(53);
  for (size_t rows : {1, 3, 4, 5, 8, 13, 64}) {
    for (size_t cols : {1, 15, 16, 17, 33, 64, 72, 130}) {
      for (size_t depth : {1, 2, 7, 32, 64}) {
        for (bool transposed_a : {false, true}) {
          for (bool accumulate : {false, true}) {
            Packed in(rows, cols, depth, transposed_a, rng);
            const size_t ldc = cols + 3;
            MisalignedFloats c(rows * ldc, 1, rng);
            std::vector<float> want(c.data(), c.data() + rows * ldc);
            kernels::Bf16TileProduct(accumulate, rows, cols, in.pairs, 0.375f,
                                     {in.a.data(), in.a_row, in.a_col,
                                      in.b.data(), in.ldb, c.data(), ldc});
            kernels::Bf16TileProductRef(accumulate, rows, cols, in.pairs,
                                        0.375f, in.a.data(), in.a_row, in.a_col,
                                        in.b.data(), in.ldb, want.data(), ldc);
            // Padding columns keep their values too.
            ASSERT_TRUE(std::equal(want.begin(), want.end(), c.data()))
                << "rows " << rows << " cols " << cols << " depth " << depth
                << (transposed_a ? " A^T" : " A")
                << (accumulate ? " C+=" : " C=");
          }
        }
      }
    }
  }
}

// A sub-block computed alone is bitwise that part of the whole product.
TEST(Bf16TileProduct, SubBlocksEqualTheWholeBitwise) {
  ROTOR_SKIP_WITHOUT_BF16_DOT();
  std::mt19937 rng(54);
  const size_t rows = 64, cols = 70, depth = 64;
  Packed in(rows, cols, depth, false, rng);
  std::vector<float> whole(rows * cols);
  kernels::Bf16TileProduct(
      false, rows, cols, in.pairs, 0.5f,
      {in.a.data(), in.a_row, 1, in.b.data(), in.ldb, whole.data(), cols});
  for (size_t m0 : {1, 5, 12}) {
    for (size_t n0 : {16, 32, 48}) {  // packed B starts on whole vectors
      std::vector<float> part(rows * cols, 0.0f);
      kernels::Bf16TileProduct(
          false, rows - m0, cols - n0, in.pairs, 0.5f,
          {in.a.data() + m0 * in.a_row, in.a_row, 1, in.b.data() + n0, in.ldb,
           part.data() + m0 * cols + n0, cols});
      for (size_t m = m0; m < rows; ++m) {
        for (size_t n = n0; n < cols; ++n) {
          ASSERT_EQ(part[m * cols + n], whole[m * cols + n])
              << "m0=" << m0 << " n0=" << n0;
        }
      }
    }
  }
}

// Against the exact product of the unrounded floats (double): rounding each
// operand to bfloat16 moves a product a_k b_k by at most (2u + u^2) |a_k
// b_k| with u = 2^-8 (bfloat16's unit roundoff, 8 significant bits), and
// the float32 chain adds at most depth * 2^-24 sum |a_k b_k| (first-order
// bound for depth additions with unit roundoff 2^-24). So
//   |C - C_exact| <= (2u + u^2 + depth 2^-24) sum_k |a_k b_k|.
TEST(Bf16TileProduct, ErrorWithinBfloat16sBound) {
  ROTOR_SKIP_WITHOUT_BF16_DOT();
  std::mt19937 rng(55);
  const size_t rows = 13, cols = 40, depth = 64;
  Packed in(rows, cols, depth, false, rng);
  std::vector<float> c(rows * cols);
  kernels::Bf16TileProduct(
      false, rows, cols, in.pairs, 1.0f,
      {in.a.data(), in.a_row, 1, in.b.data(), in.ldb, c.data(), cols});
  const double u = std::ldexp(1.0, -8);
  const double bound_factor = 2 * u + u * u + depth * std::ldexp(1.0, -24);
  double worst = 0.0;
  for (size_t m = 0; m < rows; ++m) {
    for (size_t n = 0; n < cols; ++n) {
      double exact = 0.0, magnitude = 0.0;
      for (size_t k = 0; k < depth; ++k) {
        const double p = double{in.a_floats.data()[m * depth + k]} *
                         in.b_floats.data()[k * cols + n];
        exact += p;
        magnitude += std::fabs(p);
      }
      const double error = std::fabs(c[m * cols + n] - exact);
      ASSERT_LE(error, bound_factor * magnitude) << m << ", " << n;
      worst = std::max(worst, error / magnitude);
    }
  }
  // The bound is not vacuous: rounding to bfloat16 is visible.
  EXPECT_GT(worst, std::ldexp(1.0, -16));
}

}  // namespace
}  // namespace rotor

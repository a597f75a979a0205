// MatMul, Linear and FusedLinear (OpenBLAS sgemm): values against triple
// loops in double, every operand layout (transposed views go to sgemm as
// CblasTrans), broadcast batches, gradients and shape errors.
#include <random>

#include "core/ops/gemm.h"
#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;
using Inputs = std::vector<Tensor>;

// C = A B in double for 2-D tensors of any layout.
std::vector<double> MatMulReference(const Tensor& a, const Tensor& b) {
  const int64_t n = a.size(0), k = a.size(1), m = b.size(1);
  std::vector<double> c(n * m, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t p = 0; p < k; ++p) {
        c[i * m + j] += double(a.at({i, p})) * b.at({p, j});
      }
    }
  }
  return c;
}

void ExpectMatMulMatches(const Tensor& a, const Tensor& b) {
  const Tensor c = MatMul(a, b);
  ASSERT_EQ(c.shape(), (Shape{a.size(0), b.size(1)}));
  const std::vector<double> expected = MatMulReference(a, b);
  const std::vector<float> actual = c.ToVector();
  test::ExpectNear(actual.data(), expected.data(), expected.size(), 1e-5, 1e-5,
                   "MatMul");
}

TEST(MatMul, MatchesTripleLoopForEveryLayout) {
  std::mt19937 rng(21);
  const Tensor a = RandomTensor({5, 7}, rng, -1, 1, false);
  const Tensor b = RandomTensor({7, 3}, rng, -1, 1, false);
  const Tensor a_t = Transpose(RandomTensor({7, 5}, rng, -1, 1, false), 0, 1);
  const Tensor b_t = Transpose(RandomTensor({3, 7}, rng, -1, 1, false), 0, 1);
  // Every other column of a [5, 14] tensor: a stride sgemm cannot express.
  const Tensor wide = RandomTensor({5, 14}, rng, -1, 1, false);
  const Tensor a_strided = wide.ViewAs({5, 7}, {14, 2}, 0);
  ExpectMatMulMatches(a, b);
  ExpectMatMulMatches(a_t, b);
  ExpectMatMulMatches(a, b_t);
  ExpectMatMulMatches(a_t, b_t);
  ExpectMatMulMatches(a_strided, b_t);
  // Degenerate extents: a row vector, a column vector, k = 1.
  ExpectMatMulMatches(RandomTensor({1, 7}, rng, -1, 1, false), b);
  ExpectMatMulMatches(a, RandomTensor({7, 1}, rng, -1, 1, false));
  ExpectMatMulMatches(RandomTensor({4, 1}, rng, -1, 1, false),
                      RandomTensor({1, 6}, rng, -1, 1, false));
}

// k = 0: an empty sum, so every output is 0 (sgemm with beta = 0 must still
// write the output).
TEST(MatMul, EmptyInnerDimensionGivesZeros) {
  // Leave non-zero buffers of the output sizes in the memory pool, so
  // unwritten outputs would show.
  Tensor::Full({6}, 5.0f);
  Tensor::Full({8}, 5.0f);
  const Tensor c = MatMul(Tensor::Zeros({2, 0}), Tensor::Zeros({0, 3}));
  EXPECT_EQ(c.ToVector(), std::vector<float>(6, 0.0f));
  const Tensor y = Linear(Tensor::Zeros({4, 0}), Tensor::Zeros({2, 0}));
  EXPECT_EQ(y.ToVector(), std::vector<float>(8, 0.0f));
}

TEST(MatMul, BroadcastBatches) {
  std::mt19937 rng(22);
  const Tensor a = RandomTensor({2, 1, 4, 3}, rng, -1, 1, false);
  const Tensor b = RandomTensor({5, 3, 2}, rng, -1, 1, false);
  const Tensor c = MatMul(a, b);
  ASSERT_EQ(c.shape(), (Shape{2, 5, 4, 2}));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      const Tensor a_ij = Squeeze(Squeeze(Narrow(a, 0, i, 1), 0), 0);
      const Tensor b_j = Squeeze(Narrow(b, 0, j, 1), 0);
      const Tensor c_ij =
          Squeeze(Squeeze(Narrow(Narrow(c, 0, i, 1), 1, j, 1), 0), 0);
      const std::vector<double> expected = MatMulReference(a_ij, b_j);
      const std::vector<float> actual = c_ij.ToVector();
      test::ExpectNear(actual.data(), expected.data(), expected.size(), 1e-5,
                       1e-5, "batch");
    }
  }
  // A 2-D operand is shared by every batch.
  const Tensor shared = RandomTensor({3, 6}, rng, -1, 1, false);
  const Tensor d = MatMul(a, shared);
  ASSERT_EQ(d.shape(), (Shape{2, 1, 4, 6}));
  const std::vector<double> expected =
      MatMulReference(Squeeze(Squeeze(Narrow(a, 0, 1, 1), 0), 0), shared);
  const std::vector<float> actual =
      Squeeze(Squeeze(Narrow(d, 0, 1, 1), 0), 0).ToVector();
  test::ExpectNear(actual.data(), expected.data(), expected.size(), 1e-5, 1e-5,
                   "shared");
}

TEST(MatMul, ShapeErrors) {
  const Tensor a = Tensor::Zeros({2, 3});
  const Tensor b = Tensor::Zeros({4, 5});
  ROTOR_EXPECT_ERROR(MatMul(a, b),
                     "MatMul: shapes [2, 3] and [4, 5] do not multiply");
  ROTOR_EXPECT_ERROR(MatMul(Tensor::Zeros({3}), b),
                     "MatMul: shapes [3] and [4, 5]");
  ROTOR_EXPECT_ERROR(MatMul(Tensor::Zeros({2, 2, 3}), Tensor::Zeros({3, 3, 1})),
                     "MatMul: shapes [2] and [3] cannot be broadcast");
}

TEST(MatMulGrad, TwoD) {
  std::mt19937 rng(23);
  const Inputs in = {RandomTensor({3, 4}, rng), RandomTensor({4, 5}, rng)};
  GradCheck([](const Inputs& x) { return MatMul(x[0], x[1]); }, in);
}

TEST(MatMulGrad, TransposedOperands) {
  std::mt19937 rng(24);
  const Inputs in = {RandomTensor({4, 3}, rng), RandomTensor({5, 4}, rng)};
  GradCheck(
      [](const Inputs& x) {
        return MatMul(Transpose(x[0], 0, 1), Transpose(x[1], 0, 1));
      },
      in);
}

TEST(MatMulGrad, BroadcastBatch) {
  std::mt19937 rng(25);
  const Inputs in = {RandomTensor({2, 1, 3, 4}, rng),
                     RandomTensor({3, 4, 2}, rng)};
  GradCheck([](const Inputs& x) { return MatMul(x[0], x[1]); }, in);
  // Shared 2-D weight: its gradient sums every batch (sgemm with beta = 1).
  const Inputs shared = {RandomTensor({2, 3, 3, 4}, rng),
                         RandomTensor({4, 5}, rng)};
  GradCheck([](const Inputs& x) { return MatMul(x[0], x[1]); }, shared);
  // Batched transposed view, as attention's Q K^T.
  const Inputs qk = {RandomTensor({2, 3, 4}, rng),
                     RandomTensor({2, 5, 4}, rng)};
  GradCheck([](const Inputs& x) { return MatMul(x[0], Transpose(x[1], 1, 2)); },
            qk);
}

TEST(Linear, MatchesMatMulPlusBias) {
  std::mt19937 rng(26);
  const Tensor x = RandomTensor({2, 3, 4}, rng, -1, 1, false);
  const Tensor w = RandomTensor({5, 4}, rng, -1, 1, false);
  const Tensor bias = RandomTensor({5}, rng, -1, 1, false);
  const Tensor y = Linear(x, w, bias);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 5}));
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t t = 0; t < 3; ++t) {
      for (int64_t o = 0; o < 5; ++o) {
        double expected = bias.at({o});
        for (int64_t p = 0; p < 4; ++p) {
          expected += double(x.at({i, t, p})) * w.at({o, p});
        }
        EXPECT_NEAR(y.at({i, t, o}), expected, 1e-5);
      }
    }
  }
  const Tensor no_bias = Linear(x, w);
  EXPECT_NEAR(no_bias.at({1, 2, 3}), y.at({1, 2, 3}) - bias.at({3}), 1e-6);
}

TEST(Linear, ShapeErrors) {
  const Tensor x = Tensor::Zeros({2, 4});
  ROTOR_EXPECT_ERROR(Linear(x, Tensor::Zeros({5, 3})),
                     "Linear: input shape [2, 4] and weight shape [5, 3]");
  ROTOR_EXPECT_ERROR(
      Linear(x, Tensor::Zeros({5, 4}), Tensor::Zeros({4})),
      "Linear: bias shape [4] does not match weight shape [5, 4]");
}

TEST(LinearGrad, WithAndWithoutBias) {
  std::mt19937 rng(27);
  const Inputs in = {RandomTensor({2, 3, 4}, rng), RandomTensor({5, 4}, rng),
                     RandomTensor({5}, rng)};
  GradCheck([](const Inputs& x) { return Linear(x[0], x[1], x[2]); }, in);
  GradCheck([](const Inputs& x) { return Linear(x[0], x[1]); }, {in[0], in[1]});
  // 2-D transposed input and a 1-D input.
  const Inputs t = {RandomTensor({4, 3}, rng), RandomTensor({5, 4}, rng)};
  GradCheck([](const Inputs& x) { return Linear(Transpose(x[0], 0, 1), x[1]); },
            t);
  const Inputs v = {RandomTensor({4}, rng), RandomTensor({5, 4}, rng)};
  GradCheck([](const Inputs& x) { return Linear(x[0], x[1]); }, v);
}

// Three weights as consecutive row ranges of one storage, as
// nn::FusedWeights makes them: rows {4, 2, 3} of a [9, in] tensor.
Inputs StackedWeightViews(int64_t in, std::mt19937& rng) {
  const Tensor stacked = RandomTensor({9, in}, rng, -1, 1, false);
  Inputs views;
  int64_t row = 0;
  for (const int64_t rows : {4, 2, 3}) {
    Tensor view = stacked.ViewAs({rows, in}, {in, 1}, row * in);
    views.push_back(view.set_requires_grad(true));
    row += rows;
  }
  return views;
}

// The fused product's columns are the Linear layers' outputs; weights in
// one storage (read in place) and in three (a concatenated copy) give the
// same bits, forward and every gradient.
TEST(FusedLinear, EqualsTheLinearLayersSideBySide) {
  std::mt19937 rng(28);
  const Tensor x = RandomTensor({2, 3, 5}, rng);
  const Inputs weights = StackedWeightViews(5, rng);
  const Inputs biases = {RandomTensor({4}, rng), RandomTensor({2}, rng),
                         RandomTensor({3}, rng)};
  const Tensor fused = FusedLinear(x, weights, biases);
  ASSERT_EQ(fused.shape(), (Shape{2, 3, 9}));
  int64_t column = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Tensor alone = Linear(x, weights[i], biases[i]);
    const Tensor block = Narrow(fused, 2, column, weights[i].size(0));
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t o = 0; o < weights[i].size(0); ++o) {
        EXPECT_NEAR(block.at({r / 3, r % 3, o}), alone.at({r / 3, r % 3, o}),
                    1e-6);
      }
    }
    column += weights[i].size(0);
  }

  const Tensor dy = RandomTensor({2, 3, 9}, rng, -1, 1, false);
  auto gradients = [&](const Inputs& w) {
    Inputs all = {x};
    all.insert(all.end(), w.begin(), w.end());
    all.insert(all.end(), biases.begin(), biases.end());
    for (Tensor t : all) t.ZeroGrad();
    const Tensor y = FusedLinear(x, w, biases);
    y.Backward(dy);
    std::vector<std::vector<float>> out = {y.ToVector()};
    for (const Tensor& t : all) out.push_back(t.grad().ToVector());
    return out;
  };
  Inputs separate;
  for (const Tensor& w : weights) {
    Tensor copy = Tensor::Empty(w.shape());
    copy.CopyFrom(w);
    separate.push_back(copy.set_requires_grad(true));
  }
  EXPECT_TRUE(gradients(weights) == gradients(separate));
}

TEST(FusedLinearGrad, InPlaceAndCopiedWeightsWithAndWithoutBias) {
  std::mt19937 rng(29);
  const Tensor x = RandomTensor({2, 3, 4}, rng);
  const Inputs w = StackedWeightViews(4, rng);
  const Inputs b = {RandomTensor({4}, rng), RandomTensor({2}, rng),
                    RandomTensor({3}, rng)};
  GradCheck(
      [](const Inputs& in) {
        return FusedLinear(in[0], {in[1], in[2], in[3]}, {in[4], in[5], in[6]});
      },
      {x, w[0], w[1], w[2], b[0], b[1], b[2]});
  // Separate storages, no bias, a 2-D transposed input.
  const Inputs t = {RandomTensor({4, 3}, rng), RandomTensor({2, 4}, rng),
                    RandomTensor({3, 4}, rng)};
  GradCheck(
      [](const Inputs& in) {
        return FusedLinear(Transpose(in[0], 0, 1), {in[1], in[2]});
      },
      t);
}

TEST(FusedLinear, ShapeErrors) {
  const Tensor x = Tensor::Zeros({2, 4});
  ROTOR_EXPECT_ERROR(
      FusedLinear(x, {Tensor::Zeros({5, 4}), Tensor::Zeros({5, 3})}),
      "FusedLinear: input shape [2, 4] and weight shape [5, 3]");
  ROTOR_EXPECT_ERROR(
      FusedLinear(x, {Tensor::Zeros({5, 4}), Tensor::Zeros({2, 4})},
                  {Tensor::Zeros({5})}),
      "FusedLinear: 1 biases for 2 weights");
  ROTOR_EXPECT_ERROR(FusedLinear(x, {}), "FusedLinear: no weight");
}

// A large enough product is split over row blocks of the output (one
// single-threaded sgemm per block, core/ops/gemm.cc), with a last block
// shorter than the others (300 rows in blocks of 160 and 140, 150 output
// features in blocks of 80 and 70 for dW). At two threads the
// forward (rows of X, also through a transposed view of X) and both
// gradients (dX over rows of dY; dW over rows of dY^T, a transposed operand)
// must match double-precision references.
TEST(Linear, RowBlocksAtTwoThreadsMatchReference) {
  test::ThreadCountGuard two_threads(2);
  std::mt19937 rng(28);
  const int64_t rows = 300, in = 70, out = 150;
  for (const bool transposed_x : {false, true}) {
    Tensor x_storage = transposed_x
                           ? RandomTensor({in, rows}, rng, -1, 1, true)
                           : RandomTensor({rows, in}, rng, -1, 1, true);
    const Tensor x = transposed_x ? Transpose(x_storage, 0, 1) : x_storage;
    Tensor w = RandomTensor({out, in}, rng, -1, 1, true);
    const Tensor dy = RandomTensor({rows, out}, rng, -1, 1, false);
    const Tensor y = Linear(x, w);
    test::ExpectNear(y.ToVector().data(),
                     MatMulReference(x, Transpose(w, 0, 1)).data(), rows * out,
                     1e-5, 1e-5, "Linear forward");
    y.Backward(dy);
    // dX = dY W and dW = dY^T X.
    const std::vector<double> dx = MatMulReference(dy, w);
    const std::vector<double> dw =
        MatMulReference(Transpose(dy, 0, 1), x.Detach());
    const Tensor dx_got =
        transposed_x ? Transpose(x_storage.grad(), 0, 1) : x_storage.grad();
    test::ExpectNear(Contiguous(dx_got).ToVector().data(), dx.data(), rows * in,
                     1e-5, 1e-5, "Linear dX");
    test::ExpectNear(w.grad().ToVector().data(), dw.data(), out * in, 1e-5,
                     1e-5, "Linear dW");
  }
}

// ParallelGemm cuts a product into row blocks by its shape alone, so every
// thread count runs the same sgemm calls and gives the same bits, on every
// OpenBLAS kernel (the coretypes suite runs this once per core type): one
// block, two with a short last one, 4, 8 and 16 blocks; every operand
// layout; beta 0 and 1.
// The cut: one call below 128 rows or 2^18 multiply-adds, then 2 blocks,
// then 4, 8 and 16 while each keeps 512 rows, in whole 16-row tiles.
TEST(ParallelGemm, BlocksFollowTheShape) {
  using internal::GemmBlockRows;
  EXPECT_EQ(GemmBlockRows(127, 4096, 4096), 127);
  EXPECT_EQ(GemmBlockRows(4096, 8, 7), 4096);  // 229,376 multiply-adds
  EXPECT_EQ(GemmBlockRows(128, 64, 64), 64);
  EXPECT_EQ(GemmBlockRows(300, 90, 70), 160);
  EXPECT_EQ(GemmBlockRows(2047, 64, 64), 1024);
  EXPECT_EQ(GemmBlockRows(2048, 64, 64), 512);
  EXPECT_EQ(GemmBlockRows(4096, 64, 64), 512);
  EXPECT_EQ(GemmBlockRows(8200, 64, 64), 528);    // 16 blocks, last 280 rows
  EXPECT_EQ(GemmBlockRows(65536, 64, 64), 4096);  // never more than 16
}

TEST(ParallelGemm, SameBitsAtAnyThreadCount) {
  std::mt19937 rng(29);
  struct Size {
    int64_t m, n, k;
  };
  for (const Size size :
       {Size{100, 90, 70}, Size{300, 90, 70}, Size{150, 257, 64},
        Size{1100, 33, 40}, Size{2100, 24, 20}, Size{4200, 20, 16},
        Size{8300, 8, 8}}) {
    for (const bool a_trans : {false, true}) {
      for (const bool b_trans : {false, true}) {
        for (const float beta : {0.0f, 1.0f}) {
          const std::vector<float> a =
              RandomTensor({size.m * size.k}, rng).ToVector();
          const std::vector<float> b =
              RandomTensor({size.k * size.n}, rng).ToVector();
          const std::vector<float> c0 =
              RandomTensor({size.m * size.n}, rng).ToVector();
          auto product = [&] {
            std::vector<float> c = c0;
            internal::ParallelGemm(
                a_trans ? CblasTrans : CblasNoTrans,
                b_trans ? CblasTrans : CblasNoTrans, size.m, size.n, size.k,
                a.data(), a_trans ? size.m : size.k, b.data(),
                b_trans ? size.k : size.n, beta, c.data(), "test");
            return c;
          };
          const std::vector<float> one = test::RunAtThreads(1, product);
          for (const int threads : {2, 3, 4}) {
            EXPECT_TRUE(test::RunAtThreads(threads, product) == one)
                << size.m << "x" << size.n << "x" << size.k << " a_trans "
                << a_trans << " b_trans " << b_trans << " beta " << beta
                << " at " << threads << " threads";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace rotor

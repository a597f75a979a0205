// RmsNorm op: values, gradients of x and weight (GradCheck), non-contiguous
// input and shape errors; AddRmsNorm: gradients through either or both
// outputs, the bits of Add then RmsNorm, shape errors.
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;

TEST(RmsNormOp, Values) {
  // Row [3, 4]: mean of squares 12.5, so y = x / sqrt(12.5) * w.
  const Tensor x = Tensor::FromVector({1, 2}, {3, 4});
  const Tensor w = Tensor::FromVector({2}, {1, 2});
  const std::vector<float> y = RmsNorm(x, w, 0.0f).ToVector();
  EXPECT_NEAR(y[0], 3 / std::sqrt(12.5f), 1e-6);
  EXPECT_NEAR(y[1], 8 / std::sqrt(12.5f), 1e-6);
}

TEST(RmsNormOp, GradCheck) {
  std::mt19937 rng(71);
  GradCheck(
      [](const std::vector<Tensor>& in) { return RmsNorm(in[0], in[1]); },
      {RandomTensor({2, 3, 8}, rng, -2, 2), RandomTensor({8}, rng, 0.5, 1.5)});
}

TEST(RmsNormOp, NonContiguousInput) {
  std::mt19937 rng(72);
  auto [view, copy] = test::TransposedViewAndCopy(6, 4, rng, -2, 2);
  ASSERT_FALSE(view.is_contiguous());  // [4, 6], strides [1, 4]
  Tensor w1 = RandomTensor({6}, rng, 0.5, 1.5);
  Tensor w2 = Tensor::FromVector({6}, w1.ToVector(), true);
  const Tensor dy = RandomTensor({4, 6}, rng, -1, 1, false);
  const Tensor y_view = RmsNorm(view, w1);
  const Tensor y_copy = RmsNorm(copy, w2);
  EXPECT_EQ(y_view.ToVector(), y_copy.ToVector());
  y_view.Backward(dy);
  y_copy.Backward(dy);
  EXPECT_EQ(view.grad().ToVector(), copy.grad().ToVector());
  EXPECT_EQ(w1.grad().ToVector(), w2.grad().ToVector());
}

TEST(RmsNormOp, WeightShapeError) {
  ROTOR_EXPECT_ERROR(RmsNorm(Tensor::Zeros({2, 4}), Tensor::Zeros({3})),
                     "RmsNorm", "[3]", "[2, 4]", "expected [4]");
}

// Both outputs used (sum twice, as a residual stream and squared), then
// each alone: the gradients of x, residual and weight by central
// differences.
TEST(AddRmsNormOp, GradCheck) {
  std::mt19937 rng(73);
  const std::vector<Tensor> in = {RandomTensor({2, 3, 8}, rng, -2, 2),
                                  RandomTensor({2, 3, 8}, rng, -2, 2),
                                  RandomTensor({8}, rng, 0.5, 1.5)};
  GradCheck(
      [](const std::vector<Tensor>& x) {
        const auto [sum, y] = AddRmsNorm(x[0], x[1], x[2]);
        return Add(Mul(sum, sum), Mul(y, 3.0f));
      },
      in);
  GradCheck(
      [](const std::vector<Tensor>& x) {
        return AddRmsNorm(x[0], x[1], x[2]).second;
      },
      in);
  GradCheck(
      [w = in[2].Detach()](const std::vector<Tensor>& x) {
        return Mul(AddRmsNorm(x[0], x[1], w).first, 2.0f);
      },
      {in[0], in[1]});
}

// The same bits as Add then RmsNorm, forward and backward, with the sum
// also feeding a later op (as the residual stream does).
TEST(AddRmsNormOp, BitwiseAddThenRmsNorm) {
  std::mt19937 rng(74);
  const Tensor x = RandomTensor({4, 37}, rng, -2, 2, false);
  const Tensor r = RandomTensor({4, 37}, rng, -2, 2, false);
  const Tensor w = RandomTensor({37}, rng, 0.5, 1.5, false);
  const Tensor dy = RandomTensor({4, 37}, rng, -1, 1, false);
  std::vector<std::vector<float>> results[2];
  for (int fused = 0; fused < 2; ++fused) {
    Tensor xa = Tensor::FromVector(x.shape(), x.ToVector(), true);
    Tensor ra = Tensor::FromVector(r.shape(), r.ToVector(), true);
    Tensor wa = Tensor::FromVector(w.shape(), w.ToVector(), true);
    Tensor sum, y;
    if (fused) {
      std::tie(sum, y) = AddRmsNorm(xa, ra, wa);
    } else {
      sum = Add(xa, ra);
      y = RmsNorm(sum, wa);
    }
    const Tensor out = Add(Mul(y, sum), sum);
    out.Backward(dy);
    results[fused] = {sum.ToVector(), y.ToVector(), xa.grad().ToVector(),
                      ra.grad().ToVector(), wa.grad().ToVector()};
  }
  EXPECT_EQ(results[0], results[1]);
}

TEST(AddRmsNormOp, ShapeErrors) {
  ROTOR_EXPECT_ERROR(AddRmsNorm(Tensor::Zeros({2, 4}), Tensor::Zeros({2, 3}),
                                Tensor::Zeros({4})),
                     "AddRmsNorm", "residual", "[2, 3]", "[2, 4]");
  ROTOR_EXPECT_ERROR(AddRmsNorm(Tensor::Zeros({2, 4}), Tensor::Zeros({2, 4}),
                                Tensor::Zeros({3})),
                     "AddRmsNorm", "[3]", "expected [4]");
}

}  // namespace
}  // namespace rotor

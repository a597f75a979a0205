// RmsNorm op: values, gradients of x and weight (GradCheck), non-contiguous
// input and shape errors.
#include <cmath>
#include <random>
#include <string>
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

}  // namespace
}  // namespace rotor

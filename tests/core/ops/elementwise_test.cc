// Elementwise arithmetic: forward values (dense, broadcast, strided),
// gradients (GradCheck, including broadcasting and non-contiguous inputs)
// and shape errors.
#include <cmath>
#include <random>

#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;

using Inputs = std::vector<Tensor>;

TEST(BroadcastShapes, AlignsFromTheRight) {
  EXPECT_EQ(BroadcastShapes({2, 3, 4}, {3, 1}, "Add"), (Shape{2, 3, 4}));
  EXPECT_EQ(BroadcastShapes({4}, {2, 1, 1}, "Add"), (Shape{2, 1, 4}));
  EXPECT_EQ(BroadcastShapes({}, {5, 2}, "Add"), (Shape{5, 2}));
  EXPECT_EQ(BroadcastShapes({1, 0}, {3, 1}, "Add"), (Shape{3, 0}));
}

TEST(BroadcastShapes, ErrorNamesOpAndBothShapes) {
  ROTOR_EXPECT_ERROR(BroadcastShapes({2, 3}, {4}, "Mul"), "Mul", "[2, 3]",
                     "[4]");
  const Tensor a = Tensor::Zeros({2, 3});
  const Tensor b = Tensor::Zeros({2, 2});
  ROTOR_EXPECT_ERROR(Add(a, b), "Add: shapes [2, 3] and [2, 2]");
}

// Each binary op against a scalar loop over the broadcast index, for a
// dense, a broadcast and a transposed (strided) operand.
TEST(Elementwise, BinaryForwardMatchesLoop) {
  std::mt19937 rng(1);
  const Tensor a = RandomTensor({2, 3, 4}, rng, 0.5f, 2.0f, false);
  const Tensor b_dense = RandomTensor({2, 3, 4}, rng, 0.5f, 2.0f, false);
  const Tensor b_column = RandomTensor({3, 1}, rng, 0.5f, 2.0f, false);
  // [4, 3] stored, viewed as [3, 4]: non-contiguous.
  const Tensor b_strided =
      Transpose(RandomTensor({4, 3}, rng, 0.5f, 2.0f, false), 0, 1);
  ASSERT_FALSE(b_strided.is_contiguous());
  auto b_at = [](const Tensor& b, int i, int j, int k) {
    if (b.dim() == 3) return b.at({i, j, k});
    if (b.shape()[1] == 1) return b.at({j, 0});
    return b.at({j, k});
  };
  for (const Tensor* b : {&b_dense, &b_column, &b_strided}) {
    const Tensor sum = Add(a, *b), difference = Sub(a, *b),
                 product = Mul(a, *b), quotient = Div(a, *b);
    ASSERT_EQ(sum.shape(), (Shape{2, 3, 4}));
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        for (int k = 0; k < 4; ++k) {
          const float x = a.at({i, j, k}), y = b_at(*b, i, j, k);
          EXPECT_EQ(sum.at({i, j, k}), x + y);
          EXPECT_EQ(difference.at({i, j, k}), x - y);
          EXPECT_EQ(product.at({i, j, k}), x * y);
          EXPECT_EQ(quotient.at({i, j, k}), x / y);
        }
      }
    }
  }
}

TEST(Elementwise, UnaryAndScalarForward) {
  const Tensor x = Tensor::FromVector({4}, {0.25f, 1.0f, 2.0f, 9.0f});
  const std::vector<float> v = x.ToVector();
  const std::vector<float> exp = Exp(x).ToVector(), log = Log(x).ToVector(),
                           sqrt = Sqrt(x).ToVector(),
                           pow = Pow(x, 1.5f).ToVector(),
                           neg = Neg(x).ToVector();
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(exp[i], std::exp(v[i]));
    EXPECT_FLOAT_EQ(log[i], std::log(v[i]));
    EXPECT_FLOAT_EQ(sqrt[i], std::sqrt(v[i]));
    EXPECT_FLOAT_EQ(pow[i], std::pow(v[i], 1.5f));
    EXPECT_EQ(neg[i], -v[i]);
  }
  EXPECT_EQ((x + 1.0f).ToVector(),
            (std::vector<float>{1.25f, 2.0f, 3.0f, 10.0f}));
  EXPECT_EQ((x - 1.0f).ToVector(),
            (std::vector<float>{-0.75f, 0.0f, 1.0f, 8.0f}));
  EXPECT_EQ((x * 2.0f).ToVector(),
            (std::vector<float>{0.5f, 2.0f, 4.0f, 18.0f}));
  EXPECT_EQ((x / 4.0f).ToVector(),
            (std::vector<float>{0.0625f, 0.25f, 0.5f, 2.25f}));
}

// A tensor big enough for the parallel, multi-range strided path.
TEST(Elementwise, LargeBroadcastForward) {
  std::mt19937 rng(2);
  const Tensor a = RandomTensor({3, 129, 257}, rng, -1, 1, false);
  const Tensor b = Transpose(RandomTensor({1, 129}, rng, -1, 1, false), 0, 1);
  const Tensor c = Mul(Transpose(a, 0, 2), b);  // [257, 129, 3]
  ASSERT_EQ(c.shape(), (Shape{257, 129, 3}));
  const std::vector<float> values = c.ToVector();
  size_t n = 0;
  for (int i = 0; i < 257; ++i) {
    for (int j = 0; j < 129; ++j) {
      for (int k = 0; k < 3; ++k) {
        ASSERT_EQ(values[n++], a.at({k, j, i}) * b.at({j, 0}));
      }
    }
  }
}

TEST(ElementwiseGrad, SameShape) {
  std::mt19937 rng(3);
  const Inputs in = {RandomTensor({2, 3}, rng, 0.5f, 2.0f),
                     RandomTensor({2, 3}, rng, 0.5f, 2.0f)};
  GradCheck([](const Inputs& x) { return Add(x[0], x[1]); }, in);
  GradCheck([](const Inputs& x) { return Sub(x[0], x[1]); }, in);
  GradCheck([](const Inputs& x) { return Mul(x[0], x[1]); }, in);
  GradCheck([](const Inputs& x) { return Div(x[0], x[1]); }, in);
}

TEST(ElementwiseGrad, Broadcasting) {
  std::mt19937 rng(4);
  const Tensor a = RandomTensor({2, 3, 4}, rng, 0.5f, 2.0f);
  for (const Shape& b_shape :
       {Shape{3, 1}, Shape{4}, Shape{}, Shape{2, 1, 4}, Shape{1, 3, 1}}) {
    SCOPED_TRACE(ShapeToString(b_shape));
    const Inputs in = {a, RandomTensor(b_shape, rng, 0.5f, 2.0f)};
    GradCheck([](const Inputs& x) { return Add(x[0], x[1]); }, in);
    GradCheck([](const Inputs& x) { return Sub(x[1], x[0]); }, in);
    GradCheck([](const Inputs& x) { return Mul(x[0], x[1]); }, in);
    GradCheck([](const Inputs& x) { return Div(x[0], x[1]); }, in);
    GradCheck([](const Inputs& x) { return Div(x[1], x[0]); }, in);
  }
}

TEST(ElementwiseGrad, NonContiguousInputs) {
  std::mt19937 rng(5);
  const Inputs in = {RandomTensor({4, 3}, rng, 0.5f, 2.0f),
                     RandomTensor({3, 4}, rng, 0.5f, 2.0f)};
  GradCheck([](const Inputs& x) { return Mul(Transpose(x[0], 0, 1), x[1]); },
            in);
  GradCheck([](const Inputs& x) { return Div(x[1], Transpose(x[0], 0, 1)); },
            in);
  GradCheck([](const Inputs& x) { return Exp(Transpose(x[0], 0, 1)); },
            {in[0]});
}

TEST(ElementwiseGrad, Unary) {
  std::mt19937 rng(6);
  const Inputs any = {RandomTensor({3, 5}, rng, -1.0f, 1.0f)};
  const Inputs positive = {RandomTensor({3, 5}, rng, 0.5f, 2.0f)};
  GradCheck([](const Inputs& x) { return Neg(x[0]); }, any);
  GradCheck([](const Inputs& x) { return Exp(x[0]); }, any);
  GradCheck([](const Inputs& x) { return Log(x[0]); }, positive);
  GradCheck([](const Inputs& x) { return Sqrt(x[0]); }, positive);
  GradCheck([](const Inputs& x) { return Pow(x[0], 2.0f); }, any);
  GradCheck([](const Inputs& x) { return Pow(x[0], 3.0f); }, any);
  GradCheck([](const Inputs& x) { return Pow(x[0], -0.5f); }, positive);
}

TEST(ElementwiseGrad, Scalar) {
  std::mt19937 rng(7);
  const Inputs in = {RandomTensor({2, 3}, rng)};
  GradCheck([](const Inputs& x) { return x[0] + 2.0f; }, in);
  GradCheck([](const Inputs& x) { return x[0] - 2.0f; }, in);
  GradCheck([](const Inputs& x) { return x[0] * -3.0f; }, in);
  GradCheck([](const Inputs& x) { return x[0] / 4.0f; }, in);
}

TEST(SumToShape, ReversesBroadcasting) {
  const Tensor x = Tensor::FromVector({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(SumToShape(x, {3}).ToVector(), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(SumToShape(x, {2, 1}).ToVector(), (std::vector<float>{6, 15}));
  EXPECT_EQ(SumToShape(x, {}).ToVector(), (std::vector<float>{21}));
  EXPECT_EQ(SumToShape(x, {1, 3}).shape(), (Shape{1, 3}));
  ROTOR_EXPECT_ERROR(SumToShape(x, {2}),
                     "SumToShape: shape [2, 3] is not a broadcast of [2]");
}

}  // namespace
}  // namespace rotor

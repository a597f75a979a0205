// Reductions: Sum / Mean over dimension lists with and without keepdim, Max
// over one dimension with its first-maximum gradient.
#include <random>
#include <string>

#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;
using Inputs = std::vector<Tensor>;

TEST(Reduce, SumValuesAndShapes) {
  // x[i, j, k] = 100 i + 10 j + k, shape [2, 3, 4].
  std::vector<float> values;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) values.push_back(100 * i + 10 * j + k);
    }
  }
  const Tensor x = Tensor::FromVector({2, 3, 4}, values);
  EXPECT_EQ(Sum(x).shape(), Shape{});
  EXPECT_EQ(Sum(x).item(), 24 * 50 + 8 * 30 + 6 * 6);  // 1200 + 240 + 36
  const Tensor over_j = Sum(x, {1});
  ASSERT_EQ(over_j.shape(), (Shape{2, 4}));
  EXPECT_EQ(over_j.at({1, 2}), 300 + 30 + 6);
  const Tensor over_ik = Sum(x, {0, -1}, /*keepdim=*/true);
  ASSERT_EQ(over_ik.shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(over_ik.at({0, 2, 0}), 100 * 4 + 20 * 8 + 6 * 2);
  // A permuted (non-contiguous) input gives the same sums.
  const Tensor permuted = Permute(x, {2, 0, 1});
  EXPECT_EQ(Sum(permuted, {2}).at({3, 1}), Sum(x, {1}).at({1, 3}));
}

// Every subset of dimensions of a few 3-D tensors (and of permuted views of
// them), against sums in double: covers both loop orders, wide rows, and
// sums over more than one fixed chunk of 64 rows.
TEST(Reduce, SumMatchesReferenceForEveryDimSet) {
  std::mt19937 rng(14);
  std::vector<Tensor> inputs;
  for (const Shape& shape :
       {Shape{5, 3, 600}, Shape{300, 2, 7}, Shape{3, 130, 5}}) {
    const Tensor base = RandomTensor(shape, rng, -1, 1, false);
    inputs.push_back(base);
    inputs.push_back(Permute(base, {2, 0, 1}));
  }
  for (const Tensor& x : inputs) {
    const Shape& shape = x.shape();
    const std::vector<float> values = x.ToVector();
    for (int mask = 1; mask < 8; ++mask) {
      std::vector<int64_t> dims;
      for (int d = 0; d < 3; ++d) {
        if (mask & (1 << d)) dims.push_back(d);
      }
      SCOPED_TRACE(ShapeToString(shape) + " mask " + std::to_string(mask));
      const Tensor sum = Sum(x, dims, /*keepdim=*/true);
      std::vector<double> expected(sum.numel(), 0.0);
      const Shape out_strides = ContiguousStrides(sum.shape());
      size_t n = 0;
      for (int64_t i = 0; i < shape[0]; ++i) {
        for (int64_t j = 0; j < shape[1]; ++j) {
          for (int64_t k = 0; k < shape[2]; ++k) {
            const int64_t o = (mask & 1 ? 0 : i) * out_strides[0] +
                              (mask & 2 ? 0 : j) * out_strides[1] +
                              (mask & 4 ? 0 : k) * out_strides[2];
            expected[o] += values[n++];
          }
        }
      }
      const std::vector<float> actual = sum.ToVector();
      test::ExpectNear(actual.data(), expected.data(), expected.size(), 1e-5,
                       1e-6, "Sum");
    }
  }
}

TEST(Reduce, MeanAndMax) {
  const Tensor x = Tensor::FromVector({2, 3}, {1, 5, 3, 4, 2, 6});
  EXPECT_EQ(Mean(x).item(), 3.5f);
  EXPECT_EQ(Mean(x, {1}).ToVector(), (std::vector<float>{3, 4}));
  EXPECT_EQ(Mean(x, {0}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(Max(x, 1).ToVector(), (std::vector<float>{5, 6}));
  EXPECT_EQ(Max(x, 0).ToVector(), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(Max(x, -1, true).shape(), (Shape{2, 1}));
}

TEST(Reduce, Errors) {
  const Tensor x = Tensor::Zeros({2, 3});
  ROTOR_EXPECT_ERROR(
      Sum(x, {2}),
      "Sum: dimension 2 is out of range for a tensor of shape [2, 3]");
  ROTOR_EXPECT_ERROR(Sum(x, {1, -1}), "listed twice");
  ROTOR_EXPECT_ERROR(Max(x, 3), "Max: dimension 3");
}

TEST(ReduceGrad, Sum) {
  std::mt19937 rng(11);
  const Inputs in = {RandomTensor({2, 3, 4}, rng)};
  GradCheck([](const Inputs& x) { return Sum(x[0]); }, in);
  GradCheck([](const Inputs& x) { return Sum(x[0], {1}); }, in);
  GradCheck([](const Inputs& x) { return Sum(x[0], {0, 2}, true); }, in);
  GradCheck([](const Inputs& x) { return Sum(Transpose(x[0], 0, 2), {1}); },
            in);
}

TEST(ReduceGrad, Mean) {
  std::mt19937 rng(12);
  const Inputs in = {RandomTensor({2, 3, 4}, rng)};
  GradCheck([](const Inputs& x) { return Mean(x[0]); }, in);
  GradCheck([](const Inputs& x) { return Mean(x[0], {-1}, true); }, in);
  GradCheck([](const Inputs& x) { return Mean(x[0], {0, 1}); }, in);
}

TEST(ReduceGrad, Max) {
  std::mt19937 rng(13);
  // Distinct values, so small perturbations do not change the argmax.
  const Inputs in = {RandomTensor({3, 4, 5}, rng)};
  GradCheck([](const Inputs& x) { return Max(x[0], 1); }, in);
  GradCheck([](const Inputs& x) { return Max(x[0], -1, true); }, in);
  GradCheck([](const Inputs& x) { return Max(Transpose(x[0], 0, 2), 0); }, in);
}

TEST(ReduceGrad, MaxTieGoesToFirst) {
  Tensor x = Tensor::FromVector({1, 4}, {1, 7, 7, 2}, true);
  Sum(Max(x, 1)).Backward();
  EXPECT_EQ(x.grad().ToVector(), (std::vector<float>{0, 1, 0, 0}));
}

}  // namespace
}  // namespace rotor

// Shape ops: views share storage (writes show through), Reshape copies only
// when it must, Concat / Narrow / Permute values and gradients, errors.
#include <random>

#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;
using Inputs = std::vector<Tensor>;

Tensor Iota(const Shape& shape) {
  std::vector<float> values(NumElements(shape));
  for (size_t i = 0; i < values.size(); ++i) values[i] = i;
  return Tensor::FromVector(shape, values);
}

TEST(Shape, ViewsShareStorage) {
  Tensor x = Iota({2, 3, 4});
  Tensor reshaped = Reshape(x, {6, -1});
  Tensor permuted = Permute(x, {2, 0, 1});
  Tensor narrowed = Narrow(x, 1, 1, 2);
  Tensor unsqueezed = Unsqueeze(x, 1);
  EXPECT_EQ(reshaped.shape(), (Shape{6, 4}));
  EXPECT_EQ(permuted.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(narrowed.shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(unsqueezed.shape(), (Shape{2, 1, 3, 4}));
  EXPECT_EQ(Squeeze(unsqueezed, 1).shape(), (Shape{2, 3, 4}));
  for (const Tensor* view : {&reshaped, &permuted, &narrowed, &unsqueezed}) {
    EXPECT_EQ(view->impl()->storage, x.impl()->storage);
  }
  // x[1, 2, 3] is reshaped[5, 3], permuted[3, 1, 2], narrowed[1, 1, 3].
  x.data()[23] = -1.0f;
  EXPECT_EQ(reshaped.at({5, 3}), -1.0f);
  EXPECT_EQ(permuted.at({3, 1, 2}), -1.0f);
  EXPECT_EQ(narrowed.at({1, 1, 3}), -1.0f);
  // And the other way: writing through a view changes x.
  narrowed.Fill(7.0f);
  EXPECT_EQ(x.at({0, 1, 0}), 7.0f);
  EXPECT_EQ(x.at({0, 0, 0}), 0.0f);
}

TEST(Shape, ReshapeCopiesOnlyNonContiguous) {
  const Tensor x = Iota({2, 3});
  const Tensor t = Transpose(x, 0, 1);  // [3, 2], not contiguous
  const Tensor flat = Reshape(t, {6});
  EXPECT_NE(flat.impl()->storage, x.impl()->storage);
  EXPECT_EQ(flat.ToVector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(Contiguous(x).impl(), x.impl());
  const Tensor copy = Contiguous(t);
  EXPECT_TRUE(copy.is_contiguous());
  EXPECT_EQ(copy.ToVector(), t.ToVector());
}

TEST(Shape, Concat) {
  const Tensor a = Iota({2, 2});
  const Tensor b = Tensor::Full({2, 1}, 9.0f);
  EXPECT_EQ(Concat({a, b}, 1).ToVector(),
            (std::vector<float>{0, 1, 9, 2, 3, 9}));
  EXPECT_EQ(Concat({a, Transpose(a, 0, 1)}, 0).ToVector(),
            (std::vector<float>{0, 1, 2, 3, 0, 2, 1, 3}));
}

TEST(Shape, Errors) {
  const Tensor x = Tensor::Zeros({2, 3});
  ROTOR_EXPECT_ERROR(Reshape(x, {4, 2}),
                     "Reshape: cannot view [2, 3] (6 elements) as [4, 2]");
  ROTOR_EXPECT_ERROR(Reshape(x, {-1, -1}), "more than one -1");
  ROTOR_EXPECT_ERROR(Reshape(x, {4, -1}),
                     "Reshape: cannot view [2, 3] as [4, -1]");
  ROTOR_EXPECT_ERROR(Permute(x, {0, 0}), "Permute: dimension 0 appears twice");
  ROTOR_EXPECT_ERROR(Narrow(x, 1, 2, 2),
                     "Narrow: range [2, 4) is out of bounds for dimension 1 of "
                     "shape [2, 3]");
  ROTOR_EXPECT_ERROR(Squeeze(x, 0),
                     "Squeeze: dimension 0 of shape [2, 3] has extent 2");
  ROTOR_EXPECT_ERROR(
      Concat({x, Tensor::Zeros({3, 3})}, 1),
      "Concat: shapes [2, 3] and [3, 3] differ outside dimension 1");
}

TEST(ShapeGrad, Views) {
  std::mt19937 rng(31);
  const Inputs in = {RandomTensor({2, 3, 4}, rng)};
  GradCheck([](const Inputs& x) { return Reshape(x[0], {4, -1}); }, in);
  GradCheck([](const Inputs& x) { return Permute(x[0], {1, 2, 0}); }, in);
  GradCheck([](const Inputs& x) { return Transpose(x[0], 0, -1); }, in);
  GradCheck([](const Inputs& x) { return Narrow(x[0], 2, 1, 2); }, in);
  GradCheck([](const Inputs& x) { return Squeeze(Unsqueeze(x[0], 0), 0); }, in);
  // Reshape of a non-contiguous view (copies).
  GradCheck(
      [](const Inputs& x) {
        return Reshape(Permute(x[0], {2, 0, 1}), {-1});
      },
      in);
  GradCheck([](const Inputs& x) { return Contiguous(Transpose(x[0], 0, 1)); },
            in);
}

TEST(ShapeGrad, Concat) {
  std::mt19937 rng(32);
  const Inputs in = {RandomTensor({2, 3}, rng), RandomTensor({2, 1}, rng),
                     RandomTensor({3, 2}, rng)};
  GradCheck(
      [](const Inputs& x) {
        return Concat({x[0], x[1], Transpose(x[2], 0, 1)}, 1);
      },
      in);
  // The same input twice: gradients of both slices add up.
  GradCheck([](const Inputs& x) { return Concat({x[0], x[0]}, 0); }, {in[0]});
}

}  // namespace
}  // namespace rotor

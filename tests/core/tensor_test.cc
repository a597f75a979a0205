// Tensor basics (core/tensor.h): strides, contiguity, views sharing storage,
// copies only when needed, ToVector of a permuted view, errors, 64-byte
// aligned storage.
#include "core/tensor.h"

#include <cstdint>

#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

TEST(Tensor, ShapeAndStrides) {
  const Tensor x = Tensor::Zeros({2, 3, 4});
  EXPECT_EQ(x.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(x.numel(), 24);
  EXPECT_EQ(x.dim(), 3);
  EXPECT_EQ(x.size(-1), 4);
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_EQ(Tensor::Scalar(2.5f).shape(), Shape{});
  EXPECT_EQ(Tensor::Scalar(2.5f).item(), 2.5f);
  EXPECT_EQ(ShapeToString({2, 3}), "[2, 3]");
}

// Storage starts on a 64-byte boundary (a cache line, a full AVX-512
// vector), for every size and also when a freed buffer is reused.
TEST(Tensor, StorageIsSimdAligned) {
  for (int round = 0; round < 2; ++round) {
    for (int64_t n : {1, 3, 17, 1000, 4097}) {
      const Tensor x = Tensor::Empty({n});
      EXPECT_EQ(reinterpret_cast<uintptr_t>(x.data()) % 64, 0u)
          << "numel " << n << " round " << round;
    }
  }
}

TEST(Tensor, Contiguity) {
  const Tensor x = Tensor::Zeros({2, 3, 4});
  const Tensor t = Transpose(x, 0, 2);
  EXPECT_EQ(t.strides(), (Shape{1, 4, 12}));
  EXPECT_FALSE(t.is_contiguous());
  // A narrowed last dimension skips elements; a narrowed first one does not.
  EXPECT_FALSE(Narrow(x, 2, 0, 2).is_contiguous());
  EXPECT_TRUE(Narrow(x, 0, 1, 1).is_contiguous());
  // Extent-1 dimensions do not break contiguity, whatever their stride.
  EXPECT_TRUE(Unsqueeze(x, 0).is_contiguous());
  EXPECT_TRUE(Transpose(Tensor::Zeros({1, 5}), 0, 1).is_contiguous());
}

TEST(Tensor, ViewsShareStorageAndContiguousCopiesOnlyWhenNeeded) {
  Tensor x = Tensor::FromVector({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor view = Transpose(x, 0, 1);
  // view[0, 1] is x[1, 0], at offset 0 * 1 + 1 * 3 in the shared storage.
  ASSERT_EQ(view.strides(), (Shape{1, 3}));
  view.data()[3] = 10.0f;
  EXPECT_EQ(x.at({1, 0}), 10.0f);
  const Tensor same = Contiguous(x);
  EXPECT_EQ(same.impl(), x.impl());
  const Tensor copy = Contiguous(view);
  EXPECT_NE(copy.impl()->storage, x.impl()->storage);
  EXPECT_EQ(copy.ToVector(), (std::vector<float>{0, 10, 1, 4, 2, 5}));
}

TEST(Tensor, ToVectorOfPermutedView) {
  const Tensor x = Tensor::FromVector({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // out[a, b, c] = x[b, c, a]
  EXPECT_EQ(Permute(x, {2, 0, 1}).ToVector(),
            (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
}

TEST(Tensor, FromVectorSizeMismatch) {
  ROTOR_EXPECT_ERROR(Tensor::FromVector({2, 3}, {1, 2, 3}),
                     "Tensor::FromVector: shape [2, 3] needs 6 values, got 3");
}

TEST(Tensor, AtBoundsError) {
  const Tensor x = Tensor::Zeros({2, 3});
  ROTOR_EXPECT_ERROR(
      x.at({1, 3}),
      "Tensor::at: index 3 out of range for dimension 1 of shape "
      "[2, 3]");
  ROTOR_EXPECT_ERROR(x.at({1}),
                     "Tensor::at: 1 indices for a tensor of shape [2, 3]");
}

}  // namespace
}  // namespace rotor

// Rope op (core/ops/rope.h): gradients through the autograd core, views of a
// fused qkv buffer, the backward's use of the forward's table, errors.
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/ops/rope.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;

constexpr RopeLayout kLayouts[] = {RopeLayout::kSplitHalf,
                                   RopeLayout::kInterleaved};

// dq and dk through the core (test::GradCheck: finite differences of
// <dy, Rope(q, k)>), for both layouts, partial rotary, an offset, per-token
// ids and grouped-query heads.
TEST(RopeOp, GradCheck) {
  std::mt19937 rng(31);
  for (RopeLayout layout : kLayouts) {
    for (double factor : {1.0, 0.5}) {
      RopeTable table(RopeTable::DefaultInvFreq(int64_t(12 * factor), 100.0),
                      1.3);
      for (const RopePositions& positions :
           {RopePositions{5, {}}, RopePositions{0, {9, 0, 3, 1, 2, 70000}}}) {
        Tensor q = RandomTensor({2, 3, 3, 12}, rng);
        Tensor k = RandomTensor({2, 1, 3, 12}, rng, -1, 1, false);
        // q_rot's gradient with respect to q (k held fixed) ...
        GradCheck(
            [&](const std::vector<Tensor>& in) {
              return Rope(in[0], in[1], table, positions, layout, factor).first;
            },
            {q, k});
        // ... and k_rot's with respect to k.
        q.set_requires_grad(false);
        k.set_requires_grad(true);
        GradCheck(
            [&](const std::vector<Tensor>& in) {
              return Rope(in[0], in[1], table, positions, layout, factor)
                  .second;
            },
            {q, k});
        Tensor x = RandomTensor({2, 2, 3, 12}, rng);
        GradCheck(
            [&](const std::vector<Tensor>& in) {
              return Rope(in[0], table, positions, layout, factor);
            },
            {x});
        if (HasFatalFailure()) return;
      }
    }
  }
}

// q and k read straight from a fused [batch, seq, 3, heads, head_dim] buffer
// through strided views give the same result (and gradient) as contiguous
// copies.
TEST(RopeOp, ReadsViewsOfAFusedBuffer) {
  std::mt19937 rng(32);
  const int64_t b = 2, t = 5, h = 3, d = 8;
  Tensor qkv = RandomTensor({b, t, 3, h, d}, rng, -1, 1, false);
  // q = qkv[:, :, 0] and k = qkv[:, :, 1] as [b, h, t, d] views.
  const Shape view_shape{b, h, t, d};
  const Shape view_strides{t * 3 * h * d, d, 3 * h * d, 1};
  const Tensor q_view = qkv.ViewAs(view_shape, view_strides, 0);
  const Tensor k_view = qkv.ViewAs(view_shape, view_strides, h * d);
  Tensor q = Tensor::Zeros(view_shape), k = Tensor::Zeros(view_shape);
  q.CopyFrom(q_view);
  k.CopyFrom(k_view);
  RopeTable table = RopeTable::Default(d, 10000.0);
  const auto [q_rot_view, k_rot_view] =
      Rope(q_view, k_view, table, RopePositions{}, RopeLayout::kSplitHalf);
  const auto [q_rot, k_rot] =
      Rope(q, k, table, RopePositions{}, RopeLayout::kSplitHalf);
  EXPECT_EQ(q_rot_view.ToVector(), q_rot.ToVector());
  EXPECT_EQ(k_rot_view.ToVector(), k_rot.ToVector());
  EXPECT_TRUE(q_rot_view.is_contiguous());
  // A view whose head_dim is not contiguous is copied first.
  const Tensor q_t = q.ViewAs({b, h, d, t}, {h * t * d, t * d, 1, d}, 0);
  RopeTable table_t = RopeTable::Default(t - 1, 10000.0);
  const Tensor rotated =
      Rope(q_t, table_t, RopePositions{}, RopeLayout::kSplitHalf, 0.8);
  Tensor q_t_copy = Tensor::Zeros({b, h, d, t});
  q_t_copy.CopyFrom(q_t);
  EXPECT_EQ(rotated.ToVector(), Rope(q_t_copy, table_t, RopePositions{},
                                     RopeLayout::kSplitHalf, 0.8)
                                    .ToVector());
}

// The backward uses the forward's table rows even if the table is rebuilt
// (e.g. dynamic NTK) between forward and backward.
TEST(RopeOp, BackwardUsesTheForwardTable) {
  std::mt19937 rng(33);
  RopeTable table = RopeTable::Default(8, 10000.0);
  Tensor x = RandomTensor({1, 2, 4, 8}, rng);
  const Tensor dy = RandomTensor({1, 2, 4, 8}, rng, -1, 1, false);
  Rope(x, table, RopePositions{}, RopeLayout::kInterleaved).Backward(dy);
  const std::vector<float> expected = x.grad().ToVector();
  x.ZeroGrad();
  Tensor y = Rope(x, table, RopePositions{}, RopeLayout::kInterleaved);
  table.Rebuild(RopeTable::DefaultInvFreq(8, 500.0), 2.0);
  y.Backward(dy);
  EXPECT_EQ(x.grad().ToVector(), expected);
}

TEST(RopeOp, Errors) {
  RopeTable table = RopeTable::Default(8, 10000.0);
  const Tensor q = Tensor::Zeros({1, 2, 3, 8});
  const RopePositions start{};
  const RopeLayout split = RopeLayout::kSplitHalf;
  ROTOR_EXPECT_ERROR(Rope(q, Tensor::Zeros({1, 2, 3, 6}), table, start, split),
                     "q head_dim 8 and k head_dim 6 differ");
  ROTOR_EXPECT_ERROR(Rope(q, Tensor::Zeros({1, 2, 4, 8}), table, start, split),
                     "differ in batch or seq");
  ROTOR_EXPECT_ERROR(Rope(Tensor::Zeros({2, 3, 8}), table, start, split),
                     "must be [batch, heads, seq, head_dim], got [2, 3, 8]");
  // The table rotates 8 channels; head_dim 16 needs 16.
  ROTOR_EXPECT_ERROR(Rope(Tensor::Zeros({1, 1, 2, 16}), table, start, split),
                     "table rotates 8 channels but head_dim 16");
  ROTOR_EXPECT_ERROR(
      Rope(Tensor::Zeros({1, 1, 2, 10}), table, start, split, 0.3),
      "= 3 must be even");
  ROTOR_EXPECT_ERROR(Rope(q, table, RopePositions{-4, {}}, split),
                     "offset must be >= 0, got -4");
}

}  // namespace
}  // namespace rotor

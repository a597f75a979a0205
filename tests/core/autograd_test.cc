// The autograd engine (core/autograd.h): gradient summing over a diamond,
// accumulation across Backward() calls, adopted first gradients, NoGradGuard,
// the freed graph, the scalar-loss requirement and requires_grad propagation;
// the hook that reports each leaf whose gradient is final.
#include "core/autograd.h"

#include <algorithm>
#include <vector>

#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

TEST(Autograd, DiamondSumsGradients) {
  // L = sum(x * x + 3 x): x reaches L along three paths; dL/dx = 2x + 3.
  Tensor x = Tensor::FromVector({3}, {1.0f, -2.0f, 0.5f}, true);
  const Tensor a = Mul(x, x);
  const Tensor b = Mul(x, 3.0f);
  Sum(Add(a, b)).Backward();
  EXPECT_EQ(x.grad().ToVector(), (std::vector<float>{5.0f, -1.0f, 4.0f}));
}

TEST(Autograd, SharedIntermediateSumsGradients) {
  // h = 2x is used twice: L = sum(h * h) = 4 sum(x^2), dL/dx = 8x.
  Tensor x = Tensor::FromVector({2}, {1.0f, 3.0f}, true);
  const Tensor h = Mul(x, 2.0f);
  Sum(Mul(h, h)).Backward();
  EXPECT_EQ(x.grad().ToVector(), (std::vector<float>{8.0f, 24.0f}));
}

// Add's backward hands the same gradient tensor to both inputs, and the
// engine adopts a first gradient without copying: a later contribution must
// make a fresh sum, not add into the shared tensor. Here ds = 1 reaches h1
// and h2 as one tensor, then h1 also gets 5 from the second path:
// dL/dh1 = 6, dL/dh2 = 1, so dL/dx = 6 * 2 + 1 * 3 = 15.
TEST(Autograd, SharedGradientIsNotModifiedInPlace) {
  Tensor x = Tensor::FromVector({3}, {1.0f, -1.0f, 4.0f}, true);
  const Tensor h1 = Mul(x, 2.0f);
  const Tensor h2 = Mul(x, 3.0f);
  const Tensor s = Add(h1, h2);
  Sum(Add(s, Mul(h1, 5.0f))).Backward();
  EXPECT_EQ(x.grad().ToVector(), (std::vector<float>{15.0f, 15.0f, 15.0f}));
}

// The graph holds data-less edges, not tensors: an intermediate that no
// backward function saves is freed as soon as the caller drops it.
TEST(Autograd, GraphDoesNotKeepActivationsAlive) {
  const int64_t n = 1 << 16;
  Tensor x = Tensor::Full({n}, 1.0f, true);
  const size_t before = GetMemoryStats().live_bytes;
  Tensor z;
  {
    const Tensor y = Mul(x, 2.0f);  // MulScalar's backward saves nothing
    z = Mul(y, 3.0f);
  }
  EXPECT_EQ(GetMemoryStats().live_bytes - before, n * sizeof(float));
  Sum(z).Backward();
  EXPECT_EQ(x.grad().ToVector(), std::vector<float>(n, 6.0f));
}

TEST(Autograd, GradientsAccumulateUntilZeroGrad) {
  Tensor x = Tensor::FromVector({2}, {1.0f, 2.0f}, true);
  Sum(Mul(x, x)).Backward();
  Sum(Mul(x, x)).Backward();
  EXPECT_EQ(x.grad().ToVector(), (std::vector<float>{4.0f, 8.0f}));
  x.ZeroGrad();  // drops the gradient: the next Backward writes it
  EXPECT_FALSE(x.grad().defined());
  Sum(Mul(x, 5.0f)).Backward();
  EXPECT_EQ(x.grad().ToVector(), (std::vector<float>{5.0f, 5.0f}));
}

// A leaf's first gradient is the tensor its backward returned when nothing
// else sees it, and a copy when it is shared (here the same tensor for two
// leaves): one leaf's gradient never aliases another's.
TEST(Autograd, FirstLeafGradientIsAdoptedOnlyWhenUnshared) {
  Tensor a = Tensor::FromVector({2}, {1.0f, 2.0f}, true);
  Tensor b = Tensor::FromVector({2}, {3.0f, 4.0f}, true);
  const float* fresh = nullptr;
  Tensor y =
      RecordOp(Tensor::Zeros({2}), "Fresh", {a}, [&fresh](const Tensor& g) {
        Tensor dx = Tensor::Empty(g.shape());
        dx.CopyFrom(g);
        fresh = dx.data();
        return std::vector<Tensor>{dx};
      });
  Sum(y).Backward();
  EXPECT_EQ(a.grad().data(), fresh);
  EXPECT_EQ(a.grad().ToVector(), (std::vector<float>{1.0f, 1.0f}));

  a.ZeroGrad();
  Sum(Add(a, b)).Backward();  // Add hands one tensor to both inputs
  EXPECT_NE(a.grad().data(), b.grad().data());
  Sum(Mul(a, 2.0f)).Backward();
  EXPECT_EQ(a.grad().ToVector(), (std::vector<float>{3.0f, 3.0f}));
  EXPECT_EQ(b.grad().ToVector(), (std::vector<float>{1.0f, 1.0f}));
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Tensor x = Tensor::Ones({2}, true);
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(GradModeEnabled());
    const Tensor y = Sum(Mul(Exp(x), x));
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
  }
  EXPECT_TRUE(GradModeEnabled());
  EXPECT_TRUE(Sum(x).requires_grad());
}

TEST(Autograd, SecondBackwardThroughFreedGraphThrows) {
  Tensor x = Tensor::Ones({2}, true);
  const Tensor loss = Sum(Mul(x, x));
  loss.Backward();
  ROTOR_EXPECT_ERROR(loss.Backward(),
                     "a second time: the graph was freed by the first "
                     "Backward()");
}

TEST(Autograd, BackwardNeedsAScalar) {
  Tensor x = Tensor::Ones({2, 2}, true);
  const Tensor y = Mul(x, 2.0f);
  ROTOR_EXPECT_ERROR(y.Backward(),
                     "Backward() needs a scalar loss, got shape [2, 2]");
  // With an explicit seed gradient it is allowed.
  y.Backward(Tensor::Full({2, 2}, 0.5f));
  EXPECT_EQ(x.grad().ToVector(), (std::vector<float>{1, 1, 1, 1}));
}

TEST(Autograd, RequiresGradPropagatesFromLeaves) {
  Tensor w = Tensor::Full({2}, 3.0f, true);
  const Tensor c = Tensor::Full({2}, 2.0f);  // a constant
  const Tensor y = Mul(w, c);
  EXPECT_TRUE(y.requires_grad());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "Mul");
  const Tensor k = Mul(c, c);
  EXPECT_FALSE(k.requires_grad());
  EXPECT_EQ(k.grad_fn(), nullptr);
  ROTOR_EXPECT_ERROR(Sum(k).Backward(), "the loss does not require grad");
  // Only leaves that require grad receive gradients.
  Sum(y).Backward();
  EXPECT_EQ(w.grad().ToVector(), (std::vector<float>{2.0f, 2.0f}));
  EXPECT_FALSE(c.grad().defined());
  ROTOR_EXPECT_ERROR(Tensor(y).set_requires_grad(true),
                     "only leaf tensors can be marked");
}

// What RunBackward's on_leaf_ready saw: each leaf reported (by handle) with
// a copy of its grad() at that moment (empty when undefined).
struct LeafReports {
  std::vector<const TensorImpl*> leaves;
  std::vector<std::vector<float>> grads;

  LeafGradReadyFn Hook() {
    return [this](const Tensor& leaf) {
      leaves.push_back(leaf.impl());
      grads.push_back(leaf.grad().defined() ? leaf.grad().ToVector()
                                            : std::vector<float>{});
    };
  }
};

// L = sum((x * a) * b): b's gradient is final as soon as the last Mul has
// run, before the first Mul gives a and x theirs. Each leaf is reported
// once, with the gradient it ends with; the constant c never.
TEST(Autograd, LeafReadyHookReportsEachLeafOnceAsSoonAsItIsFinal) {
  Tensor x = Tensor::FromVector({2}, {1.0f, 2.0f}, true);
  Tensor a = Tensor::FromVector({2}, {3.0f, 4.0f}, true);
  Tensor b = Tensor::FromVector({2}, {5.0f, 6.0f}, true);
  const Tensor c = Tensor::FromVector({2}, {1.0f, 1.0f});
  LeafReports reports;
  RunBackward(Sum(Mul(Mul(Mul(x, a), b), c)), Tensor(), reports.Hook());
  ASSERT_EQ(reports.leaves.size(), 3u);
  EXPECT_EQ(reports.leaves[0], b.impl());
  EXPECT_EQ(reports.grads[0], (std::vector<float>{3.0f, 8.0f}));  // x * a
  std::vector<const TensorImpl*> later = {reports.leaves[1], reports.leaves[2]};
  std::vector<const TensorImpl*> expected = {x.impl(), a.impl()};
  std::sort(later.begin(), later.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(later, expected);
  for (size_t i = 0; i < reports.leaves.size(); ++i) {
    const Tensor& leaf = reports.leaves[i] == x.impl()   ? x
                         : reports.leaves[i] == a.impl() ? a
                                                         : b;
    EXPECT_EQ(reports.grads[i], leaf.grad().ToVector());
  }
}

// A leaf used at both ends of the graph (like tied embeddings: the input
// lookup and the output projection) is reported once, after its last
// contribution: L = sum((2x) * x), dL/dx = 4x.
TEST(Autograd, LeafReadyHookWaitsForEveryUseOfALeaf) {
  Tensor x = Tensor::FromVector({2}, {1.0f, -3.0f}, true);
  LeafReports reports;
  RunBackward(Sum(Mul(Mul(x, 2.0f), x)), Tensor(), reports.Hook());
  ASSERT_EQ(reports.leaves.size(), 1u);
  EXPECT_EQ(reports.grads[0], (std::vector<float>{4.0f, -12.0f}));
}

// A node that no gradient reaches is skipped, but still counts as done: w
// sits behind an op whose backward gives its input no gradient, so w is
// reported with no grad() at all, and v as usual.
TEST(Autograd, LeafReadyHookReportsLeavesBehindABlockedPath) {
  Tensor w = Tensor::FromVector({2}, {1.0f, 2.0f}, true);
  Tensor v = Tensor::FromVector({2}, {3.0f, 4.0f}, true);
  const Tensor blocked =
      RecordOp(Tensor::Zeros({2}), "Blocked", {Mul(w, 2.0f)},
               [](const Tensor&) { return std::vector<Tensor>{Tensor()}; });
  LeafReports reports;
  RunBackward(Sum(Add(blocked, v)), Tensor(), reports.Hook());
  ASSERT_EQ(reports.leaves.size(), 2u);
  EXPECT_EQ(reports.leaves[0], v.impl());
  EXPECT_EQ(reports.leaves[1], w.impl());
  EXPECT_TRUE(reports.grads[1].empty());
  EXPECT_FALSE(w.grad().defined());
}

TEST(Autograd, LeafReadyHookReportsARootThatIsALeaf) {
  Tensor x = Tensor::FromVector({1}, {2.0f}, true);
  LeafReports reports;
  RunBackward(x, Tensor(), reports.Hook());
  ASSERT_EQ(reports.leaves.size(), 1u);
  EXPECT_EQ(reports.grads[0], std::vector<float>{1.0f});
}

}  // namespace
}  // namespace rotor

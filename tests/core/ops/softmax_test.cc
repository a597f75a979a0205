// Softmax, LogSoftmax and CrossEntropy ops: values, gradients (GradCheck),
// non-contiguous inputs and the errors for bad targets.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;

TEST(SoftmaxOp, Values) {
  const Tensor x = Tensor::FromVector({2, 3}, {0, 0, 0, 1000, 0, -1000});
  const std::vector<float> y = Softmax(x).ToVector();
  const std::vector<float> expected = {1 / 3.0f, 1 / 3.0f, 1 / 3.0f, 1, 0, 0};
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-7);
  const std::vector<float> log_y = LogSoftmax(x).ToVector();
  EXPECT_NEAR(log_y[0], -std::log(3.0f), 1e-6);
  EXPECT_NEAR(log_y[3], 0.0f, 1e-6);
  EXPECT_NEAR(log_y[5], -2000.0f, 1e-3);
}

TEST(SoftmaxOp, GradCheck) {
  std::mt19937 rng(61);
  GradCheck([](const std::vector<Tensor>& in) { return Softmax(in[0]); },
            {RandomTensor({2, 3, 5}, rng, -2, 2)});
  GradCheck([](const std::vector<Tensor>& in) { return LogSoftmax(in[0]); },
            {RandomTensor({4, 7}, rng, -2, 2)});
}

// A non-contiguous input gives the same values and gradient as its
// contiguous copy.
TEST(SoftmaxOp, NonContiguousInput) {
  std::mt19937 rng(62);
  auto [view, copy] = test::TransposedViewAndCopy(5, 4, rng, -2, 2);
  ASSERT_FALSE(view.is_contiguous());  // [4, 5], strides [1, 4]
  const Tensor dy = RandomTensor({4, 5}, rng, -1, 1, false);

  for (auto op : {&Softmax, &LogSoftmax}) {
    view.ZeroGrad();
    copy.ZeroGrad();
    const Tensor y_view = op(view);
    const Tensor y_copy = op(copy);
    EXPECT_EQ(y_view.ToVector(), y_copy.ToVector());
    y_view.Backward(dy);
    y_copy.Backward(dy);
    EXPECT_EQ(view.grad().ToVector(), copy.grad().ToVector());
  }
}

TEST(SoftmaxOp, NoGradRecordsNothing) {
  Tensor x = Tensor::Ones({2, 2}, true);
  NoGradGuard no_grad;
  const Tensor y = Softmax(x);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(y.grad_fn(), nullptr);
}

TEST(CrossEntropyOp, UniformLogitsGiveLogVocab) {
  const Tensor logits = Tensor::Zeros({3, 8});
  EXPECT_NEAR(CrossEntropy(logits, {1, 7, 0}).item(), std::log(8.0f), 1e-6);
}

// Ignored rows neither count in the mean nor receive gradient.
TEST(CrossEntropyOp, IgnoredRows) {
  std::mt19937 rng(63);
  Tensor logits = RandomTensor({4, 6}, rng, -3, 3);
  const Tensor kept = Tensor::FromVector({2, 6}, [&] {
    const std::vector<float> all = logits.ToVector();
    std::vector<float> rows(all.begin() + 6, all.begin() + 12);
    rows.insert(rows.end(), all.begin() + 18, all.end());
    return rows;
  }());
  const Tensor loss = CrossEntropy(logits, {-100, 2, -100, 5});
  EXPECT_NEAR(loss.item(), CrossEntropy(kept, {2, 5}).item(), 1e-6);

  loss.Backward();
  const std::vector<float> grad = logits.grad().ToVector();
  for (int col = 0; col < 6; ++col) {
    EXPECT_EQ(grad[col], 0.0f);       // row 0, ignored
    EXPECT_EQ(grad[12 + col], 0.0f);  // row 2, ignored
  }
  // A kept row's gradient is (softmax - onehot) / 2: it sums to zero.
  double sum = 0;
  for (int col = 0; col < 6; ++col) sum += grad[6 + col];
  EXPECT_NEAR(sum, 0.0, 1e-6);
  EXPECT_LT(grad[6 + 2], 0.0f);
}

TEST(CrossEntropyOp, AllRowsIgnoredIsNaN) {
  const Tensor logits = Tensor::Zeros({2, 3});
  EXPECT_TRUE(std::isnan(CrossEntropy(logits, {-1, -1}, -1).item()));
}

TEST(CrossEntropyOp, GradCheck) {
  std::mt19937 rng(64);
  const std::vector<int32_t> targets = {3, 0, -100, 4, 1};
  GradCheck(
      [&](const std::vector<Tensor>& in) {
        return CrossEntropy(in[0], targets);
      },
      {RandomTensor({5, 6}, rng, -2, 2)});
}

TEST(CrossEntropyOp, NonContiguousLogits) {
  std::mt19937 rng(65);
  const auto [view, copy] =
      test::TransposedViewAndCopy(7, 3, rng, -2, 2,
                                  /*requires_grad=*/false);
  ASSERT_FALSE(view.is_contiguous());  // [3, 7]
  EXPECT_EQ(CrossEntropy(view, {6, 0, 2}).item(),
            CrossEntropy(copy, {6, 0, 2}).item());
}

TEST(CrossEntropyOp, Errors) {
  const Tensor logits = Tensor::Zeros({3, 5});
  ROTOR_EXPECT_ERROR(CrossEntropy(logits, {0, 5, 1}), "CrossEntropy",
                     "target 5", "row 1", "vocab size 5");
  ROTOR_EXPECT_ERROR(CrossEntropy(logits, {0, 1, -3}), "target -3", "row 2",
                     "vocab size 5");
  ROTOR_EXPECT_ERROR(CrossEntropy(logits, {0, 1}), "CrossEntropy", "2 targets",
                     "[3, 5]", "expected 3");
  ROTOR_EXPECT_ERROR(CrossEntropy(Tensor::Zeros({2, 3, 4}), {0, 1}),
                     "CrossEntropy", "[rows, vocab]", "[2, 3, 4]");
}

}  // namespace
}  // namespace rotor

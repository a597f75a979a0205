// End to end: a 2 -> 8 -> 1 MLP (Linear, Tanh, Linear) learns XOR with plain
// gradient descent from a fixed seed within a fixed step budget.

#include "core/autograd.h"
#include "core/ops/ops.h"
#include "core/random.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

TEST(Xor, MlpLearnsXor) {
  const Tensor inputs = Tensor::FromVector({4, 2}, {0, 0, 0, 1, 1, 0, 1, 1});
  const Tensor targets = Tensor::FromVector({4, 1}, {0, 1, 1, 0});
  Rng rng(2024);
  auto random_parameter = [&](const Shape& shape) {
    std::vector<float> values(NumElements(shape));
    for (float& v : values) v = static_cast<float>(2.0 * rng.Uniform() - 1.0);
    return Tensor::FromVector(shape, values, /*requires_grad=*/true);
  };
  std::vector<Tensor> params = {random_parameter({8, 2}), random_parameter({8}),
                                random_parameter({1, 8}),
                                random_parameter({1})};
  auto forward = [&] {
    const Tensor hidden = Tanh(Linear(inputs, params[0], params[1]));
    return Linear(hidden, params[2], params[3]);
  };
  constexpr float kLearningRate = 0.1f;
  float loss_value = 0.0f;
  for (int step = 0; step < 300; ++step) {
    const Tensor error = Sub(forward(), targets);
    const Tensor loss = Mean(Mul(error, error));
    loss_value = loss.item();
    for (Tensor& p : params) p.ZeroGrad();
    loss.Backward();
    NoGradGuard no_grad;
    for (Tensor& p : params) p.CopyFrom(Sub(p, Mul(p.grad(), kLearningRate)));
  }
  EXPECT_LT(loss_value, 0.01f);
  NoGradGuard no_grad;
  const std::vector<float> predictions = forward().ToVector();
  EXPECT_LT(predictions[0], 0.5f);
  EXPECT_GT(predictions[1], 0.5f);
  EXPECT_GT(predictions[2], 0.5f);
  EXPECT_LT(predictions[3], 0.5f);
}

}  // namespace
}  // namespace rotor

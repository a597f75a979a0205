// Rung 02 of the ladder (docs/learn.md): the smallest complete training
// program in rotor. A two-layer
// perceptron learns XOR, the classic function no single linear layer can
// represent:
//
//   x1 x2 | x1 XOR x2
//    0  0 |    0
//    0  1 |    1
//    1  0 |    1
//    1  1 |    0
//
// Read it top to bottom: data, parameters, then the training loop (forward
// pass, loss, Backward, update). It exits with status 0 when the network has
// learned XOR and 1 otherwise.
//
//   ./build/examples/02_mlp
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/autograd.h"
#include "core/ops/ops.h"
#include "core/random.h"
#include "core/tensor.h"

using rotor::Tensor;

int main() {
  // ---- 1. Data ----
  // All four cases in one batch: inputs [4, 2], targets [4, 1]. Data tensors
  // do not require grad: we never ask how the loss changes with the data.
  const Tensor inputs = Tensor::FromVector({4, 2}, {0, 0, 0, 1, 1, 0, 1, 1});
  const Tensor targets = Tensor::FromVector({4, 1}, {0, 1, 1, 0});

  // ---- 2. Parameters ----
  // hidden = tanh(x W1^T + b1)      W1: [8, 2], b1: [8]
  // output = hidden W2^T + b2       W2: [1, 8], b2: [1]
  // Random starting values, uniform in [-1, 1), break the symmetry between
  // the 8 hidden units (rotor::Rng with a fixed seed gives the same values on
  // every machine). requires_grad = true marks them as leaves whose gradient
  // Backward() should compute.
  rotor::Rng rng(2024);
  auto random_parameter = [&](const rotor::Shape& shape) {
    std::vector<float> values(rotor::NumElements(shape));
    for (float& v : values) v = static_cast<float>(2.0 * rng.Uniform() - 1.0);
    return Tensor::FromVector(shape, values, /*requires_grad=*/true);
  };
  Tensor w1 = random_parameter({8, 2});
  Tensor b1 = random_parameter({8});
  Tensor w2 = random_parameter({1, 8});
  Tensor b2 = random_parameter({1});
  std::vector<Tensor*> parameters = {&w1, &b1, &w2, &b2};

  // The forward pass. Every op records a node (its inputs and how to map
  // the output's gradient to theirs), so the result remembers the graph
  // that produced it.
  auto forward = [&] {
    const Tensor hidden = rotor::Tanh(rotor::Linear(inputs, w1, b1));
    return rotor::Linear(hidden, w2, b2);  // [4, 1]
  };

  // ---- 3. Training: plain gradient descent ----
  constexpr int kSteps = 500;
  constexpr float kLearningRate = 0.1f;
  float loss_value = 0.0f;
  for (int step = 1; step <= kSteps; ++step) {
    // Mean squared error: loss = mean((output - target)^2), a scalar.
    const Tensor error = rotor::Sub(forward(), targets);
    const Tensor loss = rotor::Mean(rotor::Mul(error, error));
    loss_value = loss.item();

    // Backward() adds d(loss)/d(parameter) into each parameter's grad().
    // It adds rather than overwrites (so gradients of several losses can be
    // summed), hence we zero the previous step's gradients first. It also
    // frees the graph: the next step records a fresh one.
    for (Tensor* p : parameters) p->ZeroGrad();
    loss.Backward();

    // The update p <- p - lr * grad changes the parameters in place. It is
    // not part of the model, so it runs under NoGradGuard: nothing recorded.
    {
      rotor::NoGradGuard no_grad;
      for (Tensor* p : parameters) {
        p->CopyFrom(rotor::Sub(*p, rotor::Mul(p->grad(), kLearningRate)));
      }
    }
    if (step == 1 || step % 50 == 0) {
      std::printf("step %4d  loss %.6f\n", step, loss_value);
    }
  }

  // ---- 4. Result ----
  // Evaluation needs no gradients either.
  rotor::NoGradGuard no_grad;
  const std::vector<float> predictions = forward().ToVector();
  const std::vector<float> expected = targets.ToVector();
  const std::vector<float> x = inputs.ToVector();
  bool learned = loss_value < 0.01f;
  std::printf("\n x1 x2 | prediction  target\n");
  for (int i = 0; i < 4; ++i) {
    // Right: nearer its target than the other class by a clear margin. A
    // model without its nonlinearity outputs 0.500 for every row, which a
    // plain "which side of 0.5" test would call right half the time.
    const bool right = std::fabs(predictions[i] - expected[i]) < 0.25f;
    learned = learned && right;
    std::printf("  %.0f  %.0f |   %6.3f      %.0f   %s\n", x[2 * i],
                x[2 * i + 1], predictions[i], expected[i],
                right ? "ok" : "WRONG");
  }
  std::printf("%s\n", learned ? "learned XOR" : "did NOT learn XOR");
  return learned ? 0 : 1;
}

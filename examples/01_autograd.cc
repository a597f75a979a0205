// Rung 01 of the ladder (docs/learn.md): reverse-mode autograd, first by hand
// on scalars, then with rotor::Tensor.
//
// The function is a single "neuron" with two inputs:
//
//   z = w1*x1 + w2*x2 + b        (a weighted sum)
//   y = tanh(z)                  (an activation)
//   L = (y - t)^2                (a squared error against the target t)
//
// Reverse mode walks that graph backwards and multiplies local derivatives
// (the chain rule), starting from dL/dL = 1:
//
//   dL/dy = 2 (y - t)
//   dL/dz = dL/dy * (1 - y^2)           since tanh'(z) = 1 - tanh(z)^2
//   dL/dw1 = dL/dz * x1,  dL/dw2 = dL/dz * x2,  dL/db = dL/dz
//
// Each gradient is checked against a central finite difference,
//   dL/dp ~ (L(p + h) - L(p - h)) / 2h,
// whose error is O(h^2): the two numbers agree to about 8 digits in double.
// Then rotor computes the same gradients: every op records a node of the
// graph, and Backward() runs exactly the walk above (core/autograd.h).
//
//   ./build/examples/01_autograd
#include <cmath>
#include <cstdio>

#include "core/autograd.h"
#include "core/ops/ops.h"
#include "core/tensor.h"

namespace {

struct Params {
  double w1, w2, b;
};
constexpr double kX1 = 2.0, kX2 = -1.0, kTarget = 0.5;

// The forward pass in double.
double LossOf(const Params& p) {
  const double z = p.w1 * kX1 + p.w2 * kX2 + p.b;
  const double y = std::tanh(z);
  return (y - kTarget) * (y - kTarget);
}

// Central difference of LossOf in one parameter.
double FiniteDifference(Params p, double Params::*field) {
  constexpr double h = 1e-5;
  const double saved = p.*field;
  p.*field = saved + h;
  const double up = LossOf(p);
  p.*field = saved - h;
  const double down = LossOf(p);
  return (up - down) / (2.0 * h);
}

}  // namespace

int main() {
  const Params p{0.3, -0.2, 0.1};

  // ---- 1. By hand: forward, keeping the intermediate values ----
  const double z = p.w1 * kX1 + p.w2 * kX2 + p.b;
  const double y = std::tanh(z);
  const double loss = (y - kTarget) * (y - kTarget);
  // ---- backward: one local derivative per step, from the loss back ----
  const double dy = 2.0 * (y - kTarget);
  const double dz = dy * (1.0 - y * y);
  const double grad[3] = {dz * kX1, dz * kX2, dz};

  std::printf("z = %.6f  y = tanh(z) = %.6f  L = %.8f\n\n", z, y, loss);
  std::printf("By hand (chain rule) against a central finite difference:\n");
  const char* names[3] = {"w1", "w2", "b"};
  double Params::*fields[3] = {&Params::w1, &Params::w2, &Params::b};
  double worst_fd = 0.0;
  for (int i = 0; i < 3; ++i) {
    const double fd = FiniteDifference(p, fields[i]);
    worst_fd = std::fmax(worst_fd, std::fabs(fd - grad[i]));
    std::printf("  dL/d%-2s  by hand %+.10f  finite difference %+.10f\n",
                names[i], grad[i], fd);
  }
  std::printf("hand vs finite difference: max difference %.1e\n\n", worst_fd);

  // ---- 2. The same with rotor::Tensor ----
  // Parameters are leaves with requires_grad; inputs are data. rotor works
  // in float32, so it agrees with the double values to about 7 digits.
  using rotor::Tensor;
  Tensor w1 = Tensor::FromVector({1}, {static_cast<float>(p.w1)}, true);
  Tensor w2 = Tensor::FromVector({1}, {static_cast<float>(p.w2)}, true);
  Tensor b = Tensor::FromVector({1}, {static_cast<float>(p.b)}, true);
  const Tensor x1 = Tensor::FromVector({1}, {static_cast<float>(kX1)});
  const Tensor x2 = Tensor::FromVector({1}, {static_cast<float>(kX2)});
  const Tensor t = Tensor::FromVector({1}, {static_cast<float>(kTarget)});
  // Each op records a node: Mul, Add, Tanh, Sub, Mul, Sum.
  const Tensor zt =
      rotor::Add(rotor::Add(rotor::Mul(w1, x1), rotor::Mul(w2, x2)), b);
  const Tensor err = rotor::Sub(rotor::Tanh(zt), t);
  const Tensor lt = rotor::Sum(rotor::Mul(err, err));  // a scalar
  lt.Backward();  // seeds dL/dL = 1 and walks the graph backwards

  std::printf("rotor autograd (float32) against the hand gradients:\n");
  const Tensor* leaves[3] = {&w1, &w2, &b};
  double worst_rotor = 0.0;
  for (int i = 0; i < 3; ++i) {
    const double g = leaves[i]->grad().item();
    worst_rotor = std::fmax(worst_rotor, std::fabs(g - grad[i]));
    std::printf("  dL/d%-2s  rotor %+.7f  by hand %+.7f\n", names[i], g,
                grad[i]);
  }
  std::printf("rotor vs hand: max difference %.1e (float32 rounding)\n",
              worst_rotor);

  const bool ok = worst_fd < 1e-8 && worst_rotor < 1e-6;
  std::printf("%s\n", ok ? "gradients agree" : "gradients DISAGREE");
  return ok ? 0 : 1;
}

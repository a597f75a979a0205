// Relu, Gelu (tanh approximation), Tanh: values against the formulas in
// double, and gradients.
#include <cmath>
#include <random>

#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;
using Inputs = std::vector<Tensor>;

TEST(Activation, Values) {
  const std::vector<float> v = {-3.0f, -0.5f, 0.0f, 0.25f, 2.0f};
  const Tensor x = Tensor::FromVector({5}, v);
  const std::vector<float> relu = Relu(x).ToVector(), gelu = Gelu(x).ToVector(),
                           tanh = Tanh(x).ToVector();
  for (size_t i = 0; i < v.size(); ++i) {
    const double d = v[i];
    EXPECT_EQ(relu[i], v[i] > 0 ? v[i] : 0.0f);
    const double u = std::sqrt(2.0 / M_PI) * (d + 0.044715 * d * d * d);
    EXPECT_NEAR(gelu[i], 0.5 * d * (1.0 + std::tanh(u)), 1e-6);
    EXPECT_NEAR(tanh[i], std::tanh(d), 1e-6);
  }
}

TEST(ActivationGrad, All) {
  std::mt19937 rng(41);
  // Relu is not differentiable at 0: keep inputs away from it.
  std::vector<float> values = test::RandomVector(12, rng, 0.1f, 2.0f);
  for (size_t i = 0; i < values.size(); i += 2) values[i] = -values[i];
  const Inputs relu_in = {Tensor::FromVector({3, 4}, values, true)};
  GradCheck([](const Inputs& x) { return Relu(x[0]); }, relu_in);
  const Inputs in = {RandomTensor({3, 4}, rng, -3.0f, 3.0f)};
  GradCheck([](const Inputs& x) { return Gelu(x[0]); }, in);
  GradCheck([](const Inputs& x) { return Tanh(x[0]); }, in);
  GradCheck([](const Inputs& x) { return Gelu(Transpose(x[0], 0, 1)); }, in);
}

}  // namespace
}  // namespace rotor

// LayerNorm: values against a double reference, gradients for all three
// inputs, shape errors.
#include <cmath>
#include <random>

#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;
using Inputs = std::vector<Tensor>;

TEST(LayerNorm, MatchesReference) {
  std::mt19937 rng(61);
  const Tensor x = RandomTensor({3, 7}, rng, -2, 3, false);
  const Tensor w = RandomTensor({7}, rng, 0.5, 1.5, false);
  const Tensor b = RandomTensor({7}, rng, -1, 1, false);
  const Tensor y = LayerNorm(x, w, b, 1e-5f);
  for (int64_t r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < 7; ++j) mean += x.at({r, j}) / 7.0;
    for (int64_t j = 0; j < 7; ++j) {
      var += (x.at({r, j}) - mean) * (x.at({r, j}) - mean) / 7.0;
    }
    for (int64_t j = 0; j < 7; ++j) {
      const double expected =
          (x.at({r, j}) - mean) / std::sqrt(var + 1e-5) * w.at({j}) + b.at({j});
      EXPECT_NEAR(y.at({r, j}), expected, 1e-5);
    }
  }
}

TEST(LayerNormGrad, AllInputs) {
  std::mt19937 rng(62);
  // 70 rows: more than two of the fixed 32-row blocks of the weight gradient.
  const Inputs in = {RandomTensor({2, 35, 6}, rng, -2, 2),
                     RandomTensor({6}, rng, 0.5, 1.5), RandomTensor({6}, rng)};
  GradCheck([](const Inputs& x) { return LayerNorm(x[0], x[1], x[2]); }, in);
  const Inputs t = {RandomTensor({6, 4}, rng, -2, 2),
                    RandomTensor({6}, rng, 0.5, 1.5), RandomTensor({6}, rng)};
  GradCheck(
      [](const Inputs& x) {
        return LayerNorm(Transpose(x[0], 0, 1), x[1], x[2]);
      },
      t);
}

TEST(LayerNorm, ShapeErrors) {
  const Tensor x = Tensor::Zeros({2, 4});
  ROTOR_EXPECT_ERROR(LayerNorm(x, Tensor::Ones({3}), Tensor::Zeros({4})),
                     "LayerNorm: input shape [2, 4] needs weight and bias of "
                     "shape [4], got [3] and [4]");
}

}  // namespace
}  // namespace rotor

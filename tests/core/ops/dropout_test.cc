// Dropout: the kept fraction, scaling, seed determinism, gradient = mask /
// (1 - p), bad p.
#include <random>

#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;
using Inputs = std::vector<Tensor>;

TEST(Dropout, KeepsAboutOneMinusPAndScales) {
  const Tensor x = Tensor::Ones({100, 200});
  const std::vector<float> y = Dropout(x, 0.25f, 7).ToVector();
  int kept = 0;
  for (float v : y) {
    ASSERT_TRUE(v == 0.0f || v == 1.0f / 0.75f) << v;
    kept += v != 0.0f;
  }
  // 20000 Bernoulli(0.75) draws: mean 15000, standard deviation ~61.
  EXPECT_NEAR(kept, 15000, 400);
  EXPECT_EQ(Dropout(x, 0.25f, 7).ToVector(), y);
  EXPECT_NE(Dropout(x, 0.25f, 8).ToVector(), y);
  EXPECT_EQ(Dropout(x, 0.0f, 7).ToVector(), x.ToVector());
}

TEST(Dropout, MaskDoesNotDependOnThreadCount) {
  const Tensor x = Tensor::Ones({300, 300});
  auto mask = [&] { return Dropout(x, 0.5f, 3).ToVector(); };
  const std::vector<float> serial = test::RunAtThreads(1, mask);
  EXPECT_EQ(serial, test::RunAtThreads(2, mask));
}

TEST(DropoutGrad, IsMaskOverOneMinusP) {
  std::mt19937 rng(71);
  const Inputs in = {RandomTensor({4, 5}, rng)};
  GradCheck([](const Inputs& x) { return Dropout(x[0], 0.4f, 11); }, in);
  Tensor x = Tensor::Ones({4, 5}, true);
  const Tensor mask = Dropout(Tensor::Ones({4, 5}), 0.4f, 11);
  Sum(Dropout(x, 0.4f, 11)).Backward();
  EXPECT_EQ(x.grad().ToVector(), mask.ToVector());
}

TEST(Dropout, BadProbabilityThrows) {
  const Tensor x = Tensor::Ones({2});
  ROTOR_EXPECT_ERROR(Dropout(x, 1.0f, 0),
                     "Dropout: probability p = 1 must be in [0, 1)");
  ROTOR_EXPECT_ERROR(Dropout(x, -0.1f, 0), "Dropout: probability p = -0.1");
}

}  // namespace
}  // namespace rotor

// AdamW kernel: the Highway version against the scalar reference on every
// compiled target, and the reference against a hand-computed first step.
#include "core/kernels/adamw.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/kernels/adamw_scalar.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::ExpectNear;
using test::ForEachSizeAndMisalignment;
using test::MisalignedFloats;

ROTOR_PER_TARGET_SUITE(AdamWKernel);

ROTOR_PER_TARGET_TEST(AdamWKernel, MatchesReference) {
  EXPECT_STREQ(kernels::AdamWTarget(), TargetName());
  std::mt19937 rng(51);
  kernels::AdamWHyperparams hyper;
  hyper.lr = 3e-3f;
  hyper.weight_decay = 0.1f;
  ForEachSizeAndMisalignment(
      test::KernelTestSizesAcrossTasks(), "n",
      [&](size_t n, size_t m, const std::string& where) {
        MisalignedFloats p(n, m, rng);
        MisalignedFloats mom(n, m, rng, -0.1f, 0.1f);
        MisalignedFloats var(n, m, rng, 0.0f, 0.01f);
        MisalignedFloats p_ref = p, mom_ref = mom, var_ref = var;
        // Three steps, each with a fresh gradient, from step 5 on.
        for (int64_t step = 5; step < 8; ++step) {
          const MisalignedFloats g(n, m, rng);
          kernels::AdamWUpdate(p.data(), g.data(), mom.data(), var.data(), n,
                               hyper, step);
          kernels::AdamWUpdateRef(p_ref.data(), g.data(), mom_ref.data(),
                                  var_ref.data(), n, hyper, step);
        }
        ExpectNear(mom.data(), mom_ref.data(), n, 1e-7, 1e-6, "m " + where);
        ExpectNear(var.data(), var_ref.data(), n, 1e-9, 1e-5, "v " + where);
        ExpectNear(p.data(), p_ref.data(), n, 1e-6, 1e-6, "param " + where);
      });
}

// Step 1 from m = v = 0: m = (1-b1) g, v = (1-b2) g^2, and the bias
// corrections turn the update into lr * g / (|g| + eps): a step of ~lr
// against the gradient's sign, after the decay p * (1 - lr wd).
TEST(AdamWReference, FirstStepIsSignedLearningRate) {
  kernels::AdamWHyperparams hyper;
  hyper.lr = 0.01;
  hyper.weight_decay = 0.5;
  std::vector<double> p = {1.0, -2.0, 0.5};
  const std::vector<double> g = {0.3, -4.0, 1e-3};
  std::vector<double> m(3, 0.0), v(3, 0.0);
  kernels::AdamWUpdateRef(p.data(), g.data(), m.data(), v.data(), 3, hyper, 1);
  const double lr = hyper.lr, wd = hyper.weight_decay, eps = hyper.eps;
  const std::vector<double> initial = {1.0, -2.0, 0.5};
  for (size_t i = 0; i < 3; ++i) {
    const double expected =
        initial[i] * (1 - lr * wd) - lr * g[i] / (std::abs(g[i]) + eps);
    EXPECT_NEAR(p[i], expected, 1e-8) << "element " << i;
  }
}

}  // namespace
}  // namespace rotor

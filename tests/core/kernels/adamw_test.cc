// Optimizer kernels: AdamW over several arrays and the sum of squares of
// several arrays, the Highway versions against the scalar references on
// every compiled target, and the AdamW reference against a hand-computed
// first step.
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

// Three arrays in one call (one without weight decay), with a clip scale,
// against the reference on each array.
ROTOR_PER_TARGET_TEST(AdamWKernel, MatchesReference) {
  EXPECT_STREQ(kernels::AdamWTarget(), TargetName());
  std::mt19937 rng(51);
  kernels::AdamWHyperparams hyper;
  hyper.lr = 3e-3f;
  hyper.weight_decay = 0.1f;
  hyper.grad_scale = 0.6f;
  ForEachSizeAndMisalignment(
      test::KernelTestSizesAcrossTasks(), "n",
      [&](size_t n, size_t m, const std::string& where) {
        const size_t sizes[3] = {n, 3, n / 2 + 1};
        std::vector<MisalignedFloats> p, mom, var, p_ref, mom_ref, var_ref;
        for (const size_t size : sizes) {
          p.emplace_back(size, m, rng);
          mom.emplace_back(size, m, rng, -0.1f, 0.1f);
          var.emplace_back(size, m, rng, 0.0f, 0.01f);
        }
        p_ref = p, mom_ref = mom, var_ref = var;
        // Three steps, each with fresh gradients, from step 5 on.
        for (int64_t step = 5; step < 8; ++step) {
          std::vector<MisalignedFloats> g;
          std::vector<kernels::AdamWSegment> segments;
          for (size_t a = 0; a < 3; ++a) {
            g.emplace_back(sizes[a], m, rng);
          }
          for (size_t a = 0; a < 3; ++a) {
            segments.push_back({p[a].data(), g[a].data(), mom[a].data(),
                                var[a].data(), sizes[a], a != 1});
          }
          kernels::AdamWUpdate(segments.data(), 3, hyper, step);
          for (size_t a = 0; a < 3; ++a) {
            kernels::AdamWHyperparams h = hyper;
            if (a == 1) h.weight_decay = 0.0f;
            kernels::AdamWUpdateRef(p_ref[a].data(), g[a].data(),
                                    mom_ref[a].data(), var_ref[a].data(),
                                    sizes[a], h, step);
          }
        }
        for (size_t a = 0; a < 3; ++a) {
          const std::string at = where + " array " + std::to_string(a);
          ExpectNear(mom[a].data(), mom_ref[a].data(), sizes[a], 1e-7, 1e-6,
                     "m " + at);
          ExpectNear(var[a].data(), var_ref[a].data(), sizes[a], 1e-9, 1e-5,
                     "v " + at);
          ExpectNear(p[a].data(), p_ref[a].data(), sizes[a], 1e-6, 1e-6,
                     "param " + at);
        }
      });
}

ROTOR_PER_TARGET_TEST(AdamWKernel, SumOfSquaresMatchesReference) {
  EXPECT_STREQ(kernels::AdamWTarget(), TargetName());
  std::mt19937 rng(52);
  ForEachSizeAndMisalignment(
      test::KernelTestSizesAcrossTasks(), "n",
      [&](size_t n, size_t m, const std::string& where) {
        const MisalignedFloats a(n, m, rng, -3.0f, 3.0f);
        const MisalignedFloats b(n / 3 + 5, m, rng, -3.0f, 3.0f);
        const kernels::FloatSpan spans[3] = {
            {a.data(), n}, {b.data(), n / 3 + 5}, {a.data(), 0}};
        const double expected = kernels::SumOfSquaresOfSpansRef(spans, 3);
        EXPECT_NEAR(kernels::SumOfSquaresOfSpans(spans, 3), expected,
                    1e-12 * expected)
            << where;
      });
  EXPECT_EQ(kernels::SumOfSquaresOfSpans(nullptr, 0), 0.0);
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

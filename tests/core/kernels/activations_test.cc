// SiLU and SwiGLU kernels: the Highway versions against the scalar
// references on every compiled target (sizes 0..33 and larger odd ones,
// misaligned pointers, extreme inputs), and the reference backward passes
// against complex-step derivatives in double.
#include "core/kernels/activations.h"

#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/kernels/activations_scalar.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::ExpectNear;
using test::RandomDoubles;
using test::RandomVector;

ROTOR_PER_TARGET_SUITE(ActivationsKernel);

ROTOR_PER_TARGET_TEST(ActivationsKernel, MatchesReference) {
  EXPECT_STREQ(kernels::ActivationsTarget(), TargetName());
  std::mt19937 rng(31);
  std::vector<size_t> sizes = test::KernelTestSizes();
  sizes.push_back(40001);  // more than one ParallelFor chunk
  for (size_t n : sizes) {
    for (size_t m : test::KernelTestMisalignments()) {
      const std::string where =
          "n=" + std::to_string(n) + " misalign=" + std::to_string(m);
      const std::vector<float> x = RandomVector(n + m, rng, -12.0f, 12.0f);
      const std::vector<float> up = RandomVector(n + m, rng, -2.0f, 2.0f);
      const std::vector<float> dy = RandomVector(n + m, rng);
      const std::vector<float> acc0 = RandomVector(n + m, rng);
      std::vector<float> y(n + m), y_ref(n + m);

      kernels::SiluForward(x.data() + m, y.data() + m, n);
      kernels::SiluForwardRef(x.data() + m, y_ref.data() + m, n);
      ExpectNear(y.data() + m, y_ref.data() + m, n, 1e-6, 1e-6,
                 "SiluForward " + where);

      std::vector<float> dx = acc0, dx_ref = acc0;
      kernels::SiluBackward(x.data() + m, dy.data() + m, dx.data() + m, n);
      kernels::SiluBackwardRef(x.data() + m, dy.data() + m, dx_ref.data() + m,
                               n);
      ExpectNear(dx.data() + m, dx_ref.data() + m, n, 1e-6, 1e-6,
                 "SiluBackward " + where);

      kernels::SwiGluForward(x.data() + m, up.data() + m, y.data() + m, n);
      kernels::SwiGluForwardRef(x.data() + m, up.data() + m, y_ref.data() + m,
                                n);
      ExpectNear(y.data() + m, y_ref.data() + m, n, 1e-6, 1e-6,
                 "SwiGluForward " + where);

      std::vector<float> dgate = acc0, dgate_ref = acc0;
      std::vector<float> dup = dy, dup_ref = dy;
      kernels::SwiGluBackward(x.data() + m, up.data() + m, dy.data() + m,
                              dgate.data() + m, dup.data() + m, n);
      kernels::SwiGluBackwardRef(x.data() + m, up.data() + m, dy.data() + m,
                                 dgate_ref.data() + m, dup_ref.data() + m, n);
      ExpectNear(dgate.data() + m, dgate_ref.data() + m, n, 1e-6, 1e-6,
                 "SwiGluBackward dgate " + where);
      ExpectNear(dup.data() + m, dup_ref.data() + m, n, 1e-6, 1e-6,
                 "SwiGluBackward dup " + where);
    }
  }
}

// Far outside exp's range the sigmoid saturates cleanly: silu(x) = x for
// large x, 0 for very negative x, and the derivative goes to 1 and 0.
ROTOR_PER_TARGET_TEST(ActivationsKernel, ExtremeInputs) {
  const float kMax = std::numeric_limits<float>::max();
  const std::vector<float> x = {1000.0f, -1000.0f, 200.0f, -200.0f,
                                kMax,    -kMax,    0.0f};
  const std::vector<float> silu = {1000.0f, 0.0f, 200.0f, 0.0f,
                                   kMax,    0.0f, 0.0f};
  const std::vector<float> derivative = {1.0f, 0.0f, 1.0f, 0.0f,
                                         1.0f, 0.0f, 0.5f};
  const size_t n = x.size();
  std::vector<float> y(n), dx(n, 0.0f);
  const std::vector<float> ones(n, 1.0f);
  kernels::SiluForward(x.data(), y.data(), n);
  kernels::SiluBackward(x.data(), ones.data(), dx.data(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(y[i], silu[i]) << "silu(" << x[i] << ")";
    EXPECT_EQ(dx[i], derivative[i]) << "silu'(" << x[i] << ")";
  }
}

ROTOR_PER_TARGET_TEST(ActivationsKernel, NaNPropagates) {
  const float x = NAN, one = 1.0f;
  float y = 0.0f, dx = 0.0f, dup = 0.0f;
  kernels::SiluForward(&x, &y, 1);
  EXPECT_TRUE(std::isnan(y));
  kernels::SiluBackward(&x, &one, &dx, 1);
  EXPECT_TRUE(std::isnan(dx));
  dx = 0.0f;
  kernels::SwiGluForward(&x, &one, &y, 1);
  EXPECT_TRUE(std::isnan(y));
  kernels::SwiGluBackward(&x, &one, &one, &dx, &dup, 1);
  EXPECT_TRUE(std::isnan(dx));
  EXPECT_TRUE(std::isnan(dup));
}

TEST(ActivationsReference, BackwardMatchesComplexStep) {
  using C = std::complex<double>;
  std::mt19937 rng(32);
  const size_t n = 9;
  const std::vector<double> x = RandomDoubles(n, rng, -6, 6);
  const std::vector<double> up = RandomDoubles(n, rng, -2, 2);
  const std::vector<double> dy = RandomDoubles(n, rng, -1, 1);

  std::vector<double> dx(n, 0.0);
  kernels::SiluBackwardRef(x.data(), dy.data(), dx.data(), n);
  const std::vector<double> expected = test::ComplexStepGradient(
      [&](const std::vector<C>& z) {
        std::vector<C> y(n);
        kernels::SiluForwardRef(z.data(), y.data(), n);
        C loss = 0;
        for (size_t i = 0; i < n; ++i) loss += dy[i] * y[i];
        return loss;
      },
      x);
  ExpectNear(dx.data(), expected.data(), n, 1e-14, 1e-12, "silu");

  // SwiGLU: one parameter vector, gate followed by up.
  std::vector<double> dgate(n, 0.0), dup(n, 0.0);
  kernels::SwiGluBackwardRef(x.data(), up.data(), dy.data(), dgate.data(),
                             dup.data(), n);
  std::vector<double> params = x;
  params.insert(params.end(), up.begin(), up.end());
  const std::vector<double> expected_glu = test::ComplexStepGradient(
      [&](const std::vector<C>& z) {
        std::vector<C> out(n);
        kernels::SwiGluForwardRef(z.data(), z.data() + n, out.data(), n);
        C loss = 0;
        for (size_t i = 0; i < n; ++i) loss += dy[i] * out[i];
        return loss;
      },
      params);
  ExpectNear(dgate.data(), expected_glu.data(), n, 1e-14, 1e-12, "dgate");
  ExpectNear(dup.data(), expected_glu.data() + n, n, 1e-14, 1e-12, "dup");
}

}  // namespace
}  // namespace rotor

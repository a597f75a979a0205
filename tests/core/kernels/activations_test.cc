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
using test::ForEachSizeAndMisalignment;
using test::MisalignedFloats;
using test::RandomDoubles;

ROTOR_PER_TARGET_SUITE(ActivationsKernel);

ROTOR_PER_TARGET_TEST(ActivationsKernel, MatchesReference) {
  EXPECT_STREQ(kernels::ActivationsTarget(), TargetName());
  std::mt19937 rng(31);
  ForEachSizeAndMisalignment(
      test::KernelTestSizesAcrossTasks(), "n",
      [&](size_t n, size_t m, const std::string& where) {
        const MisalignedFloats x(n, m, rng, -12.0f, 12.0f);
        const MisalignedFloats up(n, m, rng, -2.0f, 2.0f);
        const MisalignedFloats dy(n, m, rng);
        const MisalignedFloats acc0(n, m, rng);
        MisalignedFloats y(n, m), y_ref(n, m);

        kernels::SiluForward(x.data(), y.data(), n);
        kernels::SiluForwardRef(x.data(), y_ref.data(), n);
        ExpectNear(y.data(), y_ref.data(), n, 1e-6, 1e-6,
                   "SiluForward " + where);

        MisalignedFloats dx = acc0, dx_ref = acc0;
        kernels::SiluBackward(x.data(), dy.data(), dx.data(), n);
        kernels::SiluBackwardRef(x.data(), dy.data(), dx_ref.data(), n);
        ExpectNear(dx.data(), dx_ref.data(), n, 1e-6, 1e-6,
                   "SiluBackward " + where);

        kernels::SwiGluForward(x.data(), up.data(), y.data(), n);
        kernels::SwiGluForwardRef(x.data(), up.data(), y_ref.data(), n);
        ExpectNear(y.data(), y_ref.data(), n, 1e-6, 1e-6,
                   "SwiGluForward " + where);

        MisalignedFloats dgate = acc0, dgate_ref = acc0;
        MisalignedFloats dup = dy, dup_ref = dy;
        kernels::SwiGluBackward(x.data(), up.data(), dy.data(), dgate.data(),
                                dup.data(), n);
        kernels::SwiGluBackwardRef(x.data(), up.data(), dy.data(),
                                   dgate_ref.data(), dup_ref.data(), n);
        ExpectNear(dgate.data(), dgate_ref.data(), n, 1e-6, 1e-6,
                   "SwiGluBackward dgate " + where);
        ExpectNear(dup.data(), dup_ref.data(), n, 1e-6, 1e-6,
                   "SwiGluBackward dup " + where);
      });
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
  const std::vector<double> expected = test::ComplexStepGradientOfWeightedSum(
      [&](const std::vector<C>& z) {
        std::vector<C> y(n);
        kernels::SiluForwardRef(z.data(), y.data(), n);
        return y;
      },
      x, dy);
  ExpectNear(dx.data(), expected.data(), n, 1e-14, 1e-12, "silu");

  // SwiGLU: one parameter vector, gate followed by up.
  std::vector<double> dgate(n, 0.0), dup(n, 0.0);
  kernels::SwiGluBackwardRef(x.data(), up.data(), dy.data(), dgate.data(),
                             dup.data(), n);
  std::vector<double> params = x;
  params.insert(params.end(), up.begin(), up.end());
  const std::vector<double> expected_glu =
      test::ComplexStepGradientOfWeightedSum(
          [&](const std::vector<C>& z) {
            std::vector<C> out(n);
            kernels::SwiGluForwardRef(z.data(), z.data() + n, out.data(), n);
            return out;
          },
          params, dy);
  ExpectNear(dgate.data(), expected_glu.data(), n, 1e-14, 1e-12, "dgate");
  ExpectNear(dup.data(), expected_glu.data() + n, n, 1e-14, 1e-12, "dup");
}

}  // namespace
}  // namespace rotor

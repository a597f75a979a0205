// Softmax and log-softmax kernels: the Highway versions against the scalar
// references on every compiled target (every column count 0..33 plus larger
// odd ones, several row counts, misaligned pointers, extreme values), and the
// references' backward passes against complex-step derivatives in double.
#include "core/kernels/softmax.h"

#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/kernels/softmax_scalar.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::ExpectNear;
using test::ForEachShapeAndMisalignment;
using test::MisalignedFloats;
using test::RandomDoubles;
using test::RandomVector;

constexpr float kInf = std::numeric_limits<float>::infinity();

ROTOR_PER_TARGET_SUITE(SoftmaxKernel);

ROTOR_PER_TARGET_TEST(SoftmaxKernel, MatchesReference) {
  EXPECT_STREQ(kernels::SoftmaxTarget(), TargetName());
  std::mt19937 rng(11);
  ForEachShapeAndMisalignment(
      {1, 3, 7}, "cols",
      [&](size_t rows, size_t cols, size_t m, const std::string& where) {
        const size_t n = rows * cols;
        const MisalignedFloats x(n, m, rng, -8.0f, 8.0f);
        const MisalignedFloats dy(n, m, rng);
        const MisalignedFloats dx0(n, m, rng);
        MisalignedFloats y(n, m), y_ref(n, m);

        kernels::SoftmaxForward(x.data(), y.data(), rows, cols);
        kernels::SoftmaxForwardRef(x.data(), y_ref.data(), rows, cols);
        ExpectNear(y.data(), y_ref.data(), n, 1e-7, 2e-5,
                   "SoftmaxForward " + where);

        MisalignedFloats dx = dx0, dx_ref = dx0;
        kernels::SoftmaxBackward(y_ref.data(), dy.data(), dx.data(), rows,
                                 cols);
        kernels::SoftmaxBackwardRef(y_ref.data(), dy.data(), dx_ref.data(),
                                    rows, cols);
        ExpectNear(dx.data(), dx_ref.data(), n, 1e-6, 1e-5,
                   "SoftmaxBackward " + where);

        kernels::LogSoftmaxForward(x.data(), y.data(), rows, cols);
        kernels::LogSoftmaxForwardRef(x.data(), y_ref.data(), rows, cols);
        ExpectNear(y.data(), y_ref.data(), n, 1e-5, 1e-6,
                   "LogSoftmaxForward " + where);

        dx = dx0;
        dx_ref = dx0;
        kernels::LogSoftmaxBackward(y_ref.data(), dy.data(), dx.data(), rows,
                                    cols);
        kernels::LogSoftmaxBackwardRef(y_ref.data(), dy.data(), dx_ref.data(),
                                       rows, cols);
        ExpectNear(dx.data(), dx_ref.data(), n, 1e-5, 1e-5,
                   "LogSoftmaxBackward " + where);
      });
}

// Enough rows that ParallelFor splits them over threads.
ROTOR_PER_TARGET_TEST(SoftmaxKernel, ManyRows) {
  std::mt19937 rng(12);
  const size_t rows = 97, cols = 1001;
  const std::vector<float> x = RandomVector(rows * cols, rng, -8.0f, 8.0f);
  std::vector<float> y(rows * cols), y_ref(rows * cols);
  kernels::SoftmaxForward(x.data(), y.data(), rows, cols);
  kernels::SoftmaxForwardRef(x.data(), y_ref.data(), rows, cols);
  ExpectNear(y.data(), y_ref.data(), rows * cols, 1e-7, 2e-5, "Softmax");
}

// The forward may run in place (y == x).
ROTOR_PER_TARGET_TEST(SoftmaxKernel, InPlace) {
  std::mt19937 rng(13);
  std::vector<float> x = RandomVector(3 * 37, rng, -4.0f, 4.0f);
  std::vector<float> expected(x.size());
  kernels::SoftmaxForwardRef(x.data(), expected.data(), 3, 37);
  kernels::SoftmaxForward(x.data(), x.data(), 3, 37);
  ExpectNear(x.data(), expected.data(), x.size(), 1e-7, 2e-5, "in place");
}

// Expected values: NaN means "must be NaN", infinities must match exactly,
// anything else within a relative 1e-6.
void ExpectSpecialNear(const std::vector<float>& actual,
                       const std::vector<float>& expected,
                       const std::string& what) {
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << what << " element " << i;
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(actual[i], expected[i]) << what << " element " << i;
    } else {
      EXPECT_NEAR(actual[i], expected[i],
                  1e-6 * std::max(1.0f, std::abs(expected[i])))
          << what << " element " << i;
    }
  }
}

ROTOR_PER_TARGET_TEST(SoftmaxKernel, ExtremeValues) {
  const float kMax = std::numeric_limits<float>::max();
  const float kLn2 = std::log(2.0f);
  struct Case {
    std::vector<float> x;
    std::vector<float> softmax;
    std::vector<float> log_softmax;  // empty: not checked
  };
  const std::vector<Case> cases = {
      {{1000.0f, 0.0f}, {1.0f, 0.0f}, {0.0f, -1000.0f}},
      {{0.0f, -1000.0f}, {1.0f, 0.0f}, {0.0f, -1000.0f}},
      {{-10.0f, -10.0f}, {0.5f, 0.5f}, {-kLn2, -kLn2}},
      // Log softmax x - logsumexp is only as exact as the float spacing at
      // |x| (6e-5 at 1000, 2e31 at FLT_MAX): not checked below.
      {{-1000.0f, -1000.0f}, {0.5f, 0.5f}, {}},
      {{kMax, 0.0f, kMax}, {0.5f, 0.0f, 0.5f}, {}},
      {{-kMax, -kMax}, {0.5f, 0.5f}, {}},
      {{-kInf, 2.0f, -kInf, 2.0f},
       {0.0f, 0.5f, 0.0f, 0.5f},
       {-kInf, -kLn2, -kInf, -kLn2}},
      {{42.0f}, {1.0f}, {0.0f}},
      {{-kInf}, {NAN}, {NAN}},  // 0/0, as in PyTorch
      // A NaN anywhere makes the whole row NaN: it must not vanish.
      {{1.0f, NAN, 2.0f}, {NAN, NAN, NAN}, {NAN, NAN, NAN}},
  };
  for (const Case& c : cases) {
    const size_t n = c.x.size();
    const std::string what =
        "x[0]=" + std::to_string(c.x[0]) + " n=" + std::to_string(n);
    std::vector<float> y(n);
    kernels::SoftmaxForward(c.x.data(), y.data(), 1, n);
    ExpectSpecialNear(y, c.softmax, "softmax " + what);
    if (c.log_softmax.empty()) continue;
    kernels::LogSoftmaxForward(c.x.data(), y.data(), 1, n);
    ExpectSpecialNear(y, c.log_softmax, "log softmax " + what);
  }
}

TEST(SoftmaxReference, BackwardMatchesComplexStep) {
  using C = std::complex<double>;
  std::mt19937 rng(14);
  const size_t rows = 3, cols = 7;
  const std::vector<double> x = RandomDoubles(rows * cols, rng, -5, 5);
  const std::vector<double> dy = RandomDoubles(rows * cols, rng, -1, 1);
  std::vector<double> y(rows * cols), dx(rows * cols, 0.0);

  kernels::SoftmaxForwardRef(x.data(), y.data(), rows, cols);
  kernels::SoftmaxBackwardRef(y.data(), dy.data(), dx.data(), rows, cols);
  const std::vector<double> expected = test::ComplexStepGradientOfWeightedSum(
      [&](const std::vector<C>& z) {
        std::vector<C> out(z.size());
        kernels::SoftmaxForwardRef(z.data(), out.data(), rows, cols);
        return out;
      },
      x, dy);
  ExpectNear(dx.data(), expected.data(), dx.size(), 1e-14, 1e-12, "softmax");

  std::fill(dx.begin(), dx.end(), 0.0);
  kernels::LogSoftmaxForwardRef(x.data(), y.data(), rows, cols);
  kernels::LogSoftmaxBackwardRef(y.data(), dy.data(), dx.data(), rows, cols);
  const std::vector<double> expected_log =
      test::ComplexStepGradientOfWeightedSum(
          [&](const std::vector<C>& z) {
            std::vector<C> out(z.size());
            kernels::LogSoftmaxForwardRef(z.data(), out.data(), rows, cols);
            return out;
          },
          x, dy);
  ExpectNear(dx.data(), expected_log.data(), dx.size(), 1e-14, 1e-12,
             "log softmax");
}

}  // namespace
}  // namespace rotor

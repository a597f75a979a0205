// RMSNorm kernels and the fused residual add + RMSNorm: the Highway versions
// against the scalar references on every compiled target, the fused ones
// bitwise against the unfused steps, the determinism of the cross-row
// dweight sum, and the reference backwards against complex-step derivatives
// in double.
#include "core/kernels/rmsnorm.h"

#include <complex>
#include <random>
#include <string>
#include <vector>

#include "core/kernels/rmsnorm_scalar.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::ExpectNear;
using test::ForEachShapeAndMisalignment;
using test::MisalignedFloats;
using test::RandomDoubles;
using test::RandomVector;

ROTOR_PER_TARGET_SUITE(RmsNormKernel);

ROTOR_PER_TARGET_TEST(RmsNormKernel, MatchesReference) {
  EXPECT_STREQ(kernels::RmsNormTarget(), TargetName());
  std::mt19937 rng(21);
  // 70 rows span three blocks of the dweight reduction.
  ForEachShapeAndMisalignment(
      {1, 3, 70}, "cols",
      [&](size_t rows, size_t cols, size_t m, const std::string& where) {
        const size_t n = rows * cols;
        const MisalignedFloats x(n, m, rng, -3.0f, 3.0f);
        const MisalignedFloats w(cols, m, rng, 0.5f, 1.5f);
        const MisalignedFloats dy(n, m, rng);
        const MisalignedFloats dx0(n, m, rng);
        const MisalignedFloats dw0(cols, m, rng);
        MisalignedFloats y(n, m), y_ref(n, m);
        MisalignedFloats rstd(rows, m), rstd_ref(rows, m);

        kernels::RmsNormForward(x.data(), w.data(), y.data(), rstd.data(), rows,
                                cols, 1e-5f);
        kernels::RmsNormForwardRef(x.data(), w.data(), y_ref.data(),
                                   rstd_ref.data(), rows, cols, 1e-5f);
        ExpectNear(rstd.data(), rstd_ref.data(), rows, 0, 1e-5,
                   "rstd " + where);
        ExpectNear(y.data(), y_ref.data(), n, 1e-6, 1e-5, "y " + where);

        MisalignedFloats dx = dx0, dx_ref = dx0, dw = dw0, dw_ref = dw0;
        kernels::RmsNormBackward(x.data(), w.data(), rstd_ref.data(), dy.data(),
                                 dx.data(), dw.data(), rows, cols);
        kernels::RmsNormBackwardRef(x.data(), w.data(), rstd_ref.data(),
                                    dy.data(), dx_ref.data(), dw_ref.data(),
                                    rows, cols);
        ExpectNear(dx.data(), dx_ref.data(), n, 1e-5, 1e-5, "dx " + where);
        ExpectNear(dw.data(), dw_ref.data(), cols, 1e-4, 1e-5,
                   "dweight " + where);
      });
}

// dweight sums over rows; its fixed block order must make it bitwise
// independent of the thread count.
ROTOR_PER_TARGET_TEST(RmsNormKernel, WeightGradientIndependentOfThreads) {
  std::mt19937 rng(22);
  const size_t rows = 1000, cols = 67;
  const std::vector<float> x = RandomVector(rows * cols, rng, -3.0f, 3.0f);
  const std::vector<float> w = RandomVector(cols, rng, 0.5f, 1.5f);
  const std::vector<float> dy = RandomVector(rows * cols, rng);
  std::vector<float> y(rows * cols), rstd(rows);
  kernels::RmsNormForward(x.data(), w.data(), y.data(), rstd.data(), rows, cols,
                          1e-5f);
  auto dweight = [&] {
    std::vector<float> dx(rows * cols), dw(cols);
    kernels::RmsNormBackward(x.data(), w.data(), rstd.data(), dy.data(),
                             dx.data(), dw.data(), rows, cols);
    return dw;
  };
  const std::vector<float> serial = test::RunAtThreads(1, dweight);
  EXPECT_EQ(serial, test::RunAtThreads(2, dweight));
}

// A zero row gives rstd = 1/sqrt(eps) and y = 0; a row of length 1 gives
// y = x / sqrt(x^2 + eps) * w.
ROTOR_PER_TARGET_TEST(RmsNormKernel, SpecialRows) {
  const std::vector<float> zeros(5, 0.0f), w(5, 2.0f);
  std::vector<float> y(5, 1.0f);
  float rstd = 0.0f;
  kernels::RmsNormForward(zeros.data(), w.data(), y.data(), &rstd, 1, 5, 1e-4f);
  EXPECT_FLOAT_EQ(rstd, 100.0f);
  for (float value : y) EXPECT_EQ(value, 0.0f);

  const float x = -3.0f;
  kernels::RmsNormForward(&x, w.data(), y.data(), &rstd, 1, 1, 0.0f);
  EXPECT_FLOAT_EQ(y[0], -2.0f);
}

ROTOR_PER_TARGET_SUITE(AddRmsNormKernel);

ROTOR_PER_TARGET_TEST(AddRmsNormKernel, MatchesReference) {
  EXPECT_STREQ(kernels::RmsNormTarget(), TargetName());
  std::mt19937 rng(24);
  ForEachShapeAndMisalignment(
      {1, 3, 70}, "cols",
      [&](size_t rows, size_t cols, size_t m, const std::string& where) {
        const size_t n = rows * cols;
        const MisalignedFloats x(n, m, rng, -3.0f, 3.0f);
        const MisalignedFloats res(n, m, rng, -3.0f, 3.0f);
        const MisalignedFloats w(cols, m, rng, 0.5f, 1.5f);
        const MisalignedFloats dy(n, m, rng), dsum(n, m, rng);
        MisalignedFloats h(n, m, rng), h_ref(n, m), y(n, m, rng), y_ref(n, m);
        MisalignedFloats rstd(rows, m), rstd_ref(rows, m);
        kernels::AddRmsNormForward(x.data(), res.data(), w.data(), h.data(),
                                   y.data(), rstd.data(), rows, cols, 1e-5f);
        kernels::AddRmsNormForwardRef(x.data(), res.data(), w.data(),
                                      h_ref.data(), y_ref.data(),
                                      rstd_ref.data(), rows, cols, 1e-5f);
        ExpectNear(h.data(), h_ref.data(), n, 0, 0, "sum " + where);
        ExpectNear(rstd.data(), rstd_ref.data(), rows, 0, 1e-5,
                   "rstd " + where);
        ExpectNear(y.data(), y_ref.data(), n, 1e-6, 1e-5, "y " + where);

        MisalignedFloats dh(n, m, rng), dh_ref(n, m), dw(cols, m, rng),
            dw_ref(cols, m);
        kernels::AddRmsNormBackward(h_ref.data(), w.data(), rstd_ref.data(),
                                    dy.data(), dsum.data(), dh.data(),
                                    dw.data(), rows, cols);
        kernels::AddRmsNormBackwardRef(h_ref.data(), w.data(), rstd_ref.data(),
                                       dy.data(), dsum.data(), dh_ref.data(),
                                       dw_ref.data(), rows, cols);
        ExpectNear(dh.data(), dh_ref.data(), n, 1e-5, 1e-5, "dh " + where);
        ExpectNear(dw.data(), dw_ref.data(), cols, 1e-4, 1e-5,
                   "dweight " + where);
      });
}

// The fused kernels give the bits of the unfused steps: the add, then
// RmsNormForward; RmsNormBackward, then adding dsum.
ROTOR_PER_TARGET_TEST(AddRmsNormKernel, BitwiseAddThenNorm) {
  std::mt19937 rng(25);
  for (const size_t cols : {1, 7, 64, 67, 1000}) {
    const size_t rows = 37, n = rows * cols;
    const std::vector<float> x = RandomVector(n, rng, -3.0f, 3.0f);
    const std::vector<float> res = RandomVector(n, rng, -3.0f, 3.0f);
    const std::vector<float> w = RandomVector(cols, rng, 0.5f, 1.5f);
    const std::vector<float> dy = RandomVector(n, rng);
    const std::vector<float> dsum = RandomVector(n, rng);
    std::vector<float> h(n), y(n), rstd(rows);
    kernels::AddRmsNormForward(x.data(), res.data(), w.data(), h.data(),
                               y.data(), rstd.data(), rows, cols, 1e-5f);
    std::vector<float> h2(n), y2(n), rstd2(rows);
    for (size_t i = 0; i < n; ++i) h2[i] = x[i] + res[i];
    kernels::RmsNormForward(h2.data(), w.data(), y2.data(), rstd2.data(), rows,
                            cols, 1e-5f);
    EXPECT_EQ(h, h2) << cols;
    EXPECT_EQ(y, y2) << cols;
    EXPECT_EQ(rstd, rstd2) << cols;

    std::vector<float> dh(n), dw(cols), dh2(n), dw2(cols);
    kernels::AddRmsNormBackward(h.data(), w.data(), rstd.data(), dy.data(),
                                dsum.data(), dh.data(), dw.data(), rows, cols);
    kernels::RmsNormBackward(h.data(), w.data(), rstd.data(), dy.data(),
                             dh2.data(), dw2.data(), rows, cols);
    for (size_t i = 0; i < n; ++i) dh2[i] = dsum[i] + dh2[i];
    EXPECT_EQ(dh, dh2) << cols;
    EXPECT_EQ(dw, dw2) << cols;
  }
}

TEST(RmsNormReference, BackwardMatchesComplexStep) {
  using C = std::complex<double>;
  std::mt19937 rng(23);
  const size_t rows = 4, cols = 6;
  const double eps = 1e-3;
  const std::vector<double> x = RandomDoubles(rows * cols, rng, -2, 2);
  const std::vector<double> w = RandomDoubles(cols, rng, 0.5, 1.5);
  const std::vector<double> dy = RandomDoubles(rows * cols, rng, -1, 1);

  std::vector<double> y(rows * cols), rstd(rows);
  std::vector<double> dx(rows * cols, 0.0), dw(cols, 0.0);
  kernels::RmsNormForwardRef(x.data(), w.data(), y.data(), rstd.data(), rows,
                             cols, eps);
  kernels::RmsNormBackwardRef(x.data(), w.data(), rstd.data(), dy.data(),
                              dx.data(), dw.data(), rows, cols);

  // One parameter vector: x followed by w; L = sum dy * y.
  std::vector<double> params = x;
  params.insert(params.end(), w.begin(), w.end());
  const std::vector<double> expected = test::ComplexStepGradientOfWeightedSum(
      [&](const std::vector<C>& z) {
        std::vector<C> out(rows * cols), r(rows);
        kernels::RmsNormForwardRef(z.data(), z.data() + rows * cols, out.data(),
                                   r.data(), rows, cols, eps);
        return out;
      },
      params, dy);
  ExpectNear(dx.data(), expected.data(), dx.size(), 1e-14, 1e-12, "dx");
  ExpectNear(dw.data(), expected.data() + rows * cols, cols, 1e-14, 1e-12,
             "dweight");
}

// The fused reference in double: dL/dx = dL/dresidual (L = sum dsum * sum
// + sum dy * y) against complex-step derivatives.
TEST(AddRmsNormReference, BackwardMatchesComplexStep) {
  using C = std::complex<double>;
  std::mt19937 rng(26);
  const size_t rows = 3, cols = 5, n = rows * cols;
  const double eps = 1e-3;
  const std::vector<double> x = RandomDoubles(n, rng, -2, 2);
  const std::vector<double> res = RandomDoubles(n, rng, -2, 2);
  const std::vector<double> w = RandomDoubles(cols, rng, 0.5, 1.5);
  const std::vector<double> dy = RandomDoubles(n, rng, -1, 1);
  const std::vector<double> dsum = RandomDoubles(n, rng, -1, 1);
  std::vector<double> h(n), y(n), rstd(rows), dh(n), dw(cols);
  kernels::AddRmsNormForwardRef(x.data(), res.data(), w.data(), h.data(),
                                y.data(), rstd.data(), rows, cols, eps);
  kernels::AddRmsNormBackwardRef(h.data(), w.data(), rstd.data(), dy.data(),
                                 dsum.data(), dh.data(), dw.data(), rows, cols);

  // Parameters x, residual, w; outputs sum then y, weighted by dsum, dy.
  std::vector<double> params = x;
  params.insert(params.end(), res.begin(), res.end());
  params.insert(params.end(), w.begin(), w.end());
  std::vector<double> weights = dsum;
  weights.insert(weights.end(), dy.begin(), dy.end());
  const std::vector<double> expected = test::ComplexStepGradientOfWeightedSum(
      [&](const std::vector<C>& z) {
        std::vector<C> out(2 * n), r(rows);
        kernels::AddRmsNormForwardRef(z.data(), z.data() + n, z.data() + 2 * n,
                                      out.data(), out.data() + n, r.data(),
                                      rows, cols, eps);
        return out;
      },
      params, weights);
  ExpectNear(dh.data(), expected.data(), n, 1e-14, 1e-12, "dx");
  ExpectNear(dh.data(), expected.data() + n, n, 1e-14, 1e-12, "dresidual");
  ExpectNear(dw.data(), expected.data() + 2 * n, cols, 1e-14, 1e-12, "dweight");
}

}  // namespace
}  // namespace rotor

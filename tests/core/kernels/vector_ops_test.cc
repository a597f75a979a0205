// Vector basics (axpy, scale, add, sub, mul, div): the Highway kernels against
// their scalar references on every compiled target, every size 0..33 and some
// larger odd ones (one past several ParallelFor chunks), with misaligned
// pointers, and in place. ExpForBf16 against its twin and against exp in
// double, over its range and past both ends.
#include "core/kernels/vector_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "core/kernels/vector_ops_scalar.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::ExpectNear;
using test::ForEachSizeAndMisalignment;
using test::MisalignedFloats;
using test::RandomVector;

// The elementwise binary kernels with their scalar references.
struct BinaryOp {
  const char* name;
  void (*op)(const float*, const float*, float*, size_t);
  void (*ref)(const float*, const float*, float*, size_t);
};
const BinaryOp kBinaryOps[] = {{"Add", kernels::Add, kernels::AddRef<float>},
                               {"Sub", kernels::Sub, kernels::SubRef<float>},
                               {"Mul", kernels::Mul, kernels::MulRef<float>},
                               {"Div", kernels::Div, kernels::DivRef<float>}};

ROTOR_PER_TARGET_SUITE(VectorOpsKernel);

ROTOR_PER_TARGET_TEST(VectorOpsKernel, MatchesReference) {
  // Prove that dispatch really runs the target under test.
  EXPECT_STREQ(kernels::VectorOpsTarget(), TargetName());
  std::mt19937 rng(7);
  ForEachSizeAndMisalignment(
      test::KernelTestSizesAcrossTasks(), "n",
      [&](size_t n, size_t misalign, const std::string& where) {
        const MisalignedFloats a(n, misalign, rng), b(n, misalign, rng);
        MisalignedFloats out(n, misalign), expected(n, misalign);
        const float* pa = a.data();
        const float* pb = b.data();
        float* po = out.data();
        float* pe = expected.data();

        for (const BinaryOp& binary : kBinaryOps) {
          binary.op(pa, pb, po, n);
          binary.ref(pa, pb, pe, n);
          ExpectNear(po, pe, n, 0, 0, std::string(binary.name) + " " + where);
        }

        std::copy(pb, pb + n, po);
        std::copy(pb, pb + n, pe);
        kernels::Axpy(0.75f, pa, po, n);
        kernels::AxpyRef(0.75f, pa, pe, n);
        // MulAdd may be fused (one rounding) where the reference rounds
        // twice.
        ExpectNear(po, pe, n, 1e-6, 1e-6, "Axpy " + where);

        kernels::Scale(-1.5f, po, n);
        kernels::ScaleRef(-1.5f, pe, n);
        ExpectNear(po, pe, n, 1e-6, 1e-6, "Scale " + where);
      });
}

// In-place use (the output is the same array as an input) is part of the
// contract (vector_ops.h), for every op; 40001 floats span several
// ParallelFor chunks.
ROTOR_PER_TARGET_TEST(VectorOpsKernel, InPlace) {
  EXPECT_STREQ(kernels::VectorOpsTarget(), TargetName());
  std::mt19937 rng(8);
  for (size_t n : {size_t{37}, size_t{40001}}) {
    const std::string where = " n=" + std::to_string(n);
    const std::vector<float> a0 = RandomVector(n, rng);
    const std::vector<float> b = RandomVector(n, rng, 0.5f, 2.0f);
    std::vector<float> expected(n);
    for (const BinaryOp& binary : kBinaryOps) {
      std::vector<float> a = a0;  // out = a (first operand)
      binary.ref(a0.data(), b.data(), expected.data(), n);
      binary.op(a.data(), b.data(), a.data(), n);
      ExpectNear(a.data(), expected.data(), n, 0, 0,
                 std::string(binary.name) + " out == a" + where);
      std::vector<float> b_copy = b;  // out = b (second operand)
      binary.op(a0.data(), b_copy.data(), b_copy.data(), n);
      ExpectNear(b_copy.data(), expected.data(), n, 0, 0,
                 std::string(binary.name) + " out == b" + where);
    }
    // y += alpha * y, with x and y the same array.
    std::vector<float> y = a0;
    std::vector<float> y_ref = a0;
    kernels::Axpy(0.75f, y.data(), y.data(), n);
    kernels::AxpyRef(0.75f, y_ref.data(), y_ref.data(), n);
    ExpectNear(y.data(), y_ref.data(), n, 1e-6, 1e-6, "Axpy x == y" + where);
  }
}

// ExpForBf16 equals its twin to the last bit where both fuse their
// multiply-adds (within 2^-22 relative where a target rounds twice), stays
// within 2^-17 of exp over [-86.5, 0] (and 2^-16 up to 1), is 0 for -inf and
// below -86.7, and has no tail of its own: every size and misalignment.
ROTOR_PER_TARGET_TEST(VectorOpsKernel, ExpForBf16) {
  EXPECT_STREQ(kernels::VectorOpsTarget(), TargetName());
  std::vector<float> x;
  for (double v = -86.5; v <= 1.0; v += 1.0 / 4096) {
    x.push_back(static_cast<float>(v));
  }
  std::vector<float> got(x.size());
  kernels::ExpForBf16(x.data(), got.data(), x.size());
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double exact = std::exp(static_cast<double>(x[i]));
    const double error = std::fabs(got[i] / exact - 1);
    ASSERT_LE(error, x[i] <= 0 ? std::ldexp(1.0, -17) : std::ldexp(1.0, -16))
        << "x = " << x[i];
    worst = std::max(worst, error);
    const float twin = kernels::ExpForBf16Ref(x[i]);
    ASSERT_LE(std::fabs(got[i] - twin), std::ldexp(twin, -22)) << x[i];
  }
  EXPECT_GT(worst, std::ldexp(1.0, -22));  // not hn::Exp's accuracy
  const float edges[] = {-std::numeric_limits<float>::infinity(), -1000.0f,
                         -87.5f, 88.0f};
  float edge_out[4];
  kernels::ExpForBf16(edges, edge_out, 4);
  EXPECT_EQ(edge_out[0], 0.0f);
  EXPECT_EQ(edge_out[1], 0.0f);
  EXPECT_EQ(edge_out[2], 0.0f);
  EXPECT_NEAR(edge_out[3] / std::exp(88.0), 1.0, std::ldexp(1.0, -16));
  std::mt19937 rng(9);
  ForEachSizeAndMisalignment(
      test::KernelTestSizesAcrossTasks(), "n",
      [&](size_t n, size_t misalign, const std::string& where) {
        const MisalignedFloats in(n, misalign, rng, -30.0f, 0.0f);
        MisalignedFloats out(n, misalign);
        kernels::ExpForBf16(in.data(), out.data(), n);
        for (size_t i = 0; i < n; ++i) {
          const float twin = kernels::ExpForBf16Ref(in.data()[i]);
          ASSERT_LE(std::fabs(out.data()[i] - twin), std::ldexp(twin, -22))
              << where << " at " << i;
        }
      });
}

}  // namespace
}  // namespace rotor

// Vector basics (axpy, scale, add, sub, mul, div): the Highway kernels against
// their scalar references on every compiled target, every size 0..33 and some
// larger odd ones, with misaligned pointers.
#include "core/kernels/vector_ops.h"

#include <random>
#include <string>

#include "core/kernels/vector_ops_scalar.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::ExpectNear;
using test::KernelTestMisalignments;
using test::KernelTestSizes;
using test::RandomVector;

ROTOR_PER_TARGET_SUITE(VectorOpsKernel);

ROTOR_PER_TARGET_TEST(VectorOpsKernel, MatchesReference) {
  // Prove that dispatch really runs the target under test.
  EXPECT_STREQ(kernels::VectorOpsTarget(), TargetName());
  std::mt19937 rng(7);
  for (size_t n : KernelTestSizes()) {
    for (size_t misalign : KernelTestMisalignments()) {
      const std::string where =
          "n=" + std::to_string(n) + " misalign=" + std::to_string(misalign);
      std::vector<float> a = RandomVector(n + misalign, rng);
      std::vector<float> b = RandomVector(n + misalign, rng);
      std::vector<float> out(n + misalign);
      std::vector<float> expected(n + misalign);
      float* pa = a.data() + misalign;
      float* pb = b.data() + misalign;
      float* po = out.data() + misalign;
      float* pe = expected.data() + misalign;

      kernels::Add(pa, pb, po, n);
      kernels::AddRef(pa, pb, pe, n);
      ExpectNear(po, pe, n, 0, 0, "Add " + where);

      kernels::Sub(pa, pb, po, n);
      kernels::SubRef(pa, pb, pe, n);
      ExpectNear(po, pe, n, 0, 0, "Sub " + where);

      kernels::Mul(pa, pb, po, n);
      kernels::MulRef(pa, pb, pe, n);
      ExpectNear(po, pe, n, 0, 0, "Mul " + where);

      kernels::Div(pa, pb, po, n);
      kernels::DivRef(pa, pb, pe, n);
      ExpectNear(po, pe, n, 0, 0, "Div " + where);

      std::copy(pb, pb + n, po);
      std::copy(pb, pb + n, pe);
      kernels::Axpy(0.75f, pa, po, n);
      kernels::AxpyRef(0.75f, pa, pe, n);
      // MulAdd may be fused (one rounding) where the reference rounds twice.
      ExpectNear(po, pe, n, 1e-6, 1e-6, "Axpy " + where);

      kernels::Scale(-1.5f, po, n);
      kernels::ScaleRef(-1.5f, pe, n);
      ExpectNear(po, pe, n, 1e-6, 1e-6, "Scale " + where);
    }
  }
}

// In-place use (out aliases an input) is part of the contract.
ROTOR_PER_TARGET_TEST(VectorOpsKernel, InPlace) {
  std::mt19937 rng(8);
  std::vector<float> a = RandomVector(37, rng);
  std::vector<float> b = RandomVector(37, rng);
  std::vector<float> expected(37);
  kernels::AddRef(a.data(), b.data(), expected.data(), 37);
  kernels::Add(a.data(), b.data(), a.data(), 37);
  ExpectNear(a.data(), expected.data(), 37, 0, 0, "Add in place");
}

}  // namespace
}  // namespace rotor

// Vector basics (axpy, scale, add, sub, mul, div): the Highway kernels against
// their scalar references on every compiled target, every size 0..33 and some
// larger odd ones (one past several ParallelFor chunks), with misaligned
// pointers, and in place.
#include "core/kernels/vector_ops.h"

#include <algorithm>
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

}  // namespace
}  // namespace rotor

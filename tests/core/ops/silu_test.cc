// Silu and SwiGlu ops: values, gradients (GradCheck), non-contiguous inputs
// and the shape error.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;

TEST(SiluOp, Values) {
  const Tensor x = Tensor::FromVector({3}, {0.0f, 2.0f, -1.0f});
  const std::vector<float> y = Silu(x).ToVector();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 2 / (1 + std::exp(-2.0f)), 1e-6);
  EXPECT_NEAR(y[2], -1 / (1 + std::exp(1.0f)), 1e-6);
  const Tensor up = Tensor::FromVector({3}, {5.0f, 0.5f, -2.0f});
  const std::vector<float> out = SwiGlu(x, up).ToVector();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(out[i], y[i] * up.ToVector()[i], 1e-6);
  }
}

TEST(SiluOp, GradCheck) {
  std::mt19937 rng(81);
  GradCheck([](const std::vector<Tensor>& in) { return Silu(in[0]); },
            {RandomTensor({3, 5}, rng, -4, 4)});
  GradCheck(
      [](const std::vector<Tensor>& in) { return SwiGlu(in[0], in[1]); },
      {RandomTensor({2, 7}, rng, -4, 4), RandomTensor({2, 7}, rng, -2, 2)});
}

TEST(SiluOp, NonContiguousInputs) {
  std::mt19937 rng(82);
  auto [gate_view, gate_copy] = test::TransposedViewAndCopy(5, 3, rng, -3, 3);
  ASSERT_FALSE(gate_view.is_contiguous());  // [3, 5], strides [1, 3]
  Tensor up = RandomTensor({3, 5}, rng, -1, 1);
  const Tensor dy = RandomTensor({3, 5}, rng, -1, 1, false);

  EXPECT_EQ(Silu(gate_view).ToVector(), Silu(gate_copy).ToVector());
  SwiGlu(gate_view, up).Backward(dy);
  const std::vector<float> dup_from_view = up.grad().ToVector();
  up.ZeroGrad();
  SwiGlu(gate_copy, up).Backward(dy);
  EXPECT_EQ(gate_view.grad().ToVector(), gate_copy.grad().ToVector());
  EXPECT_EQ(dup_from_view, up.grad().ToVector());
}

// SwiGlu on the halves of one [..., 2I] tensor: the bits of SwiGlu on the
// halves as two tensors, forward and gradient, and a gradient check.
TEST(SiluOp, SwiGluOnHalvesEqualsSwiGluOnTwoTensors) {
  std::mt19937 rng(83);
  const Tensor gate_up = RandomTensor({2, 3, 2 * 37}, rng, -4, 4);
  Tensor gate = Tensor::Empty({2, 3, 37});
  gate.CopyFrom(Narrow(gate_up, 2, 0, 37).Detach());
  Tensor up = Tensor::Empty({2, 3, 37});
  up.CopyFrom(Narrow(gate_up, 2, 37, 37).Detach());
  gate.set_requires_grad(true);
  up.set_requires_grad(true);
  const Tensor dy = RandomTensor({2, 3, 37}, rng, -1, 1, false);
  const Tensor fused = SwiGlu(gate_up);
  const Tensor separate = SwiGlu(gate, up);
  EXPECT_EQ(fused.ToVector(), separate.ToVector());
  fused.Backward(dy);
  separate.Backward(dy);
  EXPECT_EQ(Contiguous(Narrow(gate_up.grad(), 2, 0, 37)).ToVector(),
            gate.grad().ToVector());
  EXPECT_EQ(Contiguous(Narrow(gate_up.grad(), 2, 37, 37)).ToVector(),
            up.grad().ToVector());
  GradCheck([](const std::vector<Tensor>& in) { return SwiGlu(in[0]); },
            {RandomTensor({2, 3, 10}, rng, -4, 4)});
}

TEST(SiluOp, SwiGluShapeError) {
  ROTOR_EXPECT_ERROR(SwiGlu(Tensor::Zeros({2, 3}), Tensor::Zeros({3, 2})),
                     "SwiGlu", "[2, 3]", "[3, 2]");
  ROTOR_EXPECT_ERROR(SwiGlu(Tensor::Zeros({2, 3})), "SwiGlu", "[2, 3]",
                     "even extent");
}

}  // namespace
}  // namespace rotor

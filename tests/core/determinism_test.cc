// Determinism: a forward and backward pass through the row-parallel ops and
// sgemm, run twice at 2 threads, gives bitwise identical values and
// gradients; the cross-row sums match even between 1 and 2 threads; every
// Highway kernel family (softmax, log-softmax, RMSNorm, SiLU, SwiGLU, cross
// entropy, AdamW, vector basics, float conversions) gives the same bits at 1
// and 2 threads.
#include <random>

#include "core/kernels/adamw.h"
#include "core/kernels/convert.h"
#include "core/kernels/vector_ops.h"
#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

struct PassResult {
  std::vector<float> output, grad_x, grad_w, grad_gain;
};

PassResult ForwardBackward() {
  std::mt19937 rng(81);
  Tensor x = test::RandomTensor({4, 64, 96}, rng);
  Tensor w = test::RandomTensor({128, 96}, rng);
  Tensor gain = test::RandomTensor({128}, rng, 0.5f, 1.5f);
  Tensor shift = test::RandomTensor({128}, rng);
  const Tensor h = Gelu(LayerNorm(Linear(x, w), gain, shift));
  const Tensor y = Dropout(Mul(h, Narrow(h, 1, 0, 1)), 0.1f, 5);
  const Tensor loss = Mean(Mul(y, y));
  loss.Backward();
  return {h.ToVector(), x.grad().ToVector(), w.grad().ToVector(),
          gain.grad().ToVector()};
}

TEST(Determinism, SameResultsAtTwoThreads) {
  const PassResult first = test::RunAtThreads(2, ForwardBackward);
  const PassResult second = test::RunAtThreads(2, ForwardBackward);
  EXPECT_EQ(first.output, second.output);
  EXPECT_EQ(first.grad_x, second.grad_x);
  EXPECT_EQ(first.grad_w, second.grad_w);
  EXPECT_EQ(first.grad_gain, second.grad_gain);
}

// Cross-row sums (column sums, LayerNorm's weight gradient) group rows in
// fixed chunks, so they do not even depend on the thread count.
TEST(Determinism, CrossRowSumsIndependentOfThreadCount) {
  auto run = [] {
    std::mt19937 rng(82);
    Tensor x = test::RandomTensor({1000, 300}, rng);
    Tensor gain = test::RandomTensor({300}, rng);
    Tensor shift = test::RandomTensor({300}, rng);
    const Tensor column_sums = Sum(x, {0});
    Sum(Mul(LayerNorm(x, gain, shift), x)).Backward();
    return std::vector<std::vector<float>>{column_sums.ToVector(),
                                           gain.grad().ToVector()};
  };
  const auto serial = test::RunAtThreads(1, run);
  EXPECT_EQ(serial, test::RunAtThreads(2, run));
}

// One forward and backward pass through the ops that run on the Highway
// kernel families, plus AdamW, the vector basics and the float conversions
// on raw arrays (their 16-bit results widened back to floats). Sizes
// give every kernel several ParallelFor tasks at 2 threads (each task is at
// least 16384 floats), so the split differs from the 1-thread run.
std::vector<std::vector<float>> HighwayKernelsPass() {
  std::mt19937 rng(83);
  Tensor x = test::RandomTensor({256, 300}, rng);
  Tensor up = test::RandomTensor({256, 300}, rng);
  Tensor gain = test::RandomTensor({300}, rng, 0.5f, 1.5f);
  std::vector<int32_t> targets(256);
  for (size_t r = 0; r < targets.size(); ++r) {
    targets[r] = r % 7 == 0 ? -100 : static_cast<int32_t>((r * 37) % 300);
  }
  const Tensor h = SwiGlu(Silu(RmsNorm(x, gain)), up);
  const Tensor loss =
      Add(Add(CrossEntropy(h, targets), Mean(Mul(Softmax(h), h))),
          Mean(LogSoftmax(h)));
  loss.Backward();

  const size_t n = 100003;
  std::vector<float> param = test::RandomVector(n, rng);
  std::vector<float> grad = test::RandomVector(n, rng);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  kernels::AdamWHyperparams hyper;
  hyper.grad_scale = 0.7f;
  const kernels::AdamWSegment segment = {param.data(), grad.data(), m.data(),
                                         v.data(),     n,           true};
  for (int64_t step = 1; step <= 3; ++step) {
    kernels::AdamWUpdate(&segment, 1, hyper, step);
  }
  const kernels::FloatSpan spans[2] = {{grad.data(), n}, {param.data(), 7}};
  // The double as two floats: its leading bits and what they leave.
  const double squares = kernels::SumOfSquaresOfSpans(spans, 2);
  const float squares_hi = static_cast<float>(squares);
  const std::vector<float> squares_bits = {
      squares_hi, static_cast<float>(squares - squares_hi)};
  std::vector<float> sum(n);
  kernels::Add(param.data(), grad.data(), sum.data(), n);
  kernels::Axpy(0.25f, grad.data(), sum.data(), n);
  kernels::Scale(-3.0f, sum.data(), n);
  std::vector<uint16_t> halves(n);
  kernels::F32ToBF16(sum.data(), halves.data(), n);
  std::vector<float> from_bf16(n), from_f16(n);
  kernels::BF16ToF32(halves.data(), from_bf16.data(), n);
  kernels::F16ToF32(halves.data(), from_f16.data(), n);
  return {h.ToVector(),
          {loss.item()},
          x.grad().ToVector(),
          up.grad().ToVector(),
          gain.grad().ToVector(),
          param,
          m,
          v,
          squares_bits,
          sum,
          from_bf16,
          from_f16};
}

// On every compiled target: AVX2 and AVX3 have FMA, where an implicit
// contraction in one copy of a kernel body once made AdamW depend on the
// thread count (see -ffp-contract=off in CMakeLists.txt).
ROTOR_PER_TARGET_SUITE(DeterminismKernels);

ROTOR_PER_TARGET_TEST(DeterminismKernels, SameBitsAtOneAndTwoThreads) {
  EXPECT_STREQ(kernels::AdamWTarget(), TargetName());
  const auto serial = test::RunAtThreads(1, HighwayKernelsPass);
  const auto first = test::RunAtThreads(2, HighwayKernelsPass);
  const auto second = test::RunAtThreads(2, HighwayKernelsPass);
  ASSERT_EQ(serial.size(), first.size());
  for (size_t i = 0; i < serial.size(); ++i) {
    EXPECT_EQ(first[i], second[i]) << "output " << i << ", run to run";
    EXPECT_EQ(serial[i], first[i]) << "output " << i << ", 1 vs 2 threads";
  }
}

}  // namespace
}  // namespace rotor

// Determinism: a forward and backward pass through the row-parallel ops and
// sgemm, run twice at 2 threads, gives bitwise identical values and
// gradients; the cross-row sums match even between 1 and 2 threads.
#include <random>

#include "core/ops.h"
#include "core/parallel.h"
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
  const int threads = NumThreads();
  SetNumThreads(2);
  const PassResult first = ForwardBackward();
  const PassResult second = ForwardBackward();
  SetNumThreads(threads);
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
  const int threads = NumThreads();
  SetNumThreads(1);
  const auto serial = run();
  SetNumThreads(2);
  const auto parallel = run();
  SetNumThreads(threads);
  EXPECT_EQ(serial, parallel);
}

}  // namespace
}  // namespace rotor

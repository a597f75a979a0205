// LinearCrossEntropy: the chunked output head and loss against a naive
// double-precision reference written here (logits, softmax and the three
// gradients), central differences (GradCheck), the unchunked
// CrossEntropy(Linear(h, W)) it replaces (the bound it keeps), thread and
// chunk-size determinism, the dL/dloss scaling and its errors.
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;

constexpr int32_t kIgnore = -100;

std::vector<int32_t> RandomTargets(int64_t rows, int64_t vocab,
                                   std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> dist(0,
                                              static_cast<int32_t>(vocab) - 1);
  std::vector<int32_t> targets(rows);
  for (int64_t r = 0; r < rows; ++r) {
    targets[r] = r % 5 == 2 ? kIgnore : dist(rng);
  }
  return targets;
}

// The mean loss over scored rows and its gradients, in double from the
// definitions: z = h W^T, p = softmax(z), dz = (p - onehot) / N,
// dh = dz W, dW = dz^T h.
struct Reference {
  double loss = 0.0;
  std::vector<double> dh, dw;
};
Reference NaiveReference(const Tensor& hidden, const Tensor& weight,
                         const std::vector<int32_t>& targets) {
  const int64_t rows = hidden.size(0), in = hidden.size(1);
  const int64_t vocab = weight.size(0);
  const std::vector<float> h = hidden.ToVector(), w = weight.ToVector();
  Reference ref;
  ref.dh.assign(rows * in, 0.0);
  ref.dw.assign(vocab * in, 0.0);
  int64_t counted = 0;
  for (int32_t t : targets) counted += t != kIgnore;
  for (int64_t r = 0; r < rows; ++r) {
    if (targets[r] == kIgnore) continue;
    std::vector<double> z(vocab, 0.0);
    double max = -INFINITY;
    for (int64_t v = 0; v < vocab; ++v) {
      for (int64_t i = 0; i < in; ++i)
        z[v] += double(h[r * in + i]) * w[v * in + i];
      max = std::max(max, z[v]);
    }
    double sum = 0.0;
    for (double zv : z) sum += std::exp(zv - max);
    const double lse = max + std::log(sum);
    ref.loss += (lse - z[targets[r]]) / counted;
    for (int64_t v = 0; v < vocab; ++v) {
      const double dz = (std::exp(z[v] - lse) - (v == targets[r])) / counted;
      for (int64_t i = 0; i < in; ++i) {
        ref.dh[r * in + i] += dz * w[v * in + i];
        ref.dw[v * in + i] += dz * h[r * in + i];
      }
    }
  }
  return ref;
}

// The largest |a - b| over the largest |b|.
double RelativeError(const std::vector<float>& a,
                     const std::vector<double>& b) {
  double error = 0.0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    error = std::max(error, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return error / scale;
}
std::string Figure(double value) {
  std::ostringstream out;
  out << std::setprecision(3) << value;
  return out.str();
}
std::vector<double> ToDouble(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

struct Result {
  float loss;
  std::vector<float> dh, dw;
};
Result RunFused(const Tensor& hidden, const Tensor& weight,
                const std::vector<int32_t>& targets, int64_t chunk,
                float loss_weight = 1.0f) {
  const_cast<Tensor&>(hidden).ZeroGrad();
  const_cast<Tensor&>(weight).ZeroGrad();
  const Tensor loss =
      LinearCrossEntropy(hidden, weight, targets, kIgnore, chunk);
  Mul(loss, loss_weight).Backward();
  return {loss.item(), hidden.grad().ToVector(), weight.grad().ToVector()};
}
Result RunUnchunked(const Tensor& hidden, const Tensor& weight,
                    const std::vector<int32_t>& targets,
                    float loss_weight = 1.0f) {
  const_cast<Tensor&>(hidden).ZeroGrad();
  const_cast<Tensor&>(weight).ZeroGrad();
  const Tensor loss = CrossEntropy(Linear(hidden, weight), targets, kIgnore);
  Mul(loss, loss_weight).Backward();
  return {loss.item(), hidden.grad().ToVector(), weight.grad().ToVector()};
}

TEST(LinearCrossEntropyOp, MatchesDoubleReferenceAtEveryChunkSize) {
  std::mt19937 rng(71);
  const int64_t rows = 37, in = 11, vocab = 23;
  const Tensor hidden = RandomTensor({rows, in}, rng, -1, 1);
  const Tensor weight = RandomTensor({vocab, in}, rng, -1, 1);
  const std::vector<int32_t> targets = RandomTargets(rows, vocab, rng);
  const Reference ref = NaiveReference(hidden, weight, targets);
  for (int64_t chunk : {1, 2, 5, 16, 36, 37, 1000}) {
    SCOPED_TRACE("chunk_rows " + std::to_string(chunk));
    const Result got = RunFused(hidden, weight, targets, chunk);
    EXPECT_NEAR(got.loss, ref.loss, 1e-6 * std::abs(ref.loss));
    EXPECT_LT(RelativeError(got.dh, ref.dh), 1e-5);
    EXPECT_LT(RelativeError(got.dw, ref.dw), 1e-5);
  }
}

TEST(LinearCrossEntropyOp, GradCheck) {
  std::mt19937 rng(72);
  const std::vector<int32_t> targets = {3, kIgnore, 0, 6, 2, 1, 5};
  GradCheck(
      [&](const std::vector<Tensor>& in) {
        return LinearCrossEntropy(in[0], in[1], targets, kIgnore, 3);
      },
      {RandomTensor({7, 5}, rng, -1, 1), RandomTensor({8, 5}, rng, -1, 1)});
}

// The bound the chunked loss keeps against the unchunked one at a model-like
// size: the loss to one float rounding, dh and dW to 4e-6 of their largest
// entry (sums of 517 and 300 products rounded in another order: OpenBLAS
// blocks a product of fewer rows differently). Measured: recorded as test
// properties (--gtest_output=xml).
TEST(LinearCrossEntropyOp, StaysWithinBoundOfUnchunkedLoss) {
  std::mt19937 rng(73);
  const int64_t rows = 300, in = 64, vocab = 517;
  const Tensor hidden = RandomTensor({rows, in}, rng, -1, 1);
  const Tensor weight = RandomTensor({vocab, in}, rng, -0.2f, 0.2f);
  const std::vector<int32_t> targets = RandomTargets(rows, vocab, rng);
  for (int threads : {1, 2}) {
    test::ThreadCountGuard guard(threads);
    const Result full = RunUnchunked(hidden, weight, targets);
    for (int64_t chunk : {64, 128, 300}) {
      SCOPED_TRACE("threads " + std::to_string(threads) + " chunk_rows " +
                   std::to_string(chunk));
      const Result got = RunFused(hidden, weight, targets, chunk);
      const double loss_error = std::abs(got.loss - full.loss) / full.loss;
      const double dh_error = RelativeError(got.dh, ToDouble(full.dh));
      const double dw_error = RelativeError(got.dw, ToDouble(full.dw));
      const std::string name =
          "t" + std::to_string(threads) + "_chunk" + std::to_string(chunk);
      RecordProperty(name + "_loss", Figure(loss_error));
      RecordProperty(name + "_dh", Figure(dh_error));
      RecordProperty(name + "_dw", Figure(dw_error));
      EXPECT_LE(loss_error, 2e-7);
      EXPECT_LE(dh_error, 4e-6);
      EXPECT_LE(dw_error, 4e-6);
    }
  }
}

TEST(LinearCrossEntropyOp, BitwiseAcrossThreadCountsAndRuns) {
  std::mt19937 rng(74);
  const int64_t rows = 200, in = 48, vocab = 301;
  const Tensor hidden = RandomTensor({rows, in}, rng, -1, 1);
  const Tensor weight = RandomTensor({vocab, in}, rng, -0.3f, 0.3f);
  const std::vector<int32_t> targets = RandomTargets(rows, vocab, rng);
  const auto run = [&] { return RunFused(hidden, weight, targets, 64); };
  const Result one = test::RunAtThreads(1, run);
  for (int threads : {1, 2}) {
    const Result again = test::RunAtThreads(threads, run);
    EXPECT_EQ(again.loss, one.loss) << threads << " threads";
    EXPECT_EQ(again.dh, one.dh) << threads << " threads";
    EXPECT_EQ(again.dw, one.dw) << threads << " threads";
  }
}

TEST(LinearCrossEntropyOp, ScalesItsGradientsByTheUpstreamGradient) {
  std::mt19937 rng(75);
  const Tensor hidden = RandomTensor({19, 7}, rng, -1, 1);
  const Tensor weight = RandomTensor({13, 7}, rng, -1, 1);
  const std::vector<int32_t> targets = RandomTargets(19, 13, rng);
  const Result one = RunFused(hidden, weight, targets, 4);
  const Result scaled = RunFused(hidden, weight, targets, 4, 0.3f);
  for (size_t i = 0; i < one.dh.size(); ++i) {
    EXPECT_FLOAT_EQ(scaled.dh[i], 0.3f * one.dh[i]) << "dh " << i;
  }
  for (size_t i = 0; i < one.dw.size(); ++i) {
    EXPECT_FLOAT_EQ(scaled.dw[i], 0.3f * one.dw[i]) << "dW " << i;
  }
}

TEST(LinearCrossEntropyOp, WithoutGradientsGivesTheSameLoss) {
  std::mt19937 rng(76);
  const Tensor hidden = RandomTensor({29, 9}, rng, -1, 1);
  const Tensor weight = RandomTensor({31, 9}, rng, -1, 1);
  const std::vector<int32_t> targets = RandomTargets(29, 31, rng);
  const float with_grad =
      LinearCrossEntropy(hidden, weight, targets, kIgnore, 8).item();
  NoGradGuard no_grad;
  const Tensor loss = LinearCrossEntropy(hidden, weight, targets, kIgnore, 8);
  EXPECT_FALSE(loss.requires_grad());
  EXPECT_EQ(loss.item(), with_grad);
}

TEST(LinearCrossEntropyOp, OnlyTheInputsThatRequireGradGetOne) {
  std::mt19937 rng(77);
  const Tensor hidden = RandomTensor({6, 4}, rng, -1, 1);
  const Tensor frozen = RandomTensor({5, 4}, rng, -1, 1, false);
  LinearCrossEntropy(hidden, frozen, {1, 2, kIgnore, 4, 0, 3}, kIgnore, 4)
      .Backward();
  EXPECT_TRUE(hidden.grad().defined());
  EXPECT_FALSE(frozen.grad().defined());
}

TEST(LinearCrossEntropyOp, AllRowsIgnoredIsNaNWithZeroGradients) {
  const Tensor hidden = Tensor::Ones({3, 2}, true);
  const Tensor weight = Tensor::Ones({4, 2}, true);
  const Tensor loss = LinearCrossEntropy(hidden, weight, {-1, -1, -1}, -1, 2);
  EXPECT_TRUE(std::isnan(loss.item()));
  loss.Backward();
  for (float g : hidden.grad().ToVector()) EXPECT_EQ(g, 0.0f);
  for (float g : weight.grad().ToVector()) EXPECT_EQ(g, 0.0f);
}

TEST(LinearCrossEntropyOp, Errors) {
  const Tensor hidden = Tensor::Zeros({3, 4});
  const Tensor weight = Tensor::Zeros({5, 4});
  ROTOR_EXPECT_ERROR(
      LinearCrossEntropy(hidden, Tensor::Zeros({5, 3}), {0, 1, 2}, kIgnore, 2),
      "LinearCrossEntropy", "[3, 4]", "[5, 3]");
  ROTOR_EXPECT_ERROR(LinearCrossEntropy(hidden, weight, {0, 1}, kIgnore, 2),
                     "LinearCrossEntropy", "2 targets for 3 rows");
  ROTOR_EXPECT_ERROR(LinearCrossEntropy(hidden, weight, {0, 5, 1}, kIgnore, 2),
                     "LinearCrossEntropy", "target 5", "row 1", "vocab size 5");
  ROTOR_EXPECT_ERROR(LinearCrossEntropy(hidden, weight, {0, 1, 2}, kIgnore, 0),
                     "LinearCrossEntropy", "chunk_rows is 0");
}

}  // namespace
}  // namespace rotor

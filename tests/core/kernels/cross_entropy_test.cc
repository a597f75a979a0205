// Cross-entropy kernels: the Highway versions against the scalar references
// on every compiled target (vocab sizes 0..33 and larger odd ones, ignored
// rows, misaligned pointers, extreme logits), and the reference backward
// against complex-step derivatives in double.
#include "core/kernels/cross_entropy.h"

#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/kernels/cross_entropy_scalar.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::ExpectNear;
using test::ForEachShapeAndMisalignment;
using test::MisalignedFloats;
using test::RandomDoubles;

constexpr int32_t kIgnore = -100;

// Random targets in [0, vocab), with every third row ignored (all rows when
// vocab == 0, which has no valid target).
std::vector<int32_t> RandomTargets(size_t rows, size_t vocab,
                                   std::mt19937& rng) {
  std::vector<int32_t> targets(rows, kIgnore);
  if (vocab == 0) return targets;
  std::uniform_int_distribution<int32_t> dist(0,
                                              static_cast<int32_t>(vocab) - 1);
  for (size_t r = 0; r < rows; ++r) {
    if (r % 3 != 1) targets[r] = dist(rng);
  }
  return targets;
}

ROTOR_PER_TARGET_SUITE(CrossEntropyKernel);

ROTOR_PER_TARGET_TEST(CrossEntropyKernel, MatchesReference) {
  EXPECT_STREQ(kernels::CrossEntropyTarget(), TargetName());
  std::mt19937 rng(41);
  ForEachShapeAndMisalignment(
      {1, 4, 9}, "vocab",
      [&](size_t rows, size_t vocab, size_t m, const std::string& where) {
        const size_t n = rows * vocab;
        const MisalignedFloats logits(n, m, rng, -10, 10);
        const std::vector<int32_t> targets = RandomTargets(rows, vocab, rng);
        MisalignedFloats loss(rows, m, -1.0f), loss_ref(rows, m);
        MisalignedFloats lse(rows, m, -1.0f), lse_ref(rows, m);

        kernels::CrossEntropyForward(logits.data(), targets.data(), rows, vocab,
                                     kIgnore, loss.data(), lse.data());
        kernels::CrossEntropyForwardRef(logits.data(), targets.data(), rows,
                                        vocab, kIgnore, loss_ref.data(),
                                        lse_ref.data());
        ExpectNear(lse.data(), lse_ref.data(), rows, 1e-5, 1e-6,
                   "logsumexp " + where);
        ExpectNear(loss.data(), loss_ref.data(), rows, 1e-5, 1e-5,
                   "loss " + where);

        const MisalignedFloats d0(n, m, rng);
        MisalignedFloats d = d0, d_ref = d0;
        kernels::CrossEntropyBackward(logits.data(), lse_ref.data(),
                                      targets.data(), rows, vocab, kIgnore,
                                      0.37f, d.data());
        kernels::CrossEntropyBackwardRef(logits.data(), lse_ref.data(),
                                         targets.data(), rows, vocab, kIgnore,
                                         0.37f, d_ref.data());
        ExpectNear(d.data(), d_ref.data(), n, 1e-6, 1e-5, "dlogits " + where);
        // Ignored rows get exact zeros, whatever was there before.
        const std::vector<float> zeros(vocab, 0.0f);
        for (size_t r = 0; r < rows; ++r) {
          if (targets[r] != kIgnore) continue;
          ExpectNear(d.data() + r * vocab, zeros.data(), vocab, 0, 0,
                     "ignored row " + std::to_string(r) + " " + where);
        }
      });
}

// The fused in-place kernel is the forward, then the backward,
// to the bit (the chunked loss relies on it), and matches the reference.
ROTOR_PER_TARGET_TEST(CrossEntropyKernel, InPlaceEqualsForwardThenBackward) {
  std::mt19937 rng(43);
  ForEachShapeAndMisalignment(
      {1, 4, 9}, "vocab",
      [&](size_t rows, size_t vocab, size_t m, const std::string& where) {
        const size_t n = rows * vocab;
        const MisalignedFloats logits(n, m, rng, -10, 10);
        const std::vector<int32_t> targets = RandomTargets(rows, vocab, rng);
        const float scale = 0.37f;
        MisalignedFloats loss(rows, m), lse(rows, m), d(n, m, -1.0f);
        kernels::CrossEntropyForward(logits.data(), targets.data(), rows, vocab,
                                     kIgnore, loss.data(), lse.data());
        kernels::CrossEntropyBackward(logits.data(), lse.data(), targets.data(),
                                      rows, vocab, kIgnore, scale, d.data());

        MisalignedFloats fused = logits, fused_loss(rows, m, -1.0f);
        kernels::CrossEntropyForwardBackwardInPlace(
            fused.data(), targets.data(), rows, vocab, kIgnore, scale,
            fused_loss.data());
        ExpectNear(fused_loss.data(), loss.data(), rows, 0, 0, "loss " + where);
        ExpectNear(fused.data(), d.data(), n, 0, 0, "dlogits " + where);

        MisalignedFloats ref = logits, ref_loss(rows, m);
        kernels::CrossEntropyForwardBackwardInPlaceRef(
            ref.data(), targets.data(), rows, vocab, kIgnore, scale,
            ref_loss.data());
        ExpectNear(fused_loss.data(), ref_loss.data(), rows, 1e-5, 1e-5,
                   "loss against the reference " + where);
        ExpectNear(fused.data(), ref.data(), n, 1e-6, 1e-5,
                   "dlogits against the reference " + where);
      });
}

ROTOR_PER_TARGET_TEST(CrossEntropyKernel, ExtremeLogits) {
  const float kInf = std::numeric_limits<float>::infinity();
  const float kMax = std::numeric_limits<float>::max();
  struct Case {
    std::vector<float> logits;
    int32_t target;
    float loss;
  };
  const std::vector<Case> cases = {
      {{1000.0f, 0.0f}, 0, 0.0f},
      {{1000.0f, 0.0f}, 1, 1000.0f},
      {{-kInf, 5.0f, -kInf}, 1, 0.0f},
      {{-kInf, 5.0f, 5.0f}, 2, std::log(2.0f)},
      {{-kInf, 5.0f}, 0, kInf},  // impossible target: infinite loss
      {{kMax, 0.0f}, 0, 0.0f},
      {{3.0f}, 0, 0.0f},            // one class: always right
      {{1.0f, NAN, 2.0f}, 0, NAN},  // NaN logits give a NaN loss
  };
  for (const Case& c : cases) {
    const size_t vocab = c.logits.size();
    float loss = 0.0f, lse = 0.0f;
    kernels::CrossEntropyForward(c.logits.data(), &c.target, 1, vocab, kIgnore,
                                 &loss, &lse);
    if (std::isnan(c.loss)) {
      EXPECT_TRUE(std::isnan(loss)) << "loss " << loss;
      continue;
    }
    if (std::isinf(c.loss)) {
      EXPECT_EQ(loss, c.loss) << "target " << c.target;
    } else {
      EXPECT_NEAR(loss, c.loss, 1e-6 * std::max(1.0f, c.loss))
          << "logits[0]=" << c.logits[0] << " target " << c.target;
    }
    // The gradient stays finite: softmax - onehot.
    if (std::isinf(c.loss)) continue;
    std::vector<float> grad(vocab, 0.0f);
    kernels::CrossEntropyBackward(c.logits.data(), &lse, &c.target, 1, vocab,
                                  kIgnore, 1.0f, grad.data());
    float sum = 0.0f;
    for (float g : grad) {
      EXPECT_TRUE(std::isfinite(g));
      sum += g;
    }
    EXPECT_NEAR(sum, 0.0f, 1e-6) << "softmax - onehot sums to 0";
  }
}

TEST(CrossEntropyReference, BackwardMatchesComplexStep) {
  using C = std::complex<double>;
  std::mt19937 rng(42);
  const size_t rows = 5, vocab = 7;
  const double scale = 0.3;
  const std::vector<double> logits = RandomDoubles(rows * vocab, rng, -4, 4);
  const std::vector<int32_t> targets = {3, kIgnore, 0, 6, 2};

  std::vector<double> loss(rows), lse(rows), grad(rows * vocab, 0.0);
  kernels::CrossEntropyForwardRef(logits.data(), targets.data(), rows, vocab,
                                  kIgnore, loss.data(), lse.data());
  kernels::CrossEntropyBackwardRef(logits.data(), lse.data(), targets.data(),
                                   rows, vocab, kIgnore, scale, grad.data());
  // L = scale * sum of the row losses.
  const std::vector<double> expected = test::ComplexStepGradientOfWeightedSum(
      [&](const std::vector<C>& z) {
        std::vector<C> l(rows), s(rows);
        kernels::CrossEntropyForwardRef(z.data(), targets.data(), rows, vocab,
                                        kIgnore, l.data(), s.data());
        return l;
      },
      logits, std::vector<double>(rows, scale));
  ExpectNear(grad.data(), expected.data(), grad.size(), 1e-14, 1e-12,
             "dlogits");
}

TEST(CrossEntropyReference, InPlaceIsForwardThenBackward) {
  std::mt19937 rng(44);
  const size_t rows = 4, vocab = 6;
  const std::vector<double> logits = RandomDoubles(rows * vocab, rng, -4, 4);
  const std::vector<int32_t> targets = {5, kIgnore, 0, 2};
  std::vector<double> loss(rows), lse(rows), grad(rows * vocab, 0.0);
  kernels::CrossEntropyForwardRef(logits.data(), targets.data(), rows, vocab,
                                  kIgnore, loss.data(), lse.data());
  kernels::CrossEntropyBackwardRef(logits.data(), lse.data(), targets.data(),
                                   rows, vocab, kIgnore, 0.25, grad.data());
  std::vector<double> fused = logits, fused_loss(rows, -1.0);
  kernels::CrossEntropyForwardBackwardInPlaceRef(fused.data(), targets.data(),
                                                 rows, vocab, kIgnore, 0.25,
                                                 fused_loss.data());
  ExpectNear(fused_loss.data(), loss.data(), rows, 1e-15, 1e-15, "loss");
  ExpectNear(fused.data(), grad.data(), grad.size(), 1e-15, 1e-15, "dlogits");
}

}  // namespace
}  // namespace rotor

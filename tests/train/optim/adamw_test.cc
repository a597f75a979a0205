// AdamW over named parameters (train/optim/adamw.h) against a hand-written
// double-precision reference for two steps, its weight-decay mask, and the
// global gradient norm and clipping.
#include "train/optim/adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace rotor::train {
namespace {

Tensor Parameter(const Shape& shape, std::mt19937& rng) {
  return test::RandomTensor(shape, rng, -1.0f, 1.0f, /*requires_grad=*/true);
}

void SetGrad(Tensor& param, const std::vector<float>& values) {
  param.mutable_grad() = Tensor::FromVector(param.shape(), values);
}

TEST(AdamW, DecaysOnlyWeightMatrices) {
  std::mt19937 rng(1);
  const AdamW optimizer(
      {{"model.layers.0.self_attn.q_proj.weight", Parameter({4, 4}, rng)},
       {"model.layers.0.input_layernorm.weight", Parameter({4}, rng)},
       {"model.embed_tokens.weight", Parameter({8, 4}, rng)},
       {"lm_head.weight", Parameter({8, 4}, rng)},
       {"some.linear.bias", Parameter({4}, rng)}},
      AdamWSettings{});
  EXPECT_TRUE(optimizer.decays(0));   // weight matrix
  EXPECT_FALSE(optimizer.decays(1));  // norm (1-D)
  EXPECT_FALSE(optimizer.decays(2));  // embedding table
  EXPECT_TRUE(optimizer.decays(3));   // untied output projection
  EXPECT_FALSE(optimizer.decays(4));  // bias (1-D)
}

// PyTorch's AdamW update, in double, for one parameter tensor.
struct ReferenceAdamW {
  std::vector<double> p, m, v;
  void Step(const std::vector<float>& g, double lr, const AdamWSettings& s,
            bool decay, int t) {
    for (size_t i = 0; i < p.size(); ++i) {
      if (decay) p[i] *= 1.0 - lr * s.weight_decay;
      m[i] = s.beta1 * m[i] + (1.0 - s.beta1) * g[i];
      v[i] = s.beta2 * v[i] + (1.0 - s.beta2) * double(g[i]) * g[i];
      const double m_hat = m[i] / (1.0 - std::pow(s.beta1, t));
      const double v_hat = v[i] / (1.0 - std::pow(s.beta2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + s.eps);
    }
  }
};

TEST(AdamW, TwoStepsMatchADoubleReference) {
  std::mt19937 rng(7);
  const AdamWSettings settings{0.9, 0.95, 1e-8, 0.1};
  std::vector<std::pair<std::string, Tensor>> params = {
      {"model.layers.0.mlp.up_proj.weight", Parameter({3, 5}, rng)},
      {"model.norm.weight", Parameter({5}, rng)},
      {"model.embed_tokens.weight", Parameter({6, 5}, rng)},
      {"model.frozen.weight", Parameter({2, 2}, rng)}};  // never gets a grad
  std::vector<ReferenceAdamW> reference(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<float> values = params[i].second.ToVector();
    reference[i].p.assign(values.begin(), values.end());
    reference[i].m.assign(values.size(), 0.0);
    reference[i].v.assign(values.size(), 0.0);
  }
  const std::vector<float> frozen_before = params[3].second.ToVector();
  AdamW optimizer(params, settings);
  const double lrs[2] = {1e-2, 3e-2};
  for (int t = 1; t <= 2; ++t) {
    for (size_t i = 0; i < 3; ++i) {
      const std::vector<float> grad =
          test::RandomVector(params[i].second.numel(), rng, -2.0f, 2.0f);
      SetGrad(params[i].second, grad);
      reference[i].Step(grad, lrs[t - 1], settings, optimizer.decays(i), t);
    }
    optimizer.Step(lrs[t - 1]);
    EXPECT_EQ(optimizer.step(), t);
    for (size_t i = 0; i < 3; ++i) {
      const std::vector<float> p = params[i].second.ToVector();
      const std::vector<float> m = optimizer.first_moments()[i].ToVector();
      const std::vector<float> v = optimizer.second_moments()[i].ToVector();
      const std::string what = params[i].first + " step " + std::to_string(t);
      test::ExpectNear(p.data(), reference[i].p.data(), p.size(), 1e-6, 1e-5,
                       what + " weights");
      test::ExpectNear(m.data(), reference[i].m.data(), m.size(), 1e-7, 1e-5,
                       what + " first moment");
      test::ExpectNear(v.data(), reference[i].v.data(), v.size(), 1e-7, 1e-5,
                       what + " second moment");
    }
  }
  // The embedding's decay was really off: with decay its weights would
  // differ from the reference by lr * wd * |p| ~ 1e-3.
  EXPECT_FALSE(optimizer.decays(2));
  EXPECT_EQ(params[3].second.ToVector(), frozen_before);  // skipped
  EXPECT_EQ(optimizer.first_moments()[3].ToVector(),
            std::vector<float>(4, 0.0f));
}

TEST(ClipScale, ScalesOnlyAboveTheLimit) {
  Tensor a = Tensor::Zeros({2}, true);
  Tensor b = Tensor::Zeros({1, 1}, true);
  Tensor no_grad = Tensor::Zeros({3}, true);
  const std::vector<Tensor> params = {a, b, no_grad};
  SetGrad(a, {3.0f, 4.0f});
  SetGrad(b, {12.0f});
  EXPECT_DOUBLE_EQ(GlobalGradNorm(params), 13.0);  // sqrt(9 + 16 + 144)

  // Below the limit, or disabled (0): 1.
  EXPECT_EQ(ClipScale(13.0, 13.5), 1.0f);
  EXPECT_EQ(ClipScale(13.0, 0.0), 1.0f);
  // Above: max_norm / norm, so the scaled gradients' norm is max_norm.
  EXPECT_FLOAT_EQ(ClipScale(13.0, 6.5), 0.5f);

  // A NaN gradient gives a NaN norm (the trainer's watchdog stops on it).
  SetGrad(a, {NAN, 1.0f});
  EXPECT_TRUE(std::isnan(GlobalGradNorm(params)));
}

// Step with a clip scale is the step on gradients scaled in memory first,
// to the bit (what clip_grad_norm_ then step does).
TEST(AdamW, ClipScaleEqualsScaledGradients) {
  std::vector<std::vector<float>> after[2];
  for (int folded = 0; folded < 2; ++folded) {
    Tensor w = Tensor::FromVector({2, 3}, {1, -2, 3, 0.5f, -1, 2}, true);
    Tensor n = Tensor::FromVector({3}, {1, 1, 1}, true);
    AdamW optimizer({{"w", w}, {"norm.weight", n}}, AdamWSettings{});
    for (int step = 0; step < 3; ++step) {
      SetGrad(w, {0.3f, -4.0f, 1e-3f, 2.0f, -0.7f, 0.1f});
      SetGrad(n, {0.5f, -0.25f, 3.0f});
      const float scale = ClipScale(GlobalGradNorm({w, n}), 1.0);
      if (folded) {
        optimizer.Step(1e-2, scale);
      } else {
        for (Tensor g : {w.grad(), n.grad()}) {
          for (int64_t i = 0; i < g.numel(); ++i) g.data()[i] *= scale;
        }
        optimizer.Step(1e-2);
      }
    }
    after[folded] = {w.ToVector(), n.ToVector(),
                     optimizer.first_moments()[0].ToVector(),
                     optimizer.second_moments()[1].ToVector()};
  }
  EXPECT_EQ(after[0], after[1]);
}

}  // namespace
}  // namespace rotor::train

// LoRA (nn/layers.h Linear::EnableLora, nn/lora.h): the adapted layer is
// PEFT's y = x W^T + b + (alpha/r) dropout(x) A^T B^T, checked against the
// formula and by finite differences with dropout on; A starts like PEFT's
// and B at zero; dropout is a function of its seed and off in evaluation;
// only adapters and the listed parameters get gradients, with activation
// checkpointing bitwise the same; targets and entries that match nothing
// are errors; merging gives the adapter model's logits within float32
// rounding.
#include "nn/lora.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/ops/ops.h"
#include "core/random.h"
#include "nn/layers.h"
#include "nn/transformer.h"
#include "tests/nn/fused_storage.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

Tensor ParameterNamed(const nn::Module& module, const std::string& name) {
  for (const auto& [n, tensor] : module.NamedParameters()) {
    if (n == name) return tensor;
  }
  ADD_FAILURE() << "no parameter " << name;
  return Tensor();
}

void FillNormal(Tensor tensor, double stddev, uint64_t seed) {
  Rng rng(seed);
  float* data = tensor.data();
  for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = stddev * rng.Normal();
}

constexpr int64_t kIn = 6, kOut = 5, kRows = 3;
constexpr nn::LoraSettings kSettings{2, 3.0, 0.25};

// A Linear 6 -> 5 with a bias and an adapter whose B is not zero.
struct AdaptedLinear {
  AdaptedLinear() : rng(11), linear(kIn, kOut, true, 0.5, &rng) {
    linear.EnableLora(kSettings, rng);
    FillNormal(ParameterNamed(linear, "lora_B.weight"), 0.5, 12);
    FillNormal(ParameterNamed(linear, "bias"), 0.5, 13);
  }
  Rng rng;
  nn::Linear linear;
};

// y = x W^T + b + s * (keep(x) x / (1 - p)) A^T B^T, in double, with the
// kept elements read off Dropout's mask on ones.
std::vector<double> Reference(const nn::Linear& linear, const Tensor& x,
                              float p, uint64_t seed, bool training) {
  const std::vector<float> w = ParameterNamed(linear, "weight").ToVector();
  const std::vector<float> b = ParameterNamed(linear, "bias").ToVector();
  const std::vector<float> a =
      ParameterNamed(linear, "lora_A.weight").ToVector();
  const std::vector<float> bb =
      ParameterNamed(linear, "lora_B.weight").ToVector();
  std::vector<float> mask(x.numel(), 1.0f);
  if (training) {
    NoGradGuard no_grad;
    mask = Dropout(Tensor::Ones(x.shape()), p, seed).ToVector();
  }
  const std::vector<float> xs = x.ToVector();
  const int64_t r = kSettings.rank;
  const double scale = kSettings.alpha / static_cast<double>(r);
  std::vector<double> y(kRows * kOut);
  for (int64_t n = 0; n < kRows; ++n) {
    std::vector<double> down(r, 0.0);
    for (int64_t k = 0; k < r; ++k) {
      for (int64_t i = 0; i < kIn; ++i) {
        down[k] += double(mask[n * kIn + i]) * xs[n * kIn + i] * a[k * kIn + i];
      }
    }
    for (int64_t o = 0; o < kOut; ++o) {
      double sum = b[o];
      for (int64_t i = 0; i < kIn; ++i)
        sum += double(xs[n * kIn + i]) * w[o * kIn + i];
      for (int64_t k = 0; k < r; ++k) sum += scale * down[k] * bb[o * r + k];
      y[n * kOut + o] = sum;
    }
  }
  return y;
}

TEST(LoraLinear, ForwardIsPeftsFormula) {
  AdaptedLinear adapted;
  adapted.linear.set_lora_dropout_seed(99);
  Rng rng(5);
  const Tensor x = RandomNormal({kRows, kIn}, 1.0, rng);
  for (const bool training : {true, false}) {
    adapted.linear.Train(training);
    const std::vector<float> y = adapted.linear.Forward(x).ToVector();
    const std::vector<double> expected =
        Reference(adapted.linear, x, 0.25f, 99, training);
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_NEAR(y[i], expected[i], 1e-5)
          << "training " << training << " " << i;
    }
  }
}

TEST(LoraLinear, GradientsMatchFiniteDifferencesWithDropout) {
  AdaptedLinear adapted;
  adapted.linear.set_lora_dropout_seed(7);
  Rng rng(6);
  const Tensor x = RandomNormal({kRows, kIn}, 1.0, rng, /*requires_grad=*/true);
  std::vector<Tensor> inputs = {x};
  for (const Tensor& p : adapted.linear.Parameters()) inputs.push_back(p);
  ASSERT_EQ(inputs.size(), 5u);  // x, weight, bias, lora_A, lora_B
  test::GradCheck(
      [&](const std::vector<Tensor>& in) {
        return adapted.linear.Forward(in[0]);
      },
      inputs);
}

TEST(LoraLinear, StartsLikePeft) {
  Rng rng(1);
  nn::Linear linear(64, 8, false, 0.02, &rng);
  Rng x_rng(2);
  const Tensor x = RandomNormal({4, 64}, 1.0, x_rng);
  const std::vector<float> before = linear.Forward(x).ToVector();
  linear.EnableLora({4, 8.0, 0.0}, rng);
  std::vector<std::string> names;
  for (const auto& [name, tensor] : linear.NamedParameters()) {
    names.push_back(name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "lora_A.weight",
                                             "lora_B.weight"}));
  // kaiming_uniform_(a=sqrt(5)) on [r, in]: U(-1/sqrt(in), 1/sqrt(in)).
  const std::vector<float> a =
      ParameterNamed(linear, "lora_A.weight").ToVector();
  ASSERT_EQ(a.size(), 4u * 64u);
  const float bound = 1.0f / 8.0f;
  EXPECT_LE(*std::max_element(a.begin(), a.end()), bound);
  EXPECT_GE(*std::min_element(a.begin(), a.end()), -bound);
  EXPECT_GT(*std::max_element(a.begin(), a.end()), 0.9f * bound);
  EXPECT_LT(*std::min_element(a.begin(), a.end()), -0.9f * bound);
  for (float v : ParameterNamed(linear, "lora_B.weight").ToVector()) {
    EXPECT_EQ(v, 0.0f);
  }
  EXPECT_EQ(linear.Forward(x).ToVector(), before);
  ROTOR_EXPECT_ERROR(linear.EnableLora({4, 8.0, 0.0}, rng),
                     "already has an adapter");
}

TEST(LoraLinear, DropoutFollowsItsSeedAndIsOffInEvaluation) {
  AdaptedLinear adapted;
  Rng rng(8);
  const Tensor x = RandomNormal({kRows, kIn}, 1.0, rng);
  adapted.linear.set_lora_dropout_seed(1);
  const std::vector<float> first = adapted.linear.Forward(x).ToVector();
  EXPECT_EQ(adapted.linear.Forward(x).ToVector(), first);
  adapted.linear.set_lora_dropout_seed(2);
  EXPECT_NE(adapted.linear.Forward(x).ToVector(), first);
  adapted.linear.Eval();
  const std::vector<float> eval_one = adapted.linear.Forward(x).ToVector();
  adapted.linear.set_lora_dropout_seed(1);
  EXPECT_EQ(adapted.linear.Forward(x).ToVector(), eval_one);
  EXPECT_NE(eval_one, first);
}

nn::TransformerConfig SmallConfig(bool tied) {
  nn::TransformerConfig config;
  config.vocab_size = 37;
  config.hidden_size = 24;
  config.intermediate_size = 40;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 6;
  config.num_key_value_heads = 2;
  config.head_dim = 4;
  config.qkv_bias = true;
  config.tie_word_embeddings = tied;
  config.rope.head_dim = 4;
  config.rope.max_position_embeddings = 64;
  return config;
}

nn::FinetuneSettings AllProjections(double dropout,
                                    std::vector<std::string> trainable) {
  nn::FinetuneSettings settings;
  settings.lora = true;
  settings.lora_settings = {4, 8.0, dropout};
  settings.target_modules = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                             "gate_proj", "up_proj", "down_proj"};
  settings.trainable = std::move(trainable);
  return settings;
}

// Gives every adapter a non-zero B, so that A gets gradients too and the
// adapters change the logits.
void PerturbAdapters(nn::Module& model) {
  uint64_t seed = 100;
  for (const auto& [name, tensor] : model.NamedParameters()) {
    if (name.find("lora_B") != std::string::npos)
      FillNormal(tensor, 0.05, ++seed);
  }
}

void RandomTokens(std::vector<int32_t>& ids, uint64_t seed) {
  Rng rng(seed);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng.Below(37));
}

TEST(Finetuning, OnlyAdaptersAndListedParametersGetGradients) {
  const nn::TransformerConfig config = SmallConfig(/*tied=*/false);
  nn::Transformer model(config, 3);
  const int64_t base_parameters = model.NumParameters();
  nn::SetUpFinetuning(model, AllProjections(0.1, {"embed_tokens", "norm"}), 4);
  EXPECT_EQ(nn::CountLoraLayers(model), 7 * 2);
  PerturbAdapters(model);
  nn::SetLoraDropoutSeed(model, 5);
  std::vector<int32_t> ids(2 * 9), targets(2 * 9);
  RandomTokens(ids, 1);
  RandomTokens(targets, 2);
  model.Loss(ids, targets, 2, 9).Backward();

  int64_t trainable = 0;
  for (const auto& [name, tensor] : model.NamedParameters()) {
    const bool adapter = name.find(".lora_") != std::string::npos;
    const bool listed = name == "model.embed_tokens.weight" ||
                        name.find("norm.weight") != std::string::npos;
    EXPECT_EQ(tensor.requires_grad(), adapter || listed) << name;
    EXPECT_EQ(tensor.grad().defined(), adapter || listed) << name;
    if (tensor.requires_grad()) trainable += tensor.numel();
    if (adapter || listed) {
      const std::vector<float> grad = tensor.grad().ToVector();
      EXPECT_TRUE(std::any_of(grad.begin(), grad.end(), [](float g) {
        return g != 0.0f;
      })) << name;
    }
  }
  // r * (in + out) per projection: q 24+24, k and v 24+8, o 24+24, gate
  // and up 24+40, down 40+24; embeddings 37*24; norms (2*2+1)*24.
  const int64_t per_layer = 4 * (48 + 32 + 32 + 48 + 64 + 64 + 64);
  EXPECT_EQ(trainable, 2 * per_layer + 37 * 24 + 5 * 24);
  EXPECT_EQ(model.NumParameters(), base_parameters + 2 * per_layer);
  int64_t listed = 0;
  for (const Tensor& p : model.TrainableParameters()) listed += p.numel();
  EXPECT_EQ(listed, trainable);
}

TEST(Finetuning, TargetsAndEntriesThatMatchNothingAreErrors) {
  nn::Transformer tied(SmallConfig(/*tied=*/true), 3);
  nn::FinetuneSettings settings = AllProjections(0.0, {"lm_head"});
  ROTOR_EXPECT_ERROR(nn::SetUpFinetuning(tied, settings, 1),
                     "trainable entry 'lm_head' matches no parameter");
  nn::Transformer model(SmallConfig(/*tied=*/false), 3);
  settings = AllProjections(0.0, {});
  settings.target_modules = {"q_proj", "qkv_proj"};
  ROTOR_EXPECT_ERROR(nn::SetUpFinetuning(model, settings, 1),
                     "LoRA target module 'qkv_proj' matches no Linear layer");
}

struct Gradients {
  float loss = 0.0f;
  std::vector<std::vector<float>> grads;
};

// Loss and gradients of a frozen-embedding LoRA model with dropout: layer
// 0's input needs no gradient, so Checkpointed must record for the
// adapters' sake, and its recomputation must drop the same elements.
Gradients LoraGradients(int64_t checkpoint_every) {
  nn::Transformer model(SmallConfig(/*tied=*/false), 3);
  nn::SetUpFinetuning(model, AllProjections(0.2, {"norm"}), 4);
  PerturbAdapters(model);
  model.SetActivationCheckpointing(checkpoint_every);
  nn::SetLoraDropoutSeed(model, 9);
  std::vector<int32_t> ids(2 * 9), targets(2 * 9);
  RandomTokens(ids, 1);
  RandomTokens(targets, 2);
  Gradients out;
  const Tensor loss = model.Loss(ids, targets, 2, 9);
  loss.Backward();
  out.loss = loss.item();
  for (const Tensor& p : model.TrainableParameters()) {
    out.grads.push_back(p.grad().ToVector());
  }
  return out;
}

TEST(Finetuning, ActivationCheckpointingGivesBitwiseTheSameGradients) {
  const Gradients plain = LoraGradients(0);
  const Gradients recomputed = LoraGradients(1);
  EXPECT_EQ(plain.loss, recomputed.loss);
  ASSERT_EQ(plain.grads.size(), recomputed.grads.size());
  EXPECT_EQ(plain.grads, recomputed.grads);
}

// Merging changes each weight by s * B A rounded to float32, so the logits
// move by float32 rounding of the weights, carried through the layers.
// Measured on this model (2 layers, weights ~0.02, the adapters' B ~0.05,
// s = 2, all seven projections): max |merged - adapter| = 8.9e-8 against
// max |logit| = 0.26, i.e. about 3 float32 ulps; the bound is
// 1e-6 * max(1, max |logit|), about 8 ulps of 1.
TEST(Finetuning, MergedLogitsEqualAdapterLogitsWithinRounding) {
  nn::Transformer model(SmallConfig(/*tied=*/false), 3);
  std::vector<std::string> base_names;
  for (const auto& [name, tensor] : model.NamedParameters()) {
    base_names.push_back(name);
  }
  nn::SetUpFinetuning(model, AllProjections(0.3, {}), 4);
  PerturbAdapters(model);
  model.Eval();
  std::vector<int32_t> ids(2 * 9);
  RandomTokens(ids, 1);
  NoGradGuard no_grad;
  const std::vector<float> adapter = model.Logits(ids, 2, 9).ToVector();
  nn::MergeLora(model);
  EXPECT_EQ(nn::CountLoraLayers(model), 0);
  std::vector<std::string> merged_names;
  for (const auto& [name, tensor] : model.NamedParameters()) {
    merged_names.push_back(name);
  }
  EXPECT_EQ(merged_names, base_names);
  // The adapters ran their layers unfused; merged into the weights in place,
  // the layers run fused again (one GEMM for q, k, v and one for gate, up).
  EXPECT_TRUE(test::FusedProjectionsShareStorage(model));
  const std::vector<float> merged = model.Logits(ids, 2, 9).ToVector();
  double max_diff = 0.0, max_logit = 0.0, max_adapter_effect = 0.0;
  nn::Transformer base(SmallConfig(/*tied=*/false), 3);
  const std::vector<float> plain = base.Logits(ids, 2, 9).ToVector();
  for (size_t i = 0; i < merged.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double(merged[i]) - adapter[i]));
    max_logit = std::max(max_logit, std::fabs(double(adapter[i])));
    max_adapter_effect =
        std::max(max_adapter_effect, std::fabs(double(plain[i]) - adapter[i]));
  }
  std::ostringstream measured;
  measured << "max |merged - adapter| " << max_diff << ", max |logit| "
           << max_logit;
  RecordProperty("measured", measured.str());
  EXPECT_LE(max_diff, 1e-6 * std::max(1.0, max_logit));
  // The adapters matter: a merge that dropped them would fail above.
  EXPECT_GT(max_adapter_effect, 1e-2);
}

}  // namespace
}  // namespace rotor

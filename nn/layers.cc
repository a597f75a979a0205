#include "nn/layers.h"

#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/ops.h"

namespace rotor {
namespace nn {

namespace {

Tensor InitialWeight(const Shape& shape, double init_std, Rng* rng) {
  return rng != nullptr ? RandomNormal(shape, init_std, *rng)
                        : Tensor::Empty(shape);
}

}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, bool bias,
               double init_std, Rng* rng) {
  weight_ = RegisterParameter(
      "weight", InitialWeight({out_features, in_features}, init_std, rng));
  if (bias) bias_ = RegisterParameter("bias", Tensor::Zeros({out_features}));
}

Linear::Linear(Tensor weight, bool bias) {
  const int64_t out_features = weight.size(0);
  weight_ = RegisterParameter("weight", std::move(weight));
  if (bias) bias_ = RegisterParameter("bias", Tensor::Zeros({out_features}));
}

std::vector<Tensor> FusedWeights(const std::vector<int64_t>& rows,
                                 int64_t in_features, double init_std,
                                 Rng* rng) {
  int64_t total = 0;
  for (const int64_t r : rows) total += r;
  const Tensor fused = InitialWeight({total, in_features}, init_std, rng);
  std::vector<Tensor> weights;
  int64_t start = 0;
  for (const int64_t r : rows) {
    weights.push_back(
        fused.ViewAs({r, in_features}, {in_features, 1}, start * in_features));
    start += r;
  }
  return weights;
}

Tensor FusedLinearForward(const std::vector<const Linear*>& layers,
                          const Tensor& x) {
  std::vector<Tensor> weights, biases;
  for (const Linear* layer : layers) {
    ROTOR_CHECK(!layer->has_lora(), "FusedLinearForward: a layer has a LoRA ",
                "adapter (run it on its own)");
    weights.push_back(layer->weight());
    if (layer->bias().defined()) biases.push_back(layer->bias());
  }
  ROTOR_CHECK(biases.empty() || biases.size() == layers.size(),
              "FusedLinearForward: ", biases.size(), " of ", layers.size(),
              " layers have a bias (need all or none)");
  return FusedLinear(x, weights, biases);
}

Tensor Linear::Forward(const Tensor& x) const {
  const Tensor base = rotor::Linear(x, weight_, bias_);
  if (!has_lora()) return base;
  const Tensor input = training() && lora_dropout_ > 0.0f
                           ? Dropout(x, lora_dropout_, lora_dropout_seed_)
                           : x;
  // s is applied to the narrow [..., r] product, the cheapest place.
  const Tensor down = Mul(rotor::Linear(input, lora_a_), lora_scale_);
  return Add(base, rotor::Linear(down, lora_b_));
}

void Linear::EnableLora(const LoraSettings& settings, Rng& rng) {
  ROTOR_CHECK(!has_lora(), "Linear::EnableLora: the layer already has an ",
              "adapter");
  ROTOR_CHECK(settings.rank >= 1 && settings.alpha > 0.0 &&
                  settings.dropout >= 0.0 && settings.dropout < 1.0,
              "Linear::EnableLora: rank ", settings.rank, ", alpha ",
              settings.alpha, ", dropout ", settings.dropout,
              ": expected rank >= 1, alpha > 0 and dropout in [0, 1)");
  const int64_t out_features = weight_.size(0);
  const int64_t in_features = weight_.size(1);
  Tensor a = Tensor::Empty({settings.rank, in_features});
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  float* values = a.data();
  for (int64_t i = 0; i < a.numel(); ++i) {
    values[i] = static_cast<float>((2.0 * rng.Uniform() - 1.0) * bound);
  }
  lora_a_ = RegisterParameter("lora_A.weight", a);
  lora_b_ = RegisterParameter("lora_B.weight",
                              Tensor::Zeros({out_features, settings.rank}));
  lora_scale_ =
      static_cast<float>(settings.alpha / static_cast<double>(settings.rank));
  lora_dropout_ = static_cast<float>(settings.dropout);
}

void Linear::MergeLora() {
  ROTOR_CHECK(has_lora(), "Linear::MergeLora: the layer has no adapter");
  NoGradGuard no_grad;
  const Tensor delta = MatMul(lora_b_, lora_a_);  // [out, in]
  ROTOR_CHECK(weight_.is_contiguous(), "Linear::MergeLora: the weight is not ",
              "contiguous");
  float* weight = weight_.data();
  const float* update = delta.data();
  for (int64_t i = 0; i < weight_.numel(); ++i) {
    weight[i] += lora_scale_ * update[i];
  }
  RemoveParameter("lora_A.weight");
  RemoveParameter("lora_B.weight");
  lora_a_ = Tensor();
  lora_b_ = Tensor();
}

Embedding::Embedding(int64_t vocab_size, int64_t dim, double init_std,
                     Rng* rng) {
  weight_ = RegisterParameter("weight",
                              InitialWeight({vocab_size, dim}, init_std, rng));
}

Tensor Embedding::Forward(const std::vector<int32_t>& ids,
                          const Shape& ids_shape) const {
  return rotor::Embedding(weight_, ids, ids_shape);
}

RmsNorm::RmsNorm(int64_t dim, float eps) : eps_(eps) {
  weight_ = RegisterParameter("weight", Tensor::Ones({dim}));
}

Tensor RmsNorm::Forward(const Tensor& x) const {
  return rotor::RmsNorm(x, weight_, eps_);
}

std::pair<Tensor, Tensor> RmsNorm::AddForward(const Tensor& x,
                                              const Tensor& residual) const {
  return rotor::AddRmsNorm(x, residual, weight_, eps_);
}

SwiGluMlp::SwiGluMlp(int64_t hidden, int64_t intermediate, bool bias,
                     double init_std, double output_init_std, bool fused,
                     Rng* rng)
    : SwiGluMlp(
          FusedWeights({intermediate, intermediate}, hidden, init_std, rng),
          hidden, bias, output_init_std, fused, rng) {}

SwiGluMlp::SwiGluMlp(std::vector<Tensor> gate_up, int64_t hidden, bool bias,
                     double output_init_std, bool fused, Rng* rng)
    : fused_(fused),
      gate_proj_(RegisterModule(
          "gate_proj", std::make_unique<Linear>(std::move(gate_up[0]), bias))),
      up_proj_(RegisterModule(
          "up_proj", std::make_unique<Linear>(std::move(gate_up[1]), bias))),
      down_proj_(RegisterModule(
          "down_proj",
          std::make_unique<Linear>(up_proj_.weight().size(0), hidden, bias,
                                   output_init_std, rng))) {}

Tensor SwiGluMlp::Forward(const Tensor& x) const {
  if (!fused_ || gate_proj_.has_lora() || up_proj_.has_lora()) {
    return down_proj_.Forward(
        SwiGlu(gate_proj_.Forward(x), up_proj_.Forward(x)));
  }
  return down_proj_.Forward(
      SwiGlu(FusedLinearForward({&gate_proj_, &up_proj_}, x)));
}

}  // namespace nn
}  // namespace rotor

#include "nn/layers.h"

#include <memory>

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

Tensor Linear::Forward(const Tensor& x) const {
  return rotor::Linear(x, weight_, bias_);
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

SwiGluMlp::SwiGluMlp(int64_t hidden, int64_t intermediate, bool bias,
                     double init_std, double output_init_std, Rng* rng)
    : gate_proj_(RegisterModule(
          "gate_proj", std::make_unique<Linear>(hidden, intermediate, bias,
                                                init_std, rng))),
      up_proj_(RegisterModule(
          "up_proj", std::make_unique<Linear>(hidden, intermediate, bias,
                                              init_std, rng))),
      down_proj_(RegisterModule(
          "down_proj", std::make_unique<Linear>(intermediate, hidden, bias,
                                                output_init_std, rng))) {}

Tensor SwiGluMlp::Forward(const Tensor& x) const {
  return down_proj_.Forward(SwiGlu(gate_proj_.Forward(x), up_proj_.Forward(x)));
}

}  // namespace nn
}  // namespace rotor

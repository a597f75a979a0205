#include "train/optimizer.h"

#include <cmath>

#include "core/error.h"
#include "core/kernels/adamw.h"
#include "core/kernels/vector_ops.h"

namespace rotor {

AdamW::AdamW(std::vector<std::pair<std::string, Tensor>> parameters,
             AdamWSettings settings)
    : parameters_(std::move(parameters)), settings_(settings) {
  for (const auto& [name, tensor] : parameters_) {
    ROTOR_CHECK(tensor.is_contiguous(), "AdamW: parameter ", name,
                " is not contiguous");
    m_.push_back(Tensor::Zeros(tensor.shape()));
    v_.push_back(Tensor::Zeros(tensor.shape()));
    const bool is_embedding = name.find("embed") != std::string::npos;
    decay_.push_back(tensor.dim() >= 2 && !is_embedding);
  }
}

void AdamW::Step(double lr) {
  ++step_;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Tensor& param = parameters_[i].second;
    const Tensor& grad = param.grad();
    if (!grad.defined()) continue;
    kernels::AdamWHyperparams hyper;
    hyper.lr = static_cast<float>(lr);
    hyper.beta1 = static_cast<float>(settings_.beta1);
    hyper.beta2 = static_cast<float>(settings_.beta2);
    hyper.eps = static_cast<float>(settings_.eps);
    hyper.weight_decay =
        decay_[i] ? static_cast<float>(settings_.weight_decay) : 0.0f;
    kernels::AdamWUpdate(param.data(), grad.data(), m_[i].data(), v_[i].data(),
                         param.numel(), hyper, step_);
  }
}

double GlobalGradNorm(const std::vector<Tensor>& parameters) {
  double sum = 0.0;
  for (const Tensor& param : parameters) {
    const Tensor& grad = param.grad();
    if (!grad.defined()) continue;
    const float* g = grad.data();
    for (int64_t i = 0; i < grad.numel(); ++i) sum += double(g[i]) * g[i];
  }
  return std::sqrt(sum);
}

double ClipGradNorm(const std::vector<Tensor>& parameters, double max_norm) {
  const double norm = GlobalGradNorm(parameters);
  if (max_norm > 0.0 && norm > max_norm) {
    const float scale = static_cast<float>(max_norm / (norm + 1e-6));
    for (const Tensor& param : parameters) {
      Tensor grad = param.grad();
      if (grad.defined()) kernels::Scale(scale, grad.data(), grad.numel());
    }
  }
  return norm;
}

}  // namespace rotor

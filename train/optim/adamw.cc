#include "train/optim/adamw.h"

#include <cmath>

#include "core/error.h"
#include "core/kernels/adamw.h"
#include "core/kernels/vector_ops.h"
#include "core/profile.h"

namespace rotor::train {

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
  profile::Scope scope(profile::Phase::kOptimizer);
  ++step_;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Tensor& param = parameters_[i].second;
    const Tensor& grad = param.grad();
    if (!grad.defined() || !owns(i)) continue;
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

void AdamW::ShardMoments(const std::vector<bool>& owned) {
  ROTOR_CHECK(owned.size() == parameters_.size(), "AdamW: ", owned.size(),
              " ownership flags for ", parameters_.size(), " parameters");
  owned_ = owned;
  for (size_t i = 0; i < owned.size(); ++i) {
    if (!owned[i]) m_[i] = v_[i] = Tensor();
  }
}

// sqrt(sum of g^2 over every gradient element), accumulated in double. Four
// independent partial sums (fixed order, so the same bits every run) let
// the multiply-adds overlap instead of waiting on one another.
double GlobalGradNorm(const std::vector<Tensor>& parameters) {
  double partial[4] = {0.0, 0.0, 0.0, 0.0};
  double tail = 0.0;
  for (const Tensor& param : parameters) {
    const Tensor& grad = param.grad();
    if (!grad.defined()) continue;
    const float* g = grad.data();
    const int64_t n = grad.numel();
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      for (int j = 0; j < 4; ++j) {
        partial[j] += static_cast<double>(g[i + j]) * g[i + j];
      }
    }
    for (; i < n; ++i) tail += static_cast<double>(g[i]) * g[i];
  }
  return std::sqrt((partial[0] + partial[1]) + (partial[2] + partial[3]) +
                   tail);
}

double ClipGradNorm(const std::vector<Tensor>& parameters, double max_norm) {
  profile::Scope scope(profile::Phase::kOptimizer);
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

}  // namespace rotor::train

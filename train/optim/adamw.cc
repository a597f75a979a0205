#include "train/optim/adamw.h"

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/kernels/adamw.h"
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

void AdamW::Step(double lr, float grad_scale) {
  profile::Scope scope(profile::Phase::kOptimizer);
  ++step_;
  std::vector<kernels::AdamWSegment> segments;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Tensor& param = parameters_[i].second;
    const Tensor& grad = param.grad();
    if (!grad.defined() || !owns(i)) continue;
    segments.push_back({param.data(), grad.data(), m_[i].data(), v_[i].data(),
                        static_cast<size_t>(param.numel()), decay_[i]});
  }
  kernels::AdamWHyperparams hyper;
  hyper.lr = static_cast<float>(lr);
  hyper.beta1 = static_cast<float>(settings_.beta1);
  hyper.beta2 = static_cast<float>(settings_.beta2);
  hyper.eps = static_cast<float>(settings_.eps);
  hyper.weight_decay = static_cast<float>(settings_.weight_decay);
  hyper.grad_scale = grad_scale;
  kernels::AdamWUpdate(segments.data(), segments.size(), hyper, step_);
}

void AdamW::ShardMoments(const std::vector<bool>& owned) {
  ROTOR_CHECK(owned.size() == parameters_.size(), "AdamW: ", owned.size(),
              " ownership flags for ", parameters_.size(), " parameters");
  owned_ = owned;
  for (size_t i = 0; i < owned.size(); ++i) {
    if (!owned[i]) m_[i] = v_[i] = Tensor();
  }
}

double GlobalGradNorm(const std::vector<Tensor>& parameters) {
  profile::Scope scope(profile::Phase::kOptimizer);
  std::vector<kernels::FloatSpan> grads;
  for (const Tensor& param : parameters) {
    const Tensor& grad = param.grad();
    if (grad.defined()) {
      grads.push_back({grad.data(), static_cast<size_t>(grad.numel())});
    }
  }
  return std::sqrt(kernels::SumOfSquaresOfSpans(grads.data(), grads.size()));
}

float ClipScale(double norm, double max_norm) {
  if (max_norm > 0.0 && norm > max_norm) {
    return static_cast<float>(max_norm / (norm + 1e-6));
  }
  return 1.0f;
}

}  // namespace rotor::train

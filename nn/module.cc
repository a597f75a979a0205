#include "nn/module.h"

namespace rotor {
namespace nn {

Tensor& Module::RegisterParameter(const std::string& name, Tensor value) {
  value.set_requires_grad(true);
  parameters_.emplace_back(name, std::move(value));
  return parameters_.back().second;
}

void Module::CollectParameters(
    const std::string& prefix,
    std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, tensor] : parameters_) {
    out.emplace_back(prefix + name, tensor);
  }
  for (const auto& [name, child] : children_) {
    child->CollectParameters(prefix + name + ".", out);
  }
}

std::vector<std::pair<std::string, Tensor>> Module::NamedParameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  CollectParameters("", out);
  return out;
}

std::vector<Tensor> Module::Parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, tensor] : NamedParameters()) out.push_back(tensor);
  return out;
}

int64_t Module::NumParameters() const {
  int64_t count = 0;
  for (const Tensor& tensor : Parameters()) count += tensor.numel();
  return count;
}

void Module::ZeroGrad() {
  for (Tensor tensor : Parameters()) tensor.ZeroGrad();
}

void Module::Train(bool training) {
  training_ = training;
  for (auto& [name, child] : children_) child->Train(training);
}

}  // namespace nn
}  // namespace rotor

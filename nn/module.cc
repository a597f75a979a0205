#include "nn/module.h"

#include <algorithm>

#include "core/error.h"

namespace rotor {
namespace nn {

Tensor& Module::RegisterParameter(const std::string& name, Tensor value) {
  value.set_requires_grad(true);
  parameters_.emplace_back(name, std::move(value));
  return parameters_.back().second;
}

void Module::RemoveParameter(const std::string& name) {
  const auto found =
      std::find_if(parameters_.begin(), parameters_.end(),
                   [&name](const auto& entry) { return entry.first == name; });
  ROTOR_CHECK(found != parameters_.end(), "Module::RemoveParameter: no ",
              "parameter named ", name);
  parameters_.erase(found);
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

std::vector<std::pair<std::string, Tensor>> Module::NamedTrainableParameters()
    const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& entry : NamedParameters()) {
    if (entry.second.requires_grad()) out.push_back(std::move(entry));
  }
  return out;
}

std::vector<Tensor> Module::TrainableParameters() const {
  std::vector<Tensor> out;
  for (auto& [name, tensor] : NamedTrainableParameters()) out.push_back(tensor);
  return out;
}

namespace {

int64_t CountElements(const std::vector<Tensor>& tensors) {
  int64_t count = 0;
  for (const Tensor& tensor : tensors) count += tensor.numel();
  return count;
}

}  // namespace

int64_t Module::NumParameters() const { return CountElements(Parameters()); }

int64_t Module::NumTrainableParameters() const {
  return CountElements(TrainableParameters());
}

void Module::ZeroGrad() {
  for (Tensor tensor : Parameters()) tensor.ZeroGrad();
}

void Module::Train(bool training) {
  training_ = training;
  for (auto& [name, child] : children_) child->Train(training);
}

void Module::ForEachModule(
    const std::function<void(const std::string&, Module&)>& visit) {
  VisitModules("", visit);
}

void Module::VisitModules(
    const std::string& path,
    const std::function<void(const std::string&, Module&)>& visit) {
  visit(path, *this);
  for (auto& [name, child] : children_) {
    child->VisitModules(path.empty() ? name : path + "." + name, visit);
  }
}

}  // namespace nn
}  // namespace rotor

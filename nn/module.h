// Module: the base of rotor's layers. A module owns named parameters (leaf
// tensors with requires_grad) and named child modules, and has a train/eval
// mode that its children follow.
//
// Parameter names are dotted paths built from the registration names, e.g.
// "model.layers.0.self_attn.q_proj.weight" — the Hugging Face Llama names, so
// rotor's safetensors checkpoints read like theirs.
#ifndef ROTOR_NN_MODULE_H_
#define ROTOR_NN_MODULE_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace rotor {
namespace nn {

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Every parameter of this module and its children, depth first in
  // registration order, with its dotted name.
  std::vector<std::pair<std::string, Tensor>> NamedParameters() const;
  std::vector<Tensor> Parameters() const;
  int64_t NumParameters() const;
  // The parameters that require grad (all of them unless some were frozen,
  // as fine-tuning does: nn/lora.h), in the same order.
  std::vector<std::pair<std::string, Tensor>> NamedTrainableParameters() const;
  std::vector<Tensor> TrainableParameters() const;
  int64_t NumTrainableParameters() const;
  // Sets every parameter's gradient to zero (keeps the buffers).
  void ZeroGrad();

  // Training mode (dropout active, ...) is the default; Eval() switches this
  // module and all children to evaluation mode.
  void Train(bool training = true);
  void Eval() { Train(false); }
  bool training() const { return training_; }

  // Calls visit(path, module) for this module (path "") and every
  // descendant ("model.layers.0.self_attn.q_proj"), depth first in
  // registration order.
  void ForEachModule(const std::function<void(const std::string& path,
                                              Module& module)>& visit);

 protected:
  // Registers a parameter; marks it requires_grad. Returns the stored handle.
  Tensor& RegisterParameter(const std::string& name, Tensor value);
  // Forgets a parameter registered under `name` (it must exist).
  void RemoveParameter(const std::string& name);
  // Registers a child; the module keeps ownership. Returns the child.
  template <typename M>
  M& RegisterModule(const std::string& name, std::unique_ptr<M> child) {
    M& ref = *child;
    children_.emplace_back(name, std::move(child));
    return ref;
  }

 private:
  void VisitModules(
      const std::string& path,
      const std::function<void(const std::string&, Module&)>& visit);
  void CollectParameters(
      const std::string& prefix,
      std::vector<std::pair<std::string, Tensor>>& out) const;

  bool training_ = true;
  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, std::unique_ptr<Module>>> children_;
};

}  // namespace nn
}  // namespace rotor

#endif  // ROTOR_NN_MODULE_H_

// AdamW over a model's parameters, with PyTorch's update rule (the fused
// Highway kernel in core/kernels/adamw.h) and decoupled weight decay applied
// only to weight matrices: parameters with fewer than 2 dimensions (norm
// weights, biases) and embedding tables are not decayed, as in nanoGPT and
// most Llama recipes.
//
// Also: the global gradient norm, computed in a fixed order in double so it
// is bitwise reproducible, and clipping, folded into the update as a factor
// on the gradients (no pass that rescales them in memory). Each of the two
// is one kernel call over every parameter (core/kernels/adamw.h).
#ifndef ROTOR_TRAIN_OPTIM_ADAMW_H_
#define ROTOR_TRAIN_OPTIM_ADAMW_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace rotor::train {

struct AdamWSettings {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
};

class AdamW {
 public:
  // `parameters`: (name, tensor) pairs, e.g. Module::NamedParameters().
  AdamW(std::vector<std::pair<std::string, Tensor>> parameters,
        AdamWSettings settings);

  // One update with learning rate `lr` from the parameters' current
  // .grad() times grad_scale (ClipScale); parameters without a gradient, and
  // those this process does not own (ShardMoments), are skipped. Increments
  // step().
  void Step(double lr, float grad_scale = 1.0f);

  // ZeRO stage 1 (docs/distributed.md): this process updates only the
  // parameters i with owned[i] and keeps only their moments; the others'
  // are freed (undefined tensors). Restore a full set (a checkpoint) by
  // assigning tensors to first_moments()[i] and second_moments()[i].
  void ShardMoments(const std::vector<bool>& owned);
  bool owns(size_t i) const { return owned_.empty() || owned_[i]; }

  int64_t step() const { return step_; }
  void set_step(int64_t step) { step_ = step; }
  bool decays(size_t i) const { return decay_[i]; }

  // The moments, one per parameter, in the parameters' order (for
  // checkpoints: restore by copying into them).
  const std::vector<std::pair<std::string, Tensor>>& parameters() const {
    return parameters_;
  }
  std::vector<Tensor>& first_moments() { return m_; }
  std::vector<Tensor>& second_moments() { return v_; }

 private:
  std::vector<std::pair<std::string, Tensor>> parameters_;
  AdamWSettings settings_;
  std::vector<Tensor> m_;
  std::vector<Tensor> v_;
  std::vector<bool> decay_;
  std::vector<bool> owned_;  // empty: every parameter
  int64_t step_ = 0;
};

// sqrt(sum of squares of every gradient), summed in double in parameter order.
double GlobalGradNorm(const std::vector<Tensor>& parameters);

// The factor PyTorch's clip_grad_norm_ scales every gradient by, for the
// global norm `norm`: max_norm / (norm + 1e-6) when max_norm > 0 and
// norm > max_norm, else 1. AdamW::Step applies it.
float ClipScale(double norm, double max_norm);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_OPTIM_ADAMW_H_

// Checks that a model's fused projections still share their storage
// (nn/layers.h FusedWeights): in every layer, k_proj's weight starts where
// q_proj's ends and v_proj's where k_proj's ends, and up_proj's where
// gate_proj's ends. A loader that replaced a weight tensor instead of
// writing into it would break this, and with it the one-GEMM forward.
#ifndef ROTOR_TESTS_NN_FUSED_STORAGE_H_
#define ROTOR_TESTS_NN_FUSED_STORAGE_H_

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "nn/module.h"

namespace rotor {
namespace test {

inline ::testing::AssertionResult FusedProjectionsShareStorage(
    const nn::Module& model) {
  std::map<std::string, Tensor> parameters;
  for (const auto& [name, tensor] : model.NamedParameters()) {
    parameters.emplace(name, tensor);
  }
  const std::vector<std::vector<std::string>> groups = {
      {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
      {"mlp.gate_proj", "mlp.up_proj"}};
  int64_t checked = 0;
  for (const auto& [name, first] : parameters) {
    for (const std::vector<std::string>& group : groups) {
      const std::string suffix = group[0] + ".weight";
      if (name.size() < suffix.size() ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) !=
              0) {
        continue;
      }
      const std::string prefix = name.substr(0, name.size() - suffix.size());
      const float* end = first.data() + first.numel();
      for (size_t i = 1; i < group.size(); ++i) {
        const Tensor& next = parameters.at(prefix + group[i] + ".weight");
        if (next.data() != end) {
          return ::testing::AssertionFailure()
                 << prefix << group[i] << ".weight does not follow " << prefix
                 << group[i - 1] << ".weight in one storage";
        }
        end = next.data() + next.numel();
      }
      ++checked;
    }
  }
  if (checked == 0) {
    return ::testing::AssertionFailure() << "no fused projections found";
  }
  return ::testing::AssertionSuccess() << checked << " groups share storage";
}

}  // namespace test
}  // namespace rotor

#endif  // ROTOR_TESTS_NN_FUSED_STORAGE_H_

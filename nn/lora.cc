#include "nn/lora.h"

#include <functional>
#include <map>

#include "core/error.h"
#include "core/random.h"

namespace rotor {
namespace nn {

namespace {

// The last part of a dotted module path ("model.layers.0.self_attn.q_proj"
// -> "q_proj").
std::string OwnName(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

void ForEachLoraLinear(Module& model, const std::function<void(Linear&)>& fn) {
  model.ForEachModule([&fn](const std::string&, Module& module) {
    auto* linear = dynamic_cast<Linear*>(&module);
    if (linear != nullptr && linear->has_lora()) fn(*linear);
  });
}

// Makes the parameters `entry` names (see the header) trainable; returns
// how many it matched.
int64_t MakeTrainable(Module& model, const std::string& entry) {
  int64_t matched = 0;
  model.ForEachModule([&](const std::string& path, Module& module) {
    const bool named = entry == "norm"
                           ? dynamic_cast<RmsNorm*>(&module) != nullptr
                           : OwnName(path) == entry;
    if (!named) return;
    // The module's own parameters: their names have no further dot, or are
    // an adapter's (lora_A.weight), which are trainable already.
    for (auto& [name, tensor] : module.NamedParameters()) {
      if (name.find('.') != std::string::npos) continue;
      tensor.set_requires_grad(true);
      ++matched;
    }
  });
  return matched;
}

}  // namespace

void SetUpFinetuning(Module& model, const FinetuneSettings& settings,
                     uint64_t seed) {
  for (auto& [name, tensor] : model.NamedParameters()) {
    tensor.set_requires_grad(false);
  }
  if (settings.lora) {
    Rng rng(seed);
    std::map<std::string, int64_t> matched;
    for (const std::string& target : settings.target_modules) {
      matched[target] = 0;
    }
    model.ForEachModule([&](const std::string& path, Module& module) {
      auto* linear = dynamic_cast<Linear*>(&module);
      const auto target = matched.find(OwnName(path));
      if (linear == nullptr || target == matched.end()) return;
      linear->EnableLora(settings.lora_settings, rng);
      ++target->second;
    });
    for (const auto& [target, count] : matched) {
      ROTOR_CHECK(count > 0, "LoRA target module '", target,
                  "' matches no Linear layer of the model");
    }
  }
  for (const std::string& entry : settings.trainable) {
    ROTOR_CHECK(MakeTrainable(model, entry) > 0, "trainable entry '", entry,
                "' matches no parameter of the model");
  }
}

void SetLoraDropoutSeed(Module& model, uint64_t seed) {
  Rng rng(seed);
  ForEachLoraLinear(model, [&rng](Linear& linear) {
    linear.set_lora_dropout_seed(rng.NextU64());
  });
}

int64_t CountLoraLayers(Module& model) {
  int64_t count = 0;
  ForEachLoraLinear(model, [&count](Linear&) { ++count; });
  return count;
}

void MergeLora(Module& model) {
  ForEachLoraLinear(model, [](Linear& linear) { linear.MergeLora(); });
}

}  // namespace nn
}  // namespace rotor

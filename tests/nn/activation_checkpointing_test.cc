// Activation checkpointing (core/autograd.h Checkpointed,
// nn::Transformer::SetActivationCheckpointing): the gradients of every
// parameter, and the loss, are bitwise those of the run without it, at one
// thread and at two, for every layer and for every second layer, with
// gradient accumulation over two micro-batches, with biases and grouped
// queries; and a frozen input still gives its function's parameters their
// gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/ops/ops.h"
#include "core/random.h"
#include "nn/transformer.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

nn::TransformerConfig Config() {
  nn::TransformerConfig config;
  config.vocab_size = 37;
  config.hidden_size = 24;
  config.intermediate_size = 40;
  config.num_hidden_layers = 4;
  config.num_attention_heads = 6;
  config.num_key_value_heads = 2;
  config.head_dim = 4;
  config.qkv_bias = true;
  config.o_proj_bias = true;
  config.rope.head_dim = 4;
  config.rope.max_position_embeddings = 64;
  return config;
}

struct Result {
  std::vector<float> losses;
  std::vector<std::vector<float>> grads;
};

// Two micro-batches of loss + backward into the same gradients, with
// checkpointing every `every_k` layers (0: none).
Result TrainTwoMicroBatches(int64_t every_k, int threads) {
  test::ThreadCountGuard thread_count(threads);
  nn::Transformer model(Config(), 7);
  model.SetActivationCheckpointing(every_k);
  Result result;
  Rng rng(3);
  for (int micro = 0; micro < 2; ++micro) {
    std::vector<int32_t> ids(2 * 33), targets(2 * 33);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng.Below(37));
    for (int32_t& id : targets) id = static_cast<int32_t>(rng.Below(37));
    const Tensor loss = model.Loss(ids, targets, 2, 33);
    result.losses.push_back(loss.item());
    loss.Backward();
  }
  for (const auto& [name, parameter] : model.NamedParameters()) {
    const Tensor& grad = parameter.grad();
    EXPECT_TRUE(grad.defined()) << name;
    result.grads.emplace_back(grad.data(), grad.data() + grad.numel());
  }
  return result;
}

void ExpectBitwiseEqual(const Result& a, const Result& b) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) {
    EXPECT_EQ(0, std::memcmp(&a.losses[i], &b.losses[i], sizeof(float)));
  }
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    ASSERT_EQ(a.grads[i].size(), b.grads[i].size());
    EXPECT_EQ(0, std::memcmp(a.grads[i].data(), b.grads[i].data(),
                             a.grads[i].size() * sizeof(float)))
        << "parameter " << i;
  }
}

TEST(ActivationCheckpointing, GradientsAreBitwiseTheSameAtOneAndTwoThreads) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    const Result plain = TrainTwoMicroBatches(0, threads);
    ExpectBitwiseEqual(plain, TrainTwoMicroBatches(1, threads));
    ExpectBitwiseEqual(plain, TrainTwoMicroBatches(2, threads));
  }
}

TEST(ActivationCheckpointing, RecordsOneNodePerCheckpointedLayer) {
  nn::Transformer model(Config(), 7);
  model.SetActivationCheckpointing(1);
  const std::vector<int32_t> ids(8, 1);
  const Tensor logits = model.Logits(ids, 1, 8);
  // Walk the graph from the logits: every decoder layer is one
  // "Checkpointed" node, and no op of a layer's inside is recorded.
  int checkpointed = 0, rms_norms = 0;
  std::vector<const Node*> stack = {logits.grad_fn().get()};
  std::vector<const Node*> seen;
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    if (node == nullptr ||
        std::find(seen.begin(), seen.end(), node) != seen.end()) {
      continue;
    }
    seen.push_back(node);
    checkpointed += node->name() == "Checkpointed";
    rms_norms += node->name() == "RmsNorm";
    for (const Tensor& input : node->inputs()) {
      if (input.defined()) stack.push_back(input.grad_fn().get());
    }
  }
  EXPECT_EQ(checkpointed, 4);
  EXPECT_EQ(rms_norms, 1);  // the final norm only
}

// With x frozen, fn's own parameter still gets the gradient it would get
// without checkpointing; with x trainable, x's too.
TEST(Checkpointed, GivesTheGradientsOfTheFunctionAlone) {
  Rng rng(5);
  for (bool x_trainable : {false, true}) {
    SCOPED_TRACE(x_trainable);
    Tensor x = RandomNormal({3, 4}, 1.0, rng);
    x.set_requires_grad(x_trainable);
    Tensor w = RandomNormal({5, 4}, 1.0, rng, /*requires_grad=*/true);
    const auto fn = [&w](const Tensor& input) {
      return Sum(Mul(Linear(input, w, Tensor()), Linear(input, w, Tensor())));
    };
    fn(x).Backward();
    const std::vector<float> w_grad(w.grad().data(),
                                    w.grad().data() + w.grad().numel());
    std::vector<float> x_grad;
    if (x_trainable) {
      x_grad.assign(x.grad().data(), x.grad().data() + x.grad().numel());
      x.mutable_grad() = Tensor();
    }
    w.mutable_grad() = Tensor();

    Checkpointed(fn, x, {w}).Backward();
    EXPECT_EQ(0, std::memcmp(w_grad.data(), w.grad().data(),
                             w_grad.size() * sizeof(float)));
    if (x_trainable) {
      EXPECT_EQ(0, std::memcmp(x_grad.data(), x.grad().data(),
                               x_grad.size() * sizeof(float)));
    } else {
      EXPECT_FALSE(x.grad().defined());
    }
  }
}

}  // namespace
}  // namespace rotor

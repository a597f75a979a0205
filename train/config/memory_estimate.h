// A lower bound of the memory a model and a training step need, computed
// from the config before anything is allocated, so that a run that cannot
// fit is refused with a message naming the keys that make it large, instead
// of failing mid-allocation. With 4-byte floats, N = batch_size * seq_len
// tokens per micro-batch, L layers, H hidden_size, I intermediate_size,
// V vocab_size, h and g attention and key-value heads of head_dim D:
//
//   parameters P   = V*H (+ H*V untied) + L*(2*H*h*D + 2*H*g*D + 3*H*I + 2*H)
//                    + H
//   model state    = 4 * 4P bytes: weights, gradients, AdamW's two moments;
//                    fine-tuning with a frozen base (finetune:) keeps 4P
//                    of weights plus 4A of adapters, and gradients and
//                    moments only for the T trainable ones: 4 * (P + A) +
//                    12T bytes, T = A + the parameters trained in full.
//                    A = L * r * sum over the targeted projections of
//                    (in + out), e.g. r * (H + h*D) for q_proj
//   activations    = 4 * (N * (L*(4H + 2hD + 2gD + 3I) + H) + min(N, R) * V)
//                    bytes: what the backward pass keeps of one
//                    micro-batch: per layer the two norms' inputs and
//                    outputs, q, k, v, the attention output, gate, up and
//                    their product; then the final norm's input, and one
//                    chunk of R = loss_chunk_rows rows of logits (attention
//                    keeps O(T) per head, never T x T). With activation
//                    checkpointing
//                    every K layers, the C = ceil(L/K) checkpointed layers
//                    keep H each instead, plus one layer's worth while
//                    backward recomputes them one at a time
//   token batches  = 2 * 4 * N * gradient_accumulation_steps bytes: the
//                    inputs and targets of every micro-batch of a step
//
// It counts only the largest tensors, so a refused run cannot fit; a run
// that passes may still need more (temporaries, the buffer pool's cache),
// and then stops with an out-of-memory error. Computed in double: the
// estimate of an absurd config does not overflow.
#ifndef ROTOR_TRAIN_CONFIG_MEMORY_ESTIMATE_H_
#define ROTOR_TRAIN_CONFIG_MEMORY_ESTIMATE_H_

#include <string>

#include "nn/transformer.h"
#include "train/config/train_config.h"

namespace rotor::train {

struct MemoryEstimate {
  double model_state_bytes = 0.0;
  double activation_bytes = 0.0;
  double batch_bytes = 0.0;
  double total() const {
    return model_state_bytes + activation_bytes + batch_bytes;
  }
};

// P above.
double ParameterCount(const nn::TransformerConfig& model);
// A above (0 without finetune.lora).
double LoraParameterCount(const nn::TransformerConfig& model,
                          const FinetuneSection& finetune);
// The parameters that get gradients and AdamW moments: P without a frozen
// base, else T above.
double TrainableParameterCount(const nn::TransformerConfig& model,
                               const FinetuneSection& finetune);

MemoryEstimate EstimateTrainingMemory(const nn::TransformerConfig& model,
                                      const TrainSection& train,
                                      const FinetuneSection& finetune = {});

// Throws rotor::Error if EstimateTrainingMemory exceeds UsableMemory()
// (core/memory_limit.h): "FILE: this run needs at least X of memory, more
// than the Y left under LIMIT: model state ... (model.hidden_size 65536,
// ...), activations ... (train.batch_size 8, ...), ...".
void CheckTrainingFitsInMemory(const TrainConfig& config,
                               const nn::TransformerConfig& model);

// For eval and generate: throws if the weights alone (4P bytes) exceed
// UsableMemory(); `what` names the model ("checkpoint DIR").
void CheckModelFitsInMemory(const nn::TransformerConfig& model,
                            const std::string& what);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_MEMORY_ESTIMATE_H_

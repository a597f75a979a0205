#include "train/config/memory_estimate.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/memory_limit.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {
namespace {

constexpr double kFloatBytes = 4.0;

// "model.vocab_size 257, model.hidden_size 32, ..."
std::string ModelSizeKeys(const nn::TransformerConfig& model) {
  return StrCat("model.vocab_size ", model.vocab_size, ", model.hidden_size ",
                model.hidden_size, ", model.intermediate_size ",
                model.intermediate_size, ", model.num_hidden_layers ",
                model.num_hidden_layers, ", model.num_attention_heads ",
                model.num_attention_heads, ", model.num_key_value_heads ",
                model.num_key_value_heads, ", model.head_dim ", model.head_dim);
}

}  // namespace

double ParameterCount(const nn::TransformerConfig& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double embedding = static_cast<double>(m.vocab_size) * h;
  const double attention =
      2.0 * h * static_cast<double>(m.num_attention_heads * m.head_dim) +
      2.0 * h * static_cast<double>(m.num_key_value_heads * m.head_dim);
  const double layer =
      attention + 3.0 * h * static_cast<double>(m.intermediate_size) + 2.0 * h;
  return embedding * (m.tie_word_embeddings ? 1.0 : 2.0) +
         static_cast<double>(m.num_hidden_layers) * layer + h;
}

double LoraParameterCount(const nn::TransformerConfig& m,
                          const FinetuneSection& finetune) {
  if (!finetune.lora.enabled) return 0.0;
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_attention_heads * m.head_dim);
  const double kv = static_cast<double>(m.num_key_value_heads * m.head_dim);
  const double i = static_cast<double>(m.intermediate_size);
  double per_layer = 0.0;  // sum of in + out over the targets
  for (const std::string& target : finetune.lora.target_modules) {
    per_layer += target == "q_proj" || target == "o_proj"   ? h + q
                 : target == "k_proj" || target == "v_proj" ? h + kv
                                                            : h + i;
  }
  return static_cast<double>(m.num_hidden_layers) *
         static_cast<double>(finetune.lora.r) * per_layer;
}

double TrainableParameterCount(const nn::TransformerConfig& m,
                               const FinetuneSection& finetune) {
  if (!finetune.freezes_base()) return ParameterCount(m);
  const double h = static_cast<double>(m.hidden_size);
  const double table = static_cast<double>(m.vocab_size) * h;
  double count = LoraParameterCount(m, finetune);
  for (const std::string& entry : finetune.trainable) {
    if (entry == "norm") {
      count += (2.0 * static_cast<double>(m.num_hidden_layers) + 1.0) * h;
    } else if (entry == "embed_tokens" ||
               (entry == "lm_head" && !m.tie_word_embeddings)) {
      count += table;
    }
  }
  return count;
}

MemoryEstimate EstimateTrainingMemory(const nn::TransformerConfig& m,
                                      const TrainSection& train,
                                      const FinetuneSection& finetune) {
  const double tokens = static_cast<double>(train.batch_size) *
                        static_cast<double>(train.seq_len);
  const double per_layer =
      4.0 * static_cast<double>(m.hidden_size) +
      2.0 * static_cast<double>(m.num_attention_heads * m.head_dim) +
      2.0 * static_cast<double>(m.num_key_value_heads * m.head_dim) +
      3.0 * static_cast<double>(m.intermediate_size);
  // Checkpointed layers keep only their input; backward recomputes one of
  // them at a time, which holds one layer's activations again.
  const double layers = static_cast<double>(m.num_hidden_layers);
  const int64_t every = train.activation_checkpointing_every;
  const double checkpointed =
      every > 0 ? std::ceil(layers / static_cast<double>(every)) : 0.0;
  const double kept_per_token =
      (layers - checkpointed) * per_layer +
      checkpointed * static_cast<double>(m.hidden_size) +
      (checkpointed > 0 ? per_layer : 0.0);
  MemoryEstimate estimate;
  // Weights (the adapters too), then a gradient and two moments for each
  // trainable parameter.
  estimate.model_state_bytes =
      kFloatBytes * (ParameterCount(m) + LoraParameterCount(m, finetune) +
                     3.0 * TrainableParameterCount(m, finetune));
  // The loss holds one chunk of logits (its gradient in place) and the
  // gradient of the final hidden states.
  const double logit_rows =
      std::min(tokens, static_cast<double>(train.loss_chunk_rows));
  estimate.activation_bytes =
      kFloatBytes *
      (tokens * (kept_per_token + static_cast<double>(m.hidden_size)) +
       logit_rows * static_cast<double>(m.vocab_size));
  estimate.batch_bytes = 2.0 * sizeof(TokenId) * tokens *
                         static_cast<double>(train.gradient_accumulation_steps);
  return estimate;
}

void CheckTrainingFitsInMemory(const TrainConfig& config,
                               const nn::TransformerConfig& model) {
  const MemoryEstimate estimate =
      EstimateTrainingMemory(model, config.train, config.finetune);
  const MemoryLimit limit = UsableMemory();
  const TrainSection& t = config.train;
  ROTOR_CHECK(
      estimate.total() <= static_cast<double>(limit.bytes), config.file,
      ": this run needs at least ", FormatBytes(estimate.total()),
      " of memory, more than the ", FormatBytes(limit.bytes), " left under ",
      limit.source, ": model state ", FormatBytes(estimate.model_state_bytes),
      " (", ModelSizeKeys(model), "), activations ",
      FormatBytes(estimate.activation_bytes), " (train.batch_size ",
      t.batch_size, ", train.seq_len ", t.seq_len,
      " and the model sizes), token batches ",
      FormatBytes(estimate.batch_bytes),
      " (and train.gradient_accumulation_steps ", t.gradient_accumulation_steps,
      "). Lower the largest of them (docs/limits.md)");
}

void CheckModelFitsInMemory(const nn::TransformerConfig& model,
                            const std::string& what) {
  const double weight_bytes = kFloatBytes * ParameterCount(model);
  const MemoryLimit limit = UsableMemory();
  ROTOR_CHECK(weight_bytes <= static_cast<double>(limit.bytes), what,
              ": the model's weights need ", FormatBytes(weight_bytes),
              ", more than the ", FormatBytes(limit.bytes), " left under ",
              limit.source, " (", ModelSizeKeys(model), ")");
}

}  // namespace rotor::train

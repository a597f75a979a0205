// train_tiny_lm: a small Llama-style language model built and trained with
// rotor's classes directly, without the `rotor train` command. It shows how
// the four parts of training fit together:
//
//   1. data       text -> byte tokens -> a token file -> random windows
//   2. model      nn::Transformer (embeddings, decoder layers, output head)
//   3. optimizer  AdamW, with a warm-up + cosine learning-rate schedule
//   4. the loop   loss -> Backward -> clip -> update, then generate text
//
// The training text is made up here (sentences from a tiny grammar), so the
// program needs no download. It trains for a few hundred steps, a few seconds
// on two cores, prints the loss as it falls and a sample, and exits with
// status 0 when the loss fell below kTargetLoss, 1 otherwise.
//
//   ./build/examples/train_tiny_lm
//
// `rotor train` (train/trainer.cc) runs the same loop, plus gradient
// accumulation, evaluation, checkpoints and logging: docs/training.md.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "core/parallel.h"
#include "core/random.h"
#include "nn/transformer.h"
#include "train/data/batches.h"
#include "train/data/token_file.h"
#include "train/eval/generate.h"
#include "train/optim/adamw.h"
#include "train/optim/lr_schedule.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace {

// One "document" of made-up sentences such as "the small cat sees a red
// ball.", from a tiny grammar: enough structure to learn (spelling, word
// order, punctuation) and enough randomness that memorising text does not
// help. The best possible loss is about 0.25 nats per byte.
std::string MakeDocument(int sentences, rotor::Rng& rng) {
  const std::vector<std::string> determiners = {"the", "a"};
  const std::vector<std::string> adjectives = {"small", "red", "old", "happy"};
  const std::vector<std::string> nouns = {"cat", "dog", "bird", "ball", "tree"};
  const std::vector<std::string> verbs = {"sees", "likes", "finds", "chases"};
  auto pick = [&](const std::vector<std::string>& words) {
    return words[rng.Below(words.size())];
  };
  std::string text;
  for (int i = 0; i < sentences; ++i) {
    if (i > 0) text += " ";
    text += pick(determiners) + " " + pick(adjectives) + " " + pick(nouns) +
            " " + pick(verbs) + " " + pick(determiners) + " " +
            pick(adjectives) + " " + pick(nouns) + ".";
  }
  return text;
}

}  // namespace

int main() {
  using rotor::train::ByteTokenizer;
  constexpr int64_t kBatchSize = 8;  // windows per batch
  constexpr int64_t kSeqLen = 64;    // tokens (bytes) per window
  constexpr int kSteps = 300;
  constexpr double kTargetLoss = 1.2;  // nats per byte; ln(257) = 5.55 at start
  rotor::SetNumThreads(0);             // 0: every core

  // ---- 1. Data ----
  // The byte tokenizer maps each byte to its own id (0..255); id 256,
  // <|endoftext|>, starts each document (and, in generation, the prompt). rotor
  // reads training data from a token file (train/data/token_file.h),
  // memory-mapped; `rotor prepare` writes them from text files, here we write
  // one ourselves. BatchSampler then cuts windows of kSeqLen + 1 tokens at
  // random positions: the inputs are the first kSeqLen, the targets the same
  // shifted by one (the next byte).
  constexpr int kDocuments = 500;
  rotor::Rng text_rng(7);
  std::vector<rotor::train::TokenId> tokens;
  for (int d = 0; d < kDocuments; ++d) {
    tokens.push_back(ByteTokenizer::kEndOfText);
    for (rotor::train::TokenId id :
         ByteTokenizer::Encode(MakeDocument(4, text_rng))) {
      tokens.push_back(id);
    }
  }
  const std::string token_path =
      (std::filesystem::temp_directory_path() / "train_tiny_lm.bin").string();
  rotor::train::WriteTokenFile(
      token_path, tokens,
      {ByteTokenizer::kVocabSize, kDocuments, ByteTokenizer::kEndOfText,
       tokens.size() - kDocuments});
  const rotor::train::TokenFile train_tokens(token_path);
  rotor::train::BatchSampler sampler(train_tokens, kBatchSize, kSeqLen,
                                     /*seed=*/1);
  std::printf("data: %zu byte tokens of made-up sentences\n",
              train_tokens.size());

  // ---- 2. Model ----
  // The same sizes a config's `model:` section gives (Hugging Face names),
  // here much smaller than configs/default.yaml: 2 layers of width 64,
  // 4 query heads sharing 2 key/value heads (grouped-query attention), RoPE
  // positions up to kSeqLen, and the output head tied to the embeddings.
  rotor::nn::TransformerConfig config;
  config.vocab_size = ByteTokenizer::kVocabSize;
  config.hidden_size = 64;
  config.intermediate_size = 192;  // SwiGLU MLP width
  config.num_hidden_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.head_dim = config.hidden_size / config.num_attention_heads;
  config.tie_word_embeddings = true;
  config.rope.rope_theta = 10000.0;
  config.rope.head_dim = config.head_dim;
  config.rope.max_position_embeddings = kSeqLen;
  rotor::nn::Transformer model(config, /*seed=*/42);
  std::printf("model: %lld parameters\n",
              static_cast<long long>(model.NumParameters()));

  // ---- 3. Optimizer ----
  // AdamW keeps two moments per parameter and decays only weight matrices
  // (train/optim/adamw.h). The learning rate rises linearly for 30 steps, then
  // follows a cosine down to a tenth of its peak (train/optim/lr_schedule.h).
  rotor::train::AdamW optimizer(
      model.NamedParameters(),
      rotor::train::AdamWSettings{/*beta1=*/0.9, /*beta2=*/0.95,
                                  /*eps=*/1e-8,
                                  /*weight_decay=*/0.1});
  const rotor::train::CosineSchedule schedule{/*lr=*/3e-3, /*min_lr=*/3e-4,
                                              /*warmup_steps=*/30,
                                              /*total_steps=*/kSteps};
  const std::vector<rotor::Tensor> parameters = model.Parameters();

  // ---- 4. The training loop ----
  rotor::train::Batch batch;
  double loss_value = 0.0;
  for (int step = 0; step < kSteps; ++step) {
    sampler.Next(batch);  // batch.inputs, batch.targets: [8, 64] token ids
    // Forward: logits for every position, then the mean cross-entropy of the
    // next byte, a scalar tensor that remembers the graph that made it.
    const rotor::Tensor loss = model.Loss(batch.inputs, batch.targets,
                                          batch.batch_size, batch.seq_len);
    loss_value = loss.item();
    // Backward adds d(loss)/d(parameter) into each .grad(), so clear the
    // previous step's gradients first.
    model.ZeroGrad();
    loss.Backward();
    // Scale all gradients down together if their global norm exceeds 1, so
    // one unlucky batch cannot throw the weights far (train/optim/adamw.h):
    // the update applies the factor.
    const double norm = rotor::train::GlobalGradNorm(parameters);
    optimizer.Step(schedule.At(step),
                   rotor::train::ClipScale(norm, /*max_norm=*/1.0));
    if (step == 0 || (step + 1) % 25 == 0) {
      std::printf("step %3d  loss %.4f  lr %.2e\n", step + 1, loss_value,
                  schedule.At(step));
    }
  }
  std::filesystem::remove(token_path);

  // ---- 5. Generation ----
  // GenerateText runs the prompt through the model once, then adds one byte
  // at a time, reusing the keys and values of earlier positions (KV cache).
  // Temperature 0.5 samples mostly the likeliest bytes. It stops after 120
  // bytes or at <|endoftext|>, where the model ends a document.
  rotor::train::SamplingOptions sampling;
  sampling.max_new_tokens = 120;
  sampling.temperature = 0.5;
  sampling.seed = 3;
  const std::string prompt = "the small ";
  std::printf(
      "\nsample: %s%s\n\n", prompt.c_str(),
      rotor::train::GenerateText(model, ByteTokenizer(), prompt, sampling)
          .c_str());

  const bool learned = loss_value < kTargetLoss;
  std::printf("final loss %.4f %s %.2f: %s\n", loss_value,
              learned ? "<" : ">=", kTargetLoss,
              learned ? "the model learned the grammar's patterns"
                      : "the model did NOT learn enough");
  return learned ? 0 : 1;
}

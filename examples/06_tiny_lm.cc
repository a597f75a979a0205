// Rung 06 of the ladder (docs/learn.md, docs/training.md): a small
// Llama-style language model built and trained with rotor's classes
// directly, without the `rotor train` command. The four parts of training:
//
//   1. data       text -> byte tokens -> token files -> random windows
//   2. model      nn::Transformer, sized by a config's `model:` section
//   3. optimizer  AdamW, with a warm-up + cosine learning-rate schedule
//   4. the loop   loss -> Backward -> clip -> update
//
// The text is made up here (sentences from a tiny grammar), so nothing is
// downloaded. The model also learns passkey retrieval (train/data/passkey.h):
// a 2-digit key hidden in filler and asked for at the end, only the copied
// digits scored. Copying needs an induction head (one head finds the
// earlier digit, another copies the one after it), and text crowds it out:
// mixed from the start (half the rows passkeys), 600 steps retrieved 0%,
// measured. So training has two phases, each with its own warm-up and
// cosine: 400 steps of passkey rows only, where the copying forms
// (suddenly, at a step that depends on the seed: docs/learn.md), then 300
// steps of text with half the rows still passkeys, which keep it.
// It prints the loss as it falls, the validation perplexity, the passkey
// accuracy and a sample, and saves the model for the next rungs in
// <work>/06_tiny_lm (work folder: argv[1], default runs/learn). About 20 s
// of CPU on two cores (33 s measured while other builds ran).
//
//   ./build/examples/06_tiny_lm [runs/learn]
//
// `rotor train` (train/trainer.cc) runs the same loop, plus gradient
// accumulation, evaluation, checkpoints and logging.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/kernels/attention.h"
#include "core/ops/gemm.h"
#include "core/parallel.h"
#include "core/random.h"
#include "nn/transformer.h"
#include "train/checkpoint.h"
#include "train/config/train_config.h"
#include "train/data/batches.h"
#include "train/data/passkey.h"
#include "train/data/token_file.h"
#include "train/eval/generate.h"
#include "train/eval/length_eval.h"
#include "train/eval/passkey_eval.h"
#include "train/optim/adamw.h"
#include "train/optim/lr_schedule.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace {

// The sizes, as a config's `model:` section (Hugging Face names; every key
// in docs/training.md): 2 layers of width 64, 4 query heads sharing 2
// key/value heads (grouped-query attention), RoPE positions up to 128, the
// output head tied to the embeddings. ~115k parameters.
constexpr char kConfig[] = R"(
model:
  vocab_size: 257              # 256 bytes + <|endoftext|>
  hidden_size: 64
  intermediate_size: 192       # SwiGLU MLP width
  num_hidden_layers: 2
  num_attention_heads: 4
  num_key_value_heads: 2
  max_position_embeddings: 128
  rope_theta: 10000.0
  tie_word_embeddings: true
data:
  passkey_fraction: 0.5        # phase 2: rows replaced by passkey examples
  passkey_digits: 2
train:
  batch_size: 16
  seq_len: 128
  max_steps: 300               # phase 2 (phase 1: kPracticeSteps)
  lr: 5.0e-3
  min_lr: 5.0e-4
  warmup_steps: 30
  seed: 1
)";

constexpr int64_t kPracticeSteps = 400;  // phase 1: passkey rows only

// One document of made-up sentences such as "the small cat sees a red
// ball.": structure to learn (spelling, word order, punctuation) and
// randomness that memorising cannot beat (~0.25 nats per byte at best).
std::string MakeDocument(int sentences, rotor::Rng& rng) {
  const std::vector<std::string> det = {"the", "a"};
  const std::vector<std::string> adj = {"small", "red", "old", "happy"};
  const std::vector<std::string> noun = {"cat", "dog", "bird", "ball", "tree"};
  const std::vector<std::string> verb = {"sees", "likes", "finds", "chases"};
  auto pick = [&](const std::vector<std::string>& w) {
    return w[rng.Below(w.size())];
  };
  std::string text;
  for (int i = 0; i < sentences; ++i) {
    text += (i ? " " : "") + pick(det) + " " + pick(adj) + " " + pick(noun) +
            " " + pick(verb) + " " + pick(det) + " " + pick(adj) + " " +
            pick(noun) + ".";
  }
  return text;
}

// Writes `count` documents as a token file (train/data/token_file.h): each
// starts with <|endoftext|>, then its bytes.
void WriteDocuments(const std::string& path, int count, rotor::Rng& rng) {
  using rotor::train::ByteTokenizer;
  std::vector<rotor::train::TokenId> tokens;
  for (int d = 0; d < count; ++d) {
    tokens.push_back(ByteTokenizer::kEndOfText);
    for (auto id : ByteTokenizer::Encode(MakeDocument(24, rng))) {
      tokens.push_back(id);
    }
  }
  rotor::train::WriteTokenFile(
      path, tokens,
      {ByteTokenizer::kVocabSize, static_cast<uint64_t>(count),
       ByteTokenizer::kEndOfText, tokens.size() - count});
}

}  // namespace

int main(int argc, char** argv) {
  namespace train = rotor::train;
  const std::string work = argc > 1 ? argv[1] : "runs/learn";
  rotor::SetNumThreads(0);  // 0: every core

  // ---- 1. Data: train.bin and val.bin, the layout `rotor prepare` writes ----
  const std::string data_dir = work + "/data";
  std::filesystem::create_directories(data_dir);
  rotor::Rng text_rng(7);
  WriteDocuments(data_dir + "/train.bin", 400, text_rng);
  WriteDocuments(data_dir + "/val.bin", 20, text_rng);
  const train::TrainConfig config =
      train::ParseTrainConfig(kConfig, "06_tiny_lm", {"data.path=" + data_dir});
  const train::TokenFile tokens(data_dir + "/train.bin");
  const int64_t batch_size = config.train.batch_size;
  const int64_t seq_len = config.train.seq_len;

  // ---- 2. Model ----
  rotor::nn::Transformer model(train::ResolveTransformerConfig(config.model),
                               config.train.seed);
  std::printf("model: %lld parameters; data: %zu training bytes\n",
              static_cast<long long>(model.NumParameters()), tokens.size());
  // Training is deterministic, but its bits depend on the kernels: the
  // library that multiplies the matrices (and which of its kernel sets) and
  // the vector instructions rotor's own kernels were dispatched to. Another
  // set rounds differently, and the figures below move with it.
  std::printf("kernels: matrix products %s, vector kernels %s\n",
              rotor::GemmDescription().c_str(),
              rotor::kernels::AttentionTarget());

  // The passkey evaluation: 5 depths x 10 keys, retrieved = every digit
  // right (train/eval/passkey_eval.h).
  train::PasskeyEvalOptions passkey;
  passkey.lengths = {seq_len};
  passkey.num_digits = config.data.passkey_digits;
  const train::ByteTokenizer bytes;  // the model reads bytes
  const train::PasskeyMaker passkeys(bytes, seq_len + 1);
  const std::vector<rotor::Tensor> parameters = model.Parameters();
  train::Batch batch;
  int64_t step = 0;  // over both phases
  for (const int phase : {1, 2}) {
    const int64_t steps = phase == 1 ? kPracticeSteps : config.train.max_steps;
    const double passkey_fraction =
        phase == 1 ? 1.0 : config.data.passkey_fraction;
    // ---- 3. Optimizer: AdamW decays weight matrices only; the learning
    // rate rises for warmup_steps, then follows a cosine down to min_lr.
    // A fresh one per phase, as `rotor train` with train.init_from does ----
    train::AdamW optimizer(model.NamedParameters(),
                           train::AdamWSettings{0.9, 0.95, 1e-8, 0.1});
    const train::CosineSchedule schedule{config.train.lr, config.train.min_lr,
                                         config.train.warmup_steps, steps};
    // Windows of seq_len + 1 tokens at random offsets: inputs are the
    // first seq_len, targets the same shifted by one (the next byte).
    train::BatchSampler sampler(tokens, batch_size, seq_len, config.train.seed);
    // ---- 4. The loop ----
    for (int64_t i = 0; i < steps; ++i, ++step) {
      sampler.Next(batch);  // inputs, targets: [16, 128] token ids
      // Replace some rows by passkey examples; their unscored targets
      // become kPasskeyIgnoredTarget, which the loss skips.
      train::MixPasskeyExamples(batch, passkeys, passkey_fraction,
                                config.data.passkey_loss, config.train.seed,
                                static_cast<uint64_t>(i * batch_size),
                                config.data.passkey_digits);
      // Forward: the mean cross-entropy of each next byte, a scalar tensor
      // that remembers the graph that made it.
      const rotor::Tensor loss =
          model.Loss(batch.inputs, batch.targets, batch_size, seq_len,
                     train::kPasskeyIgnoredTarget);
      model.ZeroGrad();  // Backward adds into .grad(): clear the last step's
      loss.Backward();
      // Scale all gradients down together if their norm exceeds 1.
      const double norm = train::GlobalGradNorm(parameters);
      optimizer.Step(schedule.At(i), train::ClipScale(norm, 1.0));
      if (step == 0 || (step + 1) % 100 == 0) {
        std::printf("step %4lld  loss %.4f  lr %.2e\n",
                    static_cast<long long>(step + 1), loss.item(),
                    schedule.At(i));
      }
    }
    if (phase == 1) {
      std::printf(
          "after phase 1 (passkeys only): passkey retrieval %.0f%%\n",
          100.0 * train::PasskeyAccuracyAt(
                      train::EvaluatePasskey(model, bytes, passkey), seq_len));
    }
  }

  // ---- 5. What it learned ----
  // Perplexity = exp(mean loss per byte) on held-out text: the number of
  // equally likely bytes the model is choosing between (257 untrained).
  const train::TokenFile val(data_dir + "/val.bin");
  const double ppl =
      train::PerplexityByLength(model, val, {{seq_len}, 10})[0].perplexity;
  std::printf("\nvalidation perplexity at %lld bytes: %.3f\n",
              static_cast<long long>(seq_len), ppl);
  const double retrieved = train::PasskeyAccuracyAt(
      train::EvaluatePasskey(model, bytes, passkey), seq_len);
  std::printf("passkey retrieval at %lld bytes: %.0f%%\n",
              static_cast<long long>(seq_len), 100.0 * retrieved);
  train::SamplingOptions sampling;
  sampling.max_new_tokens = 80;
  sampling.temperature = 0.5;
  sampling.seed = 3;
  std::printf(
      "sample: the small %s\n",
      train::GenerateText(model, train::ByteTokenizer(), "the small ", sampling)
          .c_str());

  // ---- 6. Save it for rungs 07-09 (a checkpoint `rotor eval` reads too) ----
  const std::string run = work + "/06_tiny_lm";
  train::TrainerState state;
  state.step = step;
  train::SaveCheckpoint(train::CheckpointDir(run, step), model, nullptr, state,
                        train::TrainConfigToYaml(config));
  std::printf("saved %s\n", train::CheckpointDir(run, step).c_str());
  const bool learned = ppl < 2.0 && retrieved >= 0.5;
  std::printf("%s\n", learned ? "the model learned the text and to retrieve"
                              : "the model did NOT learn enough");
  return learned ? 0 : 1;
}

// Rung 08 of the ladder (docs/learn.md, docs/context-extension.md part 7):
// fine-tuning the tiny LM of rung 06 from 128 to 256 bytes with YaRN, from
// a YAML config, by the same Trainer `rotor train` runs. (Twice the length,
// not rung 07's four times, so that the fine-tune takes seconds: at 512,
// 150 steps brought retrieval from 10% to only 36-44%, measured.)
//
// The config below is an ordinary training config. What makes it an
// extension:
//   model.max_position_embeddings: 256 and model.rope_scaling (yarn, s = 2,
//       original_max_position_embeddings = 128): the new RoPE tables;
//   train.init_from: rung 06's run: its weights (only the weights: the
//       optimizer, schedule and step start fresh), checked to have the
//       same architecture;
//   train.seq_len: 256, so every step trains at the new length, with 3 in
//       4 rows passkey examples (rung 06's 2-digit keys, now with up to
//       157 bytes of filler) so the retrieval skill is stretched (with half
//       the rows, 52% retrieved after; with 3 in 4, 82%, measured).
// It writes the config to <work>/08_yarn.yaml, so the same fine-tune runs
// as `build/rotor train runs/learn/08_yarn.yaml` (a finished run is kept;
// delete <work>/08_yarn to train again). It prints perplexity and passkey
// retrieval at 256 before (zero-shot YaRN) and after. 5-10 s.
//
//   ./build/examples/08_yarn_finetune [runs/learn]     (after 06_tiny_lm)
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "train/checkpoint.h"
#include "train/data/token_file.h"
#include "train/eval/length_eval.h"
#include "train/eval/passkey_eval.h"
#include "train/io/atomic_file.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "train/trainer.h"

namespace {

// WORK is replaced by the work folder.
constexpr char kConfig[] = R"(output_dir: WORK/08_yarn
model:                          # rung 06's sizes (init_from checks them)
  vocab_size: 257
  hidden_size: 64
  intermediate_size: 192
  num_hidden_layers: 2
  num_attention_heads: 4
  num_key_value_heads: 2
  tie_word_embeddings: true
  rope_theta: 10000.0
  max_position_embeddings: 256  # the new context: 2 x 128
  rope_scaling:
    rope_type: yarn
    factor: 2
    original_max_position_embeddings: 128   # the length it was trained at
    beta_fast: 32               # pairs turning > 32 times in 128 bytes: kept
    beta_slow: 1                # pairs turning < once: divided by 2
data:
  path: WORK/data
  passkey_fraction: 0.75
  passkey_digits: 2
train:
  init_from: WORK/06_tiny_lm    # weights only
  batch_size: 8                 # 8 x 256 tokens per step
  seq_len: 256
  max_steps: 150
  lr: 2.0e-3
  min_lr: 2.0e-4
  warmup_steps: 10
  threads: 0
eval:
  every_n_steps: 0
checkpoint:
  every_n_steps: 0              # only at the end
  keep_last_n: 1
logging:
  log_every_n_steps: 25
  progress: false
)";

// Perplexity and passkey retrieval at `length`, on rung 06's validation
// documents and the usual 5 depths x 10 keys of `digits` digits.
void Measure(const char* what, rotor::nn::Transformer& model,
             const std::string& val_path, int64_t length, int digits,
             double* ppl, double* passkey) {
  namespace train = rotor::train;
  const train::TokenFile val(val_path);
  *ppl = train::PerplexityByLength(model, val, {{length}, 10})[0].perplexity;
  train::PasskeyEvalOptions options;
  options.lengths = {length};
  options.num_digits = digits;
  *passkey = train::PasskeyAccuracyAt(
      train::EvaluatePasskey(model, train::ByteTokenizer(), options), length);
  std::printf("%-28s perplexity@%lld %.3f   passkey@%lld %.0f%%\n", what,
              static_cast<long long>(length), *ppl,
              static_cast<long long>(length), 100 * *passkey);
}

}  // namespace

int main(int argc, char** argv) {
  namespace train = rotor::train;
  const std::string work = argc > 1 ? argv[1] : "runs/learn";
  std::string yaml = kConfig;
  for (size_t at; (at = yaml.find("WORK")) != std::string::npos;) {
    yaml.replace(at, 4, work);
  }
  train::WriteFileAtomically(work + "/08_yarn.yaml", yaml);
  const train::TrainConfig config =
      train::ParseTrainConfig(yaml, work + "/08_yarn.yaml");
  const std::string val = config.data.path + "/val.bin";
  const int64_t length = config.train.seq_len;

  // Before: rung 06's weights with the new RoPE tables (zero-shot YaRN).
  double ppl_before = 0, passkey_before = 0, ppl_after = 0, passkey_after = 0;
  {
    auto base = train::LoadCheckpointModel(
        train::ResolveCheckpointPath(config.train.init_from),
        train::ModelEdit{config.model});
    Measure("before (zero-shot yarn):", *base, val, length,
            config.data.passkey_digits, &ppl_before, &passkey_before);
  }

  // The fine-tune: exactly `rotor train <config>` (train/trainer.h).
  train::Trainer trainer(config, std::cout);
  const train::TrainSummary summary = trainer.Run();
  std::printf("fine-tuned %lld steps in %.1f s\n",
              static_cast<long long>(summary.steps), summary.seconds);

  // After: the fine-tuned run's checkpoint, as `rotor eval` loads it.
  auto tuned = train::LoadCheckpointModel(config.output_dir, {});
  const std::string after = "after " + std::to_string(summary.steps) +
                            " steps at " + std::to_string(length) + ":";
  Measure(after.c_str(), *tuned, val, length, config.data.passkey_digits,
          &ppl_after, &passkey_after);
  // Retrieval is a count of 50 keys, so it is noisy: the standard error of
  // the difference of two such rates p1, p2 is sqrt((p1 (1 - p1) + p2 (1 -
  // p2)) / 50), about 9 points near 70%, and a move inside twice that is
  // what another seed or kernel set could give. Perplexity averages every
  // byte of the validation text, so its fall is the verdict.
  const double keys =
      static_cast<double>(train::PasskeyEvalOptions().trials *
                          train::PasskeyEvalOptions().depths.size());
  const double noise = 100 * std::sqrt((passkey_before * (1 - passkey_before) +
                                        passkey_after * (1 - passkey_after)) /
                                       keys);
  std::printf(
      "retrieval moved %+.0f points (%.0f keys each: one standard "
      "error is %.0f points)\n",
      100 * (passkey_after - passkey_before), keys, noise);
  const bool ok = ppl_after < ppl_before;
  std::printf("%s\n", ok ? "the fine-tune extended the context"
                         : "the fine-tune did NOT lower the perplexity");
  return ok ? 0 : 1;
}

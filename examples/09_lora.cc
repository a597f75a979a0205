// Rung 09 of the ladder (docs/learn.md, docs/lora.md): the extension of
// rung 08 again, with LoRA: the base weights stay frozen and each adapted
// projection W learns a low-rank update,
//
//   y = x W^T + (alpha / r) * (x A^T) B^T,   A: [r, in], B: [out, r],
//
// B starting at zero, so training starts from exactly the base model. With
// r = 4 on every projection (plus the norms, trained in full), a small
// fraction of the parameters trains; checkpoints hold only those, with a
// hash of the base they belong to, and `rotor export` merges them
// (W += (alpha/r) B A). The config is rung 08's YAML file with a
// `finetune:` section added as overrides, exactly what
//   build/rotor train runs/learn/08_yarn.yaml output_dir=... finetune.lora=...
// does. It prints the trainable share and perplexity and passkey retrieval
// at 256 before and after, next to rung 08's full fine-tune. 5-10 s.
//
//   ./build/examples/09_lora [runs/learn]     (after 08_yarn_finetune)
#include <cstdio>
#include <iostream>
#include <string>

#include "train/checkpoint.h"
#include "train/data/token_file.h"
#include "train/eval/length_eval.h"
#include "train/eval/passkey_eval.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "train/trainer.h"

int main(int argc, char** argv) {
  namespace train = rotor::train;
  const std::string work = argc > 1 ? argv[1] : "runs/learn";
  const train::TrainConfig config = train::LoadTrainConfig(
      work + "/08_yarn.yaml",
      {"output_dir=" + work + "/09_lora",
       // LoRA on every projection of every layer, rank 4, scale alpha/r = 2.
       "finetune.lora={r: 4, alpha: 8, dropout: 0.0, target_modules: "
       "[q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj]}",
       "finetune.trainable=[norm]",  // the RMSNorm weights, in full
       "train.lr=1.0e-2", "train.min_lr=1.0e-3",  // adapters take more
       "train.weight_decay=0.0"});

  train::Trainer trainer(config, std::cout);
  int64_t trainable = 0;
  for (const rotor::Tensor& p : trainer.model().Parameters()) {
    if (p.requires_grad()) trainable += p.numel();
  }
  const int64_t all = trainer.model().NumParameters();
  std::printf("LoRA: %lld of %lld parameters train (%.1f%%)\n",
              static_cast<long long>(trainable), static_cast<long long>(all),
              100.0 * trainable / all);
  const train::TrainSummary summary = trainer.Run();
  std::printf("fine-tuned %lld steps in %.1f s\n",
              static_cast<long long>(summary.steps), summary.seconds);

  // Before (the base with zero-shot YaRN), full fine-tune (rung 08), LoRA.
  const train::TokenFile val(config.data.path + "/val.bin");
  const int64_t length = config.train.seq_len;
  train::PasskeyEvalOptions passkey;
  passkey.lengths = {length};
  passkey.num_digits = config.data.passkey_digits;
  double ppl[3], retrieved[3];
  const char* names[3] = {"zero-shot yarn (base)", "full fine-tune (rung 08)",
                          "LoRA fine-tune"};
  for (int i = 0; i < 3; ++i) {
    auto model = i == 0
                     ? train::LoadCheckpointModel(
                           train::ResolveCheckpointPath(config.train.init_from),
                           train::ModelEdit{config.model})
                     : train::LoadCheckpointModel(
                           i == 1 ? work + "/08_yarn" : config.output_dir, {});
    ppl[i] =
        train::PerplexityByLength(*model, val, {{length}, 10})[0].perplexity;
    retrieved[i] = train::PasskeyAccuracyAt(
        train::EvaluatePasskey(*model, train::ByteTokenizer(), passkey),
        length);
    std::printf("%-26s perplexity@%lld %.3f   passkey@%lld %.0f%%\n", names[i],
                static_cast<long long>(length), ppl[i],
                static_cast<long long>(length), 100 * retrieved[i]);
  }
  // As in rung 08, perplexity is the verdict: retrieval over 50 keys moves
  // by noise of about 9 points (one standard error of a difference).
  const bool ok = trainable < all / 2 && ppl[2] < ppl[0];
  std::printf("%s\n", ok ? "LoRA extended the context with a fraction of "
                           "the parameters"
                         : "LoRA did NOT lower the perplexity");
  return ok ? 0 : 1;
}

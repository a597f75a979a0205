// Rung 07 of the ladder (docs/learn.md, docs/context-extension.md): the
// tiny LM of rung 06, trained at L = 128 bytes, run on 2x and 4x longer
// texts without any training, once with each RoPE scaling method.
//
// Beyond L the slow rotary pairs reach angles the model never saw, so plain
// RoPE ("default") gets worse. Each method rescales the frequencies for a
// factor s = 4 (nn/rope_scaling.h):
//   linear    every pair divided by s (positions squeezed into 0..L)
//   ntk       the base raised, so slow pairs are divided by ~s, fast ones
//             barely change
//   dynamic   ntk with s chosen from the sequence length (none up to L)
//   yarn      fast pairs kept, slow ones divided by s, a ramp between, and
//             a sharper softmax (attention factor a = 0.1 ln s + 1)
//   llama3    the same three bands, chosen by wavelength
//   longrope  one factor per pair (here an illustrative smooth rise)
// Each row: perplexity per byte at 128, 256 and 512 on the same validation
// documents, and passkey retrieval (rung 06's 3-digit keys, 50 at each
// length). Past 128 retrieval falls apart with every method, even where
// perplexity barely moves (dynamic at 256): the attention that finds the
// key reaches distances, and so angles, the model never saw (or, scaled,
// angles its copying heads were not trained on). Rung 08 fine-tunes.
//
//   ./build/examples/07_zero_shot [runs/learn]     (after 06_tiny_lm)
#include <cstdio>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "nn/rope_methods.h"
#include "train/checkpoint.h"
#include "train/data/token_file.h"
#include "train/eval/length_eval.h"
#include "train/eval/passkey_eval.h"
#include "train/extend/recipe.h"
#include "train/tokenizer/byte_tokenizer.h"

int main(int argc, char** argv) {
  namespace train = rotor::train;
  const std::string work = argc > 1 ? argv[1] : "runs/learn";
  rotor::SetNumThreads(0);
  constexpr int64_t kL = 128;    // the training length of rung 06
  constexpr double kFactor = 4;  // s: extend to 512
  const std::vector<int64_t> lengths = {kL, 2 * kL, 4 * kL};

  // The base model: its newest checkpoint and the config it was saved with.
  const std::string base = train::ResolveCheckpointPath(work + "/06_tiny_lm");
  const train::TrainConfig saved = train::LoadCheckpointTrainConfig(base);
  const train::TokenFile val(saved.data.path + "/val.bin");
  // The same 10 documents at every length, each cut to its first L bytes
  // and scored in one window (train/eval/length_eval.h).
  const auto documents = train::LongDocuments(val, lengths.back() + 1, 10);

  std::printf(
      "perplexity per byte (lower is better) and passkey retrieval, "
      "model trained at %lld bytes\n\n",
      static_cast<long long>(kL));
  std::printf("%-9s %8s %8s %8s %8s %8s %8s\n", "method", "ppl@128", "ppl@256",
              "ppl@512", "key@128", "key@256", "key@512");
  double default_ppl[3] = {0, 0, 0}, best_at_512 = 1e30;
  for (rotor::RopeType method : rotor::RopeTypes()) {
    // The saved model section with this method's rope_scaling for s = 4
    // from L = 128: what rotor extend-report evaluates (train/extend/).
    const train::ModelConfig extended =
        train::ExtendModelConfig(saved.model, method, kFactor, kL);
    // The same weights; only the RoPE tables differ (RoPE has no weights).
    auto model = train::LoadCheckpointModel(base, train::ModelEdit{extended});
    const auto ppl = train::PerplexityByLength(*model, documents, {lengths});
    train::PasskeyEvalOptions passkey;
    passkey.lengths = lengths;
    passkey.num_digits = saved.data.passkey_digits;
    const auto cells =
        train::EvaluatePasskey(*model, train::ByteTokenizer(), passkey);
    std::printf("%-9s %8.3f %8.3f %8.3f", rotor::RopeTypeName(method),
                ppl[0].perplexity, ppl[1].perplexity, ppl[2].perplexity);
    for (int64_t length : lengths) {
      std::printf(" %7.0f%%", 100 * train::PasskeyAccuracyAt(cells, length));
    }
    std::printf("\n");
    if (!rotor::RopeMethodOf(method).scales()) {
      for (int i = 0; i < 3; ++i) default_ppl[i] = ppl[i].perplexity;
    } else if (ppl[2].perplexity < best_at_512) {
      best_at_512 = ppl[2].perplexity;
    }
  }

  // The two lessons, as numbers.
  std::printf("\nunscaled RoPE at 512 vs 128: x%.2f perplexity\n",
              default_ppl[2] / default_ppl[0]);
  std::printf("best scaling method at 512: %.3f (unscaled %.3f)\n", best_at_512,
              default_ppl[2]);
  const bool ok =
      default_ppl[2] > default_ppl[0] && best_at_512 < default_ppl[2];
  std::printf("%s\n", ok ? "scaling helps beyond the training length"
                         : "UNEXPECTED: scaling did not help");
  return ok ? 0 : 1;
}

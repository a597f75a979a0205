// One model's long-context measurements on one grid: perplexity against
// context length (length_eval.h), passkey retrieval (passkey_eval.h) and
// the RULER-style retrieval tasks (retrieval.h), in that order. rotor eval
// evaluates its checkpoint (and each --rope-from variant) so, and rotor
// extend-report each method zero-shot and fine-tuned.
#ifndef ROTOR_TRAIN_EVAL_VARIANT_EVAL_H_
#define ROTOR_TRAIN_EVAL_VARIANT_EVAL_H_

#include <functional>
#include <vector>

#include "nn/transformer.h"
#include "train/eval/length_eval.h"
#include "train/eval/passkey_eval.h"
#include "train/eval/retrieval.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

// What to measure; a part without lengths (or tasks) is skipped.
struct EvalGrid {
  // Perplexity on `documents` (LongDocuments, each with at least
  // max(perplexity.lengths) + 1 tokens): the same ones for every variant.
  LengthEvalOptions perplexity;
  std::vector<std::vector<TokenId>> documents;
  PasskeyEvalOptions passkey;
  // Run in turn, their cells appended (the report gives each task its own
  // lengths).
  std::vector<RetrievalEvalOptions> retrieval;
};

struct VariantEvaluation {
  std::vector<LengthPerplexity> perplexity;
  std::vector<PasskeyCell> passkey;  // lengths outer, depths inner
  // Tasks outer, then lengths, then depths.
  std::vector<RetrievalCell> retrieval;
};

enum class EvalPart { kPerplexity, kPasskey, kRetrieval };
// In the order EvaluateVariant measures them.
inline constexpr EvalPart kEvalParts[] = {
    EvalPart::kPerplexity, EvalPart::kPasskey, EvalPart::kRetrieval};
// "perplexity", "passkey", "retrieval": the name of its VariantEvaluation
// field (and of that field's key in the report's results files).
const char* EvalPartName(EvalPart part);

// Called when a part is measured, before the next starts (a caller shows
// it while the rest runs).
using EvalPartDone =
    std::function<void(EvalPart part, const VariantEvaluation& so_far)>;

// The measurements of `grid` on `model`, with examples in `tokenizer`'s
// tokens (the model's).
VariantEvaluation EvaluateVariant(nn::Transformer& model,
                                  const Tokenizer& tokenizer,
                                  const EvalGrid& grid,
                                  const EvalPartDone& done = nullptr);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EVAL_VARIANT_EVAL_H_

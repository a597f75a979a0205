#include "train/eval/variant_eval.h"

namespace rotor::train {

const char* EvalPartName(EvalPart part) {
  switch (part) {
    case EvalPart::kPerplexity:
      return "perplexity";
    case EvalPart::kPasskey:
      return "passkey";
    case EvalPart::kRetrieval:
      return "retrieval";
  }
  return "?";
}

VariantEvaluation EvaluateVariant(nn::Transformer& model,
                                  const Tokenizer& tokenizer,
                                  const EvalGrid& grid,
                                  const EvalPartDone& done) {
  VariantEvaluation result;
  const auto finished = [&](EvalPart part) {
    if (done) done(part, result);
  };
  if (!grid.perplexity.lengths.empty()) {
    result.perplexity =
        PerplexityByLength(model, grid.documents, grid.perplexity);
    finished(EvalPart::kPerplexity);
  }
  if (!grid.passkey.lengths.empty()) {
    result.passkey = EvaluatePasskey(model, tokenizer, grid.passkey);
    finished(EvalPart::kPasskey);
  }
  bool retrieval = false;
  for (const RetrievalEvalOptions& tasks : grid.retrieval) {
    if (tasks.tasks.empty() || tasks.lengths.empty()) continue;
    const std::vector<RetrievalCell> cells =
        EvaluateRetrieval(model, tokenizer, tasks);
    result.retrieval.insert(result.retrieval.end(), cells.begin(), cells.end());
    retrieval = true;
  }
  if (retrieval) finished(EvalPart::kRetrieval);
  return result;
}

}  // namespace rotor::train

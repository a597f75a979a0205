// What `rotor eval` is asked to measure, in the library's terms (its flags
// fill an EvalRequest: tools/eval_command.cc), and the grid that measures
// it (PlanEvalGrid, for EvaluateVariant: variant_eval.h).
#ifndef ROTOR_TRAIN_EVAL_EVAL_REQUEST_H_
#define ROTOR_TRAIN_EVAL_EVAL_REQUEST_H_

#include <cstdint>
#include <vector>

#include "train/data/token_file.h"
#include "train/eval/variant_eval.h"

namespace rotor::train {

struct EvalRequest {
  // Perplexity against length, when it has lengths; its stride is `stride`,
  // or with 0 half the shortest length (at least 1).
  LengthEvalOptions perplexity;
  int64_t stride = 0;
  // Passkey retrieval, and the retrieval tasks (none: no retrieval), on one
  // grid: passkey_grid's lengths, or without any perplexity's, or without
  // those either `model_lengths` (once each, in order); its depths, trials,
  // seed and num_digits.
  bool passkey = false;
  std::vector<RetrievalTask> retrieval;
  PasskeyEvalOptions passkey_grid;
  // The model's pre-training length and max_position_embeddings (the
  // length it was extended to).
  std::vector<int64_t> model_lengths;
  // The grid's filler: the validation tokens (TokenFileFiller) rather than
  // the Landmark passage.
  bool validation_filler = false;

  bool HasGrid() const { return passkey || !retrieval.empty(); }
  // The lengths given: perplexity's and, with a grid, passkey_grid's;
  // sorted, once each.
  std::vector<int64_t> GivenLengths() const;
  // Whether planning reads the validation split: for the perplexity
  // documents or the filler.
  bool ReadsValidation() const {
    return !perplexity.lengths.empty() || (HasGrid() && validation_filler);
  }
};

// The grid that measures `request`; `val` (open when ReadsValidation())
// gives the perplexity documents (LongDocuments) and the validation
// filler. Throws as LongDocuments when the split has too few long
// documents.
EvalGrid PlanEvalGrid(const EvalRequest& request, const TokenFile* val);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EVAL_EVAL_REQUEST_H_

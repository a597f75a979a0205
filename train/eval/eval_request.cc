#include "train/eval/eval_request.h"

#include <algorithm>

#include "train/data/prompt_tokens.h"

namespace rotor::train {

namespace {

std::vector<int64_t> SortedOnce(std::vector<int64_t> lengths) {
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

// The grid's lengths: given, else perplexity's, else the model's.
std::vector<int64_t> GridLengths(const EvalRequest& request) {
  if (!request.passkey_grid.lengths.empty()) {
    return request.passkey_grid.lengths;
  }
  if (!request.perplexity.lengths.empty()) return request.perplexity.lengths;
  return SortedOnce(request.model_lengths);
}

}  // namespace

std::vector<int64_t> EvalRequest::GivenLengths() const {
  std::vector<int64_t> lengths = perplexity.lengths;
  if (HasGrid()) {
    lengths.insert(lengths.end(), passkey_grid.lengths.begin(),
                   passkey_grid.lengths.end());
  }
  return SortedOnce(lengths);
}

EvalGrid PlanEvalGrid(const EvalRequest& request, const TokenFile* val) {
  EvalGrid grid;
  const std::vector<int64_t>& lengths = request.perplexity.lengths;
  if (!lengths.empty()) {
    grid.perplexity = request.perplexity;
    const int64_t shortest = *std::min_element(lengths.begin(), lengths.end());
    grid.perplexity.stride = request.stride > 0
                                 ? request.stride
                                 : std::max<int64_t>(shortest / 2, 1);
    grid.documents = LongDocuments(
        *val, *std::max_element(lengths.begin(), lengths.end()) + 1,
        grid.perplexity.num_documents);
  }
  if (!request.HasGrid()) return grid;
  const std::vector<int64_t> grid_lengths = GridLengths(request);
  // Examples of up to max(lengths) + 1 tokens.
  const std::vector<TokenId> filler =
      request.validation_filler
          ? TokenFileFiller(
                *val,
                *std::max_element(grid_lengths.begin(), grid_lengths.end()) + 1)
          : std::vector<TokenId>{};
  if (request.passkey) {
    grid.passkey = request.passkey_grid;
    grid.passkey.lengths = grid_lengths;
    grid.passkey.filler = filler;
  }
  if (!request.retrieval.empty()) {
    RetrievalEvalOptions retrieval;
    retrieval.tasks = request.retrieval;
    retrieval.lengths = grid_lengths;
    retrieval.depths = request.passkey_grid.depths;
    retrieval.trials = request.passkey_grid.trials;
    retrieval.seed = request.passkey_grid.seed;
    retrieval.filler = filler;
    grid.retrieval.push_back(retrieval);
  }
  return grid;
}

}  // namespace rotor::train

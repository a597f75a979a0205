#include "train/eval/length_eval.h"

#include <algorithm>
#include <cmath>

#include "core/autograd.h"
#include "core/error.h"

namespace rotor::train {

namespace {

constexpr int32_t kIgnore = -100;

// Adds the summed loss and scored-token count of one batch of windows:
// `starts[b]` is where window b begins in documents[b], it has `length`
// inputs, and only its targets from index `first_scored[b]` on count.
void ScoreWindows(nn::Transformer& model,
                  const std::vector<const std::vector<TokenId>*>& documents,
                  const std::vector<int64_t>& starts,
                  const std::vector<int64_t>& first_scored, int64_t length,
                  double& total_loss, int64_t& total_tokens) {
  const int64_t batch = static_cast<int64_t>(documents.size());
  std::vector<TokenId> inputs(static_cast<size_t>(batch * length));
  std::vector<int32_t> targets(static_cast<size_t>(batch * length), kIgnore);
  int64_t scored = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const TokenId* window = documents[b]->data() + starts[b];
    for (int64_t t = 0; t < length; ++t) {
      inputs[b * length + t] = window[t];
      if (t >= first_scored[b]) {
        targets[b * length + t] = window[t + 1];
        ++scored;
      }
    }
  }
  if (scored == 0) return;
  const Tensor loss = model.Loss(inputs, targets, batch, length, kIgnore);
  total_loss += static_cast<double>(loss.item()) * static_cast<double>(scored);
  total_tokens += scored;
}

}  // namespace

const char* LengthEvalMethodName(LengthEvalMethod method) {
  return method == LengthEvalMethod::kTruncate ? "truncate" : "sliding";
}

LengthEvalMethod LengthEvalMethodFromName(const std::string& name) {
  if (name == "truncate") return LengthEvalMethod::kTruncate;
  if (name == "sliding") return LengthEvalMethod::kSliding;
  throw Error(StrCat("perplexity method '", name,
                     "' is unknown (truncate or sliding)"));
}

std::vector<std::vector<TokenId>> LongDocuments(const TokenFile& val,
                                                int64_t tokens, int64_t count) {
  ROTOR_CHECK(tokens >= 2 && count >= 1,
              "LongDocuments: need tokens >= 2 and count >= 1, got ", tokens,
              " and ", count);
  std::vector<std::vector<TokenId>> documents;
  const size_t size = val.size();
  size_t start = 0;
  int64_t qualifying = 0;
  while (start < size) {
    size_t end = start + 1;
    while (end < size && val[end] != val.separator_id()) ++end;
    if (static_cast<int64_t>(end - start) >= tokens) {
      ++qualifying;
      if (static_cast<int64_t>(documents.size()) < count) {
        std::vector<TokenId>& document = documents.emplace_back(tokens);
        val.Copy(start, static_cast<size_t>(tokens), document.data());
      }
    }
    start = end;
  }
  ROTOR_CHECK(static_cast<int64_t>(documents.size()) == count, val.path(),
              ": only ", qualifying, " documents have ", tokens,
              " tokens or more, ", count,
              " are needed (use fewer documents or shorter lengths)");
  return documents;
}

std::vector<LengthPerplexity> PerplexityByLength(
    nn::Transformer& model, const TokenFile& val,
    const LengthEvalOptions& options) {
  ROTOR_CHECK(!options.lengths.empty(), "perplexity by length: no lengths");
  const int64_t longest =
      *std::max_element(options.lengths.begin(), options.lengths.end());
  return PerplexityByLength(
      model, LongDocuments(val, longest + 1, options.num_documents), options);
}

std::vector<LengthPerplexity> PerplexityByLength(
    nn::Transformer& model, const std::vector<std::vector<TokenId>>& documents,
    const LengthEvalOptions& options) {
  ROTOR_CHECK(!options.lengths.empty(), "perplexity by length: no lengths");
  ROTOR_CHECK(!documents.empty(), "perplexity by length: no documents");
  const int64_t longest =
      *std::max_element(options.lengths.begin(), options.lengths.end());
  const int64_t shortest =
      *std::min_element(options.lengths.begin(), options.lengths.end());
  ROTOR_CHECK(shortest >= 1, "perplexity by length: lengths must be >= 1, got ",
              shortest);
  for (const auto& document : documents) {
    ROTOR_CHECK(static_cast<int64_t>(document.size()) >= longest + 1,
                "perplexity by length: a document has ", document.size(),
                " tokens, fewer than the longest length + 1 = ", longest + 1);
  }
  const bool sliding = options.method == LengthEvalMethod::kSliding;
  if (sliding) {
    ROTOR_CHECK(options.stride >= 1 && options.stride <= shortest,
                "perplexity by length: the sliding stride must be in [1, ",
                shortest, "] (the shortest length), got ", options.stride);
  }

  NoGradGuard no_grad;
  std::vector<const std::vector<TokenId>*> batch_documents;
  for (const auto& document : documents) batch_documents.push_back(&document);
  const int64_t batch = static_cast<int64_t>(documents.size());

  std::vector<LengthPerplexity> results;
  for (const int64_t length : options.lengths) {
    model.SetSequenceLength(length);
    double total_loss = 0.0;
    int64_t total_tokens = 0;
    if (!sliding) {
      ScoreWindows(model, batch_documents, std::vector<int64_t>(batch, 0),
                   std::vector<int64_t>(batch, 0), length, total_loss,
                   total_tokens);
    } else {
      // Targets 1 .. longest of each document; `scored_end` is one past the
      // last target index already scored (target index = input index + 1).
      int64_t scored_end = 0;
      for (int64_t start = 0;; start += options.stride) {
        start = std::min(start, longest - length);
        const int64_t first_scored = std::max<int64_t>(scored_end - start, 0);
        ScoreWindows(model, batch_documents, std::vector<int64_t>(batch, start),
                     std::vector<int64_t>(batch, first_scored), length,
                     total_loss, total_tokens);
        scored_end = start + length;
        if (scored_end >= longest) break;
      }
    }
    LengthPerplexity result;
    result.length = length;
    result.tokens = total_tokens;
    result.loss = total_loss / static_cast<double>(total_tokens);
    result.perplexity = std::exp(result.loss);
    results.push_back(result);
  }
  return results;
}

}  // namespace rotor::train

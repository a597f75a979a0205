// Perplexity against context length: how well a model predicts text when it
// sees L tokens of context, for several L, on the SAME validation documents
// at every length (so the curve shows the effect of length, not of which
// text was scored).
//
// Documents: the first `num_documents` documents of val.bin with at least
// max(lengths) + 1 tokens (counting the <|endoftext|> that starts each one),
// each cut to its first max(lengths) + 1 tokens.
//
// Two methods (the conventions of the YaRN and Position Interpolation
// papers, after Press et al.):
//
//   truncate (default)  each document cut to its first L + 1 tokens and
//       scored in one window of L inputs: the loss averages positions
//       0 .. L-1, so a model that fails beyond its training length shows it
//       directly (YaRN's "documents truncated to the evaluation context").
//   sliding (stride S)  windows of L inputs slide over each document's
//       max(lengths) tokens by S (the last window is aligned to the end);
//       the first window scores all its targets, each later one only those
//       no earlier window scored. Every length scores exactly the same
//       tokens, each with between L - S and L tokens of context (fewer only
//       in the first window).
//
// Each window is one sequence of length L for the RoPE frequencies
// (Transformer::SetSequenceLength), which is what dynamic NTK and LongRoPE
// read.
#ifndef ROTOR_TRAIN_EVAL_LENGTH_EVAL_H_
#define ROTOR_TRAIN_EVAL_LENGTH_EVAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/fields.h"
#include "core/limits.h"
#include "nn/transformer.h"
#include "train/data/token_file.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {

enum class LengthEvalMethod { kTruncate, kSliding };

// "truncate" / "sliding"; the inverse throws for other names.
const char* LengthEvalMethodName(LengthEvalMethod method);
LengthEvalMethod LengthEvalMethodFromName(const std::string& name);

struct LengthEvalOptions {
  std::vector<int64_t> lengths;  // context lengths L, each >= 1
  int64_t num_documents = 10;
  LengthEvalMethod method = LengthEvalMethod::kTruncate;
  int64_t stride = 256;  // sliding only; 1 <= stride <= min(lengths)
};

// The evaluation documents: the first `count` documents of `val` with at
// least `tokens` tokens, each cut to `tokens` tokens (starting with its
// <|endoftext|>). Throws, naming the file and how many documents are long
// enough, if fewer than `count` qualify.
std::vector<std::vector<TokenId>> LongDocuments(const TokenFile& val,
                                                int64_t tokens, int64_t count);

struct LengthPerplexity {
  int64_t length = 0;
  double loss = 0.0;        // mean cross-entropy per scored token (nats)
  double perplexity = 0.0;  // exp(loss)
  int64_t tokens = 0;       // scored tokens
};

// Its JSON keys (train/io/json.h, RecordJson): the report's results files
// and rotor eval --json (which adds the data's bits per byte). A loss past
// 709.78 nats has an infinite perplexity, written as null.
template <typename Visitor>
void VisitFields(Visitor& v, LengthPerplexity& r) {
  v(Key{"length", "context length L: the inputs of each window"}, r.length,
    field::Int{1, limits::kMaxPositions});
  v(Key{"tokens", "scored tokens"}, r.tokens, field::Int{1}, StoredLast{});
  v(Key{"loss",
        "mean cross-entropy per scored token, in nats (null: +infinity)"},
    r.loss, field::RealAtLeast{0.0});
  v(Key{"perplexity", "exp(loss) (null: +infinity, past a double's range)"},
    r.perplexity, field::RealAtLeast{1.0});
}

// One result per entry of options.lengths, in that order, on
// LongDocuments(val, max(lengths) + 1, num_documents). Runs without
// gradients.
std::vector<LengthPerplexity> PerplexityByLength(
    nn::Transformer& model, const TokenFile& val,
    const LengthEvalOptions& options);

// The same on documents already chosen (each with >= max(lengths) + 1
// tokens).
std::vector<LengthPerplexity> PerplexityByLength(
    nn::Transformer& model, const std::vector<std::vector<TokenId>>& documents,
    const LengthEvalOptions& options);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EVAL_LENGTH_EVAL_H_

// EvaluateVariant: the parts of a grid measured in order, each equal to
// its own evaluation, shown to the caller as each one finishes.
#include "train/eval/variant_eval.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/train/train_test_util.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {
namespace {

EvalGrid Grid() {
  EvalGrid grid;
  grid.perplexity.lengths = {8, 16};
  grid.perplexity.num_documents = 2;
  for (TokenId first : {3, 40}) {
    std::vector<TokenId> document;
    for (TokenId t = 0; t < 17; ++t) document.push_back((first + 7 * t) % 256);
    grid.documents.push_back(document);
  }
  grid.passkey.lengths = {120};
  grid.passkey.depths = {0.0, 1.0};
  grid.passkey.trials = 2;
  // Two runs of the tasks, as the report gives each task its lengths.
  RetrievalEvalOptions single;
  single.tasks = {RetrievalTask::kNiahSingle};
  single.lengths = {600};
  single.depths = {0.5};
  single.trials = 1;
  RetrievalEvalOptions tracking = single;
  tracking.tasks = {RetrievalTask::kVariableTracking};
  tracking.lengths = {650, 700};
  grid.retrieval = {single, tracking};
  return grid;
}

TEST(EvaluateVariant, EachPartIsItsOwnEvaluationInOrder) {
  const ByteTokenizer bytes;
  nn::Transformer model(test::TinyTransformerConfig(1024), 7);
  const EvalGrid grid = Grid();
  std::vector<EvalPart> parts;
  std::vector<size_t> perplexity_seen;
  const VariantEvaluation measured = EvaluateVariant(
      model, bytes, grid, [&](EvalPart part, const VariantEvaluation& so_far) {
        parts.push_back(part);
        perplexity_seen.push_back(so_far.perplexity.size());
        // A part is shown before the next one is measured.
        if (part == EvalPart::kPerplexity) EXPECT_TRUE(so_far.passkey.empty());
        if (part == EvalPart::kPasskey) EXPECT_TRUE(so_far.retrieval.empty());
      });
  EXPECT_EQ(parts,
            (std::vector<EvalPart>{EvalPart::kPerplexity, EvalPart::kPasskey,
                                   EvalPart::kRetrieval}));
  EXPECT_EQ(perplexity_seen, (std::vector<size_t>{2, 2, 2}));

  const std::vector<LengthPerplexity> perplexity =
      PerplexityByLength(model, grid.documents, grid.perplexity);
  ASSERT_EQ(measured.perplexity.size(), perplexity.size());
  for (size_t i = 0; i < perplexity.size(); ++i) {
    EXPECT_EQ(measured.perplexity[i].length, perplexity[i].length);
    EXPECT_EQ(measured.perplexity[i].loss, perplexity[i].loss);
    EXPECT_EQ(measured.perplexity[i].tokens, perplexity[i].tokens);
  }
  const std::vector<PasskeyCell> passkey =
      EvaluatePasskey(model, bytes, grid.passkey);
  ASSERT_EQ(measured.passkey.size(), passkey.size());
  for (size_t i = 0; i < passkey.size(); ++i) {
    EXPECT_EQ(measured.passkey[i].digits_right, passkey[i].digits_right);
  }
  // The runs' cells one after the other: 1 cell, then 2.
  std::vector<RetrievalCell> retrieval =
      EvaluateRetrieval(model, bytes, grid.retrieval[0]);
  const std::vector<RetrievalCell> more =
      EvaluateRetrieval(model, bytes, grid.retrieval[1]);
  retrieval.insert(retrieval.end(), more.begin(), more.end());
  ASSERT_EQ(measured.retrieval.size(), 3u);
  for (size_t i = 0; i < retrieval.size(); ++i) {
    EXPECT_EQ(measured.retrieval[i].task, retrieval[i].task);
    EXPECT_EQ(measured.retrieval[i].length, retrieval[i].length);
    EXPECT_EQ(measured.retrieval[i].match_sum, retrieval[i].match_sum);
  }
}

// A part without lengths (or tasks) is neither measured nor shown.
TEST(EvaluateVariant, SkipsEmptyParts) {
  const ByteTokenizer bytes;
  nn::Transformer model(test::TinyTransformerConfig(1024), 7);
  EvalGrid grid = Grid();
  grid.passkey.lengths.clear();
  grid.retrieval[0].tasks.clear();
  grid.retrieval[1].lengths.clear();
  std::vector<EvalPart> parts;
  const VariantEvaluation measured = EvaluateVariant(
      model, bytes, grid,
      [&](EvalPart part, const VariantEvaluation&) { parts.push_back(part); });
  EXPECT_EQ(parts, std::vector<EvalPart>{EvalPart::kPerplexity});
  EXPECT_EQ(measured.perplexity.size(), 2u);
  EXPECT_TRUE(measured.passkey.empty());
  EXPECT_TRUE(measured.retrieval.empty());
}

}  // namespace
}  // namespace rotor::train

// Prefills that share prompts' common beginnings (train/eval/shared_prefix.h):
// the plan runs each prompt once, from a reference in cache row 0 and in
// decreasing order of what the batches share with it; its logits agree
// with every prompt prefilled alone to rounding; it runs the tokens it
// promises to save; GenerateTokensInBatches through it gives the greedy ids
// of each prompt generated alone.
#include "train/eval/shared_prefix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "core/autograd.h"
#include "core/random.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"
#include "train/eval/generate.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {
namespace {

int64_t CommonPrefix(const std::vector<TokenId>& a,
                     const std::vector<TokenId>& b) {
  int64_t n = 0;
  while (n < static_cast<int64_t>(a.size()) && a[n] == b[n]) ++n;
  return n;
}

// Prompts of `length` byte tokens, BOS then one random text, each with a
// different token written at round(depth * (length - 1)) + 1 of the depths
// (several prompts per depth), as the passkey's key within its filler:
// depth 1 puts it at the last position.
std::vector<std::vector<TokenId>> NeedlePrompts(
    int64_t length, const std::vector<double>& depths, int per_depth) {
  Rng rng(17);
  std::vector<TokenId> text = {256};
  while (static_cast<int64_t>(text.size()) < length) {
    text.push_back(static_cast<TokenId>('a' + rng.NextU64() % 26));
  }
  std::vector<std::vector<TokenId>> prompts;
  for (const double depth : depths) {
    for (int i = 0; i < per_depth; ++i) {
      std::vector<TokenId> prompt = text;
      const auto at = std::min<int64_t>(
          length - 1,
          std::llround(depth * static_cast<double>(length - 1)) + 1);
      prompt[at] = static_cast<TokenId>('0' + (prompt.size() + i) % 10);
      prompts.push_back(prompt);
    }
  }
  return prompts;
}

TEST(PlanPrefixBatches, EachPromptOnceSharingOnlyWhatRowZeroStillHolds) {
  const std::vector<std::vector<TokenId>> prompts =
      NeedlePrompts(60, {0.0, 1.0, 0.5, 0.25, 0.75}, 3);
  const int64_t keep = 4;
  for (const int64_t max_rows : {1, 2, 4, 7}) {
    SCOPED_TRACE("max_rows " + std::to_string(max_rows));
    const std::vector<PrefixBatch> plan =
        PlanPrefixBatches(prompts, keep, max_rows);
    std::multiset<size_t> seen;
    for (const PrefixBatch& batch : plan) {
      ASSERT_FALSE(batch.rows.empty());
      EXPECT_LE(static_cast<int64_t>(batch.rows.size()), max_rows);
      seen.insert(batch.rows.begin(), batch.rows.end());
    }
    std::multiset<size_t> all;
    for (size_t i = 0; i < prompts.size(); ++i) all.insert(i);
    EXPECT_EQ(seen, all);
    // R, in row 0 of the first batch, is a depth-1 prompt: it shares the
    // most with the others. The first batch runs whole.
    const std::vector<TokenId>& reference = prompts[plan[0].rows[0]];
    EXPECT_EQ(plan[0].rows[0], 3u);
    EXPECT_EQ(plan[0].shared, 0);
    // Each later batch shares no more than every row has in common with R,
    // and no more than the batch before (row 0 still holds R there); each
    // row runs its last `keep` positions at least.
    int64_t previous = 60;
    for (size_t b = 1; b < plan.size(); ++b) {
      EXPECT_LE(plan[b].shared, previous);
      previous = plan[b].shared;
      for (const size_t row : plan[b].rows) {
        EXPECT_LE(plan[b].shared, CommonPrefix(prompts[row], reference));
        EXPECT_LE(plan[b].shared, 60 - keep);
      }
    }
    // Something is shared: the depth-1 prompts share all but their last
    // positions with R.
    if (max_rows <= 2) {  // the first later batch holds only depth-1 rows
      EXPECT_EQ(plan[1].shared, 60 - keep);
    }
  }
  // Prompts that fit in one batch run in their order, sharing nothing.
  const std::vector<PrefixBatch> one = PlanPrefixBatches(prompts, keep, 15);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].shared, 0);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(one[0].rows[i], i);

  ROTOR_EXPECT_ERROR(PlanPrefixBatches({{1, 2, 3}, {1, 2}}, 1, 1),
                     "prompt 0 has 3 tokens and prompt 1 has 2");
  ROTOR_EXPECT_ERROR(PlanPrefixBatches(prompts, 1, 0),
                     "max_rows must be >= 1, got 0");
  ROTOR_EXPECT_ERROR(PlanPrefixBatches({}, 1, 1), "no prompts");
  ROTOR_EXPECT_ERROR(PlanPrefixBatches(prompts, 0, 2),
                     "keep must be >= 1 (the positions whose logits are read)");
}

// Two layers (the copied keys and values feed a layer that reads them),
// weights drawn wide (0.3) so that attention is sharp and what a row
// attends to moves its logits.
nn::TransformerConfig TwoLayers() {
  nn::TransformerConfig config = test::TinyTransformerConfig(128);
  config.num_hidden_layers = 2;
  config.initializer_range = 0.3;
  return config;
}

// Every row's last logits through the plan (3 rows a batch) agree with the
// prompt prefilled alone: the shared keys and values come from another
// product's rows, so to rounding (at most 1e-5 of the logits' range here),
// at 1 and 2 threads. The plan runs R whole and the rest from their shared
// length on: under 3/4 of the positions of 15 whole prompts (batches of 3
// mix depths, and each runs from its rows' least shared length).
TEST(PrefillPlannedBatch, LogitsOfEveryPromptAloneToRounding) {
  nn::Transformer model(TwoLayers(), 5);
  const int64_t length = 90;
  const int64_t last = 3;
  const std::vector<std::vector<TokenId>> prompts =
      NeedlePrompts(length, {0.0, 0.25, 0.5, 0.75, 1.0}, 3);
  const int64_t vocab = model.config().vocab_size;
  NoGradGuard no_grad;
  model.SetSequenceLength(length);
  std::vector<std::vector<float>> alone;
  for (const std::vector<TokenId>& prompt : prompts) {
    alone.push_back(
        model.LastLogits(prompt, 1, length, 0, nullptr, last).ToVector());
  }
  float range = 0.0f;
  for (const std::vector<float>& logits : alone) {
    for (const float x : logits) range = std::max(range, std::abs(x));
  }
  for (const int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    test::ThreadCountGuard guard(threads);
    nn::KvCache cache = model.NewKvCache(3, length);
    const int64_t before = model.forwarded_positions();
    int64_t planned = 0;
    for (const PrefixBatch& batch : PlanPrefixBatches(prompts, last, 3)) {
      const int64_t rows = static_cast<int64_t>(batch.rows.size());
      planned += rows * (length - batch.shared);
      nn::KvCache view = FirstRows(cache, rows);
      const std::vector<float> logits =
          PrefillPlannedBatch(model, prompts, batch, &view, last).ToVector();
      EXPECT_EQ(view.length, length);
      for (int64_t row = 0; row < rows; ++row) {
        const std::vector<float>& want = alone[batch.rows[row]];
        for (int64_t i = 0; i < last * vocab; ++i) {
          ASSERT_NEAR(logits[row * last * vocab + i], want[i], 1e-5 * range)
              << "prompt " << batch.rows[row] << " entry " << i;
        }
      }
    }
    const int64_t forwarded = model.forwarded_positions() - before;
    EXPECT_EQ(forwarded, planned);
    EXPECT_LT(forwarded, 15 * length * 3 / 4);  // 936 of 1,350
  }
}

// A batch sharing more than its rows leave to run, or sharing without a
// cache to share from, is refused.
TEST(PrefillPlannedBatch, RefusesASharedLengthThatLeavesTooFewPositions) {
  nn::Transformer model(test::TinyTransformerConfig(128), 5);
  const std::vector<std::vector<TokenId>> prompts = {{256, 'a', 'b', 'c'}};
  nn::KvCache cache = model.NewKvCache(1, 4);
  PrefixBatch batch;
  batch.rows = {0};
  batch.shared = 3;
  NoGradGuard no_grad;
  ROTOR_EXPECT_ERROR(PrefillPlannedBatch(model, prompts, batch, &cache, 2),
                     "3 shared positions leave fewer than 2 of a 4-token");
  ROTOR_EXPECT_ERROR(FirstRows(cache, 2), "2 rows of a KV cache of 1");
  batch.shared = 1;
  ROTOR_EXPECT_ERROR(PrefillPlannedBatch(model, prompts, batch, nullptr, 2),
                     "1 shared positions but no KV cache to take them from");
}

// GenerateTokensInBatches (the retrieval evaluation's generation): prompts
// of 700 tokens run two a batch (kMaxBatchPromptTokens), each from what it
// shares with the reference, and write the greedy ids each prompt gets
// generated alone.
TEST(GenerateTokensInBatches, SharedBeginningsGiveTheIdsOfEachPromptAlone) {
  nn::Transformer model(TwoLayers(), 9);
  const std::vector<std::vector<TokenId>> prompts =
      NeedlePrompts(700, {1.0, 0.0, 0.5}, 3);
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  greedy.stop_at_end_of_text = false;
  const std::vector<int64_t> max_new(prompts.size(), 6);
  const int64_t before = model.forwarded_positions();
  const std::vector<std::vector<TokenId>> batched =
      GenerateTokensInBatches(model, ByteTokenizer(), prompts, max_new, greedy);
  // R whole, then the others from their shared length (depth 1: one
  // position, 0.5: half, 0: all), and 5 decode steps each: about 6 prompts'
  // worth, not 9.
  EXPECT_LT(model.forwarded_positions() - before, 7 * 700);
  greedy.max_new_tokens = 6;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(batched[i],
              GenerateTokens(model, ByteTokenizer(), prompts[i], greedy))
        << "prompt " << i;
  }
}

}  // namespace
}  // namespace rotor::train

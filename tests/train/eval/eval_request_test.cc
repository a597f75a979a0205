// rotor eval's request made into a grid: the grid's lengths fall back from
// the given ones to perplexity's to the model's, and retrieval shares the
// passkey grid.
#include "train/eval/eval_request.h"

#include <gtest/gtest.h>

namespace rotor::train {
namespace {

TEST(EvalRequest, GridLengthsFallBackToTheModels) {
  EvalRequest request;
  request.passkey = true;
  request.retrieval = {RetrievalTask::kNiahSingle};
  request.passkey_grid.depths = {0.0, 1.0};
  request.passkey_grid.trials = 3;
  request.passkey_grid.seed = 7;
  request.passkey_grid.num_digits = 6;
  request.model_lengths = {256, 64, 256};
  EXPECT_FALSE(request.ReadsValidation());  // the Landmark filler
  EXPECT_TRUE(request.GivenLengths().empty());
  const EvalGrid grid = PlanEvalGrid(request, nullptr);
  EXPECT_TRUE(grid.perplexity.lengths.empty());
  EXPECT_EQ(grid.passkey.lengths, (std::vector<int64_t>{64, 256}));
  EXPECT_EQ(grid.passkey.num_digits, 6);
  ASSERT_EQ(grid.retrieval.size(), 1u);
  EXPECT_EQ(grid.retrieval[0].lengths, (std::vector<int64_t>{64, 256}));
  EXPECT_EQ(grid.retrieval[0].depths, (std::vector<double>{0.0, 1.0}));
  EXPECT_EQ(grid.retrieval[0].trials, 3);
  EXPECT_EQ(grid.retrieval[0].seed, 7u);
  EXPECT_TRUE(grid.retrieval[0].filler.empty());

  request.passkey_grid.lengths = {96};
  EXPECT_EQ(PlanEvalGrid(request, nullptr).passkey.lengths,
            (std::vector<int64_t>{96}));
  request.perplexity.lengths = {512, 128};
  EXPECT_EQ(request.GivenLengths(), (std::vector<int64_t>{96, 128, 512}));
  request.passkey = false;
  request.retrieval.clear();
  EXPECT_EQ(request.GivenLengths(), (std::vector<int64_t>{128, 512}));
  EXPECT_TRUE(request.ReadsValidation());  // the perplexity documents
}

}  // namespace
}  // namespace rotor::train

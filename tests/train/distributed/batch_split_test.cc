// How the ranks share a step's rows (train/distributed/batch_split.h): the
// header's examples, every row exactly once over the ranks, and the refusal
// of a share that is not whole.
#include "train/distributed/batch_split.h"

#include <chrono>
#include <tuple>
#include <vector>

#include "tests/test_util.h"

namespace rotor::train {
namespace {

std::vector<std::vector<int64_t>> Flatten(int64_t batch_size,
                                          int64_t micro_batches, int ranks) {
  std::vector<std::vector<int64_t>> rows(ranks);
  for (int rank = 0; rank < ranks; ++rank) {
    for (const RowRange& range :
         RankRows(batch_size, micro_batches, ranks, rank)) {
      EXPECT_GT(range.rows, 0);
      EXPECT_LE(range.first_row + range.rows, batch_size);
      for (int64_t r = 0; r < range.rows; ++r) {
        rows[rank].push_back(range.micro * batch_size + range.first_row + r);
      }
    }
  }
  return rows;
}

// (micro, first_row, rows) of each piece.
using Pieces = std::vector<std::tuple<int64_t, int64_t, int64_t>>;

Pieces PiecesOf(int64_t batch_size, int64_t micro_batches, int ranks,
                int rank) {
  Pieces pieces;
  for (const RowRange& range :
       RankRows(batch_size, micro_batches, ranks, rank)) {
    pieces.emplace_back(range.micro, range.first_row, range.rows);
  }
  return pieces;
}

TEST(BatchSplit, TheHeadersExamples) {
  EXPECT_EQ(PiecesOf(4, 2, 2, 0), (Pieces{{0, 0, 4}}));
  EXPECT_EQ(PiecesOf(4, 2, 2, 1), (Pieces{{1, 0, 4}}));
  EXPECT_EQ(PiecesOf(4, 1, 2, 0), (Pieces{{0, 0, 2}}));
  EXPECT_EQ(PiecesOf(4, 1, 2, 1), (Pieces{{0, 2, 2}}));
  EXPECT_EQ(PiecesOf(4, 3, 2, 0), (Pieces{{0, 0, 4}, {1, 0, 2}}));
  EXPECT_EQ(PiecesOf(4, 3, 2, 1), (Pieces{{1, 2, 2}, {2, 0, 4}}));
}

// Rank k's rows are [k*S, (k+1)*S): all rows once, in order, equal shares.
TEST(BatchSplit, RanksTakeEveryRowOnceInOrder) {
  for (const auto& [batch, micro, ranks] :
       std::vector<std::tuple<int64_t, int64_t, int>>{
           {16, 1, 1}, {16, 1, 8}, {6, 4, 8}, {4, 6, 3}, {3, 2, 6}}) {
    SCOPED_TRACE(StrCat(batch, " x ", micro, " over ", ranks));
    CheckBatchSplits(batch, micro, ranks, "run.yaml");
    const auto rows = Flatten(batch, micro, ranks);
    int64_t next = 0;
    for (const std::vector<int64_t>& share : rows) {
      EXPECT_EQ(static_cast<int64_t>(share.size()), batch * micro / ranks);
      for (int64_t row : share) EXPECT_EQ(row, next++);
    }
    EXPECT_EQ(next, batch * micro);
  }
}

TEST(BatchSplit, AShareThatIsNotWholeIsRefused) {
  ROTOR_EXPECT_ERROR(CheckBatchSplits(4, 1, 3, "run.yaml"),
                     "run.yaml: 3 ranks cannot share a step's 4 sequences "
                     "(train.batch_size 4 x train.gradient_accumulation_steps "
                     "1) equally; rotor does not round a share. Run 2 or 4 "
                     "ranks");
  ROTOR_EXPECT_ERROR(CheckBatchSplits(5, 1, 2, "run.yaml"), "Run 1 or 5 ranks");
  ROTOR_EXPECT_ERROR(CheckBatchSplits(6, 1, 4, "run.yaml"), "Run 3 or 6 ranks");
}

// No larger rank count divides fewer rows than ranks: the suggestion names
// the smaller one alone (this used to loop forever).
TEST(BatchSplit, MoreRanksThanSequencesSuggestsFewer) {
  ROTOR_EXPECT_ERROR(CheckBatchSplits(2, 1, 3, "tiny.yaml"),
                     "tiny.yaml: 3 ranks cannot share a step's 2 sequences "
                     "(train.batch_size 2 x train.gradient_accumulation_steps "
                     "1) equally; rotor does not round a share. Run 2 ranks, "
                     "or choose");
  ROTOR_EXPECT_ERROR(CheckBatchSplits(1, 1, 2, "run.yaml"), "Run 1 rank, ");
  ROTOR_EXPECT_ERROR(CheckBatchSplits(3, 1, 64, "run.yaml"), "Run 3 ranks, ");
  ROTOR_EXPECT_ERROR(CheckBatchSplits(1, 7, 1 << 30, "run.yaml"),
                     "Run 7 ranks, ");
}

// The larger suggestion is found among the divisors of the rows, in
// O(sqrt(rows)) whatever the sizes: 1048573 is prime, so the smallest
// count above 2 that divides 1048573^2 rows is 1048573 itself.
TEST(BatchSplit, TheSuggestionIsQuickForLargePrimeSizes) {
  const auto start = std::chrono::steady_clock::now();
  ROTOR_EXPECT_ERROR(CheckBatchSplits(1048573, 1048573, 2, "run.yaml"),
                     "Run 1 or 1048573 ranks");
  ROTOR_EXPECT_ERROR(CheckBatchSplits(1048573, 1, 1048572, "run.yaml"),
                     "Run 1 or 1048573 ranks");
  EXPECT_LT(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count(),
      1.0);
}

}  // namespace
}  // namespace rotor::train

#include "train/distributed/batch_split.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace rotor::train {

namespace {

// The rank counts next to `ranks` that share `rows` evenly: the largest
// divisor of `rows` below `ranks` (at least 1) and the smallest above it (0
// when there is none: more ranks than rows). O(sqrt(rows)), whatever the
// sizes.
std::pair<int64_t, int64_t> NearestDivisors(int64_t rows, int64_t ranks) {
  int64_t below = 1;
  int64_t above = 0;
  for (int64_t d = 1; d <= rows / d; ++d) {
    if (rows % d != 0) continue;
    for (const int64_t divisor : {d, rows / d}) {
      if (divisor < ranks) below = std::max(below, divisor);
      if (divisor > ranks && (above == 0 || divisor < above)) above = divisor;
    }
  }
  return {below, above};
}

}  // namespace

void CheckBatchSplits(int64_t batch_size, int64_t micro_batches, int world_size,
                      const std::string& file) {
  const int64_t rows = batch_size * micro_batches;
  if (rows % world_size == 0) return;
  const auto [below, above] = NearestDivisors(rows, world_size);
  const std::string counts =
      above == 0 ? StrCat(below, below == 1 ? " rank" : " ranks")
                 : StrCat(below, " or ", above, " ranks");
  throw Error(StrCat(
      file, ": ", world_size, " ranks cannot share a step's ", rows,
      " sequences (train.batch_size ", batch_size,
      " x train.gradient_accumulation_steps ", micro_batches,
      ") equally; rotor does not round a share. Run ", counts,
      ", or choose a batch_size x gradient_accumulation_steps that ",
      world_size, " divides (a multiple of ", world_size,
      " gradient_accumulation_steps gives the same bits as one process)"));
}

std::vector<RowRange> RankRows(int64_t batch_size, int64_t micro_batches,
                               int world_size, int rank) {
  const int64_t share = batch_size * micro_batches / world_size;
  const int64_t begin = rank * share;
  const int64_t end = begin + share;
  std::vector<RowRange> pieces;
  for (int64_t row = begin; row < end;) {
    const int64_t micro = row / batch_size;
    const int64_t micro_end = std::min(end, (micro + 1) * batch_size);
    pieces.push_back({micro, row - micro * batch_size, micro_end - row});
    row = micro_end;
  }
  return pieces;
}

}  // namespace rotor::train

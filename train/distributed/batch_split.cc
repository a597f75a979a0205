#include "train/distributed/batch_split.h"

#include <algorithm>

#include "core/error.h"

namespace rotor::train {

void CheckBatchSplits(int64_t batch_size, int64_t micro_batches,
                      int world_size, const std::string& file) {
  const int64_t rows = batch_size * micro_batches;
  if (rows % world_size == 0) return;
  // The rank counts next to world_size that would share the rows evenly.
  int64_t below = world_size - 1;
  while (below > 1 && rows % below != 0) --below;
  int64_t above = world_size + 1;
  while (rows % above != 0) ++above;
  throw Error(StrCat(
      file, ": ", world_size, " ranks cannot share a step's ", rows,
      " sequences (train.batch_size ", batch_size,
      " x train.gradient_accumulation_steps ", micro_batches,
      ") equally; rotor does not round a share. Run ", below, " or ", above,
      " ranks, or choose a batch_size x gradient_accumulation_steps that ",
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

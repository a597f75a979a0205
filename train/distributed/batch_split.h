// How the ranks of a data-parallel job share each optimizer step's batch.
//
// A step's global batch is what one process would train on: G =
// train.gradient_accumulation_steps micro-batches of B = train.batch_size
// sequences, rows 0 .. B*G - 1 in the order the sampler draws them (row r
// is row r % B of micro-batch r / B). Every rank draws all of them from the
// same sampler, so the sampler state, and the passkey mix, stay identical
// on every rank and in every checkpoint. Of N ranks, rank k trains on the
// contiguous rows [k*S, (k+1)*S), S = B*G / N, cut where micro-batches end
// so no piece is larger than a micro-batch (the memory estimate's unit):
//
//   B = 4, G = 2, N = 2:  rank 0: micro 0 rows 0-3    rank 1: micro 1 rows 0-3
//   B = 4, G = 1, N = 2:  rank 0: micro 0 rows 0-1    rank 1: micro 0 rows 2-3
//   B = 4, G = 3, N = 2:  rank 0: micro 0, micro 1 rows 0-1
//                         rank 1: micro 1 rows 2-3, micro 2
//
// Nothing is rounded: when N does not divide B*G the run is refused, naming
// sizes that work. When N divides G each rank's pieces are whole
// micro-batches, and the summed gradient is the single process's.
#ifndef ROTOR_TRAIN_DISTRIBUTED_BATCH_SPLIT_H_
#define ROTOR_TRAIN_DISTRIBUTED_BATCH_SPLIT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rotor::train {

// Rows [first_row, first_row + rows) of micro-batch `micro`.
struct RowRange {
  int64_t micro = 0;
  int64_t first_row = 0;
  int64_t rows = 0;
};

// Throws rotor::Error (naming `file`, the sizes and the nearest rank counts
// that divide them) unless `world_size` ranks can share batch_size *
// micro_batches rows equally.
void CheckBatchSplits(int64_t batch_size, int64_t micro_batches,
                      int world_size, const std::string& file);

// Rank `rank`'s pieces of the step, in row order.
std::vector<RowRange> RankRows(int64_t batch_size, int64_t micro_batches,
                               int world_size, int rank);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DISTRIBUTED_BATCH_SPLIT_H_

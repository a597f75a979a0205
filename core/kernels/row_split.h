// How the row-wise kernels split rows over threads (core/parallel.h).
#ifndef ROTOR_CORE_KERNELS_ROW_SPLIT_H_
#define ROTOR_CORE_KERNELS_ROW_SPLIT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace rotor {
namespace kernels {

// Smallest amount of work (in floats of one operand) worth a task: 64 KiB.
constexpr int64_t kMinFloatsPerTask = 16384;

// The ParallelFor grain for rows of `cols` floats: enough rows that a task
// touches at least kMinFloatsPerTask floats (one row when rows are long).
inline int64_t RowsPerTask(size_t cols) {
  return std::max<int64_t>(
      1, kMinFloatsPerTask / std::max<int64_t>(1, static_cast<int64_t>(cols)));
}

// Row r + 1 of a [rows, cols] array, or row r itself when r is the last
// row. Forward kernels prefetch it while they work on row r, so the memory
// reads of the next row overlap this row's arithmetic and writes.
inline const float* NextRowOrSelf(const float* base, int64_t r, size_t rows,
                                  size_t cols) {
  const int64_t next = r + 1 < static_cast<int64_t>(rows) ? r + 1 : r;
  return base + next * cols;
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ROW_SPLIT_H_

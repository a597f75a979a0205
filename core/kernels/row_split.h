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

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ROW_SPLIT_H_

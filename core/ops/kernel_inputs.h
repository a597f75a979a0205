// Helpers for ops that hand tensors to the row-wise kernels in
// core/kernels/, which take dense row-major float arrays.
#ifndef ROTOR_CORE_OPS_KERNEL_INPUTS_H_
#define ROTOR_CORE_OPS_KERNEL_INPUTS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace rotor {
namespace ops_internal {

// `x` itself when it is contiguous; otherwise a contiguous copy of its
// values (no autograd). Only views pay for a copy.
inline Tensor ContiguousOrCopy(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor copy = Tensor::Empty(x.shape());
  copy.CopyFrom(x);
  return copy;
}

// A tensor of shape [..., cols] seen as a [rows, cols] matrix.
struct RowsAndCols {
  size_t rows;
  size_t cols;
};
inline RowsAndCols AsRows(const Tensor& x) {
  const size_t cols = static_cast<size_t>(x.size(-1));
  return {static_cast<size_t>(x.numel()) / std::max<size_t>(cols, 1), cols};
}

// The cross-entropy losses' targets: checks every entry is in [0, vocab) or
// equals ignore_index, naming `op`, the row and the value, and returns how
// many rows count (those whose target is not ignore_index).
inline int64_t CountScoredTargets(const std::vector<int32_t>& targets,
                                  int64_t vocab, int32_t ignore_index,
                                  const char* op) {
  int64_t counted = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    const int32_t target = targets[r];
    if (target == ignore_index) continue;
    ROTOR_CHECK(target >= 0 && target < vocab, op, ": target ", target,
                " of row ", r, " is out of range for vocab size ", vocab,
                " (ignore_index is ", ignore_index, ")");
    ++counted;
  }
  return counted;
}

}  // namespace ops_internal
}  // namespace rotor

#endif  // ROTOR_CORE_OPS_KERNEL_INPUTS_H_

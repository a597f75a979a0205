// Helpers for ops that hand tensors to the row-wise kernels in
// core/kernels/, which take dense row-major float arrays.
#ifndef ROTOR_CORE_OPS_KERNEL_INPUTS_H_
#define ROTOR_CORE_OPS_KERNEL_INPUTS_H_

#include <algorithm>
#include <cstddef>

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

}  // namespace ops_internal
}  // namespace rotor

#endif  // ROTOR_CORE_OPS_KERNEL_INPUTS_H_

// Scalar references for core/kernels/cross_entropy.h, templated on the
// element type (float, double, std::complex<double>).
#ifndef ROTOR_CORE_KERNELS_CROSS_ENTROPY_SCALAR_H_
#define ROTOR_CORE_KERNELS_CROSS_ENTROPY_SCALAR_H_

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/kernels/scalar_math.h"

namespace rotor {
namespace kernels {

template <typename T>
void CrossEntropyForwardRef(const T* logits, const int32_t* targets,
                            size_t rows, size_t vocab, int32_t ignore_index,
                            T* losses, T* logsumexp) {
  for (size_t r = 0; r < rows; ++r) {
    losses[r] = logsumexp[r] = T(0);
    if (targets[r] == ignore_index) continue;
    const T* row = logits + r * vocab;
    const T shift = MaxRealRef(row, vocab);
    T sum = 0;
    for (size_t j = 0; j < vocab; ++j) sum += std::exp(row[j] - shift);
    logsumexp[r] = shift + std::log(sum);
    losses[r] = logsumexp[r] - row[targets[r]];
  }
}

template <typename T>
void CrossEntropyBackwardRef(const T* logits, const T* logsumexp,
                             const int32_t* targets, size_t rows, size_t vocab,
                             int32_t ignore_index, T scale, T* dlogits) {
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < vocab; ++j) {
      if (targets[r] == ignore_index) {
        dlogits[r * vocab + j] = T(0);
        continue;
      }
      const T p = std::exp(logits[r * vocab + j] - logsumexp[r]);
      const T onehot = j == static_cast<size_t>(targets[r]) ? T(1) : T(0);
      dlogits[r * vocab + j] = scale * (p - onehot);
    }
  }
}

template <typename T>
void CrossEntropyForwardBackwardInPlaceRef(T* logits, const int32_t* targets,
                                           size_t rows, size_t vocab,
                                           int32_t ignore_index, T scale,
                                           T* losses) {
  for (size_t r = 0; r < rows; ++r) {
    T* row = logits + r * vocab;
    losses[r] = T(0);
    if (targets[r] == ignore_index) {
      for (size_t j = 0; j < vocab; ++j) row[j] = T(0);
      continue;
    }
    T lse;
    CrossEntropyForwardRef(row, targets + r, 1, vocab, ignore_index, losses + r,
                           &lse);
    for (size_t j = 0; j < vocab; ++j) row[j] = scale * std::exp(row[j] - lse);
    row[targets[r]] -= scale;
  }
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_CROSS_ENTROPY_SCALAR_H_

// Fused, numerically stable softmax cross entropy over the rows of a
// row-major [rows, vocab] array of logits: Highway kernels with dynamic
// dispatch (core/kernels/cross_entropy.cc), parallel over rows. Scalar
// references: core/kernels/cross_entropy_scalar.h.
//
// Arrays are contiguous and may be unaligned; outputs must not alias inputs.
// Every target must be in [0, vocab) or equal ignore_index (the op checks
// this before calling; the kernels do not).
#ifndef ROTOR_CORE_KERNELS_CROSS_ENTROPY_H_
#define ROTOR_CORE_KERNELS_CROSS_ENTROPY_H_

#include <cstddef>
#include <cstdint>

namespace rotor {
namespace kernels {

// logits: [rows, vocab], targets: [rows] -> losses: [rows], logsumexp: [rows]
//   logsumexp[r] = m_r + log(sum_j exp(logits[r, j] - m_r)),  m_r = max_j
//   losses[r]    = logsumexp[r] - logits[r, targets[r]]
//                  (= -log softmax(logits[r])[targets[r]])
// Rows with targets[r] == ignore_index get losses[r] = logsumexp[r] = 0.
// A NaN logit in a counted row makes its loss NaN (a diverged model shows).
// logsumexp is the state the backward pass needs: with it, backward gets
// softmax = exp(logits - logsumexp) without another max or sum pass.
void CrossEntropyForward(const float* logits, const int32_t* targets,
                         size_t rows, size_t vocab, int32_t ignore_index,
                         float* losses, float* logsumexp);

// Writes the gradient of  scale * sum_r losses[r]:
//   dlogits[r, j] = scale * (exp(logits[r, j] - logsumexp[r]) - [j == t_r])
// for every row whose target is not ignore_index (other rows get zeros).
// For the mean loss, scale = dL/dloss / (number of non-ignored rows).
void CrossEntropyBackward(const float* logits, const float* logsumexp,
                          const int32_t* targets, size_t rows, size_t vocab,
                          int32_t ignore_index, float scale, float* dlogits);

// Forward and backward of one chunk in one pass, in place (the chunked loss
// of core/ops/linear_cross_entropy.cc): for each row r,
//   losses[r]    = logsumexp(logits[r]) - logits[r, targets[r]]
//   logits[r, j] = scale * exp(logits[r, j] - logsumexp[r]) - scale [j == t_r]
// so `logits` ends as dloss/dlogits for loss = scale * sum_r losses[r]. Rows
// whose target is ignore_index get losses[r] = 0 and a zero gradient row.
// Bitwise the same as CrossEntropyForward, then CrossEntropyBackward, on
// every target: the same per-element operations, one fewer pass
// over memory and no second [rows, vocab] buffer.
void CrossEntropyForwardBackwardInPlace(float* logits, const int32_t* targets,
                                        size_t rows, size_t vocab,
                                        int32_t ignore_index, float scale,
                                        float* losses);

// Name of the Highway target this family dispatches to.
const char* CrossEntropyTarget();

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_CROSS_ENTROPY_H_

// The optimizer's kernels: the global sum of squares of the gradients and
// one fused AdamW step, each one call over every parameter (a list of
// arrays, as PyTorch's multi-tensor apply: the arrays stay where the model
// keeps them). Highway kernels with dynamic dispatch
// (core/kernels/adamw.cc), parallel over fixed chunks of each array. Scalar
// reference: core/kernels/adamw_scalar.h.
#ifndef ROTOR_CORE_KERNELS_ADAMW_H_
#define ROTOR_CORE_KERNELS_ADAMW_H_

#include <cstddef>
#include <cstdint>

namespace rotor {
namespace kernels {

struct AdamWHyperparams {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;  // for the segments with decay set
  float grad_scale = 1.0f;     // gradient clipping's factor
};

// One parameter: param, grad, m, v: [n] (m, v start at 0 before step 1).
struct AdamWSegment {
  float* param;
  const float* grad;
  float* m;
  float* v;
  size_t n;
  bool decay;  // weight decay applies (weight matrices)
};

// For every segment and step t >= 1, with g = grad_scale * grad and
// wd = weight_decay where decay is set (0 elsewhere), each element does what
// PyTorch's torch.optim.AdamW (amsgrad=False, maximize=False) does after
// clip_grad_norm_:
//   p <- p * (1 - lr * wd)                     decoupled weight decay
//   m <- beta1 * m + (1 - beta1) * g           first moment
//   v <- beta2 * v + (1 - beta2) * g * g       second moment
//   p <- p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The bias corrections 1 - beta^t are computed once per call in double; the
// kernel multiplies by 1 / sqrt(1 - beta2^t) instead of dividing (equal up
// to float rounding). g is grad_scale * grad rounded to float, as a
// separate scaling pass would leave it.
// Arrays may be unaligned and must not alias each other.
void AdamWUpdate(const AdamWSegment* segments, size_t count,
                 const AdamWHyperparams& hyper, int64_t step);

// A gradient to sum over: data: [n].
struct FloatSpan {
  const float* data;
  size_t n;
};

// sum over every span and element of x^2, in double (the global gradient
// norm's square). Each span is cut into fixed chunks whose sums (vector-wide
// partials, in double) are added in span and chunk order: the same bits for
// any thread count.
double SumOfSquaresOfSpans(const FloatSpan* spans, size_t count);

// Name of the Highway target this family dispatches to.
const char* AdamWTarget();

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ADAMW_H_

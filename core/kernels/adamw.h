// One fused AdamW step over flat float arrays: Highway kernel with dynamic
// dispatch (core/kernels/adamw.cc), parallel over chunks. Scalar reference:
// core/kernels/adamw_scalar.h.
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
  float weight_decay = 0.01f;
};

// param, grad, m, v: [n] (m, v start at 0 before step 1). For step t >= 1,
// each element does what PyTorch's torch.optim.AdamW (amsgrad=False,
// maximize=False) does:
//   p <- p * (1 - lr * weight_decay)           decoupled weight decay
//   m <- beta1 * m + (1 - beta1) * g           first moment
//   v <- beta2 * v + (1 - beta2) * g * g       second moment
//   p <- p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The bias corrections 1 - beta^t are computed once per call in double; the
// kernel multiplies by 1 / sqrt(1 - beta2^t) instead of dividing (equal up
// to float rounding).
// Arrays may be unaligned and must not alias each other.
void AdamWUpdate(float* param, const float* grad, float* m, float* v, size_t n,
                 const AdamWHyperparams& hyper, int64_t step);

// Name of the Highway target this family dispatches to.
const char* AdamWTarget();

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ADAMW_H_

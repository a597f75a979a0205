// Highway implementation of core/kernels/adamw.h (file anatomy as in
// core/kernels/softmax.cc).
#include "core/kernels/adamw.h"

#include <cmath>

#include "core/kernels/row_split.h"
#include "core/parallel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/adamw.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target helpers, after highway.h:
#include "core/kernels/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

void AdamWUpdate(float* HWY_RESTRICT param, const float* HWY_RESTRICT grad,
                 float* HWY_RESTRICT m, float* HWY_RESTRICT v, size_t n,
                 const AdamWHyperparams& hyper, int64_t step) {
  const double t = static_cast<double>(step);
  const float decay = 1.0f - hyper.lr * hyper.weight_decay;
  const float step_size =
      static_cast<float>(hyper.lr / (1.0 - std::pow(double(hyper.beta1), t)));
  const float inverse_correction2_sqrt = static_cast<float>(
      1.0 / std::sqrt(1.0 - std::pow(double(hyper.beta2), t)));
  const float beta1 = hyper.beta1, beta2 = hyper.beta2, eps = hyper.eps;
  ParallelFor(n, kMinFloatsPerTask, [&](int64_t begin, int64_t end) HWY_ATTR {
    ForEachVector(end - begin, [&](auto d, size_t offset) HWY_ATTR {
      const size_t i = begin + offset;
      const auto g = hn::LoadU(d, grad + i);
      const auto m_new = hn::MulAdd(hn::Set(d, beta1), hn::LoadU(d, m + i),
                                    hn::Mul(hn::Set(d, 1.0f - beta1), g));
      const auto v_new =
          hn::MulAdd(hn::Set(d, beta2), hn::LoadU(d, v + i),
                     hn::Mul(hn::Mul(hn::Set(d, 1.0f - beta2), g), g));
      const auto denominator =
          hn::MulAdd(hn::Sqrt(v_new), hn::Set(d, inverse_correction2_sqrt),
                     hn::Set(d, eps));
      const auto p = hn::Mul(hn::LoadU(d, param + i), hn::Set(d, decay));
      const auto update =
          hn::Div(hn::Mul(hn::Set(d, step_size), m_new), denominator);
      hn::StoreU(m_new, d, m + i);
      hn::StoreU(v_new, d, v + i);
      hn::StoreU(hn::Sub(p, update), d, param + i);
    });
  });
}

const char* AdamWTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rotor {
namespace kernels {

HWY_EXPORT(AdamWUpdate);
HWY_EXPORT(AdamWTarget);

void AdamWUpdate(float* param, const float* grad, float* m, float* v, size_t n,
                 const AdamWHyperparams& hyper, int64_t step) {
  HWY_DYNAMIC_DISPATCH(AdamWUpdate)(param, grad, m, v, n, hyper, step);
}
const char* AdamWTarget() { return HWY_DYNAMIC_DISPATCH(AdamWTarget)(); }

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

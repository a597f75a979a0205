// RmsNorm (core/ops/ops.h): forward and backward side by side, running the
// Highway kernels of core/kernels/rmsnorm.h on a [rows, dim] view of x.
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/rmsnorm.h"
#include "core/ops/kernel_inputs.h"
#include "core/ops/ops.h"
#include "core/profile.h"

namespace rotor {

using ops_internal::AsRows;
using ops_internal::ContiguousOrCopy;

// y = x * rstd * weight,  rstd = 1 / sqrt(mean(x^2) + eps) per row.
// x: [..., dim], weight: [dim] -> y: [..., dim].
// The forward saves rstd (one float per row); backward (see
// core/kernels/rmsnorm.h for the formulas) gives dx and dweight, the latter
// summed over rows in a fixed order.
Tensor RmsNorm(const Tensor& x, const Tensor& weight, float eps) {
  profile::Scope scope(profile::Phase::kKernels);
  ROTOR_CHECK(x.dim() >= 1, "RmsNorm: x needs at least one dimension, got ",
              "shape ", ShapeToString(x.shape()));
  ROTOR_CHECK(weight.dim() == 1 && weight.size(0) == x.size(-1),
              "RmsNorm: weight of shape ", ShapeToString(weight.shape()),
              " does not match x of shape ", ShapeToString(x.shape()),
              " (expected [", x.size(-1), "])");
  const Tensor input = ContiguousOrCopy(x);
  const Tensor w = ContiguousOrCopy(weight);
  const auto [rows, cols] = AsRows(x);
  Tensor y = Tensor::Empty(x.shape());
  Tensor rstd = Tensor::Empty({static_cast<int64_t>(rows)});
  kernels::RmsNormForward(input.data(), w.data(), y.data(), rstd.data(), rows,
                          cols, eps);
  if (!AnyRequiresGrad({&x, &weight})) return y;
  const Tensor saved_x = input.Detach();
  const Tensor saved_w = w.Detach();
  return RecordOp(
      y, "RmsNorm", {x, weight},
      [saved_x, saved_w, rstd, rows = rows, cols = cols](const Tensor& dy) {
        const Tensor grad = ContiguousOrCopy(dy);
        Tensor dx = Tensor::Empty(saved_x.shape());
        Tensor dweight = Tensor::Empty(saved_w.shape());
        kernels::RmsNormBackward(saved_x.data(), saved_w.data(), rstd.data(),
                                 grad.data(), dx.data(), dweight.data(), rows,
                                 cols);
        return std::vector<Tensor>{dx, dweight};
      });
}

}  // namespace rotor

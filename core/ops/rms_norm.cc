// RmsNorm and AddRmsNorm (core/ops/ops.h): forward and backward side by
// side, running the Highway kernels of core/kernels/rmsnorm.h on [rows, dim]
// views of the inputs.
#include <utility>
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

namespace {

// The checks RmsNorm and AddRmsNorm share; `op` names the caller.
void CheckNormShapes(const Tensor& x, const Tensor& weight, const char* op) {
  ROTOR_CHECK(x.dim() >= 1, op, ": x needs at least one dimension, got ",
              "shape ", ShapeToString(x.shape()));
  ROTOR_CHECK(weight.dim() == 1 && weight.size(0) == x.size(-1), op,
              ": weight of shape ", ShapeToString(weight.shape()),
              " does not match x of shape ", ShapeToString(x.shape()),
              " (expected [", x.size(-1), "])");
}

}  // namespace

// y = x * rstd * weight,  rstd = 1 / sqrt(mean(x^2) + eps) per row.
// x: [..., dim], weight: [dim] -> y: [..., dim].
// The forward saves rstd (one float per row); backward (see
// core/kernels/rmsnorm.h for the formulas) gives dx and dweight, the latter
// summed over rows in a fixed order.
Tensor RmsNorm(const Tensor& x, const Tensor& weight, float eps) {
  profile::Scope scope(profile::Phase::kKernels);
  CheckNormShapes(x, weight, "RmsNorm");
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

// sum = x + residual, y = sum * rstd * weight; x, residual: [..., dim].
// The forward saves sum and rstd (as RmsNorm saves its input). Backward
// gets dsum (from the residual stream) and dy (from the block after the
// norm), either possibly undefined, and gives
//   dx = dresidual = dsum + RmsNorm's dx,  dweight = RmsNorm's dweight
// in one kernel pass; one tensor serves both inputs, as in Add.
std::pair<Tensor, Tensor> AddRmsNorm(const Tensor& x, const Tensor& residual,
                                     const Tensor& weight, float eps) {
  profile::Scope scope(profile::Phase::kKernels);
  CheckNormShapes(x, weight, "AddRmsNorm");
  ROTOR_CHECK(residual.shape() == x.shape(), "AddRmsNorm: residual of shape ",
              ShapeToString(residual.shape()), " does not match x of shape ",
              ShapeToString(x.shape()));
  const Tensor a = ContiguousOrCopy(x);
  const Tensor b = ContiguousOrCopy(residual);
  const Tensor w = ContiguousOrCopy(weight);
  const auto [rows, cols] = AsRows(x);
  Tensor sum = Tensor::Empty(x.shape());
  Tensor y = Tensor::Empty(x.shape());
  Tensor rstd = Tensor::Empty({static_cast<int64_t>(rows)});
  kernels::AddRmsNormForward(a.data(), b.data(), w.data(), sum.data(), y.data(),
                             rstd.data(), rows, cols, eps);
  if (!AnyRequiresGrad({&x, &residual, &weight})) return {sum, y};
  const Tensor saved_sum = sum.Detach();
  const Tensor saved_w = w.Detach();
  return RecordPairOp(
      sum, y, "AddRmsNorm", {x, residual, weight},
      [saved_sum, saved_w, rstd, rows = rows, cols = cols](const Tensor& dsum,
                                                           const Tensor& dy) {
        if (!dy.defined()) return std::vector<Tensor>{dsum, dsum, Tensor()};
        const Tensor grad = ContiguousOrCopy(dy);
        Tensor dh = Tensor::Empty(saved_sum.shape());
        Tensor dweight = Tensor::Empty(saved_w.shape());
        if (dsum.defined()) {
          const Tensor grad_sum = ContiguousOrCopy(dsum);
          kernels::AddRmsNormBackward(saved_sum.data(), saved_w.data(),
                                      rstd.data(), grad.data(), grad_sum.data(),
                                      dh.data(), dweight.data(), rows, cols);
        } else {
          kernels::RmsNormBackward(saved_sum.data(), saved_w.data(),
                                   rstd.data(), grad.data(), dh.data(),
                                   dweight.data(), rows, cols);
        }
        return std::vector<Tensor>{dh, dh, dweight};
      });
}

}  // namespace rotor

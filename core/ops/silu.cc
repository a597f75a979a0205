// Silu and SwiGlu (core/ops/ops.h): forward and backward side by side, running
// the Highway kernels of core/kernels/activations.h on the flat tensors.
#include <algorithm>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/activations.h"
#include "core/ops/kernel_inputs.h"
#include "core/ops/ops.h"
#include "core/ops/strided.h"
#include "core/parallel.h"
#include "core/profile.h"

namespace rotor {

using ops_internal::ContiguousOrCopy;

// y = x * sigmoid(x), elementwise; any shape.
// Backward: dx = dy * sigmoid(x) * (1 + x * (1 - sigmoid(x))), from saved x.
Tensor Silu(const Tensor& x) {
  profile::Scope scope(profile::Phase::kKernels);
  const Tensor input = ContiguousOrCopy(x);
  Tensor y = Tensor::Empty(x.shape());
  kernels::SiluForward(input.data(), y.data(), y.numel());
  if (!AnyRequiresGrad({&x})) return y;
  const Tensor saved_x = input.Detach();
  return RecordOp(y, "Silu", {x}, [saved_x](const Tensor& dy) {
    const Tensor grad = ContiguousOrCopy(dy);
    Tensor dx = Tensor::Empty(saved_x.shape());
    kernels::SiluBackward(saved_x.data(), grad.data(), dx.data(), dx.numel());
    return std::vector<Tensor>{dx};
  });
}

// out = silu(gate) * up, elementwise; gate and up of the same shape.
// Backward: dgate = dout * up * silu'(gate), dup = dout * silu(gate).
Tensor SwiGlu(const Tensor& gate, const Tensor& up) {
  profile::Scope scope(profile::Phase::kKernels);
  ROTOR_CHECK(gate.shape() == up.shape(), "SwiGlu: gate of shape ",
              ShapeToString(gate.shape()), " and up of shape ",
              ShapeToString(up.shape()), " must have the same shape");
  const Tensor g = ContiguousOrCopy(gate);
  const Tensor u = ContiguousOrCopy(up);
  Tensor out = Tensor::Empty(gate.shape());
  kernels::SwiGluForward(g.data(), u.data(), out.data(), out.numel());
  if (!AnyRequiresGrad({&gate, &up})) return out;
  const Tensor saved_gate = g.Detach();
  const Tensor saved_up = u.Detach();
  return RecordOp(
      out, "SwiGlu", {gate, up}, [saved_gate, saved_up](const Tensor& dout) {
        const Tensor grad = ContiguousOrCopy(dout);
        Tensor dgate = Tensor::Empty(saved_gate.shape());
        Tensor dup = Tensor::Empty(saved_up.shape());
        kernels::SwiGluBackward(saved_gate.data(), saved_up.data(), grad.data(),
                                dgate.data(), dup.data(), dgate.numel());
        return std::vector<Tensor>{dgate, dup};
      });
}

// out[r] = silu(gate_up[r, :I]) * gate_up[r, I:], row by row; gate_up
// [..., 2I] -> [..., I]. Backward writes d(gate_up)[r] = [dgate[r], dup[r]]
// (see SwiGlu above), so the fused projection's backward reads one gradient.
Tensor SwiGlu(const Tensor& gate_up) {
  profile::Scope scope(profile::Phase::kKernels);
  ROTOR_CHECK(gate_up.dim() >= 1 && gate_up.size(-1) % 2 == 0,
              "SwiGlu: gate_up of shape ", ShapeToString(gate_up.shape()),
              " must end in an even extent (the gate and up halves)");
  const Tensor input = ContiguousOrCopy(gate_up);
  const int64_t width = gate_up.size(-1) / 2;
  const int64_t rows = gate_up.numel() / std::max<int64_t>(2 * width, 1);
  Shape out_shape = gate_up.shape();
  out_shape.back() = width;
  Tensor out = Tensor::Empty(out_shape);
  const int64_t grain = std::max<int64_t>(
      1, internal::kElementwiseGrain / std::max<int64_t>(width, 1));
  const float* in = input.data();
  float* po = out.data();
  ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = in + r * 2 * width;
      kernels::SwiGluForward(row, row + width, po + r * width, width);
    }
  });
  if (!AnyRequiresGrad({&gate_up})) return out;
  const Tensor saved = input.Detach();
  return RecordOp(out, "SwiGlu", {gate_up},
                  [saved, width, rows, grain](const Tensor& dout) {
                    const Tensor grad = ContiguousOrCopy(dout);
                    Tensor dgate_up = Tensor::Empty(saved.shape());
                    const float* in = saved.data();
                    const float* dy = grad.data();
                    float* dx = dgate_up.data();
                    ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
                      for (int64_t r = begin; r < end; ++r) {
                        const int64_t at = r * 2 * width;
                        kernels::SwiGluBackward(in + at, in + at + width,
                                                dy + r * width, dx + at,
                                                dx + at + width, width);
                      }
                    });
                    return std::vector<Tensor>{dgate_up};
                  });
}

}  // namespace rotor

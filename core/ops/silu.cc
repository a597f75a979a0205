// Silu and SwiGlu (core/ops/ops.h): forward and backward side by side, running
// the Highway kernels of core/kernels/activations.h on the flat tensors.
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/activations.h"
#include "core/ops/kernel_inputs.h"
#include "core/ops/ops.h"
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

}  // namespace rotor

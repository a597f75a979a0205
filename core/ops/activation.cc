// Activations: Relu, Gelu (tanh approximation), Tanh. Elementwise maps over
// any strided input into a fresh contiguous output; backward multiplies the
// incoming gradient by the derivative at the saved input (or output).
#include <cmath>

#include "core/autograd.h"
#include "core/ops/ops.h"
#include "core/ops/strided.h"

namespace rotor {

// y = max(x, 0).   dL/dx = g * [x > 0].
Tensor Relu(const Tensor& x) {
  Tensor out =
      internal::MapUnary(x, [](float v) { return v > 0.0f ? v : 0.0f; });
  return RecordOp(out, "Relu", {x}, [x](const Tensor& g) {
    return std::vector<Tensor>{internal::BroadcastBinary(
        g, x, "Relu",
        [](float gv, float xv) { return xv > 0.0f ? gv : 0.0f; })};
  });
}

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

}  // namespace

// clang-format off
// y     = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3).
// dy/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
// clang-format on
Tensor Gelu(const Tensor& x) {
  Tensor out = internal::MapUnary(x, [](float v) {
    const float u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
    return 0.5f * v * (1.0f + std::tanh(u));
  });
  return RecordOp(out, "Gelu", {x}, [x](const Tensor& g) {
    return std::vector<Tensor>{
        internal::BroadcastBinary(g, x, "Gelu", [](float gv, float v) {
          const float t =
              std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
          const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
          return gv * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
        })};
  });
}

// y = tanh(x).   dL/dx = g * (1 - y^2).
Tensor Tanh(const Tensor& x) {
  Tensor out = internal::MapUnary(x, [](float v) { return std::tanh(v); });
  const Tensor y = out.Detach();  // not `out` itself: no reference cycle
  return RecordOp(out, "Tanh", {x}, [y](const Tensor& g) {
    return std::vector<Tensor>{internal::BroadcastBinary(
        g, y, "Tanh",
        [](float gv, float yv) { return gv * (1.0f - yv * yv); })};
  });
}

}  // namespace rotor

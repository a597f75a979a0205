// Elementwise arithmetic: a + b, a - b, a * b, a / b (tensor-tensor with NumPy
// broadcasting, and tensor-scalar), -x, exp, log, sqrt, x^p. Each op's
// backward sits right after its forward.
//
// Forward paths:
// - both operands contiguous with the same shape: the Highway kernels of
//   core/kernels/vector_ops.h;
// - otherwise a strided walk (core/ops/strided.h) where a broadcast dimension
//   has stride 0, so nothing is expanded in memory.
// Backward of a broadcasting op sums the gradient over the broadcast
// dimensions (SumToShape), since one input element fed many outputs.
#include <cmath>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/vector_ops.h"
#include "core/ops/ops.h"
#include "core/ops/strided.h"
#include "core/profile.h"

namespace rotor {

Shape BroadcastShapes(const Shape& a, const Shape& b, const char* op) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Aligned from the right: a missing dimension counts as 1.
    const int64_t ea = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t eb = i < b.size() ? b[b.size() - 1 - i] : 1;
    ROTOR_CHECK(ea == eb || ea == 1 || eb == 1, op, ": shapes ",
                ShapeToString(a), " and ", ShapeToString(b),
                " cannot be broadcast together");
    out[rank - 1 - i] = ea == 1 ? eb : ea;
  }
  return out;
}

Tensor SumToShape(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  // Leading dimensions that `shape` lacks, and dimensions where `shape` has
  // extent 1 but x does not, were created by broadcasting: sum them.
  const int64_t extra = x.dim() - static_cast<int64_t>(shape.size());
  ROTOR_CHECK(extra >= 0, "SumToShape: shape ", ShapeToString(x.shape()),
              " is not a broadcast of ", ShapeToString(shape));
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d >= extra && shape[d - extra] == x.shape()[d]) continue;
    ROTOR_CHECK(d < extra || shape[d - extra] == 1, "SumToShape: shape ",
                ShapeToString(x.shape()), " is not a broadcast of ",
                ShapeToString(shape));
    dims.push_back(d);
  }
  return Reshape(Sum(x, dims, /*keepdim=*/true), shape);
}

namespace {

using VectorKernel = void (*)(const float*, const float*, float*, size_t);

// Binary op forward: the vector kernel when both are contiguous with the
// same shape, else the broadcasting strided walk.
template <class F>
Tensor BinaryForward(const Tensor& a, const Tensor& b, const char* op,
                     VectorKernel kernel, const F& f) {
  profile::Scope scope(profile::Phase::kKernels);
  if (a.shape() == b.shape() && a.is_contiguous() && b.is_contiguous()) {
    Tensor out = Tensor::Empty(a.shape());
    kernel(a.data(), b.data(), out.data(), out.numel());
    return out;
  }
  return internal::BroadcastBinary(a, b, op, f);
}

}  // namespace

// y = a + b.   dL/da = sum_broadcast(g),  dL/db = sum_broadcast(g).
Tensor Add(const Tensor& a, const Tensor& b) {
  Tensor out = BinaryForward(a, b, "Add", kernels::Add,
                             [](float x, float y) { return x + y; });
  const Shape a_shape = a.shape();
  const Shape b_shape = b.shape();
  return RecordOp(out, "Add", {a, b}, [a_shape, b_shape](const Tensor& g) {
    return std::vector<Tensor>{SumToShape(g, a_shape), SumToShape(g, b_shape)};
  });
}

// y = a - b.   dL/da = sum_broadcast(g),  dL/db = -sum_broadcast(g).
Tensor Sub(const Tensor& a, const Tensor& b) {
  Tensor out = BinaryForward(a, b, "Sub", kernels::Sub,
                             [](float x, float y) { return x - y; });
  const Shape a_shape = a.shape();
  const Shape b_shape = b.shape();
  return RecordOp(out, "Sub", {a, b}, [a_shape, b_shape](const Tensor& g) {
    return std::vector<Tensor>{SumToShape(g, a_shape),
                               Neg(SumToShape(g, b_shape))};
  });
}

// y = a * b.   dL/da = sum_broadcast(g * b),  dL/db = sum_broadcast(g * a).
Tensor Mul(const Tensor& a, const Tensor& b) {
  Tensor out = BinaryForward(a, b, "Mul", kernels::Mul,
                             [](float x, float y) { return x * y; });
  // Backward skips the product for an input that needs no gradient.
  const bool grad_a = a.requires_grad();
  const bool grad_b = b.requires_grad();
  return RecordOp(out, "Mul", {a, b}, [a, b, grad_a, grad_b](const Tensor& g) {
    return std::vector<Tensor>{
        grad_a ? SumToShape(Mul(g, b), a.shape()) : Tensor(),
        grad_b ? SumToShape(Mul(g, a), b.shape()) : Tensor()};
  });
}

// y = a / b.   dL/da = sum_broadcast(g / b),
//              dL/db = sum_broadcast(-g * a / b^2) = sum_broadcast(-g * y / b).
Tensor Div(const Tensor& a, const Tensor& b) {
  Tensor out = BinaryForward(a, b, "Div", kernels::Div,
                             [](float x, float y) { return x / y; });
  const bool grad_a = a.requires_grad();
  const bool grad_b = b.requires_grad();
  // Saving `out` inside its own node would be a reference cycle, so hold its
  // data through a detached handle.
  const Tensor y = out.Detach();
  return RecordOp(
      out, "Div", {a, b}, [a, b, y, grad_a, grad_b](const Tensor& g) {
        const Tensor g_over_b = Div(g, b);
        return std::vector<Tensor>{
            grad_a ? SumToShape(g_over_b, a.shape()) : Tensor(),
            grad_b ? SumToShape(Neg(Mul(g_over_b, y)), b.shape()) : Tensor()};
      });
}

// Tensor-scalar forms: the scalar is a constant (no gradient).

// y = a + s.   dL/da = g.
Tensor Add(const Tensor& a, float s) {
  Tensor out = internal::MapUnary(a, [s](float x) { return x + s; });
  return RecordOp(out, "AddScalar", {a},
                  [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

// y = a - s.   dL/da = g.
Tensor Sub(const Tensor& a, float s) {
  Tensor out = internal::MapUnary(a, [s](float x) { return x - s; });
  return RecordOp(out, "SubScalar", {a},
                  [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

// y = a * s.   dL/da = g * s.
Tensor Mul(const Tensor& a, float s) {
  Tensor out = internal::MapUnary(a, [s](float x) { return x * s; });
  return RecordOp(out, "MulScalar", {a}, [s](const Tensor& g) {
    return std::vector<Tensor>{Mul(g, s)};
  });
}

// y = a / s.   dL/da = g / s.
Tensor Div(const Tensor& a, float s) {
  Tensor out = internal::MapUnary(a, [s](float x) { return x / s; });
  return RecordOp(out, "DivScalar", {a}, [s](const Tensor& g) {
    return std::vector<Tensor>{Div(g, s)};
  });
}

// y = -x.   dL/dx = -g.
Tensor Neg(const Tensor& x) {
  Tensor out = internal::MapUnary(x, [](float v) { return -v; });
  return RecordOp(out, "Neg", {x},
                  [](const Tensor& g) { return std::vector<Tensor>{Neg(g)}; });
}

// y = e^x.   dL/dx = g * y.
Tensor Exp(const Tensor& x) {
  Tensor out = internal::MapUnary(x, [](float v) { return std::exp(v); });
  const Tensor y = out.Detach();
  return RecordOp(out, "Exp", {x}, [y](const Tensor& g) {
    return std::vector<Tensor>{Mul(g, y)};
  });
}

// y = ln x.   dL/dx = g / x.
Tensor Log(const Tensor& x) {
  Tensor out = internal::MapUnary(x, [](float v) { return std::log(v); });
  return RecordOp(out, "Log", {x}, [x](const Tensor& g) {
    return std::vector<Tensor>{Div(g, x)};
  });
}

// y = sqrt(x).   dL/dx = g / (2 y).
Tensor Sqrt(const Tensor& x) {
  Tensor out = internal::MapUnary(x, [](float v) { return std::sqrt(v); });
  const Tensor y = out.Detach();
  return RecordOp(out, "Sqrt", {x}, [y](const Tensor& g) {
    return std::vector<Tensor>{Div(g, Mul(y, 2.0f))};
  });
}

// y = x^p.   dL/dx = g * p * x^(p-1).
Tensor Pow(const Tensor& x, float exponent) {
  Tensor out = internal::MapUnary(
      x, [exponent](float v) { return std::pow(v, exponent); });
  return RecordOp(out, "Pow", {x}, [x, exponent](const Tensor& g) {
    const float p = exponent;
    const Tensor slope = internal::MapUnary(
        x, [p](float v) { return p * std::pow(v, p - 1.0f); });
    return std::vector<Tensor>{Mul(g, slope)};
  });
}

}  // namespace rotor

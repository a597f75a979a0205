// Uses the installed rotor library from another project: builds tensors,
// defines an op with its backward through the public autograd API, runs
// Backward and checks the gradients. Prints "consumer: OK" and exits 0 when
// every check holds.
//
// The op is the elementwise product y = x * w (x, w, y: [n]), whose
// gradients are dL/dx = dL/dy * w and dL/dw = dL/dy * x; the forward and
// both gradients run through rotor's Highway kernel kernels::Mul.
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/vector_ops.h"
#include "core/tensor.h"

namespace {

// out = a * b elementwise (a, b: contiguous, same shape).
rotor::Tensor Product(const rotor::Tensor& a, const rotor::Tensor& b) {
  ROTOR_CHECK(a.shape() == b.shape(), "Product: shapes ",
              rotor::ShapeToString(a.shape()), " and ",
              rotor::ShapeToString(b.shape()), " differ");
  rotor::Tensor out = rotor::Tensor::Zeros(a.shape());
  rotor::kernels::Mul(a.data(), b.data(), out.data(), out.numel());
  return out;
}

rotor::Tensor ElementwiseProduct(const rotor::Tensor& x,
                                 const rotor::Tensor& w) {
  return rotor::RecordOp(
      Product(x, w), "ElementwiseProduct", {x, w},
      [x, w](const rotor::Tensor& grad_y) -> std::vector<rotor::Tensor> {
        return {Product(grad_y, w), Product(grad_y, x)};
      });
}

bool Check(bool condition, const char* what) {
  if (!condition) std::printf("consumer: FAILED: %s\n", what);
  return condition;
}

bool Equal(const std::vector<float>& actual,
           const std::vector<float>& expected) {
  if (actual.size() != expected.size()) return false;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::fabs(actual[i] - expected[i]) > 1e-6f) return false;
  }
  return true;
}

}  // namespace

int main() {
  const std::vector<float> x_values = {1, -2, 3, 0.5f, 4};
  const std::vector<float> w_values = {2, 0.25f, -1, 8, 3};
  const std::vector<float> seed_values = {1, 2, 3, 4, 5};
  rotor::Tensor x = rotor::Tensor::FromVector({5}, x_values, true);
  rotor::Tensor w = rotor::Tensor::FromVector({5}, w_values, true);
  const rotor::Tensor y = ElementwiseProduct(x, w);
  y.Backward(rotor::Tensor::FromVector({5}, seed_values));

  std::vector<float> expected_y, expected_dx, expected_dw;
  for (size_t i = 0; i < x_values.size(); ++i) {
    expected_y.push_back(x_values[i] * w_values[i]);
    expected_dx.push_back(seed_values[i] * w_values[i]);
    expected_dw.push_back(seed_values[i] * x_values[i]);
  }
  bool ok = Check(y.requires_grad(), "y requires grad");
  ok &= Check(Equal(y.ToVector(), expected_y), "y = x * w");
  ok &= Check(x.grad().defined() && Equal(x.grad().ToVector(), expected_dx),
              "dL/dx = dy * w");
  ok &= Check(w.grad().defined() && Equal(w.grad().ToVector(), expected_dw),
              "dL/dw = dy * x");

  // Bad input reaches the caller as rotor::Error.
  bool threw = false;
  try {
    ElementwiseProduct(x, rotor::Tensor::Zeros({4}));
  } catch (const rotor::Error&) {
    threw = true;
  }
  ok &= Check(threw, "a shape mismatch throws rotor::Error");

  std::printf("consumer: rotor %s, vector kernels on %s: %s\n", ROTOR_VERSION,
              rotor::kernels::VectorOpsTarget(), ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}

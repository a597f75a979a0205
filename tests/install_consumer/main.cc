// Uses the installed rotor library from another project: builds tensors, runs
// rotor's ops and an op of its own through the public autograd API, calls
// Backward and checks the gradients. Prints "... OK" and exits 0 when every
// check holds.
//
// 1. rotor's ops: L = sum(A B) with A: [2, 3], B: [3, 2] (MatMul runs on
//    OpenBLAS). dL/dA[i][k] = sum_j B[k][j], dL/dB[k][j] = sum_i A[i][k].
// 2. An op defined here: the elementwise product y = x * w (x, w, y: [n]),
//    dL/dx = dL/dy * w and dL/dw = dL/dy * x, forward and gradients on
//    rotor's Highway kernel kernels::Mul.
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/vector_ops.h"
#include "core/ops/ops.h"
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

// Part 1: L = sum(A B) through rotor's ops.
bool CheckLibraryOps() {
  const std::vector<float> a_values = {1, 2, 3, 4, 5, 6};      // [2, 3]
  const std::vector<float> b_values = {1, -1, 2, 0.5f, 0, 3};  // [3, 2]
  rotor::Tensor a = rotor::Tensor::FromVector({2, 3}, a_values, true);
  rotor::Tensor b = rotor::Tensor::FromVector({3, 2}, b_values, true);
  const rotor::Tensor loss = rotor::Sum(rotor::MatMul(a, b));
  loss.Backward();

  // A B = [[5, 9], [14, 16.5]], so L = 44.5.
  std::vector<float> expected_da, expected_db;
  for (int i = 0; i < 2; ++i) {  // the same for every row i of A
    for (int k = 0; k < 3; ++k) {
      expected_da.push_back(b_values[2 * k] + b_values[2 * k + 1]);
    }
  }
  for (int k = 0; k < 3; ++k) {
    for (int j = 0; j < 2; ++j) {
      expected_db.push_back(a_values[k] + a_values[3 + k]);
    }
  }
  bool ok = Check(std::fabs(loss.item() - 44.5f) < 1e-5f, "sum(A B) = 44.5");
  ok &= Check(a.grad().defined() && Equal(a.grad().ToVector(), expected_da),
              "dL/dA = row sums of B");
  ok &= Check(b.grad().defined() && Equal(b.grad().ToVector(), expected_db),
              "dL/dB = column sums of A");
  return ok;
}

// Part 2: an op of our own, y = x * w, with an explicit seed gradient.
bool CheckOwnOp() {
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
  return ok;
}

}  // namespace

int main() {
  const bool library_ops_ok = CheckLibraryOps();
  const bool own_op_ok = CheckOwnOp();
  const bool ok = library_ops_ok && own_op_ok;
  std::printf("consumer: rotor %s, vector kernels on %s: %s\n", ROTOR_VERSION,
              rotor::kernels::VectorOpsTarget(), ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}

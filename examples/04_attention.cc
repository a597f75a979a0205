// Rung 04 of the ladder (docs/learn.md, docs/attention.md): causal
// self-attention written out from its definition, against rotor's fused,
// memory-efficient kernel.
//
// For one head with queries Q, keys K and values V ([T, D] each):
//
//   S = Q K^T / sqrt(D)                 [T, T]  how well query i matches key j
//   S[i, j] = -inf for j > i            the causal mask: no peeking ahead
//   P = softmax(S) over each row        [T, T]  attention weights, rows sum to
//   1 O = P V                             [T, D]  a weighted mean of the values
//
// exp(-inf) = 0, so the masked keys get weight exactly 0. Written this way
// the [T, T] matrices are stored, which costs O(T^2) memory; rotor's
// CausalAttention (core/ops/attention.h) computes the same O tile by tile
// with an online softmax and never stores S or P (docs/attention.md). Both
// are differentiable; the gradients must agree too.
//
//   ./build/examples/04_attention
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/ops/attention.h"
#include "core/ops/ops.h"
#include "core/random.h"
#include "core/tensor.h"

using rotor::Tensor;

namespace {

constexpr int64_t kHeads = 2, kT = 6, kD = 8;

Tensor RandomTensor(const rotor::Shape& shape, rotor::Rng& rng) {
  std::vector<float> values(rotor::NumElements(shape));
  for (float& v : values) v = static_cast<float>(2.0 * rng.Uniform() - 1.0);
  return Tensor::FromVector(shape, values, /*requires_grad=*/true);
}

double MaxAbsDiff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.ToVector(), y = b.ToVector();
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    worst = std::fmax(worst, std::fabs(static_cast<double>(x[i]) - y[i]));
  }
  return worst;
}

}  // namespace

int main() {
  rotor::Rng rng(4);
  // [batch, heads, T, D], the layout of rotor's attention.
  Tensor q = RandomTensor({1, kHeads, kT, kD}, rng);
  Tensor k = RandomTensor({1, kHeads, kT, kD}, rng);
  Tensor v = RandomTensor({1, kHeads, kT, kD}, rng);

  // ---- 1. From the definition ----
  std::vector<float> mask_values(kT * kT, 0.0f);
  for (int64_t i = 0; i < kT; ++i) {
    for (int64_t j = i + 1; j < kT; ++j) mask_values[i * kT + j] = -INFINITY;
  }
  const Tensor mask = Tensor::FromVector({kT, kT}, mask_values);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kD));
  const Tensor scores = rotor::Add(
      rotor::Mul(rotor::MatMul(q, rotor::Transpose(k, -1, -2)), scale),
      mask);                                       // [1, H, T, T], broadcast
  const Tensor weights = rotor::Softmax(scores);   // rows sum to 1
  const Tensor naive = rotor::MatMul(weights, v);  // [1, H, T, D]

  const std::vector<float> p = weights.ToVector();
  std::printf(
      "attention weights of head 0 (row i = query i; zeros above the "
      "diagonal are the causal mask):\n");
  for (int64_t i = 0; i < kT; ++i) {
    std::printf("  ");
    for (int64_t j = 0; j < kT; ++j) std::printf(" %.3f", p[i * kT + j]);
    std::printf("\n");
  }

  // ---- 2. rotor's fused kernel ----
  const Tensor fused = rotor::CausalAttention(q, k, v);
  const double forward_diff = MaxAbsDiff(naive, fused);
  std::printf(
      "\noutput: naive vs fused CausalAttention, max |difference| "
      "%.1e\n",
      forward_diff);

  // ---- 3. Gradients: the same loss L = sum(O * W) through both ----
  const Tensor w = RandomTensor({1, kHeads, kT, kD}, rng).Detach();
  rotor::Sum(rotor::Mul(naive, w)).Backward();
  const Tensor dq = q.grad(), dk = k.grad(), dv = v.grad();
  for (Tensor* t : {&q, &k, &v}) t->ZeroGrad();
  rotor::Sum(rotor::Mul(fused, w)).Backward();
  const double grad_diff =
      std::fmax(MaxAbsDiff(dq, q.grad()),
                std::fmax(MaxAbsDiff(dk, k.grad()), MaxAbsDiff(dv, v.grad())));
  std::printf("gradients dQ, dK, dV: naive vs fused, max |difference| %.1e\n",
              grad_diff);

  const bool ok = forward_diff < 1e-5 && grad_diff < 1e-5;
  std::printf("%s\n", ok ? "the fused kernel computes softmax(QK^T/sqrt(D))V"
                         : "the two DISAGREE");
  return ok ? 0 : 1;
}

// Differentiable tensor ops. Each op computes its forward result and, when an
// input requires grad, records its backward next to it (core/autograd.h). The
// implementations live in core/ops/<group>.cc, forward and backward side by
// side; every op is gradient-checked in tests/core/ops/.
//
// Conventions
// - Inputs may be non-contiguous views; outputs are fresh contiguous tensors
//   unless the op is a view (Reshape, Permute, Transpose, Narrow, Unsqueeze,
//   Squeeze), which shares the input's storage.
// - Dimensions may be negative (-1 = last).
// - Binary elementwise ops broadcast like NumPy: shapes are aligned from the
//   right and extents must match or be 1. Backward sums the gradient over the
//   broadcast dimensions.
// - Shape errors throw rotor::Error naming the op and both shapes.
#ifndef ROTOR_CORE_OPS_OPS_H_
#define ROTOR_CORE_OPS_OPS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace rotor {

// ---- Elementwise arithmetic (core/ops/elementwise.cc) ----
Tensor Add(const Tensor& a, const Tensor& b);  // a + b
Tensor Sub(const Tensor& a, const Tensor& b);  // a - b
Tensor Mul(const Tensor& a, const Tensor& b);  // a * b
Tensor Div(const Tensor& a, const Tensor& b);  // a / b
Tensor Add(const Tensor& a, float b);
Tensor Sub(const Tensor& a, float b);
Tensor Mul(const Tensor& a, float b);
Tensor Div(const Tensor& a, float b);
Tensor Neg(const Tensor& x);
Tensor Exp(const Tensor& x);
Tensor Log(const Tensor& x);
Tensor Sqrt(const Tensor& x);
Tensor Pow(const Tensor& x, float exponent);  // x^exponent

inline Tensor operator+(const Tensor& a, const Tensor& b) { return Add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return Sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return Mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return Div(a, b); }
inline Tensor operator+(const Tensor& a, float b) { return Add(a, b); }
inline Tensor operator-(const Tensor& a, float b) { return Sub(a, b); }
inline Tensor operator*(const Tensor& a, float b) { return Mul(a, b); }
inline Tensor operator/(const Tensor& a, float b) { return Div(a, b); }
inline Tensor operator-(const Tensor& x) { return Neg(x); }

// The shape a binary elementwise op on `a` and `b` produces; throws naming
// `op` and both shapes when they cannot be broadcast.
Shape BroadcastShapes(const Shape& a, const Shape& b, const char* op);
// Sums `x` over the dimensions that broadcasting expanded, giving `shape`
// (the reverse of broadcasting; used by backward passes).
Tensor SumToShape(const Tensor& x, const Shape& shape);

// ---- Reductions (core/ops/reduce.cc) ----
// Over the listed dimensions (all dimensions if `dims` is empty).
Tensor Sum(const Tensor& x, const std::vector<int64_t>& dims = {},
           bool keepdim = false);
Tensor Mean(const Tensor& x, const std::vector<int64_t>& dims = {},
            bool keepdim = false);
// Maximum over one dimension; the gradient flows to the first maximal
// element of each slice.
Tensor Max(const Tensor& x, int64_t dim, bool keepdim = false);

// ---- Matrix products (core/ops/matmul.cc, on oneDNN or OpenBLAS: gemm.h) ----
// a: [..., n, k], b: [..., k, m] -> [..., n, m]. Leading (batch) dimensions
// broadcast; a 2-D operand is shared by every batch.
Tensor MatMul(const Tensor& a, const Tensor& b);
// y = x W^T + bias. x: [..., in], weight: [out, in], bias: [out] or undefined.
Tensor Linear(const Tensor& x, const Tensor& weight,
              const Tensor& bias = Tensor());
// Several Linear layers on the same x in one product, their outputs side by
// side: y = x [W_0; W_1; ...]^T + [b_0, b_1, ...], i.e. [..., sum of out_i]
// with layer i's output in columns [sum_{j<i} out_j, + out_i). weights[i]:
// [out_i, in]; biases: one [out_i] each, or empty. When the weights are
// consecutive row ranges of one storage (nn/layers.h FusedWeights) the
// product reads them in place, else from a concatenated copy. Backward:
//   dX = dY [W_0; W_1; ...]        one GEMM over K = sum of out_i, which
//                                  sums the layers' input gradients,
//   dW_i = dY[:, cols_i]^T X,  db_i = sum over rows of dY[:, cols_i].
Tensor FusedLinear(const Tensor& x, const std::vector<Tensor>& weights,
                   const std::vector<Tensor>& biases = {});

// ---- Shape and views (core/ops/shape.cc) ----
// One extent may be -1 (inferred). A view when `x` is contiguous, else a copy.
Tensor Reshape(const Tensor& x, const Shape& shape);
// Output dimension i is input dimension dims[i]. Always a view.
Tensor Permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor Transpose(const Tensor& x, int64_t dim0, int64_t dim1);
// Elements [start, start + length) of dimension `dim`. Always a view.
Tensor Narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor Unsqueeze(const Tensor& x, int64_t dim);
Tensor Squeeze(const Tensor& x, int64_t dim);
// Joins tensors along `dim`; all other extents must match.
Tensor Concat(const std::vector<Tensor>& xs, int64_t dim);
// A contiguous tensor with the same values (x itself if already contiguous).
Tensor Contiguous(const Tensor& x);

// ---- Embedding lookup (core/ops/embedding.cc) ----
// table: [vocab, dim]; ids: token ids (any shape) -> [ids..., dim].
// Backward scatter-adds into the table rows. Ids out of [0, vocab) throw.
Tensor Embedding(const Tensor& table, const std::vector<int32_t>& ids,
                 const Shape& ids_shape);

// ---- Activations (core/ops/activation.cc; Silu and SwiGlu: core/ops/silu.cc,
// on the Highway kernels of core/kernels/activations.h) ----
Tensor Relu(const Tensor& x);
Tensor Silu(const Tensor& x);  // x * sigmoid(x)
// tanh approximation (as GPT-2):
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
Tensor Gelu(const Tensor& x);
Tensor Tanh(const Tensor& x);
// SwiGLU's gating: silu(gate) * up, in one pass. gate, up: same shape.
Tensor SwiGlu(const Tensor& gate, const Tensor& up);
// The same on the two halves of one tensor, as a fused gate/up projection
// (FusedLinear) writes them: gate_up [..., 2I], gate = columns [0, I), up =
// columns [I, 2I) -> [..., I]. Backward writes d(gate_up) [..., 2I] whole:
// dgate into the first half, dup into the second.
Tensor SwiGlu(const Tensor& gate_up);

// ---- Normalisation, softmax and losses: core/ops/softmax.cc (Softmax,
// LogSoftmax, CrossEntropy), linear_cross_entropy.cc, rms_norm.cc,
// layer_norm.cc, dropout.cc ----
// Over the last dimension.
Tensor Softmax(const Tensor& x);
Tensor LogSoftmax(const Tensor& x);
// Mean over non-ignored rows of -log softmax(logits)[target]; fused and
// numerically stable. logits: [rows, vocab]; targets: [rows]. Rows whose
// target equals ignore_index do not count. Targets out of range throw.
Tensor CrossEntropy(const Tensor& logits, const std::vector<int32_t>& targets,
                    int32_t ignore_index = -100);
// CrossEntropy(Linear(hidden, weight), targets, ignore_index) without the
// [rows, vocab] logits (core/ops/linear_cross_entropy.cc): computed
// chunk_rows rows at a time, each chunk's gradients in the same pass, so
// memory holds one chunk of logits instead of all of them and their
// gradient. hidden: [rows, in], weight: [vocab, in] (an output head without
// bias), targets: [rows] -> a scalar. Deterministic at a fixed chunk size
// and thread count.
Tensor LinearCrossEntropy(const Tensor& hidden, const Tensor& weight,
                          const std::vector<int32_t>& targets,
                          int32_t ignore_index, int64_t chunk_rows);
// y = x / sqrt(mean(x^2) + eps) * weight, over the last dimension.
// x: [..., dim], weight: [dim].
Tensor RmsNorm(const Tensor& x, const Tensor& weight, float eps = 1e-5f);
// The residual add of a pre-norm block and the norm after it, as one op:
//   sum = x + residual,  y = RmsNorm(sum, weight, eps)
// x, residual: [..., dim] (the same shape), weight: [dim] -> {sum, y}.
// One pass forward and one backward (dsum + the norm's gradient), the same
// bits as Add then RmsNorm.
std::pair<Tensor, Tensor> AddRmsNorm(const Tensor& x, const Tensor& residual,
                                     const Tensor& weight, float eps = 1e-5f);
// y = (x - mean) / sqrt(var + eps) * weight + bias, over the last dimension.
Tensor LayerNorm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                 float eps = 1e-5f);
// Inverted dropout: zeroes each element with probability p and scales the
// rest by 1/(1-p). `seed` fixes the mask; identity when p == 0.
Tensor Dropout(const Tensor& x, float p, uint64_t seed);

}  // namespace rotor

#endif  // ROTOR_CORE_OPS_OPS_H_

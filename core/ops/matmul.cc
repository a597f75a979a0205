// Matrix products through the gemm seam (core/ops/gemm.h: oneDNN or
// OpenBLAS, float32 or bf16, in BLAS's terms): MatMul (batched, with
// broadcast batch dimensions), Linear (x W^T + bias) and FusedLinear
// (several Linear layers on one input in one product).
//
// sgemm computes C = alpha op(A) op(B) + beta C on row-major matrices, where
// op(X) is X or X^T. A matrix operand is described by (data, trans, ld), so a
// transposed view (last two dimensions swapped) is passed as CblasTrans and
// never copied; only layouts sgemm cannot express (e.g. a stride-2 column)
// are made contiguous first. Backward is sgemm too:
//   C = A B   =>   dA = dC B^T,   dB = A^T dC,
// and where an operand was shared by several batches its gradient is summed
// over them by accumulating in sgemm (beta = 1) instead of a separate pass.
//
// Threading and determinism: core/ops/gemm.h, the sgemm call both use.
#include <cblas.h>

#include <algorithm>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/vector_ops.h"
#include "core/ops/gemm.h"
#include "core/ops/ops.h"
#include "core/ops/strided.h"
#include "core/parallel.h"

namespace rotor {

namespace {

// The last two dimensions of a tensor, as sgemm sees them, plus where each
// batch's matrix starts.
struct MatrixOperand {
  Tensor holder;  // keeps the data alive (the input, or a contiguous copy)
  const float* data = nullptr;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 1;
  Shape batch_strides;  // over the broadcast batch shape; 0 = shared
  // The matrix rounded to bf16 once for several products (RoundOnce), or
  // none: each bf16 product then rounds it.
  internal::BfloatCopy bf16;
};

// Describes `t`'s matrices (rows x cols = its last two extents) for sgemm
// over the broadcast batch shape `batch`.
MatrixOperand MakeOperand(const Tensor& t, const Shape& batch) {
  const int64_t rank = t.dim();
  const int64_t rows = t.shape()[rank - 2], cols = t.shape()[rank - 1];
  const int64_t row_stride = t.strides()[rank - 2];
  const int64_t col_stride = t.strides()[rank - 1];
  MatrixOperand op;
  op.holder = t;
  // Row-major: element (i, j) at i * ld + j.
  const bool row_major =
      (cols <= 1 || col_stride == 1) &&
      (rows <= 1 || row_stride >= std::max<int64_t>(cols, 1));
  // Column-major (a transposed view): element (i, j) at i + j * ld.
  const bool col_major =
      (rows <= 1 || row_stride == 1) &&
      (cols <= 1 || col_stride >= std::max<int64_t>(rows, 1));
  if (row_major) {
    op.trans = CblasNoTrans;
    op.ld = rows <= 1 ? std::max<int64_t>(cols, 1) : row_stride;
  } else if (col_major) {
    op.trans = CblasTrans;
    op.ld = cols <= 1 ? std::max<int64_t>(rows, 1) : col_stride;
  } else {
    op.holder = internal::ContiguousCopy(t);
    op.trans = CblasNoTrans;
    op.ld = std::max<int64_t>(cols, 1);
  }
  op.data = op.holder.data();
  const Shape t_batch(t.shape().begin(), t.shape().end() - 2);
  const Shape t_batch_strides(op.holder.strides().begin(),
                              op.holder.strides().end() - 2);
  op.batch_strides =
      internal::BroadcastStrides(t_batch, t_batch_strides, batch);
  return op;
}

// The same matrices, transposed: op(X^T) = op(X)^T.
MatrixOperand Transposed(MatrixOperand op) {
  op.trans = op.trans == CblasNoTrans ? CblasTrans : CblasNoTrans;
  return op;
}

// In bf16, rounds the one matrix of `op` (a 2-D tensor's, rows x cols as
// the tensor has them) once for all the products that read it, when it is
// dense; otherwise, or in float32, does nothing.
void RoundOnce(MatrixOperand& op, int64_t rows, int64_t cols) {
  if (ActiveMatmulPrecision() != MatmulPrecision::kBfloat16) return;
  const int64_t stored_rows = op.trans == CblasNoTrans ? rows : cols;
  const int64_t stored_cols = op.trans == CblasNoTrans ? cols : rows;
  if (op.ld != stored_cols) return;
  op.bf16 = internal::RoundedCopy(op.data, stored_rows, stored_cols);
}

// Operand `op` of batch b, which starts `offset` elements in.
internal::GemmOperand BatchOperand(const MatrixOperand& op, int64_t offset) {
  return {op.data + offset, op.ld,
          op.bf16.data == nullptr ? nullptr : op.bf16.data + offset};
}

// For every batch index b of `batch` (row-major order):
//   C_b = op(A_b) op(B_b) + (first write of C_b ? 0 : C_b),
// with op(A_b): [m, k], op(B_b): [k, n], C_b: [m, n] row-major (ld = n).
// `c` is contiguous with shape c_batch + [m, n], where c_batch broadcasts to
// `batch`; a C matrix shared by several batches accumulates all of them.
void BatchedGemm(const Shape& batch, const MatrixOperand& a,
                 const MatrixOperand& b, Tensor& c, int64_t m, int64_t n,
                 int64_t k, const char* op) {
  if (m == 0 || n == 0) return;
  const Shape c_batch(c.shape().begin(), c.shape().end() - 2);
  // C is contiguous: its batch strides count whole [m, n] matrices (scaled
  // below), while A's and B's count elements.
  const Shape c_strides =
      internal::BroadcastStrides(c_batch, ContiguousStrides(c_batch), batch);
  const int64_t batches = NumElements(batch);
  const int64_t rank = batch.size();
  std::vector<int64_t> index(rank, 0);
  for (int64_t count = 0; count < batches; ++count) {
    int64_t a_offset = 0, b_offset = 0, c_offset = 0;
    bool first_write = true;  // index is 0 on every dimension C broadcasts
    for (int64_t d = 0; d < rank; ++d) {
      a_offset += index[d] * a.batch_strides[d];
      b_offset += index[d] * b.batch_strides[d];
      c_offset += index[d] * c_strides[d] * m * n;
      if (c_strides[d] == 0 && index[d] != 0) first_write = false;
    }
    internal::ParallelGemm(a.trans, b.trans, m, n, k, BatchOperand(a, a_offset),
                           BatchOperand(b, b_offset), first_write ? 0.0f : 1.0f,
                           c.data() + c_offset, op);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
}

Shape BatchShape(const Tensor& t) {
  return Shape(t.shape().begin(), t.shape().end() - 2);
}

}  // namespace

// C[..., n, m] = A[..., n, k] B[..., k, m];  dA = dC B^T,  dB = A^T dC, each
// summed over the batches its operand was broadcast to.
Tensor MatMul(const Tensor& a, const Tensor& b) {
  ROTOR_CHECK(a.dim() >= 2 && b.dim() >= 2 &&
                  a.shape()[a.dim() - 1] == b.shape()[b.dim() - 2],
              "MatMul: shapes ", ShapeToString(a.shape()), " and ",
              ShapeToString(b.shape()),
              " do not multiply (need [..., n, k] and [..., k, m])");
  const int64_t n = a.shape()[a.dim() - 2];
  const int64_t k = a.shape()[a.dim() - 1];
  const int64_t m = b.shape()[b.dim() - 1];
  const Shape batch = BroadcastShapes(BatchShape(a), BatchShape(b), "MatMul");
  Shape out_shape = batch;
  out_shape.push_back(n);
  out_shape.push_back(m);
  Tensor out = Tensor::Empty(out_shape);
  const MatrixOperand a_op = MakeOperand(a, batch);
  const MatrixOperand b_op = MakeOperand(b, batch);
  BatchedGemm(batch, a_op, b_op, out, n, m, k, "MatMul");
  if (!AnyRequiresGrad({&a, &b})) return out;

  const bool grad_a = a.requires_grad(), grad_b = b.requires_grad();
  const Shape a_shape = a.shape(), b_shape = b.shape();
  return RecordOp(
      out, "MatMul", {a, b},
      [a_op, b_op, batch, a_shape, b_shape, n, k, m, grad_a,
       grad_b](const Tensor& g) {
        const MatrixOperand g_op = MakeOperand(g, batch);
        Tensor da, db;
        if (grad_a) {                   // dA [n, k] = dC [n, m] B^T [m, k]
          da = Tensor::Empty(a_shape);  // beta 0 on the first write
          BatchedGemm(batch, g_op, Transposed(b_op), da, n, k, m, "MatMul");
        }
        if (grad_b) {  // dB [k, m] = A^T [k, n] dC [n, m]
          db = Tensor::Empty(b_shape);
          BatchedGemm(batch, Transposed(a_op), g_op, db, k, m, n, "MatMul");
        }
        return std::vector<Tensor>{da, db};
      });
}

namespace {

// The weights of a (fused) linear layer as one [sum of out_i, in] matrix:
// the one weight as it is (possibly a transposed view), the weights' own
// storage when they are consecutive row ranges of it, else a concatenated
// copy.
Tensor StackedWeights(const std::vector<Tensor>& weights, int64_t in_features,
                      int64_t out_features) {
  if (weights.size() == 1) return weights[0];
  bool in_place = true;
  int64_t row = 0;
  for (const Tensor& w : weights) {
    in_place = in_place && w.is_contiguous() &&
               w.impl()->storage == weights[0].impl()->storage &&
               w.data() == weights[0].data() + row * in_features;
    row += w.size(0);
  }
  if (in_place) {
    return weights[0].ViewAs({out_features, in_features}, {in_features, 1}, 0);
  }
  Tensor stacked = Tensor::Empty({out_features, in_features});
  row = 0;
  for (const Tensor& w : weights) {
    stacked.ViewAs(w.shape(), {in_features, 1}, row * in_features).CopyFrom(w);
    row += w.size(0);
  }
  return stacked;
}

// The biases side by side, [sum of out_i] contiguous (undefined without).
Tensor StackedBias(const std::vector<Tensor>& biases, int64_t out_features) {
  if (biases.empty()) return Tensor();
  if (biases.size() == 1 && biases[0].is_contiguous()) return biases[0];
  Tensor stacked = Tensor::Empty({out_features});
  int64_t column = 0;
  for (const Tensor& b : biases) {
    stacked.ViewAs(b.shape(), {1}, column).CopyFrom(b);
    column += b.size(0);
  }
  return stacked;
}

// Linear and FusedLinear, named `op` in errors and profiles: Y [rows,
// sum of out_i] = X [rows, in] [W_0; W_1; ...]^T + [b_0, b_1, ...], rows =
// all leading dimensions of x flattened. Backward:
//   dX = dY [W_0; W_1; ...]  (one GEMM, K = sum of out_i),
//   dW_i = dY[:, cols_i]^T X,  db_i = sum over rows of dY[:, cols_i].
// With several weights that all need gradients, dW = dY^T X is one GEMM
// into a [sum of out_i, in] buffer whose row ranges are the dW_i (autograd
// copies each view into its leaf's gradient: a weight's size, against the
// GEMM's rows times as much work); otherwise one GEMM per weight that needs
// one, into a fresh tensor autograd adopts.
Tensor LinearOp(const char* op, const Tensor& x,
                const std::vector<Tensor>& weights,
                const std::vector<Tensor>& biases) {
  ROTOR_CHECK(!weights.empty(), op, ": no weight");
  ROTOR_CHECK(biases.empty() || biases.size() == weights.size(), op, ": ",
              biases.size(), " biases for ", weights.size(),
              " weights (need one each, or none)");
  ROTOR_CHECK(x.dim() >= 1, op, ": input must have a dimension, got ",
              ShapeToString(x.shape()));
  const int64_t in_features = x.shape().back();
  std::vector<int64_t> widths;
  int64_t out_features = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Tensor& w = weights[i];
    ROTOR_CHECK(w.dim() == 2 && w.shape()[1] == in_features, op,
                ": input shape ", ShapeToString(x.shape()),
                " and weight shape ", ShapeToString(w.shape()),
                " do not match (need [..., in] and [out, in])");
    if (!biases.empty()) {
      ROTOR_CHECK(biases[i].shape() == Shape{w.shape()[0]}, op, ": bias shape ",
                  ShapeToString(biases[i].shape()),
                  " does not match weight shape ", ShapeToString(w.shape()),
                  " (need [", w.shape()[0], "])");
    }
    widths.push_back(w.shape()[0]);
    out_features += w.shape()[0];
  }
  const int64_t rows =
      NumElements(Shape(x.shape().begin(), x.shape().end() - 1));
  // x as a [rows, in] matrix: a 2-D x as it is (possibly transposed), a
  // higher-rank x as a view of its contiguous data.
  Tensor x2d = x;
  if (x.dim() != 2) {
    const Tensor xc = x.is_contiguous() ? x : internal::ContiguousCopy(x);
    x2d = xc.ViewAs({rows, in_features}, {in_features, 1}, 0);
  }
  const MatrixOperand x_op = MakeOperand(x2d, {});
  // In bf16 each product rounds the weight again: a copy kept from the
  // forward to the backward would hold half the weights' bytes through the
  // step, to save 1 / (2 rows) of the product's work.
  const MatrixOperand w_op =
      MakeOperand(StackedWeights(weights, in_features, out_features), {});

  Shape out_shape = x.shape();
  out_shape.back() = out_features;
  Tensor out = Tensor::Empty(out_shape);
  Tensor out2d = out.ViewAs({rows, out_features}, {out_features, 1}, 0);
  BatchedGemm({}, x_op, Transposed(w_op), out2d, rows, out_features,
              in_features, op);
  if (!biases.empty()) {
    const Tensor bias = StackedBias(biases, out_features);
    const float* pb = bias.data();
    float* po = out.data();
    ParallelFor(rows,
                std::max<int64_t>(1, internal::kElementwiseGrain /
                                         std::max<int64_t>(out_features, 1)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t r = begin; r < end; ++r) {
                    kernels::Add(po + r * out_features, pb,
                                 po + r * out_features, out_features);
                  }
                });
  }
  std::vector<Tensor> inputs = {x};
  inputs.insert(inputs.end(), weights.begin(), weights.end());
  inputs.insert(inputs.end(), biases.begin(), biases.end());
  if (!AnyRequiresGrad(inputs)) return out;

  std::vector<bool> needs_grad;
  for (const Tensor& input : inputs)
    needs_grad.push_back(input.requires_grad());
  const Shape x_shape = x.shape();
  const size_t parts = weights.size();
  const bool has_bias = !biases.empty();
  return RecordOp(
      out, op, inputs,
      [op, x_op, w_op, x_shape, rows, in_features, out_features, widths,
       needs_grad, parts, has_bias](const Tensor& g) {
        const Tensor gc = g.is_contiguous() ? g : internal::ContiguousCopy(g);
        MatrixOperand g_op = MakeOperand(
            gc.ViewAs({rows, out_features}, {out_features, 1}, 0), {});
        // dY is read by dX and by the dW products: rounded once for all.
        if (needs_grad[0] &&
            std::any_of(needs_grad.begin() + 1, needs_grad.begin() + 1 + parts,
                        [](bool needed) { return needed; })) {
          RoundOnce(g_op, rows, out_features);
        }
        std::vector<Tensor> grads(needs_grad.size());
        if (needs_grad[0]) {  // dX [rows, in] = dY [rows, out] W [out, in]
          grads[0] = Tensor::Empty(x_shape);  // sgemm overwrites (beta 0)
          Tensor dx2d =
              grads[0].ViewAs({rows, in_features}, {in_features, 1}, 0);
          BatchedGemm({}, g_op, w_op, dx2d, rows, in_features, out_features,
                      op);
        }
        const bool one_weight_gemm =
            parts > 1 &&
            std::all_of(needs_grad.begin() + 1, needs_grad.begin() + 1 + parts,
                        [](bool needed) { return needed; });
        Tensor dw;  // [out, in] = dY^T X, when one GEMM makes every dW_i
        if (one_weight_gemm) {
          dw = Tensor::Empty({out_features, in_features});
          BatchedGemm({}, Transposed(g_op), x_op, dw, out_features, in_features,
                      rows, op);
        }
        int64_t column = 0;
        for (size_t i = 0; i < parts; ++i) {
          // dY's columns of part i: [rows, out_i] with leading dimension out.
          MatrixOperand g_part = g_op;
          g_part.data += column;
          if (g_part.bf16.data != nullptr) g_part.bf16.data += column;
          if (one_weight_gemm) {
            grads[1 + i] = dw.ViewAs({widths[i], in_features}, {in_features, 1},
                                     column * in_features);
          } else if (needs_grad[1 + i]) {  // dW_i [out_i, in] = dY_i^T X
            grads[1 + i] = Tensor::Empty({widths[i], in_features});
            BatchedGemm({}, Transposed(g_part), x_op, grads[1 + i], widths[i],
                        in_features, rows, op);
          }
          if (has_bias && needs_grad[1 + parts + i]) {
            // Rows added one after another: deterministic.
            Tensor db = Tensor::Zeros({widths[i]});
            for (int64_t r = 0; r < rows; ++r) {
              kernels::Axpy(1.0f, g_part.data + r * out_features, db.data(),
                            widths[i]);
            }
            grads[1 + parts + i] = db;
          }
          column += widths[i];
        }
        return grads;
      });
}

}  // namespace

Tensor Linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return LinearOp(
      "Linear", x, {weight},
      bias.defined() ? std::vector<Tensor>{bias} : std::vector<Tensor>{});
}

Tensor FusedLinear(const Tensor& x, const std::vector<Tensor>& weights,
                   const std::vector<Tensor>& biases) {
  return LinearOp("FusedLinear", x, weights, biases);
}

}  // namespace rotor

// Rope op (core/ops/rope.h): forward and backward side by side, both on the
// kernels of core/kernels/rope.h.
#include "core/ops/rope.h"

#include <memory>

#include "core/autograd.h"
#include "core/error.h"
#include "core/profile.h"

namespace rotor {

namespace {

using kernels::RopeOperand;
using kernels::RopeRows;
using kernels::RopeShape;
using kernels::RopeStrides;

// x itself if its last dimension is contiguous (what the kernel needs),
// otherwise a contiguous copy.
Tensor UnitStrideRows(const Tensor& x) {
  if (x.strides().back() == 1 || x.size(-1) == 1) return x;
  Tensor copy = Tensor::Empty(x.shape());
  copy.CopyFrom(x);
  return copy;
}

RopeStrides StridesOf(const Tensor& x) {
  return {x.strides()[0], x.strides()[1], x.strides()[2]};
}

// Reads `src` (4-D, unit stride rows) and writes the fresh tensor `dst`.
RopeOperand Operand(const Tensor& src, Tensor& dst) {
  RopeOperand op;
  op.src = src.data();
  op.src_strides = StridesOf(src);
  op.dst = dst.data();
  op.dst_strides = StridesOf(dst);
  op.heads = src.size(1);
  return op;
}

void CheckRank(const Tensor& x, const char* name) {
  ROTOR_CHECK(x.defined() && x.dim() == 4, "Rope: ", name,
              " must be [batch, heads, seq, head_dim], got ",
              x.defined() ? ShapeToString(x.shape()) : "undefined");
}

// The kernel shape for x, after checking the table and the rotary dim.
RopeShape ShapeFor(const Tensor& x, const RopeTable& table, RopeLayout layout,
                   double partial_rotary_factor) {
  RopeShape shape;
  shape.batch = x.size(0);
  shape.seq = x.size(2);
  shape.head_dim = x.size(3);
  shape.rotary_dim =
      kernels::RopeRotaryDim(shape.head_dim, partial_rotary_factor);
  shape.layout = layout;
  ROTOR_CHECK(table.rotary_dim() == shape.rotary_dim,
              "Rope: the table rotates ", table.rotary_dim(),
              " channels but head_dim ", shape.head_dim,
              " with partial_rotary_factor ", partial_rotary_factor,
              " needs rotary dim ", shape.rotary_dim);
  return shape;
}

// Records the backward of one output: dx = R(-theta) dy, with the table rows
// `rows` of the forward pass.
Tensor RecordRope(Tensor output, const Tensor& input,
                  std::shared_ptr<const RopeRows> rows, const RopeShape& shape,
                  const RopePositions& positions) {
  return RecordOp(
      std::move(output), "Rope", {input},
      [rows, shape, positions](const Tensor& grad_out) -> std::vector<Tensor> {
        const Tensor dy = UnitStrideRows(grad_out);
        Tensor dx = Tensor::Empty(dy.shape());
        kernels::RopeBackward(*rows, shape, positions, Operand(dy, dx),
                              RopeOperand(), /*accumulate=*/false);
        return {dx};
      });
}

}  // namespace

std::pair<Tensor, Tensor> Rope(const Tensor& q, const Tensor& k,
                               RopeTable& table, const RopePositions& positions,
                               RopeLayout layout,
                               double partial_rotary_factor) {
  profile::Scope scope(profile::Phase::kKernels);
  CheckRank(q, "q");
  CheckRank(k, "k");
  ROTOR_CHECK(q.size(0) == k.size(0) && q.size(2) == k.size(2), "Rope: q ",
              ShapeToString(q.shape()), " and k ", ShapeToString(k.shape()),
              " differ in batch or seq");
  ROTOR_CHECK(q.size(3) == k.size(3), "Rope: q head_dim ", q.size(3),
              " and k head_dim ", k.size(3), " differ (q ",
              ShapeToString(q.shape()), ", k ", ShapeToString(k.shape()), ")");
  const RopeShape shape = ShapeFor(q, table, layout, partial_rotary_factor);
  const auto rows = table.Rows(kernels::RopePositionsEnd(shape, positions));
  const Tensor q_in = UnitStrideRows(q);
  const Tensor k_in = UnitStrideRows(k);
  Tensor q_rot = Tensor::Empty(q.shape());
  Tensor k_rot = Tensor::Empty(k.shape());
  kernels::RopeForward(*rows, shape, positions, Operand(q_in, q_rot),
                       Operand(k_in, k_rot));
  return {RecordRope(q_rot, q, rows, shape, positions),
          RecordRope(k_rot, k, rows, shape, positions)};
}

Tensor Rope(const Tensor& x, RopeTable& table, const RopePositions& positions,
            RopeLayout layout, double partial_rotary_factor) {
  profile::Scope scope(profile::Phase::kKernels);
  CheckRank(x, "x");
  const RopeShape shape = ShapeFor(x, table, layout, partial_rotary_factor);
  const auto rows = table.Rows(kernels::RopePositionsEnd(shape, positions));
  const Tensor x_in = UnitStrideRows(x);
  Tensor y = Tensor::Empty(x.shape());
  kernels::RopeForward(*rows, shape, positions, Operand(x_in, y),
                       RopeOperand());
  return RecordRope(y, x, rows, shape, positions);
}

}  // namespace rotor

// Attention op (core/ops/attention.h): forward and backward side by side, both
// through the memory-efficient kernels of core/kernels/attention.h.
//
// Forward:  out = softmax(scale q k^T, masked) v, plus lse_i = L_i, the
//           logsumexp of query i's scores, saved for backward.
// Backward: dq, dk, dv from q, k, v, out, lse and dout; the kernel
//           recomputes probabilities tile by tile as exp(s_ij - L_i).
#include "core/ops/attention.h"

#include <cmath>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/attention.h"
#include "core/ops/gemm.h"
#include "core/profile.h"

namespace rotor {

namespace {

// Checks the shapes (see core/ops/attention.h) and returns the kernel's view of
// them. `op` names the caller in error messages.
kernels::AttentionShape CheckedShape(const char* op, const Tensor& q,
                                     const Tensor& k, const Tensor& v,
                                     bool causal, int64_t q_offset,
                                     float scale) {
  ROTOR_CHECK(q.dim() == 4, op,
              ": q must be [batch, q_heads, q_len, head_dim], got ",
              ShapeToString(q.shape()));
  ROTOR_CHECK(k.dim() == 4, op,
              ": k must be [batch, kv_heads, kv_len, head_dim], got ",
              ShapeToString(k.shape()));
  ROTOR_CHECK(k.shape() == v.shape(), op, ": k ", ShapeToString(k.shape()),
              " and v ", ShapeToString(v.shape()), " must have the same shape");
  ROTOR_CHECK(q.size(0) == k.size(0), op, ": batch of q ",
              ShapeToString(q.shape()), " and k ", ShapeToString(k.shape()),
              " differ");
  ROTOR_CHECK(q.size(3) == k.size(3), op, ": head_dim of q ",
              ShapeToString(q.shape()), " and k ", ShapeToString(k.shape()),
              " differ");
  ROTOR_CHECK(q.size(3) > 0, op, ": head_dim must be > 0, got shape ",
              ShapeToString(q.shape()));
  ROTOR_CHECK(k.size(1) > 0 && q.size(1) % k.size(1) == 0, op, ": q_heads (",
              q.size(1), ", q ", ShapeToString(q.shape()),
              ") must be a multiple of kv_heads (", k.size(1), ", k ",
              ShapeToString(k.shape()), ")");
  if (causal) {
    ROTOR_CHECK(q_offset >= 0 && q_offset + q.size(2) <= k.size(2), op,
                ": q_offset ", q_offset, " with q_len ", q.size(2),
                " needs 0 <= q_offset and q_offset + q_len <= kv_len ",
                k.size(2), " (q ", ShapeToString(q.shape()), ", k ",
                ShapeToString(k.shape()), ")");
  } else {
    ROTOR_CHECK(k.size(2) > 0 || q.size(2) == 0, op,
                ": queries need at least one key, got q ",
                ShapeToString(q.shape()), " and k ", ShapeToString(k.shape()));
  }
  ROTOR_CHECK(std::isfinite(scale), op, ": scale must be finite, got ", scale);
  kernels::AttentionShape s;
  s.batch = q.size(0);
  s.q_heads = q.size(1);
  s.kv_heads = k.size(1);
  s.q_len = q.size(2);
  s.kv_len = k.size(2);
  s.head_dim = q.size(3);
  s.q_offset = causal ? q_offset : 0;
  s.causal = causal;
  s.scale = scale;
  return s;
}

// A handle on contiguous data with the values of x and no autograd history:
// x's own storage when it is already contiguous, else a copy.
Tensor ContiguousData(const Tensor& x) {
  if (x.is_contiguous()) return x.Detach();
  Tensor copy = Tensor::Empty(x.shape());
  copy.CopyFrom(x);
  return copy;
}

// A workspace of the kernels' size from the tensor pool (none for 0 floats):
// reused across steps, unlike an allocation inside the kernels.
Tensor Workspace(size_t floats) {
  return floats == 0 ? Tensor() : Tensor::Empty({static_cast<int64_t>(floats)});
}
float* DataOrNull(Tensor& workspace) {
  return workspace.defined() ? workspace.data() : nullptr;
}

// Where the kernels find q, k and v (and write dq, dk, dv) among the op's
// inputs: each its own tensor, or all three side by side in the rows of one
// fused [batch, len, (q_heads + 2 kv_heads) * D] tensor.
std::vector<float*> OperandStarts(std::vector<Tensor>& tensors,
                                  const kernels::AttentionShape& shape) {
  if (tensors.size() == 3) {
    return {tensors[0].data(), tensors[1].data(), tensors[2].data()};
  }
  float* qkv = tensors[0].data();
  const size_t k_column = shape.q_heads * shape.head_dim;
  const size_t v_column = k_column + shape.kv_heads * shape.head_dim;
  return {qkv, qkv + k_column, qkv + v_column};
}

// The kernels' forward for the checked `shape` (its bf16 set) on q, k and v
// where the shape's strides place their rows: returns a fresh output of
// `out_shape` and lse [batch, q_heads, q_len], one float per query row.
std::pair<Tensor, Tensor> Forward(const kernels::AttentionShape& shape,
                                  const float* q, const float* k,
                                  const float* v, const Shape& out_shape) {
  // The kernel overwrites out and lse completely.
  Tensor out = Tensor::Empty(out_shape);
  Tensor lse = Tensor::Empty({static_cast<int64_t>(shape.batch),
                              static_cast<int64_t>(shape.q_heads),
                              static_cast<int64_t>(shape.q_len)});
  Tensor workspace = Workspace(kernels::AttentionForwardWorkspaceFloats(shape));
  profile::Scope scope(profile::Phase::kAttention);
  kernels::AttentionForward(shape, {q, k, v, out.data(), lse.data()},
                            DataOrNull(workspace));
  return {out, lse};
}

// Runs the kernels' forward for the checked `shape` on `inputs` (q, k and v,
// or the fused qkv: OperandStarts), as contiguous data, into a fresh output
// of `out_shape`, and records their backward, whose gradients have the
// inputs' shapes: q, k, v (or qkv), the output and its lse are saved.
// `keep` owns what the shape's pointers point to (key_start, RoPE rows and
// positions) for as long as the backward may run. Its tiles multiply in
// bf16 where AttentionTilesInBf16 says so.
Tensor RunAttention(const char* op, kernels::AttentionShape shape,
                    const std::vector<Tensor>& inputs, const Shape& out_shape,
                    std::shared_ptr<const void> keep) {
  // The tiles' precision is the forward's, for its backward too.
  shape.bf16 = AttentionTilesInBf16();
  std::vector<Tensor> data;
  for (const Tensor& input : inputs) data.push_back(ContiguousData(input));
  const std::vector<float*> qkv = OperandStarts(data, shape);
  Tensor out, lse;
  std::tie(out, lse) = Forward(shape, qkv[0], qkv[1], qkv[2], out_shape);
  // Backward captures the output's data through a detached handle: the
  // output itself would own this node (a reference cycle).
  const Tensor saved_out = out.Detach();
  return RecordOp(
      out, op, inputs,
      [shape, keep, data, saved_out, lse](const Tensor& grad_out) {
        const Tensor dout = ContiguousData(grad_out);
        Tensor delta = Tensor::Empty(lse.shape());  // workspace
        std::vector<Tensor> grads;
        for (const Tensor& input : data) {
          grads.push_back(Tensor::Empty(input.shape()));
        }
        std::vector<Tensor> saved = data;
        const std::vector<float*> qkv = OperandStarts(saved, shape);
        const std::vector<float*> dqkv = OperandStarts(grads, shape);
        Tensor workspace =
            Workspace(kernels::AttentionBackwardWorkspaceFloats(shape));
        profile::Scope scope(profile::Phase::kAttention);
        kernels::AttentionBackwardOperands x;
        x.q = qkv[0];
        x.k = qkv[1];
        x.v = qkv[2];
        x.out = saved_out.data();
        x.lse = lse.data();
        x.dout = dout.data();
        x.delta = delta.data();
        x.dq = dqkv[0];
        x.dk = dqkv[1];
        x.dv = dqkv[2];
        kernels::AttentionBackward(shape, x, DataOrNull(workspace));
        return grads;
      });
}

// key_start: empty (no lower bound) or checked by CheckKeyStart.
Tensor AttentionOp(const char* op, const Tensor& q_in, const Tensor& k_in,
                   const Tensor& v_in, bool causal, int64_t q_offset,
                   float scale, const std::vector<int32_t>& key_start = {}) {
  kernels::AttentionShape shape =
      CheckedShape(op, q_in, k_in, v_in, causal, q_offset, scale);
  std::shared_ptr<const std::vector<int32_t>> saved_key_start;
  if (!key_start.empty()) {
    CheckKeyStart(op, key_start, static_cast<int64_t>(shape.batch),
                  static_cast<int64_t>(shape.kv_len));
    saved_key_start = std::make_shared<const std::vector<int32_t>>(key_start);
    shape.key_start = saved_key_start->data();
  }
  return RunAttention(op, shape, {q_in, k_in, v_in}, q_in.shape(),
                      saved_key_start);
}

// Causal self-attention over `seq` tokens (q_len = kv_len, q_offset 0) at
// the default scale; the caller sets the strides.
kernels::AttentionShape SelfAttentionShape(int64_t batch, int64_t seq,
                                           int64_t q_heads, int64_t kv_heads,
                                           int64_t head_dim) {
  kernels::AttentionShape s;
  s.batch = batch;
  s.q_heads = q_heads;
  s.kv_heads = kv_heads;
  s.q_len = seq;
  s.kv_len = seq;
  s.head_dim = head_dim;
  s.scale = DefaultAttentionScale(head_dim);
  return s;
}

// The checked kernel shape of RopeCausalAttention's token-major operands.
kernels::AttentionShape RopeAttentionShape(const Tensor& q, const Tensor& k,
                                           const Tensor& v, int64_t head_dim) {
  const char* op = "RopeCausalAttention";
  ROTOR_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3, op,
              ": q, k and v must be [batch, seq, heads * head_dim], got q ",
              ShapeToString(q.shape()), ", k ", ShapeToString(k.shape()),
              ", v ", ShapeToString(v.shape()));
  ROTOR_CHECK(k.shape() == v.shape(), op, ": k ", ShapeToString(k.shape()),
              " and v ", ShapeToString(v.shape()), " must have the same shape");
  ROTOR_CHECK(q.size(0) == k.size(0) && q.size(1) == k.size(1), op,
              ": batch and seq of q ", ShapeToString(q.shape()), " and k ",
              ShapeToString(k.shape()), " differ");
  ROTOR_CHECK(head_dim > 0 && q.size(2) % head_dim == 0 &&
                  k.size(2) % head_dim == 0 && k.size(2) > 0,
              op, ": the widths of q ", ShapeToString(q.shape()), " and k ",
              ShapeToString(k.shape()), " must be positive multiples of ",
              "head_dim ", head_dim);
  const int64_t q_heads = q.size(2) / head_dim;
  const int64_t kv_heads = k.size(2) / head_dim;
  ROTOR_CHECK(q_heads % kv_heads == 0, op, ": q_heads ", q_heads,
              " must be a multiple of kv_heads ", kv_heads, " (q ",
              ShapeToString(q.shape()), ", k ", ShapeToString(k.shape()), ")");
  kernels::AttentionShape s =
      SelfAttentionShape(q.size(0), q.size(1), q_heads, kv_heads, head_dim);
  s.q_strides = s.out_strides =
      kernels::TokenMajorAttentionStrides(s.q_len, q.size(2), head_dim);
  s.k_strides = s.v_strides =
      kernels::TokenMajorAttentionStrides(s.kv_len, k.size(2), head_dim);
  return s;
}

// The checked kernel shape of FusedRopeCausalAttention's operand: q, k and
// v side by side in each token's row of qkv.
kernels::AttentionShape FusedRopeAttentionShape(const Tensor& qkv,
                                                int64_t q_heads,
                                                int64_t kv_heads,
                                                int64_t head_dim) {
  const char* op = "FusedRopeCausalAttention";
  ROTOR_CHECK(head_dim > 0 && kv_heads > 0 && q_heads % kv_heads == 0, op,
              ": q_heads ", q_heads, " must be a multiple of kv_heads ",
              kv_heads, " and head_dim ", head_dim, " positive");
  const int64_t width = (q_heads + 2 * kv_heads) * head_dim;
  ROTOR_CHECK(qkv.dim() == 3 && qkv.size(2) == width, op,
              ": qkv must be [batch, seq, (q_heads + 2 kv_heads) * head_dim]",
              " = [batch, seq, ", width, "], got ", ShapeToString(qkv.shape()));
  kernels::AttentionShape s =
      SelfAttentionShape(qkv.size(0), qkv.size(1), q_heads, kv_heads, head_dim);
  s.q_strides = s.k_strides = s.v_strides =
      kernels::TokenMajorAttentionStrides(s.q_len, width, head_dim);
  s.out_strides = kernels::TokenMajorAttentionStrides(
      s.q_len, q_heads * head_dim, head_dim);
  return s;
}

// Sets the RoPE of the token-major `shape` from `rope` and its key_start
// (checked), naming `op` in errors. Returns what the shape now points to,
// for the backward to keep.
std::shared_ptr<const void> SetRope(const char* op,
                                    kernels::AttentionShape& shape,
                                    const AttentionRopeSettings& rope,
                                    const std::vector<int32_t>& key_start) {
  ROTOR_CHECK(rope.table != nullptr, op, ": no RoPE table");
  const int64_t head_dim = static_cast<int64_t>(shape.head_dim);
  const int64_t rotary_dim =
      kernels::RopeRotaryDim(head_dim, rope.partial_rotary_factor);
  ROTOR_CHECK(rope.table->rotary_dim() == rotary_dim, op,
              ": the table rotates ", rope.table->rotary_dim(),
              " channels but head_dim ", head_dim,
              " with partial_rotary_factor ", rope.partial_rotary_factor,
              " needs rotary dim ", rotary_dim);
  kernels::RopeShape rope_shape;
  rope_shape.batch = static_cast<int64_t>(shape.batch);
  rope_shape.seq = static_cast<int64_t>(shape.q_len);
  rope_shape.head_dim = head_dim;
  rope_shape.rotary_dim = rotary_dim;
  // The table rows and positions the backward must use too, even if the
  // table is rebuilt in between.
  const auto rows =
      rope.table->Rows(kernels::RopePositionsEnd(rope_shape, rope.positions));
  struct Kept {
    std::shared_ptr<const kernels::RopeRows> rows;
    RopePositions positions;
    std::vector<int32_t> key_start;
  };
  const auto kept =
      std::make_shared<const Kept>(Kept{rows, rope.positions, key_start});
  shape.rope.rows = kept->rows.get();
  shape.rope.layout = rope.layout;
  shape.rope.rotary_dim = static_cast<size_t>(rotary_dim);
  shape.rope.positions = &kept->positions;
  if (!key_start.empty()) {
    CheckKeyStart(op, key_start, static_cast<int64_t>(shape.batch),
                  static_cast<int64_t>(shape.kv_len));
    shape.key_start = kept->key_start.data();
  }
  return kept;
}

}  // namespace

Tensor RopeCausalAttention(const Tensor& q_in, const Tensor& k_in,
                           const Tensor& v_in, int64_t head_dim,
                           const AttentionRopeSettings& rope,
                           const std::vector<int32_t>& key_start) {
  const char* op = "RopeCausalAttention";
  kernels::AttentionShape shape =
      RopeAttentionShape(q_in, k_in, v_in, head_dim);
  auto kept = SetRope(op, shape, rope, key_start);
  return RunAttention(op, shape, {q_in, k_in, v_in}, q_in.shape(),
                      std::move(kept));
}

Tensor FusedRopeCausalAttention(const Tensor& qkv, int64_t q_heads,
                                int64_t kv_heads, int64_t head_dim,
                                const AttentionRopeSettings& rope,
                                const std::vector<int32_t>& key_start) {
  const char* op = "FusedRopeCausalAttention";
  kernels::AttentionShape shape =
      FusedRopeAttentionShape(qkv, q_heads, kv_heads, head_dim);
  auto kept = SetRope(op, shape, rope, key_start);
  return RunAttention(op, shape, {qkv},
                      {qkv.size(0), qkv.size(1), q_heads * head_dim},
                      std::move(kept));
}

float DefaultAttentionScale(int64_t head_dim) {
  ROTOR_CHECK(head_dim > 0, "DefaultAttentionScale: head_dim must be > 0, got ",
              head_dim);
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

Tensor CausalAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                       float scale, int64_t q_offset) {
  return AttentionOp("CausalAttention", q, k, v, /*causal=*/true, q_offset,
                     scale);
}

Tensor CausalAttention(const Tensor& q, const Tensor& k, const Tensor& v) {
  ROTOR_CHECK(q.dim() == 4 && k.dim() == 4,
              "CausalAttention: q and k must be 4-D [batch, heads, len, "
              "head_dim], got q ",
              ShapeToString(q.shape()), " and k ", ShapeToString(k.shape()));
  return CausalAttention(q, k, v, DefaultAttentionScale(q.size(3)),
                         k.size(2) - q.size(2));
}

namespace {

// The strides of a 4-D view whose rows hold D contiguous floats, for the
// kernels; `name` is the operand in the error.
kernels::AttentionStrides ViewStrides(const char* op, const char* name,
                                      const Tensor& x) {
  const Shape& strides = x.strides();
  ROTOR_CHECK(strides[3] == 1, op, ": the channels of ", name,
              " must be contiguous (stride 1 in its last dimension), got "
              "strides ",
              ShapeToString(strides), " for shape ", ShapeToString(x.shape()));
  return {static_cast<size_t>(strides[0]), static_cast<size_t>(strides[1]),
          static_cast<size_t>(strides[2])};
}

}  // namespace

Tensor CachedCausalAttention(const Tensor& q, const Tensor& k,
                             const Tensor& v) {
  const char* op = "CachedCausalAttention";
  ROTOR_CHECK(!AnyRequiresGrad({&q, &k, &v}), op,
              ": it is for decoding and records no backward, but grad mode "
              "is on and an input requires grad (run it under NoGradGuard)");
  ROTOR_CHECK(q.dim() == 4 && k.dim() == 4, op,
              ": q and k must be 4-D [batch, heads, len, head_dim], got q ",
              ShapeToString(q.shape()), " and k ", ShapeToString(k.shape()));
  kernels::AttentionShape shape =
      CheckedShape(op, q, k, v, /*causal=*/true, k.size(2) - q.size(2),
                   DefaultAttentionScale(q.size(3)));
  shape.q_strides = ViewStrides(op, "q", q);
  shape.k_strides = ViewStrides(op, "k", k);
  shape.v_strides = ViewStrides(op, "v", v);
  const size_t width = shape.q_heads * shape.head_dim;
  shape.out_strides =
      kernels::TokenMajorAttentionStrides(shape.q_len, width, shape.head_dim);
  shape.bf16 = AttentionTilesInBf16();
  return Forward(shape, q.data(), k.data(), v.data(),
                 {q.size(0), q.size(2), static_cast<int64_t>(width)})
      .first;
}

Tensor CausalAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                       float scale, int64_t q_offset,
                       const std::vector<int32_t>& key_start) {
  return AttentionOp("CausalAttention", q, k, v, /*causal=*/true, q_offset,
                     scale, key_start);
}

void CheckKeyStart(const char* caller, const std::vector<int32_t>& key_start,
                   int64_t batch, int64_t len) {
  ROTOR_CHECK(static_cast<int64_t>(key_start.size()) == batch * len, caller,
              ": key_start has ", key_start.size(),
              " entries, expected batch * kv_len = ", batch, " * ", len);
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t* row = key_start.data() + b * len;
    for (int64_t p = 0; p < len; ++p) {
      ROTOR_CHECK(row[p] >= 0 && row[p] <= p, caller,
                  ": key_start of batch row ", b, " at position ", p, " is ",
                  row[p], ", expected 0 .. ", p,
                  " (a query sees keys from key_start up to itself)");
      ROTOR_CHECK(p == 0 || row[p] >= row[p - 1], caller,
                  ": key_start of batch row ", b, " decreases at position ", p,
                  " (", row[p - 1], " then ", row[p],
                  "); it must not decrease along a row");
    }
  }
}

std::vector<int32_t> DocumentKeyStarts(
    const std::vector<std::vector<int64_t>>& document_starts, int64_t seq) {
  ROTOR_CHECK(seq >= 0, "DocumentKeyStarts: seq must be >= 0, got ", seq);
  std::vector<int32_t> key_start;
  key_start.reserve(document_starts.size() * static_cast<size_t>(seq));
  for (size_t b = 0; b < document_starts.size(); ++b) {
    const std::vector<int64_t>& starts = document_starts[b];
    for (size_t d = 0; d < starts.size(); ++d) {
      ROTOR_CHECK(starts[d] >= 0 && starts[d] < seq, "DocumentKeyStarts: row ",
                  b, " has a document start ", starts[d], " outside 0 .. ",
                  seq - 1);
      ROTOR_CHECK(d == 0 || starts[d] > starts[d - 1],
                  "DocumentKeyStarts: row ", b, "'s document starts ",
                  starts[d - 1], " then ", starts[d], " are not increasing");
    }
    int64_t current = 0;
    size_t next = 0;
    for (int64_t t = 0; t < seq; ++t) {
      if (next < starts.size() && starts[next] == t) current = starts[next++];
      key_start.push_back(static_cast<int32_t>(current));
    }
  }
  return key_start;
}

Tensor FullAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                     float scale) {
  return AttentionOp("FullAttention", q, k, v, /*causal=*/false, 0, scale);
}

}  // namespace rotor

// Memory-efficient (FlashAttention-style) scaled dot-product attention on
// contiguous float arrays, Highway-vectorised with dynamic dispatch
// (core/kernels/attention.cc) and parallel over independent work items.
// Scalar reference: core/kernels/attention_scalar.h. The idea, derivations
// and the map from formulas to code: docs/attention.md.
//
// Layout (D = head_dim): every operand is a set of rows of D contiguous
// floats, indexed [batch, heads, len], by default contiguous:
//   q, out, dq, dout : [batch, q_heads,  q_len,  D]
//   k, v, dk, dv     : [batch, kv_heads, kv_len, D]
//   lse              : [batch, q_heads,  q_len]   (always contiguous)
// AttentionShape's strides place the rows of q (and dq), k (dk), v (dv) and
// out (dout) elsewhere, e.g. token-major [batch, len, heads * D] as a
// projection writes them, so no layout copy is needed around the kernels.
// Grouped-query attention: kv_heads divides q_heads and query head h reads
// key/value head h / (q_heads / kv_heads).
//
// Math, per batch b and query head h with kv head g = h / group:
//   s_ij = scale * <q_i, k_j>              for visible keys j of query i
//   p_ij = exp(s_ij - L_i),   L_i = log sum_j exp(s_ij)   (the logsumexp)
//   out_i = sum_j p_ij v_j
// Causal masking with a query offset: query i (0-based within q_len) sits at
// absolute position q_offset + i and sees keys 0 .. q_offset + i. Training
// uses q_offset = 0 with q_len == kv_len; decoding with a KV cache uses
// q_offset = kv_len - q_len. Non-causal attention sees every key.
// Key lower bound (causal only, optional): with key_start, query i of batch
// b sees keys key_start[b * kv_len + q_offset + i] .. q_offset + i instead,
// e.g. only its own document when several are packed into one row. Key
// tiles that no row of a query tile sees are skipped, so the work is the
// number of visible (query, key) pairs, not q_len * kv_len / 2.
//
// RoPE inside attention (optional, causal self-attention with q_len ==
// kv_len): with AttentionShape::rope, q and k hold the projections before
// rotation, and the kernels attend with q_rot = R(theta) q, k_rot =
// R(theta) k (core/kernels/rope.h). The forward rotates each query tile as
// it loads it and each key tile as it transposes it, so no rotated copy of q
// or k is written; the backward rotates q and k into a workspace that lives
// for the call, computes dq_rot and dk_rot and rotates them back, dq =
// R(-theta) dq_rot. Every output is bitwise what RopeForward, the attention
// kernels and RopeBackward give one after the other.
//
// Memory: neither kernel stores the [q_len, kv_len] score matrix. Forward
// keeps per task (one query tile of one head) a query-tile x key-tile score
// block and a float accumulator for the tile's output rows; it saves only
// lse (O(q_len) per head) for backward. Backward recomputes scores tile by
// tile from q, k and lse, using a caller-provided O(q_len) per head
// workspace for delta_i = <dout_i, out_i>. Besides that, scratch is
// O(tile * (tile + D)) per running task: AttentionTaskScratchFloats below is
// exactly what each task allocates. The forward of more than one query tile
// also transposes k once for all its tasks, into a buffer as large as k
// (padded to whole key tiles).
//
// Determinism: every output element is produced by one task in a fixed
// order (dk and dv summed per query head, then over the group's heads in
// order), so results are bitwise identical run to run and for any thread
// count, whichever way the backward splits its work.
#ifndef ROTOR_CORE_KERNELS_ATTENTION_H_
#define ROTOR_CORE_KERNELS_ATTENTION_H_

#include <cstddef>
#include <cstdint>

#include "core/kernels/rope.h"

namespace rotor {
namespace kernels {

// Where the rows of one operand live, in floats: row t of head h of batch
// element b starts at b * batch + h * head + t * row, and its D channels are
// contiguous. All zero (the default) means contiguous [batch, heads, len,
// D]. Token-major [batch, len, heads * D]: {len * heads * D, D, heads * D}.
struct AttentionStrides {
  size_t batch = 0;
  size_t head = 0;
  size_t row = 0;
};

// RoPE applied to q and k inside the kernels (see above). Not owned.
struct AttentionRope {
  const RopeRows* rows = nullptr;  // null: no rotation
  RopeLayout layout = RopeLayout::kSplitHalf;
  // Channels [0, rotary_dim) rotate, the rest pass through; must equal
  // rows->rotary_dim().
  size_t rotary_dim = 0;
  // The positions of the kv_len tokens of each batch row; rows must cover
  // them (RopeTable::Rows(RopePositionsEnd(...))).
  const RopePositions* positions = nullptr;
};

struct AttentionShape {
  size_t batch = 1;
  size_t q_heads = 1;
  size_t kv_heads = 1;  // divides q_heads
  size_t q_len = 0;
  size_t kv_len = 0;
  size_t head_dim = 0;
  // Causal only: absolute position of query 0. Requires
  // q_offset + q_len <= kv_len.
  size_t q_offset = 0;
  bool causal = true;
  float scale = 1.0f;  // usually 1 / sqrt(head_dim)
  // Causal only. Null: no lower bound (keys 0 .. p visible to position p).
  // Else [batch, kv_len]: position p of batch row b sees keys
  // key_start[b * kv_len + p] .. p. Along each row it must satisfy
  // 0 <= key_start[p] <= p and be non-decreasing in p (the kernels rely on
  // both: a query tile's visible keys are then one contiguous range).
  // Packed documents: key_start[p] is where p's document begins. A sliding
  // window of w keys: key_start[p] = max(0, p - w + 1). Not owned.
  const int32_t* key_start = nullptr;
  // Rows of q and dq, k and dk, v and dv, out and dout; default contiguous.
  AttentionStrides q_strides;
  AttentionStrides k_strides;
  AttentionStrides v_strides;
  AttentionStrides out_strides;
  // Causal, q_offset = 0 and q_len == kv_len only. Default: no rotation.
  AttentionRope rope;
  // Products on bfloat16 operands (train.precision: bf16): every tile
  // product's two operands rounded to bfloat16 and summed in float32 by
  // AVX512_BF16's dot products (core/kernels/bf16_tile_product.h); the
  // softmax, its statistics and every accumulator stay float32. Needs a
  // CPU with AVX512_BF16 (Bf16DotSupported; refused elsewhere). Decoding's
  // query tiles of at most two rows score keys in float32.
  bool bf16 = false;
};

// Strides of a contiguous [batch, heads, len, D] operand.
AttentionStrides ContiguousAttentionStrides(size_t heads, size_t len,
                                            size_t head_dim);
// Strides of a token-major [batch, len, row_width] operand whose head h
// occupies channels [h * D, (h + 1) * D) of each row.
AttentionStrides TokenMajorAttentionStrides(size_t len, size_t row_width,
                                            size_t head_dim);

// Query rows and key rows handled per tile (see docs/attention.md).
constexpr size_t kAttentionQueryTile = 64;
constexpr size_t kAttentionKeyTile = 64;

// Floats of scratch one forward or backward task allocates (the larger of
// the two): score and probability blocks of kAttentionQueryTile x
// kAttentionKeyTile, key and value tiles transposed to [head_dim,
// kAttentionKeyTile], an output accumulator and a rotated query tile of
// [kAttentionQueryTile, head_dim] each and per-row statistics. Independent of
// q_len and kv_len.
size_t AttentionTaskScratchFloats(size_t head_dim);

// Floats of workspace AttentionForward and AttentionBackward need for
// `shape` (64-byte aligned; 0 when they need none): the forward's
// transposed key tiles, about k's size, and the RoPE backward's rotated q
// and k and their gradients. A caller that keeps buffers (a tensor pool)
// passes one this large and spares the kernels an allocation, and the
// system its page faults, on every call.
size_t AttentionForwardWorkspaceFloats(const AttentionShape& shape);
size_t AttentionBackwardWorkspaceFloats(const AttentionShape& shape);

// The arrays of one forward call, laid out as above (the shape's strides
// place the rows of q, k, v and out). Not owned. T is float for the kernels
// and double or std::complex<double> for the scalar twins
// (attention_scalar.h).
template <typename T>
struct AttentionForwardOperandsOf {
  const T* q = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  T* out = nullptr;  // written
  T* lse = nullptr;  // written: [batch, q_heads, q_len]
};
using AttentionForwardOperands = AttentionForwardOperandsOf<float>;

// The arrays of one backward call: the forward's inputs and results, the
// gradient of its output, and what the backward writes. Not owned; the
// written arrays must not alias the read ones.
template <typename T>
struct AttentionBackwardOperandsOf {
  const T* q = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  const T* out = nullptr;   // the forward's out
  const T* lse = nullptr;   // the forward's lse
  const T* dout = nullptr;  // dL/d out, laid out as out
  T* delta = nullptr;       // written: [batch, q_heads, q_len] workspace
  T* dq = nullptr;          // written
  T* dk = nullptr;          // written
  T* dv = nullptr;          // written
};
using AttentionBackwardOperands = AttentionBackwardOperandsOf<float>;

// out = softmax(scale * q k^T, masked) v; lse[i] = L_i (-inf for a query
// that sees no key, whose output row is then 0). Overwrites x.out and
// x.lse. workspace: null, or AttentionForwardWorkspaceFloats(shape) floats,
// 64-byte aligned (the kernel allocates its own when null).
void AttentionForward(const AttentionShape& shape,
                      const AttentionForwardOperands& x,
                      float* workspace = nullptr);

// Gradients of L = sum(dout * out) with respect to q, k and v, from the
// forward's inputs, its output `out` and its `lse`:
//   delta_i = <dout_i, out_i>
//   dp_ij = <dout_i, v_j>,  ds_ij = p_ij (dp_ij - delta_i)
//   dq_i = scale sum_j ds_ij k_j,  dk_j = scale sum_i ds_ij q_i,
//   dv_j = sum_i p_ij dout_i   (dk, dv summed over the group's query heads).
// Overwrites x.delta with delta_i, and x.dq, x.dk and x.dv. workspace:
// null, or AttentionBackwardWorkspaceFloats(shape) floats, 64-byte aligned.
void AttentionBackward(const AttentionShape& shape,
                       const AttentionBackwardOperands& x,
                       float* workspace = nullptr);

// How AttentionBackward splits `shape` over the current number of threads:
// "per kv head", "per head" or "two passes" (docs/attention.md, part 5).
// All three give the same bits; the choice is speed alone.
const char* AttentionBackwardScheme(const AttentionShape& shape);

// Name of the Highway target the attention dispatch chose ("AVX3", ...).
const char* AttentionTarget();

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ATTENTION_H_

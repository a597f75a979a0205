// Differentiable scaled dot-product attention, memory-efficient: forward and
// backward run the tiled kernels of core/kernels/attention.h, which never
// store the [q_len, kv_len] score matrix (docs/attention.md). Implementation:
// core/ops/attention.cc.
//
// Shapes (D = head_dim):
//   q: [batch, q_heads, q_len, D]   k, v: [batch, kv_heads, kv_len, D]
//   result: [batch, q_heads, q_len, D]
// Grouped-query attention: kv_heads divides q_heads; query head h uses
// key/value head h / (q_heads / kv_heads).
//
//   result_i = sum_j softmax_j(scale * <q_i, k_j>) v_j
//
// over the keys query i sees. Inputs may be non-contiguous views (they are
// copied to contiguous form first). Backward saves q, k, v, the result and
// one logsumexp per query row: O(T * D) per head, never O(T^2).
// Shape errors throw rotor::Error naming the op and the shapes.
#ifndef ROTOR_CORE_OPS_ATTENTION_H_
#define ROTOR_CORE_OPS_ATTENTION_H_

#include <cstdint>
#include <vector>

#include "core/ops/rope.h"
#include "core/tensor.h"

namespace rotor {

// The usual softmax temperature 1 / sqrt(head_dim).
float DefaultAttentionScale(int64_t head_dim);

// Causal attention: query i sits at absolute position q_offset + i and sees
// keys 0 .. q_offset + i. Training: q_offset = 0 with q_len == kv_len.
// Decoding with a KV cache of kv_len positions: q_offset = kv_len - q_len.
// Requires 0 <= q_offset and q_offset + q_len <= kv_len.
Tensor CausalAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                       float scale, int64_t q_offset);
// The same with scale = DefaultAttentionScale(D) and q_offset = kv_len -
// q_len (the queries are the last q_len positions).
Tensor CausalAttention(const Tensor& q, const Tensor& k, const Tensor& v);

// Causal attention with a lower bound on the keys, e.g. for documents packed
// into one row that must not attend to each other: the query at absolute
// position p = q_offset + i of batch row b sees keys
// key_start[b * kv_len + p] .. p. key_start has batch * kv_len entries and
// along each row 0 <= key_start[p] <= p, non-decreasing in p (checked). For
// packed documents key_start[p] is the position where p's document begins
// (DocumentKeyStarts); for a sliding window of w keys, max(0, p - w + 1).
// Empty: no lower bound, the same bits as the overload above. Key tiles no
// query of a tile sees are skipped, so the cost is that of the visible pairs.
Tensor CausalAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                       float scale, int64_t q_offset,
                       const std::vector<int32_t>& key_start);

// Causal attention of the newest q_len positions over keys and values read
// where they lie, e.g. the first kv_len positions of a KV cache preallocated
// to more (decoding, nn/transformer.h), with no copy:
//   q: [batch, q_heads, q_len, D]   k, v: [batch, kv_heads, kv_len, D]
//   any batch, head and row strides, the D channels of a row contiguous;
//   result: [batch, q_len, q_heads * D], token-major, ready for o_proj.
// Query i sits at position kv_len - q_len + i, as in CausalAttention(q, k,
// v), and the values are its bits (permuted to token-major). Inference
// only: it records no backward, and throws if grad mode is on and an input
// requires grad.
Tensor CachedCausalAttention(const Tensor& q, const Tensor& k, const Tensor& v);

// Throws unless key_start holds batch * len entries that follow the rules
// above (0 <= key_start[p] <= p, non-decreasing along each row); the error
// names `caller`, the row and the position.
void CheckKeyStart(const char* caller, const std::vector<int32_t>& key_start,
                   int64_t batch, int64_t len);

// key_start for CausalAttention from where each row's documents begin:
// document_starts[b] lists row b's document starts in increasing order; a
// row that does not list 0 begins mid-document, and that document starts at
// 0. Returns [batch * seq] entries, key_start[b * seq + t] = the last start
// <= t. Throws on starts out of [0, seq) or not increasing.
std::vector<int32_t> DocumentKeyStarts(
    const std::vector<std::vector<int64_t>>& document_starts, int64_t seq);

// RoPE applied inside RopeCausalAttention: the table, the positions of the
// sequence's tokens and the pairing of channels, as for Rope (core/ops/rope.h).
struct AttentionRopeSettings {
  RopeTable* table = nullptr;  // grows to cover the positions
  RopePositions positions;
  RopeLayout layout = RopeLayout::kSplitHalf;
  double partial_rotary_factor = 1.0;
};

// Causal self-attention on the projections as they come out of the linear
// layers, token-major, with RoPE applied inside the attention kernels:
//   q: [batch, seq, q_heads * D]   k, v: [batch, seq, kv_heads * D]
//   result: [batch, seq, q_heads * D], the heads side by side, ready for the
//   output projection.
// It computes what
//   Rope(q as [batch, q_heads, seq, D], k likewise, ...), then
//   CausalAttention(q_rot, k_rot, v, DefaultAttentionScale(D), 0, key_start)
// compute, bitwise, without the layout copies around them and without
// storing rotated q or k: the forward rotates each tile as the kernel loads
// it, and the backward rotates q and k into a workspace for its own
// duration (docs/attention.md). Backward saves q, k, v, the result and one
// logsumexp per query row. key_start: as for CausalAttention (empty: plain
// causal). Throws rotor::Error on shapes that do not fit, a table built for
// another rotary dim, bad positions or a bad key_start.
Tensor RopeCausalAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                           int64_t head_dim, const AttentionRopeSettings& rope,
                           const std::vector<int32_t>& key_start = {});

// RopeCausalAttention on the output of one fused q/k/v projection
// (FusedLinear): qkv: [batch, seq, (q_heads + 2 kv_heads) * D], each token's
// row holding q (columns [0, q_heads D)), then k, then v (kv_heads D each).
// The kernels read q, k and v in place (row stride = qkv's width) and the
// backward writes dq, dk and dv into one d(qkv) of qkv's shape, so the
// projection's input gradient is one GEMM, d(qkv) W_qkv. result: [batch,
// seq, q_heads * D]. The same bits as RopeCausalAttention on the three
// column blocks.
Tensor FusedRopeCausalAttention(const Tensor& qkv, int64_t q_heads,
                                int64_t kv_heads, int64_t head_dim,
                                const AttentionRopeSettings& rope,
                                const std::vector<int32_t>& key_start = {});

// Non-causal attention: every query sees every key.
Tensor FullAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                     float scale);

}  // namespace rotor

#endif  // ROTOR_CORE_OPS_ATTENTION_H_

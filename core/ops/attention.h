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

// Non-causal attention: every query sees every key.
Tensor FullAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                     float scale);

}  // namespace rotor

#endif  // ROTOR_CORE_OPS_ATTENTION_H_

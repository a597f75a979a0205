// Rotary position embedding as a differentiable op on tensors: what
// attention calls on its queries and keys. The kernels, the cos/sin table
// (RopeTable) and the positions type live in core/kernels/rope.h;
// docs/rope.md explains the math and where each line of it lives.
//
// Typical use in attention (Hugging Face Llama conventions):
//   RopeTable table = RopeTable::Default(head_dim, /*base=*/10000.0);
//   auto [q_rot, k_rot] = Rope(q, k, table, RopePositions{/*offset=*/0},
//                              RopeLayout::kSplitHalf);
// RoPE scaling methods build the table from their own frequencies instead:
//   RopeTable table(inv_freq, attention_factor);
#ifndef ROTOR_CORE_OPS_ROPE_H_
#define ROTOR_CORE_OPS_ROPE_H_

#include <utility>

#include "core/kernels/rope.h"
#include "core/tensor.h"

namespace rotor {

using kernels::RopeLayout;
using kernels::RopePositions;
using kernels::RopeTable;

// Rotates queries and keys in one pass over memory:
//   q_rot[b, h, t, :] = R(theta(position(b, t))) q[b, h, t, :], same for k,
// rotating the first r = int(head_dim * partial_rotary_factor) channels of
// each row in pairs given by `layout` and passing the rest through.
//   q: [batch, q_heads, seq, head_dim], k: [batch, kv_heads, seq, head_dim]
//   (kv_heads may differ from q_heads). Views are read where they are when
//   head_dim is contiguous (e.g. Permute of a fused qkv projection).
// Returns {q_rot, k_rot}: fresh contiguous tensors of the same shapes.
// `table` must have rotary_dim() == r; it grows to cover the positions.
// Backward: dq = R(-theta) dq_rot, dk = R(-theta) dk_rot, using the table
// rows of the forward pass even if `table` is rebuilt in between.
// Throws on mismatched shapes (q/k batch, seq or head_dim), an odd rotary
// dim, a table built for another rotary dim, or bad positions.
std::pair<Tensor, Tensor> Rope(const Tensor& q, const Tensor& k,
                               RopeTable& table, const RopePositions& positions,
                               RopeLayout layout,
                               double partial_rotary_factor = 1.0);

// The same for one tensor x: [batch, heads, seq, head_dim].
Tensor Rope(const Tensor& x, RopeTable& table, const RopePositions& positions,
            RopeLayout layout, double partial_rotary_factor = 1.0);

}  // namespace rotor

#endif  // ROTOR_CORE_OPS_ROPE_H_

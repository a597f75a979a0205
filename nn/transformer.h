// A Llama-style decoder-only language model, built from rotor's ops:
//
//   h = embed_tokens[ids]                                        [B, T, H]
//   for each layer:
//     h = h + o_proj(Attention(RoPE(q_proj(n)), RoPE(k_proj(n)), v_proj(n)))
//         with n = input_layernorm(h)           (grouped-query, causal)
//     h = h + down_proj(silu(gate_proj(n)) * up_proj(n))
//         with n = post_attention_layernorm(h)
//   logits = lm_head(norm(h))                                     [B*T, V]
//
// The projections may carry biases, as in Hugging Face's architectures:
// Llama's attention_bias (q, k, v and o), Qwen2's (q, k and v only) and
// mlp_bias (gate, up and down).
//
// Parameter names are Hugging Face's (model.layers.0.self_attn.q_proj.weight,
// ...). With tie_word_embeddings the output projection reuses
// model.embed_tokens.weight and lm_head.weight does not exist.
//
// Initialisation (seeded): every weight matrix ~ N(0, initializer_range^2),
// except the projections that write into the residual stream (o_proj,
// down_proj), scaled by 1/sqrt(2 * num_hidden_layers) as in GPT-2, so the
// residual's variance does not grow with depth; norms start at 1.
#ifndef ROTOR_NN_TRANSFORMER_H_
#define ROTOR_NN_TRANSFORMER_H_

#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "core/ops/rope.h"
#include "core/tensor.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "nn/rope_scaling.h"

namespace rotor {
namespace nn {

// Every size the model needs, resolved and checked.
struct TransformerConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  double rms_norm_eps = 1e-5;
  bool tie_word_embeddings = false;  // as in HF's LlamaConfig and YAML
  double initializer_range = 0.02;
  RopeLayout rope_layout = RopeLayout::kSplitHalf;
  RopeScalingConfig rope;    // theta, max positions, partial rotary, scaling
  bool qkv_bias = false;     // biases on q_proj, k_proj, v_proj
  bool o_proj_bias = false;  // a bias on o_proj
  bool mlp_bias = false;     // biases on gate_proj, up_proj, down_proj
  // Mistral's sliding window (0: none): a query sees only the last
  // `sliding_window` positions. rotor's attention sees every earlier
  // position, which is the same for sequences no longer than the window, so
  // Logits refuses longer ones rather than compute another model.
  int64_t sliding_window = 0;
  // How attention applies RoPE without a KV cache: inside the attention
  // kernels, on the projections where they lie (RopeCausalAttention), or,
  // when false, as the separate Rope op followed by CausalAttention, with
  // the layout copies around them, as decoding with a cache does. Both give
  // the same bits; the switch exists to measure and test one against the
  // other.
  bool rope_inside_attention = true;
  // Whether q_proj, k_proj and v_proj run as one GEMM, and gate_proj and
  // up_proj as another (CausalSelfAttention, SwiGluMlp), or one by one.
  // Their weights share a storage either way. The values agree to float
  // rounding (the fused products round in another order); the switch
  // exists to measure and test one against the other.
  bool fuse_projections = true;
};

// Tag for a Transformer whose weights a loader overwrites next: no random
// draws and no zero-fill (see nn/layers.h).
struct WeightsToBeLoaded {};

// Keys and values of one layer for decoding, allocated once for the whole
// sequence (Transformer::NewKvCache): positions [0, KvCache::length) hold
// the keys, already rotated, and the values of the tokens so far. A forward
// of T tokens writes its own at [length, length + T) in place and attends
// over the first length + T positions where they lie
// (CachedCausalAttention), so decoding never copies nor allocates the cache.
struct LayerKvCache {
  Tensor keys;    // [B, Hkv, capacity, D]
  Tensor values;  // [B, Hkv, capacity, D]
};
struct KvCache {
  std::vector<LayerKvCache> layers;
  int64_t batch = 0;     // rows B
  int64_t capacity = 0;  // positions each row can hold
  int64_t length = 0;    // positions cached
};

// Documents packed into the rows of a batch (Logits, Loss): a training row
// cut from a token stream holds several.
struct PackedDocuments {
  // [batch * seq]: document_start[b * seq + t] is the position in row b
  // where the document holding token t begins (0 for a row that begins
  // mid-document); 0 <= document_start <= t, non-decreasing along a row.
  // core/ops/attention.h DocumentKeyStarts builds it from the starts.
  std::vector<int32_t> document_start;
  // Tokens attend only to their own document (CausalAttention's key_start).
  bool mask_attention = true;
  // RoPE positions restart at each document start (t - document_start), as
  // Hugging Face's per-document position_ids do for packed sequences.
  bool restart_positions = false;
};

// Where the tokens of one forward pass sit: RoPE's positions and the first
// key each may attend to (empty: every earlier position).
struct TokenPositions {
  RopePositions rope;
  std::vector<int32_t> key_start;  // [B * T], see CausalAttention
};

// q_proj's, k_proj's and v_proj's weights are row ranges of one
// [(heads + 2 kv_heads) * D, H] storage (FusedWeights): one GEMM gives qkv
// [B, T, (heads + 2 kv_heads) * D], attention reads q, k and v in place in
// its rows and writes d(qkv) whole, and dx = d(qkv) W_qkv is one GEMM with
// K = (heads + 2 kv_heads) * D. With a LoRA adapter on q_proj, k_proj or
// v_proj, or without fuse_projections, the three run as separate layers.
class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(const TransformerConfig& config, Rng* rng);
  // x: [B, T, H] at `positions` -> [B, T, H].
  // Without a cache, attends causally within x (training, evaluation), from
  // positions.key_start on when it is set. With a cache (and no key_start),
  // writes this step's rotated keys and values into it at positions
  // positions.rope.offset (the cache's length) .. + T first and attends to
  // everything cached (decoding).
  Tensor Forward(const Tensor& x, RopeTable& table,
                 const TokenPositions& positions, LayerKvCache* cache) const;

 private:
  // qkv: q_proj's, k_proj's and v_proj's weights (FusedWeights).
  CausalSelfAttention(const TransformerConfig& config, std::vector<Tensor> qkv,
                      Rng* rng);
  // Whether q, k and v come from one GEMM: fuse_projections and no adapter
  // on any of them.
  bool fused() const;
  // Forward's two ways to attend, from x [B, T, H] and qkv (the fused
  // projections, or undefined: each layer projects x itself), each
  // returning [B, T, heads * D] for o_proj: RoPE inside the attention
  // kernels (no cache), or RoPE first (a cache, or rope_inside_attention
  // off).
  Tensor AttendWithRopeInside(const Tensor& x, const Tensor& qkv,
                              RopeTable& table,
                              const TokenPositions& positions) const;
  Tensor AttendAfterRope(const Tensor& x, const Tensor& qkv, RopeTable& table,
                         const TokenPositions& positions,
                         LayerKvCache* cache) const;
  // q, k and v as [B, heads, T, D] (v contiguous) for AttendAfterRope.
  std::tuple<Tensor, Tensor, Tensor> ProjectHeads(const Tensor& x,
                                                  const Tensor& qkv) const;

  int64_t num_heads_, num_kv_heads_, head_dim_;
  double partial_rotary_factor_;
  bool rope_inside_attention_;
  bool fuse_projections_;
  RopeLayout layout_;
  Linear& q_proj_;
  Linear& k_proj_;
  Linear& v_proj_;
  Linear& o_proj_;
};

class DecoderLayer : public Module {
 public:
  DecoderLayer(const TransformerConfig& config, Rng* rng);
  Tensor Forward(const Tensor& x, RopeTable& table,
                 const TokenPositions& positions, LayerKvCache* cache) const;
  // The same layer on a residual stream kept as two terms, x + delta
  // (delta undefined: x alone), returning the output's two terms {h, mlp}
  // unsummed, so that each residual add runs fused with the norm after it
  // (AddRmsNorm): the input norm's here, the last one in the next layer
  // or the final norm. Forward(x) is the sum of ForwardTerms(x, {}).
  std::pair<Tensor, Tensor> ForwardTerms(const Tensor& x, const Tensor& delta,
                                         RopeTable& table,
                                         const TokenPositions& positions,
                                         LayerKvCache* cache) const;

 private:
  RmsNorm& input_layernorm_;
  CausalSelfAttention& self_attn_;
  RmsNorm& post_attention_layernorm_;
  SwiGluMlp& mlp_;
};

// The decoder stack without the output head ("model." in HF's names).
class DecoderStack : public Module {
 public:
  DecoderStack(const TransformerConfig& config, Rng* rng);
  // ids: [B, T] -> final normed hidden states [B, T, H]; with
  // `last_positions` > 0, those of each row's last positions only,
  // [B, last_positions, H] (every position still fills the cache).
  Tensor Forward(const std::vector<int32_t>& ids, int64_t batch, int64_t seq,
                 RopeTable& table, const TokenPositions& positions,
                 KvCache* cache, int64_t last_positions = 0) const;
  const Embedding& embed_tokens() const { return embed_tokens_; }
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  // See Transformer::SetActivationCheckpointing.
  void set_checkpoint_every(int64_t every_k) { checkpoint_every_ = every_k; }

 private:
  Embedding& embed_tokens_;
  std::vector<DecoderLayer*> layers_;
  RmsNorm& norm_;
  int64_t checkpoint_every_ = 0;
};

class Transformer : public Module {
 public:
  // Weights drawn from `seed` (see the initialisation above).
  Transformer(const TransformerConfig& config, uint64_t seed);
  // Weights left for a loader to fill (every parameter must be written).
  Transformer(const TransformerConfig& config, WeightsToBeLoaded);

  const TransformerConfig& config() const { return config_; }

  // Activation checkpointing (core/autograd.h Checkpointed) for training:
  // layers 0, K, 2K, ... keep only their input and are recomputed in
  // backward (every_k = 1: every layer; 0: none, the default). Gradients
  // are bitwise the same; memory drops by those layers' activations, at
  // the cost of one more forward of them. Decoding with a KV cache and
  // no-grad evaluation never recompute.
  void SetActivationCheckpointing(int64_t every_k);

  // Sets the RoPE frequencies for sequences of `sequence_length` tokens (only
  // dynamic NTK and LongRoPE depend on it; see nn/rope_scaling.h). Call it
  // once per sequence, before its prefill.
  void SetSequenceLength(int64_t sequence_length);

  // ids: [B, T] (row-major) at positions offset .. offset+T-1 -> logits
  // [B*T, vocab]. With a cache (B rows, offset = its length, offset + T
  // within its capacity, grad mode off), decodes: writes the T positions
  // into it and advances it. With `documents` (offset 0, no cache), each
  // row holds packed documents (see PackedDocuments). Throws when
  // offset + T exceeds a sliding window.
  Tensor Logits(const std::vector<int32_t>& ids, int64_t batch, int64_t seq,
                int64_t offset = 0, KvCache* cache = nullptr,
                const PackedDocuments* documents = nullptr);
  // The logits of each row's last `last` positions only, [B*last, vocab]
  // (row b's at rows b*last ..): the final norm and the output head run on
  // those rows, not on B*T (a prefill that samples the next token needs
  // one, the passkey's answer check a few). Otherwise as Logits.
  Tensor LastLogits(const std::vector<int32_t>& ids, int64_t batch, int64_t seq,
                    int64_t offset = 0, KvCache* cache = nullptr,
                    int64_t last = 1);

  // Mean next-token cross-entropy of logits(ids) against targets ([B, T],
  // entries equal to ignore_index do not count). The logits are never
  // materialised whole: the output head and the loss run loss_chunk_rows()
  // rows at a time, with their backward in the same pass
  // (core/ops/ops.h LinearCrossEntropy).
  // With `documents`, each row holds packed documents (see PackedDocuments).
  static constexpr int32_t kIgnoreIndex = -100;  // CrossEntropy's default
  Tensor Loss(const std::vector<int32_t>& ids,
              const std::vector<int32_t>& targets, int64_t batch, int64_t seq,
              int32_t ignore_index = kIgnoreIndex,
              const PackedDocuments* documents = nullptr);

  // An empty cache for `batch` rows of up to `capacity` positions each (a
  // prompt and the tokens to generate after it), every layer's keys and
  // values allocated now: KvCacheBytes(batch, capacity) in all.
  KvCache NewKvCache(int64_t batch, int64_t capacity) const;
  // 2 (keys, values) x layers x batch x kv_heads x capacity x head_dim
  // floats, in bytes (a double: callers check it against memory first).
  double KvCacheBytes(int64_t batch, int64_t capacity) const;

  // Rows of logits Loss computes at a time (>= 1): memory for them is
  // rows x vocab floats. Results are deterministic for a given value.
  static constexpr int64_t kDefaultLossChunkRows = 1024;
  void SetLossChunkRows(int64_t rows);
  int64_t loss_chunk_rows() const { return loss_chunk_rows_; }

  // Positions run through the decoder layers so far (B x T of every Logits,
  // LastLogits and Loss): what prefills and decode steps cost, counted for
  // tests and benchmarks.
  int64_t forwarded_positions() const { return forwarded_positions_; }

 private:
  Transformer(const TransformerConfig& config, Rng* rng);
  // The final hidden states as rows: [B*T, H], or [B*last_positions, H]
  // when last_positions > 0.
  Tensor FlatHidden(const std::vector<int32_t>& ids, int64_t batch, int64_t seq,
                    int64_t offset, KvCache* cache,
                    const PackedDocuments* documents,
                    int64_t last_positions = 0);
  // lm_head.weight, or the embeddings when tied: [vocab, hidden].
  const Tensor& OutputWeight() const;

  TransformerConfig config_;
  RopeTable rope_table_;
  int64_t rope_sequence_length_ = -1;
  DecoderStack* model_;
  Linear* lm_head_ = nullptr;  // null when tied
  int64_t loss_chunk_rows_ = kDefaultLossChunkRows;
  int64_t forwarded_positions_ = 0;
};

}  // namespace nn
}  // namespace rotor

#endif  // ROTOR_NN_TRANSFORMER_H_

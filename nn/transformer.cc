#include "nn/transformer.h"

#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/attention.h"
#include "core/ops/ops.h"

namespace rotor {
namespace nn {

namespace {

// Std of the projections that add into the residual stream.
double OutputInitStd(const TransformerConfig& config) {
  return config.initializer_range /
         std::sqrt(2.0 * static_cast<double>(config.num_hidden_layers));
}

}  // namespace

// ---------------------------------------------------------------------------
CausalSelfAttention::CausalSelfAttention(const TransformerConfig& config,
                                         Rng* rng)
    : CausalSelfAttention(
          config,
          FusedWeights({config.num_attention_heads * config.head_dim,
                        config.num_key_value_heads * config.head_dim,
                        config.num_key_value_heads * config.head_dim},
                       config.hidden_size, config.initializer_range, rng),
          rng) {}

CausalSelfAttention::CausalSelfAttention(const TransformerConfig& config,
                                         std::vector<Tensor> qkv, Rng* rng)
    : num_heads_(config.num_attention_heads),
      num_kv_heads_(config.num_key_value_heads),
      head_dim_(config.head_dim),
      partial_rotary_factor_(config.rope.partial_rotary_factor),
      rope_inside_attention_(config.rope_inside_attention),
      fuse_projections_(config.fuse_projections),
      layout_(config.rope_layout),
      q_proj_(RegisterModule(
          "q_proj",
          std::make_unique<Linear>(std::move(qkv[0]), config.qkv_bias))),
      k_proj_(RegisterModule(
          "k_proj",
          std::make_unique<Linear>(std::move(qkv[1]), config.qkv_bias))),
      v_proj_(RegisterModule(
          "v_proj",
          std::make_unique<Linear>(std::move(qkv[2]), config.qkv_bias))),
      o_proj_(RegisterModule(
          "o_proj", std::make_unique<Linear>(
                        num_heads_ * head_dim_, config.hidden_size,
                        config.o_proj_bias, OutputInitStd(config), rng))) {}

bool CausalSelfAttention::fused() const {
  return fuse_projections_ && !q_proj_.has_lora() && !k_proj_.has_lora() &&
         !v_proj_.has_lora();
}

Tensor CausalSelfAttention::Forward(const Tensor& x, RopeTable& table,
                                    const TokenPositions& positions,
                                    LayerKvCache* cache) const {
  // qkv [B, T, (heads + 2 kv_heads) * D] from one GEMM, unless an adapter
  // sits on q, k or v (then each projection runs on its own).
  const Tensor qkv = fused()
                         ? FusedLinearForward({&q_proj_, &k_proj_, &v_proj_}, x)
                         : Tensor();
  const Tensor attended =
      cache == nullptr && rope_inside_attention_
          ? AttendWithRopeInside(x, qkv, table, positions)
          : AttendAfterRope(x, qkv, table, positions, cache);
  return o_proj_.Forward(attended);
}

// Training and scoring: the kernels read the projections [B, T, heads*D]
// where they are and rotate q and k tiles as they load them; the result
// comes out [B, T, heads*D], ready for o_proj.
Tensor CausalSelfAttention::AttendWithRopeInside(
    const Tensor& x, const Tensor& qkv, RopeTable& table,
    const TokenPositions& positions) const {
  AttentionRopeSettings rope;
  rope.table = &table;
  rope.positions = positions.rope;
  rope.layout = layout_;
  rope.partial_rotary_factor = partial_rotary_factor_;
  if (qkv.defined()) {
    return FusedRopeCausalAttention(qkv, num_heads_, num_kv_heads_, head_dim_,
                                    rope, positions.key_start);
  }
  return RopeCausalAttention(q_proj_.Forward(x), k_proj_.Forward(x),
                             v_proj_.Forward(x), head_dim_, rope,
                             positions.key_start);
}

// Projections [B, T, heads*D], viewed as [B, heads, T, D] (a column block
// of qkv is copied to contiguous rows first); RoPE reads the views of q and
// k, and v is made contiguous here.
std::tuple<Tensor, Tensor, Tensor> CausalSelfAttention::ProjectHeads(
    const Tensor& x, const Tensor& qkv) const {
  const int64_t batch = x.size(0);
  const int64_t seq = x.size(1);
  // q, k and v: column blocks of qkv (views), or the projections' own.
  const int64_t q_width = num_heads_ * head_dim_;
  const int64_t kv_width = num_kv_heads_ * head_dim_;
  auto projection = [&](const Linear& layer, int64_t column, int64_t width) {
    return qkv.defined() ? Narrow(qkv, 2, column, width) : layer.Forward(x);
  };
  auto heads_view = [&](const Tensor& projected, int64_t heads) {
    return Permute(Reshape(projected, {batch, seq, heads, head_dim_}),
                   {0, 2, 1, 3});
  };
  const Tensor q = heads_view(projection(q_proj_, 0, q_width), num_heads_);
  const Tensor k =
      heads_view(projection(k_proj_, q_width, kv_width), num_kv_heads_);
  Tensor values = Contiguous(heads_view(
      projection(v_proj_, q_width + kv_width, kv_width), num_kv_heads_));
  return {q, k, values};
}

// Decoding with a KV cache (which keeps rotated keys), or RoPE outside
// attention: RoPE runs first, on the projections viewed as heads
// (ProjectHeads), then attention, then the heads merge back to
// [B, T, heads*D].
Tensor CausalSelfAttention::AttendAfterRope(const Tensor& x, const Tensor& qkv,
                                            RopeTable& table,
                                            const TokenPositions& positions,
                                            LayerKvCache* cache) const {
  auto [q, k, values] = ProjectHeads(x, qkv);
  auto [q_rot, keys] =
      Rope(q, k, table, positions.rope, layout_, partial_rotary_factor_);
  const int64_t batch = x.size(0);
  const int64_t seq = x.size(1);
  if (cache != nullptr) {
    // This step's positions start at the cache's length (FlatHidden checks
    // offset == length): write them there, then attend over everything
    // cached, read in place; the result comes out [B, T, heads * D].
    const int64_t start = positions.rope.offset;
    Narrow(cache->keys, 2, start, seq).CopyFrom(keys);
    Narrow(cache->values, 2, start, seq).CopyFrom(values);
    return CachedCausalAttention(q_rot, Narrow(cache->keys, 2, 0, start + seq),
                                 Narrow(cache->values, 2, 0, start + seq));
  }
  // Packed documents: from each one's start on.
  const Tensor attended =
      positions.key_start.empty()
          ? CausalAttention(q_rot, keys, values)
          : CausalAttention(q_rot, keys, values,
                            DefaultAttentionScale(head_dim_), 0,
                            positions.key_start);
  return Reshape(Contiguous(Permute(attended, {0, 2, 1, 3})),
                 {batch, seq, num_heads_ * head_dim_});
}

// ---------------------------------------------------------------------------
DecoderLayer::DecoderLayer(const TransformerConfig& config, Rng* rng)
    : input_layernorm_(RegisterModule(
          "input_layernorm",
          std::make_unique<RmsNorm>(config.hidden_size, config.rms_norm_eps))),
      self_attn_(RegisterModule(
          "self_attn", std::make_unique<CausalSelfAttention>(config, rng))),
      post_attention_layernorm_(RegisterModule(
          "post_attention_layernorm",
          std::make_unique<RmsNorm>(config.hidden_size, config.rms_norm_eps))),
      mlp_(RegisterModule(
          "mlp", std::make_unique<SwiGluMlp>(
                     config.hidden_size, config.intermediate_size,
                     config.mlp_bias, config.initializer_range,
                     OutputInitStd(config), config.fuse_projections, rng))) {}

Tensor DecoderLayer::Forward(const Tensor& x, RopeTable& table,
                             const TokenPositions& positions,
                             LayerKvCache* cache) const {
  const auto [h, mlp] = ForwardTerms(x, Tensor(), table, positions, cache);
  return Add(h, mlp);
}

// s = x + delta, h = s + attn(norm1(s)), out = h + mlp(norm2(h)), with
// each add fused into the norm that reads its result.
std::pair<Tensor, Tensor> DecoderLayer::ForwardTerms(
    const Tensor& x, const Tensor& delta, RopeTable& table,
    const TokenPositions& positions, LayerKvCache* cache) const {
  const auto [s, normed] = delta.defined()
                               ? input_layernorm_.AddForward(x, delta)
                               : std::pair{x, input_layernorm_.Forward(x)};
  const Tensor attn = self_attn_.Forward(normed, table, positions, cache);
  const auto [h, h_normed] = post_attention_layernorm_.AddForward(s, attn);
  return {h, mlp_.Forward(h_normed)};
}

// ---------------------------------------------------------------------------
DecoderStack::DecoderStack(const TransformerConfig& config, Rng* rng)
    : embed_tokens_(RegisterModule(
          "embed_tokens",
          std::make_unique<Embedding>(config.vocab_size, config.hidden_size,
                                      config.initializer_range, rng))),
      layers_([&] {
        std::vector<DecoderLayer*> layers;
        for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
          layers.push_back(
              &RegisterModule("layers." + std::to_string(i),
                              std::make_unique<DecoderLayer>(config, rng)));
        }
        return layers;
      }()),
      norm_(RegisterModule(
          "norm",
          std::make_unique<RmsNorm>(config.hidden_size, config.rms_norm_eps))) {
}

Tensor DecoderStack::Forward(const std::vector<int32_t>& ids, int64_t batch,
                             int64_t seq, RopeTable& table,
                             const TokenPositions& positions, KvCache* cache,
                             int64_t last_positions) const {
  // The residual stream is h + delta: each layer returns its two terms
  // unsummed (DecoderLayer::ForwardTerms).
  Tensor h = embed_tokens_.Forward(ids, {batch, seq});
  Tensor delta;
  // Recomputed layers run again in backward, after `positions` is gone.
  std::shared_ptr<const TokenPositions> kept;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const DecoderLayer* layer = layers_[i];
    if (cache == nullptr && checkpoint_every_ > 0 &&
        static_cast<int64_t>(i) % checkpoint_every_ == 0) {
      if (!kept) kept = std::make_shared<const TokenPositions>(positions);
      // A recomputed layer takes one tensor: the stream summed.
      if (delta.defined()) h = Add(h, delta);
      h = Checkpointed(
          [layer, &table, kept](const Tensor& x) {
            return layer->Forward(x, table, *kept, nullptr);
          },
          h, layer->TrainableParameters());
      delta = Tensor();
    } else {
      std::tie(h, delta) = layer->ForwardTerms(
          h, delta, table, positions, cache ? &cache->layers[i] : nullptr);
    }
  }
  if (last_positions > 0 && last_positions < seq) {
    h = Narrow(h, 1, seq - last_positions, last_positions);
    if (delta.defined()) {
      delta = Narrow(delta, 1, seq - last_positions, last_positions);
    }
  }
  return delta.defined() ? norm_.AddForward(h, delta).second : norm_.Forward(h);
}

// ---------------------------------------------------------------------------
namespace {
RopeTable TableFor(const RopeScalingConfig& rope, int64_t sequence_length) {
  const RopeFrequencies frequencies =
      ComputeRopeFrequencies(rope, sequence_length);
  return RopeTable(frequencies.inv_freq, frequencies.attention_factor);
}
}  // namespace

Transformer::Transformer(const TransformerConfig& config, uint64_t seed)
    // The temporary Rng lives until the delegated constructor returns.
    : Transformer(config, std::make_unique<Rng>(seed).get()) {}

Transformer::Transformer(const TransformerConfig& config, WeightsToBeLoaded)
    : Transformer(config, static_cast<Rng*>(nullptr)) {}

Transformer::Transformer(const TransformerConfig& config, Rng* rng)
    : config_(config),
      rope_table_(TableFor(config.rope, config.rope.max_position_embeddings)),
      rope_sequence_length_(config.rope.max_position_embeddings) {
  model_ =
      &RegisterModule("model", std::make_unique<DecoderStack>(config, rng));
  if (!config.tie_word_embeddings) {
    lm_head_ = &RegisterModule(
        "lm_head",
        std::make_unique<Linear>(config.hidden_size, config.vocab_size, false,
                                 config.initializer_range, rng));
  }
}

void Transformer::SetActivationCheckpointing(int64_t every_k) {
  ROTOR_CHECK(every_k >= 0, "activation checkpointing every ", every_k,
              " layers: expected 0 (off) or more");
  model_->set_checkpoint_every(every_k);
}

void Transformer::SetSequenceLength(int64_t sequence_length) {
  if (sequence_length == rope_sequence_length_) return;
  const RopeFrequencies frequencies =
      ComputeRopeFrequencies(config_.rope, sequence_length);
  rope_table_.Rebuild(frequencies.inv_freq, frequencies.attention_factor);
  rope_sequence_length_ = sequence_length;
}

// The final normed hidden states [B*T, H] of ids at offset (see Logits).
Tensor Transformer::FlatHidden(const std::vector<int32_t>& ids, int64_t batch,
                               int64_t seq, int64_t offset, KvCache* cache,
                               const PackedDocuments* documents,
                               int64_t last_positions) {
  ROTOR_CHECK(static_cast<int64_t>(ids.size()) == batch * seq,
              "Transformer::Logits: ", ids.size(), " ids for batch ", batch,
              " x seq ", seq);
  ROTOR_CHECK(
      config_.sliding_window == 0 || offset + seq <= config_.sliding_window,
      "Transformer::Logits: positions up to ", offset + seq,
      " exceed the model's sliding_window of ", config_.sliding_window,
      "; rotor attends to every earlier position, which equals the "
      "sliding window only within it (shorten the sequence)");
  ROTOR_CHECK(last_positions >= 0 && last_positions <= seq,
              "Transformer::LastLogits: the last ", last_positions,
              " positions of sequences of ", seq);
  ROTOR_CHECK(cache == nullptr || offset == cache->length,
              "Transformer::Logits: decoding at offset ", offset,
              " but the KV cache holds ", cache ? cache->length : 0,
              " positions (the offset must equal the cache length)");
  TokenPositions positions{RopePositions{offset, {}}, {}};
  if (documents != nullptr) {
    ROTOR_CHECK(offset == 0 && cache == nullptr,
                "Transformer::Logits: packed documents need offset 0 and no "
                "KV cache (they are for training and evaluation), got offset ",
                offset, cache ? " with a cache" : "");
    CheckKeyStart("Transformer::Logits: packed documents",
                  documents->document_start, batch, seq);
    if (documents->mask_attention) {
      positions.key_start = documents->document_start;
    }
    if (documents->restart_positions) {
      positions.rope.ids.resize(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) {
        positions.rope.ids[i] =
            static_cast<int64_t>(i % seq) - documents->document_start[i];
      }
    }
  }
  if (cache != nullptr) {
    ROTOR_CHECK(batch == cache->batch, "Transformer::Logits: ", batch,
                " rows but the KV cache was made for ", cache->batch);
    ROTOR_CHECK(offset + seq <= cache->capacity,
                "Transformer::Logits: positions up to ", offset + seq,
                " exceed the KV cache's capacity of ", cache->capacity,
                " (make it for the prompt and every token to generate)");
    ROTOR_CHECK(!GradModeEnabled(),
                "Transformer::Logits: decoding with a KV cache records no "
                "gradients; run it under NoGradGuard");
  }
  const Tensor hidden = model_->Forward(ids, batch, seq, rope_table_, positions,
                                        cache, last_positions);
  if (cache != nullptr) cache->length += seq;
  forwarded_positions_ += batch * seq;
  return Reshape(hidden, {batch * (last_positions > 0 ? last_positions : seq),
                          config_.hidden_size});
}

const Tensor& Transformer::OutputWeight() const {
  return lm_head_ ? lm_head_->weight() : model_->embed_tokens().weight();
}

Tensor Transformer::Logits(const std::vector<int32_t>& ids, int64_t batch,
                           int64_t seq, int64_t offset, KvCache* cache,
                           const PackedDocuments* documents) {
  return rotor::Linear(FlatHidden(ids, batch, seq, offset, cache, documents),
                       OutputWeight());
}

Tensor Transformer::LastLogits(const std::vector<int32_t>& ids, int64_t batch,
                               int64_t seq, int64_t offset, KvCache* cache,
                               int64_t last) {
  ROTOR_CHECK(last >= 1, "Transformer::LastLogits: the last ", last,
              " positions (expected 1 or more)");
  return rotor::Linear(
      FlatHidden(ids, batch, seq, offset, cache, nullptr, last),
      OutputWeight());
}

Tensor Transformer::Loss(const std::vector<int32_t>& ids,
                         const std::vector<int32_t>& targets, int64_t batch,
                         int64_t seq, int32_t ignore_index,
                         const PackedDocuments* documents) {
  return LinearCrossEntropy(FlatHidden(ids, batch, seq, 0, nullptr, documents),
                            OutputWeight(), targets, ignore_index,
                            loss_chunk_rows_);
}

void Transformer::SetLossChunkRows(int64_t rows) {
  ROTOR_CHECK(rows >= 1, "loss chunk of ", rows, " rows: expected at least 1");
  loss_chunk_rows_ = rows;
}

KvCache Transformer::NewKvCache(int64_t batch, int64_t capacity) const {
  ROTOR_CHECK(batch >= 1 && capacity >= 1, "Transformer::NewKvCache: batch ",
              batch, " and capacity ", capacity, " must both be >= 1");
  KvCache cache;
  cache.batch = batch;
  cache.capacity = capacity;
  const Shape shape = {batch, config_.num_key_value_heads, capacity,
                       config_.head_dim};
  for (int64_t i = 0; i < model_->num_layers(); ++i) {
    cache.layers.push_back({Tensor::Empty(shape), Tensor::Empty(shape)});
  }
  return cache;
}

double Transformer::KvCacheBytes(int64_t batch, int64_t capacity) const {
  return 2.0 * sizeof(float) * static_cast<double>(model_->num_layers()) *
         static_cast<double>(batch) *
         static_cast<double>(config_.num_key_value_heads) *
         static_cast<double>(capacity) * static_cast<double>(config_.head_dim);
}

}  // namespace nn
}  // namespace rotor

// The Llama-style Transformer (nn/transformer.h): Hugging Face parameter
// names and shapes, config resolution errors, grouped-query attention, KV-
// cache decoding against full recomputation, a gradient check of the whole
// model's loss, determinism, and a tiny model learning to copy sequences.
#include "nn/transformer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/attention.h"
#include "nn/rope_scaling.h"
#include "tests/nn/fused_storage.h"
#include "tests/test_util.h"
#include "train/optim/adamw.h"

namespace rotor {
namespace {

// A model config built directly (nn/ knows no YAML): head_dim 0 means
// hidden / heads; default RoPE with theta 10000.
nn::TransformerConfig Config(int64_t vocab, int64_t hidden, int64_t ffn,
                             int64_t layers, int64_t heads, int64_t kv_heads,
                             int64_t max_positions, bool tied,
                             int64_t head_dim = 0) {
  nn::TransformerConfig config;
  config.vocab_size = vocab;
  config.hidden_size = hidden;
  config.intermediate_size = ffn;
  config.num_hidden_layers = layers;
  config.num_attention_heads = heads;
  config.num_key_value_heads = kv_heads;
  config.head_dim = head_dim > 0 ? head_dim : hidden / heads;
  config.tie_word_embeddings = tied;
  config.rope.head_dim = config.head_dim;
  config.rope.max_position_embeddings = max_positions;
  return config;
}

// vocab 11, hidden 8, 2 layers, 2 query heads sharing 1 kv head of dim 4.
nn::TransformerConfig SmallConfig(bool tied) {
  return Config(11, 8, 12, 2, 2, 1, 32, tied);
}

std::vector<int32_t> RandomIds(size_t n, int32_t vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> ids(n);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng.Below(vocab));
  return ids;
}

// The loss of one forward and backward pass of a fresh graph, then every
// parameter's gradient: what a bitwise comparison of two runs compares.
std::vector<std::vector<float>> LossAndGradients(
    nn::Transformer& model, const std::vector<int32_t>& ids,
    const std::vector<int32_t>& targets, int64_t batch, int64_t seq,
    const nn::PackedDocuments* documents) {
  model.ZeroGrad();
  const Tensor loss = model.Loss(ids, targets, batch, seq,
                                 nn::Transformer::kIgnoreIndex, documents);
  loss.Backward();
  std::vector<std::vector<float>> result = {loss.ToVector()};
  for (const Tensor& p : model.Parameters()) {
    result.push_back(p.grad().ToVector());
  }
  return result;
}

std::vector<std::pair<std::string, Shape>> NamesAndShapes(
    const nn::Module& module) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& [name, tensor] : module.NamedParameters()) {
    out.emplace_back(name, tensor.shape());
  }
  return out;
}

TEST(Transformer, ParameterNamesAndShapesAreHuggingFaces) {
  const nn::TransformerConfig config = Config(20, 12, 16, 2, 6, 2, 16, false,
                                              /*head_dim=*/4);
  const nn::Transformer model(config, 1);
  std::vector<std::pair<std::string, Shape>> expected = {
      {"model.embed_tokens.weight", {20, 12}}};
  for (int layer = 0; layer < 2; ++layer) {
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    const std::vector<std::pair<std::string, Shape>> layer_params = {
        {prefix + "input_layernorm.weight", {12}},
        {prefix + "self_attn.q_proj.weight", {6 * 4, 12}},
        {prefix + "self_attn.k_proj.weight", {2 * 4, 12}},
        {prefix + "self_attn.v_proj.weight", {2 * 4, 12}},
        {prefix + "self_attn.o_proj.weight", {12, 6 * 4}},
        {prefix + "post_attention_layernorm.weight", {12}},
        {prefix + "mlp.gate_proj.weight", {16, 12}},
        {prefix + "mlp.up_proj.weight", {16, 12}},
        {prefix + "mlp.down_proj.weight", {12, 16}}};
    expected.insert(expected.end(), layer_params.begin(), layer_params.end());
  }
  expected.push_back({"model.norm.weight", {12}});
  expected.push_back({"lm_head.weight", {20, 12}});
  EXPECT_EQ(NamesAndShapes(model), expected);
  int64_t total = 0;
  for (const auto& [name, shape] : expected) total += NumElements(shape);
  EXPECT_EQ(model.NumParameters(), total);

  // Tied: the same list without lm_head (the output reuses embed_tokens).
  nn::TransformerConfig tied_config = config;
  tied_config.tie_word_embeddings = true;
  const nn::Transformer tied(tied_config, 1);
  expected.pop_back();
  EXPECT_EQ(NamesAndShapes(tied), expected);
}

TEST(Transformer, TiedModelProjectsOntoTheEmbeddingTable) {
  nn::Transformer model(SmallConfig(/*tied=*/true), 3);
  NoGradGuard no_grad;
  const std::vector<int32_t> ids = {1, 2, 3};
  const std::vector<float> before = model.Logits(ids, 1, 3).ToVector();
  // Scaling row 5 of the table scales logit 5 (and only it) at every position.
  Tensor table = model.NamedParameters()[0].second;
  ASSERT_EQ(model.NamedParameters()[0].first, "model.embed_tokens.weight");
  for (int64_t j = 0; j < table.size(1); ++j) table.data()[5 * 8 + j] *= 2.0f;
  const std::vector<float> after = model.Logits(ids, 1, 3).ToVector();
  for (int64_t row = 0; row < 3; ++row) {
    for (int64_t v = 0; v < 11; ++v) {
      const float b = before[row * 11 + v], a = after[row * 11 + v];
      if (v == 5) {
        EXPECT_FLOAT_EQ(a, 2.0f * b);
      } else {
        EXPECT_EQ(a, b);
      }
    }
  }
}

TEST(Transformer, GroupedQueryAttentionShapes) {
  // 6 query heads over 2 kv heads, head_dim 4 != hidden / heads.
  const nn::TransformerConfig config = Config(13, 10, 8, 1, 6, 2, 16, false,
                                              /*head_dim=*/4);
  nn::Transformer model(config, 5);
  NoGradGuard no_grad;
  nn::KvCache cache = model.NewKvCache(2, 9);
  ASSERT_EQ(cache.layers.size(), 1u);
  // The cache holds only the kv heads, [B, Hkv, capacity, D], from the start.
  EXPECT_EQ(cache.layers[0].keys.shape(), (Shape{2, 2, 9, 4}));
  EXPECT_EQ(cache.layers[0].values.shape(), (Shape{2, 2, 9, 4}));
  EXPECT_EQ(model.KvCacheBytes(2, 9), 2.0 * 1 * 2 * 2 * 9 * 4 * 4);
  const Tensor logits = model.Logits(RandomIds(2 * 7, 13, 1), 2, 7, 0, &cache);
  EXPECT_EQ(logits.shape(), (Shape{2 * 7, 13}));
  EXPECT_EQ(cache.length, 7);
  model.Logits(RandomIds(2, 13, 2), 2, 1, 7, &cache);
  EXPECT_EQ(cache.layers[0].keys.shape(), (Shape{2, 2, 9, 4}));
  EXPECT_EQ(cache.length, 8);
}

// Decoding with the cache (a prefill, then chunks of 1 or 3 tokens; batch 1
// and 2, an odd length, 4 query heads over 2 kv heads) gives the logits of
// recomputing the whole sequence at once, for default RoPE, YaRN (attention
// factor != 1) and partial rotary embeddings. The two paths sum the same
// products in different tile orders and matrix products of other row
// counts, so they agree to float rounding: |cached - full| <= 2e-5 +
// 1e-4 |full|.
TEST(Transformer, KvCacheDecodingMatchesFullSequenceLogits) {
  nn::TransformerConfig yarn = Config(17, 16, 24, 2, 4, 2, 32, false);
  yarn.rope.rope_type = RopeType::kYarn;
  yarn.rope.factor = 2.0;
  yarn.rope.original_max_position_embeddings = 16;
  nn::TransformerConfig partial = Config(17, 16, 24, 2, 4, 2, 32, false);
  partial.rope.partial_rotary_factor = 0.5;
  const std::vector<std::pair<const char*, nn::TransformerConfig>> variants = {
      {"default RoPE", Config(17, 16, 24, 2, 4, 2, 32, false)},
      {"yarn x2 from 16", yarn},
      {"partial_rotary_factor 0.5", partial}};
  constexpr int64_t kSeq = 13;
  for (auto [name, config] : variants) {
    config.initializer_range = 0.2;  // sharper attention than 0.02
    nn::Transformer model(config, 11);
    NoGradGuard no_grad;
    for (const int64_t batch : {1, 2}) {
      SCOPED_TRACE(std::string(name) + ", batch " + std::to_string(batch));
      const std::vector<int32_t> ids = RandomIds(batch * kSeq, 17, 4);
      const std::vector<float> full = model.Logits(ids, batch, kSeq).ToVector();
      for (const int64_t chunk : {1, 3}) {
        // Room for 3 positions more than are written: attention reads views.
        nn::KvCache cache = model.NewKvCache(batch, kSeq + 3);
        int64_t position = 0;
        while (position < kSeq) {
          const int64_t length =
              position == 0 ? 5 : std::min(chunk, kSeq - position);
          std::vector<int32_t> step_ids;
          for (int64_t b = 0; b < batch; ++b) {
            for (int64_t t = position; t < position + length; ++t) {
              step_ids.push_back(ids[b * kSeq + t]);
            }
          }
          const std::vector<float> step =
              model.Logits(step_ids, batch, length, position, &cache)
                  .ToVector();
          for (int64_t b = 0; b < batch; ++b) {
            for (int64_t t = 0; t < length; ++t) {
              test::ExpectNear(&step[(b * length + t) * 17],
                               &full[(b * kSeq + position + t) * 17], 17, 2e-5,
                               1e-4,
                               "row " + std::to_string(b) + " position " +
                                   std::to_string(position + t));
            }
          }
          position += length;
        }
        EXPECT_EQ(cache.length, kSeq);
      }
    }
  }
}

TEST(Transformer, DecodingRejectsAnOffsetThatIsNotTheCacheLength) {
  nn::Transformer model(SmallConfig(true), 2);
  NoGradGuard no_grad;
  nn::KvCache cache = model.NewKvCache(1, 4);
  model.Logits({1, 2, 3}, 1, 3, 0, &cache);
  ROTOR_EXPECT_ERROR(model.Logits({4}, 1, 1, 5, &cache), "offset 5",
                     "cache holds 3");
  ROTOR_EXPECT_ERROR(model.Logits({4, 5}, 1, 2, 3, &cache), "positions up to 5",
                     "capacity of 4");
  ROTOR_EXPECT_ERROR(model.Logits({4, 5}, 2, 1, 3, &cache), "2 rows",
                     "made for 1");
  EXPECT_EQ(cache.length, 3);  // nothing was written
  ROTOR_EXPECT_ERROR(model.NewKvCache(1, 0), "capacity 0");
}

// The cache is allocated once, by NewKvCache, and each forward writes its
// positions in place: the buffers' addresses never change, and after the
// first decode step no step asks the tensor pool for a buffer it has not
// handed out before (its bytes, live and cached, stay the same). Growing
// the cache by Concat made a new buffer of a new size at every step.
TEST(Transformer, KvCacheIsWrittenInPlaceAndNeverReallocated) {
  ReleaseCachedMemory();  // other tests' buffers would hide growth
  nn::Transformer model(Config(17, 16, 24, 2, 4, 2, 64, false), 5);
  NoGradGuard no_grad;
  constexpr int64_t kBatch = 3, kPrompt = 9, kSteps = 12;
  nn::KvCache cache = model.NewKvCache(kBatch, kPrompt + kSteps);
  std::vector<const float*> buffers;
  for (const nn::LayerKvCache& layer : cache.layers) {
    buffers.push_back(layer.keys.data());
    buffers.push_back(layer.values.data());
  }
  const auto pool_bytes = [] {
    const MemoryStats stats = GetMemoryStats();
    return stats.live_bytes + stats.cached_bytes;
  };
  model.LastLogits(RandomIds(kBatch * kPrompt, 17, 6), kBatch, kPrompt, 0,
                   &cache);
  std::vector<size_t> totals;
  for (int64_t step = 0; step < kSteps; ++step) {
    model.LastLogits(RandomIds(kBatch, 17, 7 + step), kBatch, 1, cache.length,
                     &cache);
    totals.push_back(pool_bytes());
    size_t i = 0;
    for (const nn::LayerKvCache& layer : cache.layers) {
      EXPECT_EQ(layer.keys.data(), buffers[i++]) << "step " << step;
      EXPECT_EQ(layer.values.data(), buffers[i++]) << "step " << step;
    }
  }
  EXPECT_EQ(cache.length, kPrompt + kSteps);
  for (int64_t step = 1; step < kSteps; ++step) {
    EXPECT_EQ(totals[step], totals[0]) << "step " << step;
  }
}

// Decoding a batch of rows gives each row the logits of decoding it alone,
// to the rounding of matrix products with other row counts (core/ops/
// gemm.h): |batched - alone| <= 1e-5 + 1e-5 |alone|. (Measured on an
// AVX-512 Xeon: bitwise equal here with oneDNN and with OpenBLAS; the bound
// is for kernels that round a row by the call's row count.)
TEST(Transformer, BatchedDecodingMatchesEachRowAlone) {
  nn::Transformer model(Config(17, 16, 24, 2, 4, 2, 64, false), 8);
  NoGradGuard no_grad;
  constexpr int64_t kBatch = 3, kPrompt = 7, kSteps = 5;
  const std::vector<int32_t> prompts = RandomIds(kBatch * kPrompt, 17, 9);
  const std::vector<int32_t> steps = RandomIds(kBatch * kSteps, 17, 10);
  // Row b's logits at every step: the prefill's last, then each step's.
  const auto decode = [&](int64_t first, int64_t rows) {
    nn::KvCache cache = model.NewKvCache(rows, kPrompt + kSteps);
    std::vector<std::vector<float>> out;
    out.push_back(
        model
            .LastLogits(std::vector<int32_t>(
                            prompts.begin() + first * kPrompt,
                            prompts.begin() + (first + rows) * kPrompt),
                        rows, kPrompt, 0, &cache)
            .ToVector());
    for (int64_t step = 0; step < kSteps; ++step) {
      std::vector<int32_t> ids;
      for (int64_t b = first; b < first + rows; ++b) {
        ids.push_back(steps[b * kSteps + step]);
      }
      out.push_back(
          model.LastLogits(ids, rows, 1, cache.length, &cache).ToVector());
    }
    return out;
  };
  const auto batched = decode(0, kBatch);
  for (int64_t b = 0; b < kBatch; ++b) {
    const auto alone = decode(b, 1);
    for (int64_t step = 0; step <= kSteps; ++step) {
      test::ExpectNear(
          &batched[step][b * 17], alone[step].data(), 17, 1e-5, 1e-5,
          "row " + std::to_string(b) + " step " + std::to_string(step));
    }
  }
}

// LastLogits with `last` > 1: the logits of each row's last positions, the
// rows of the full Logits (to the rounding of products of other row counts).
TEST(Transformer, LastLogitsOfSeveralPositions) {
  nn::Transformer model(Config(17, 16, 24, 2, 4, 2, 64, true), 4);
  NoGradGuard no_grad;
  const std::vector<int32_t> ids = RandomIds(2 * 11, 17, 3);
  const std::vector<float> full = model.Logits(ids, 2, 11).ToVector();
  const Tensor last = model.LastLogits(ids, 2, 11, 0, nullptr, 3);
  ASSERT_EQ(last.shape(), (Shape{2 * 3, 17}));
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t t = 0; t < 3; ++t) {
      test::ExpectNear(
          last.data() + (b * 3 + t) * 17, &full[(b * 11 + 8 + t) * 17], 17,
          1e-5, 1e-5,
          "row " + std::to_string(b) + " position " + std::to_string(8 + t));
    }
  }
  ROTOR_EXPECT_ERROR(model.LastLogits(ids, 2, 11, 0, nullptr, 12),
                     "the last 12 positions of sequences of 11");
  ROTOR_EXPECT_ERROR(model.LastLogits(ids, 2, 11, 0, nullptr, 0),
                     "the last 0 positions");
}

// The cache is written in place, which autograd cannot follow: decoding
// runs under NoGradGuard, and a forward with a cache in grad mode says so.
TEST(Transformer, DecodingNeedsNoGradMode) {
  nn::Transformer model(SmallConfig(true), 2);
  nn::KvCache cache = model.NewKvCache(1, 4);
  ROTOR_EXPECT_ERROR(model.Logits({1, 2}, 1, 2, 0, &cache), "NoGradGuard");
}

// The whole model's loss (embedding, RMSNorms, RoPE, grouped-query causal
// attention, SwiGLU, both output heads, cross-entropy with an ignored
// target) against central differences, for every parameter.
TEST(Transformer, GradientCheckOfTheLossForEveryParameter) {
  for (const bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    nn::TransformerConfig config = SmallConfig(tied);
    config.initializer_range = 0.3;  // larger weights: non-trivial gradients
    nn::Transformer model(config, 7);
    const std::vector<int32_t> ids = RandomIds(2 * 5, 11, 8);
    std::vector<int32_t> targets = RandomIds(2 * 5, 11, 9);
    targets[3] = -100;  // ignored
    std::vector<Tensor> parameters = model.Parameters();
    // Norm weights start at 1; perturb them so their gradients are generic.
    Rng rng(10);
    for (auto& [name, tensor] : model.NamedParameters()) {
      if (name.find("norm") == std::string::npos) continue;
      for (int64_t i = 0; i < tensor.numel(); ++i) {
        tensor.data()[i] = static_cast<float>(0.5 + rng.Uniform());
      }
    }
    test::GradCheck(
        [&](const std::vector<Tensor>&) {
          return model.Loss(ids, targets, 2, 5);
        },
        parameters, 1e-3, 1e-2);
  }
}

// The loss and every gradient are the same bits at 1, 2 and 3 threads, with
// products large enough to be cut into row blocks (320 rows; weight
// gradients of 128 to 300 rows), grouped-query heads, tied and untied
// embeddings, with and without packed documents: every op splits its work
// by the shapes alone, so the thread count only decides who computes what.
// The coretypes suite runs this on every OpenBLAS kernel the CPU has.
TEST(Transformer, BitwiseAtAnyThreadCount) {
  const int64_t batch = 4, seq = 80;
  const std::vector<int32_t> ids = RandomIds(batch * seq, 300, 3);
  const std::vector<int32_t> targets = RandomIds(batch * seq, 300, 4);
  nn::PackedDocuments documents;
  documents.document_start =
      DocumentKeyStarts({{0, 30}, {0, 47}, {12, 50}, {0, 79}}, seq);
  documents.restart_positions = true;
  for (const bool tied : {true, false}) {
    for (const bool packed : {false, true}) {
      auto run = [&] {
        nn::Transformer model(Config(300, 128, 256, 2, 4, 2, seq, tied), 17);
        return LossAndGradients(model, ids, targets, batch, seq,
                                packed ? &documents : nullptr);
      };
      const auto one = test::RunAtThreads(1, run);
      for (const int threads : {2, 3}) {
        EXPECT_TRUE(test::RunAtThreads(threads, run) == one)
            << (tied ? "tied" : "untied") << (packed ? " packed" : "") << " at "
            << threads << " threads";
      }
    }
  }
}

// q_proj, k_proj, v_proj (and gate_proj, up_proj) are row ranges of one
// storage; the parameters keep their names, shapes and contiguity.
TEST(Transformer, FusedProjectionsShareOneStorage) {
  nn::Transformer model(Config(11, 32, 24, 2, 4, 2, 32, false), 5);
  EXPECT_TRUE(test::FusedProjectionsShareStorage(model));
  const auto params = model.NamedParameters();
  ASSERT_EQ(params[2].first, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(params[2].second.shape(), (Shape{32, 32}));
  ASSERT_EQ(params[3].first, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(params[3].second.shape(), (Shape{16, 32}));
  EXPECT_TRUE(params[3].second.is_contiguous());
}

// The fused projections against the same layers run one by one
// (fuse_projections off): the loss and every gradient agree to float
// rounding (the fused products round in another order), with biases on
// q, k, v, gate and up, and with RoPE inside or outside attention.
TEST(Transformer, FusedProjectionsMatchSeparateLayers) {
  const int64_t batch = 2, seq = 70;
  const std::vector<int32_t> ids = RandomIds(batch * seq, 50, 3);
  const std::vector<int32_t> targets = RandomIds(batch * seq, 50, 4);
  for (const bool rope_inside : {true, false}) {
    nn::TransformerConfig config = Config(50, 64, 96, 2, 4, 2, seq, false);
    config.rope_inside_attention = rope_inside;
    config.qkv_bias = config.mlp_bias = true;
    nn::Transformer fused(config, 21);
    config.fuse_projections = false;
    nn::Transformer separate(config, 21);
    // Non-zero biases, the same in both.
    Rng bias_rng(23);
    const auto fused_params = fused.NamedParameters();
    const auto separate_params = separate.NamedParameters();
    ASSERT_EQ(fused_params.size(), separate_params.size());
    for (size_t i = 0; i < fused_params.size(); ++i) {
      Tensor target = fused_params[i].second;
      if (fused_params[i].first.find("bias") != std::string::npos) {
        for (int64_t j = 0; j < target.numel(); ++j) {
          target.data()[j] = static_cast<float>(bias_rng.Uniform() - 0.5);
        }
      }
      Tensor(separate_params[i].second).CopyFrom(target);
    }
    const auto a = LossAndGradients(fused, ids, targets, batch, seq, nullptr);
    const auto b =
        LossAndGradients(separate, ids, targets, batch, seq, nullptr);
    EXPECT_NEAR(a[0][0], b[0][0], 1e-5);
    for (size_t i = 1; i < a.size(); ++i) {
      double max_grad = 0.0, max_diff = 0.0;
      for (size_t j = 0; j < a[i].size(); ++j) {
        max_grad = std::max(max_grad, std::fabs(double(a[i][j])));
        max_diff = std::max(max_diff, std::fabs(double(a[i][j]) - b[i][j]));
      }
      EXPECT_LE(max_diff, 1e-4 * std::max(max_grad, 1e-3))
          << fused_params[i - 1].first
          << (rope_inside ? "" : " (RoPE outside)");
    }
  }
}

TEST(Transformer, SameSeedSameWeightsAndLosses) {
  const nn::TransformerConfig config = SmallConfig(false);
  auto train_three_steps = [&](uint64_t seed) {
    nn::Transformer model(config, seed);
    train::AdamW optimizer(model.NamedParameters(), train::AdamWSettings{});
    const std::vector<int32_t> ids = RandomIds(12, 11, 1);
    const std::vector<int32_t> targets = RandomIds(12, 11, 2);
    std::vector<float> losses;
    for (int step = 0; step < 3; ++step) {
      model.ZeroGrad();
      const Tensor loss = model.Loss(ids, targets, 2, 6);
      loss.Backward();
      optimizer.Step(1e-2);
      losses.push_back(loss.item());
    }
    std::vector<std::vector<float>> weights;
    for (const Tensor& p : model.Parameters()) weights.push_back(p.ToVector());
    return std::make_pair(losses, weights);
  };
  const auto a = train_three_steps(42);
  const auto b = train_three_steps(42);
  const auto c = train_three_steps(43);
  EXPECT_EQ(a.first, b.first);    // bitwise
  EXPECT_EQ(a.second, b.second);  // bitwise
  EXPECT_NE(a.second[0], c.second[0]);
  EXPECT_GT(a.first[0], a.first[2]);  // and it learns
}

// Sequences "x1 .. x6 SEP x1 .. x6": after SEP the model must repeat the
// first half, attending 6 positions back (a relative offset: RoPE). Only the
// copied half is scored (the first half is random).
struct CopyTask {
  static constexpr int32_t kSymbols = 8, kSeparator = 8, kVocab = 9;
  static constexpr int64_t kHalf = 6, kSeq = 2 * kHalf;  // inputs per row

  // inputs/targets: [rows, kSeq]; targets before SEP are ignored (-100).
  static void Make(int64_t rows, Rng& rng, std::vector<int32_t>& inputs,
                   std::vector<int32_t>& targets) {
    inputs.clear();
    targets.clear();
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int32_t> sequence;
      for (int64_t i = 0; i < kHalf; ++i) {
        sequence.push_back(static_cast<int32_t>(rng.Below(kSymbols)));
      }
      sequence.push_back(kSeparator);
      for (int64_t i = 0; i < kHalf; ++i) sequence.push_back(sequence[i]);
      for (int64_t t = 0; t < kSeq; ++t) {
        inputs.push_back(sequence[t]);
        targets.push_back(t >= kHalf ? sequence[t + 1] : -100);
      }
    }
  }
};

// After the first steps, a training step (forward, backward, clipping,
// AdamW) takes every tensor buffer from the pool: the pool's total (live
// plus cached) stops growing, and under the pool's default cap no buffer is
// evicted and asked of the system again.
TEST(Transformer, TrainingStepReusesBuffersInSteadyState) {
  ReleaseCachedMemory();  // other tests' buffers would hide growth
  const nn::TransformerConfig config = Config(17, 32, 64, 2, 4, 2, 16, true);
  nn::Transformer model(config, 3);
  train::AdamW optimizer(model.NamedParameters(), train::AdamWSettings{});
  const std::vector<Tensor> parameters = model.Parameters();
  std::vector<int32_t> ids(4 * 16), targets(4 * 16);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<int32_t>(i % 17);
    targets[i] = static_cast<int32_t>((i * 5) % 17);
  }
  const auto pool_bytes = [] {
    const MemoryStats stats = GetMemoryStats();
    return stats.live_bytes + stats.cached_bytes;
  };
  std::vector<size_t> totals;
  std::vector<uint64_t> fresh;
  for (int step = 0; step < 4; ++step) {
    model.ZeroGrad();
    model.Loss(ids, targets, 4, 16).Backward();
    optimizer.Step(1e-3,
                   train::ClipScale(train::GlobalGradNorm(parameters), 1.0));
    totals.push_back(pool_bytes());
    fresh.push_back(GetMemoryStats().fresh);
  }
  EXPECT_EQ(totals[2], totals[1]);
  EXPECT_EQ(totals[3], totals[1]);
  EXPECT_EQ(fresh[3], fresh[1]);
}

TEST(Transformer, TinyModelLearnsToCopyWithinAFixedBudget) {
  test::ThreadCountGuard one_thread(1);
  const nn::TransformerConfig config = Config(9, 32, 64, 2, 4, 2, 16, true);
  nn::Transformer model(config, 1);
  train::AdamW optimizer(model.NamedParameters(),
                         train::AdamWSettings{0.9, 0.98, 1e-8, 0.0});
  constexpr int kSteps = 150;
  constexpr int64_t kRows = 32;
  Rng data_rng(2);
  std::vector<int32_t> inputs, targets;
  const std::vector<Tensor> parameters = model.Parameters();
  for (int step = 0; step < kSteps; ++step) {
    CopyTask::Make(kRows, data_rng, inputs, targets);
    model.ZeroGrad();
    model.Loss(inputs, targets, kRows, CopyTask::kSeq).Backward();
    optimizer.Step(step < 20 ? 1e-2 * (step + 1) / 20 : 1e-2,
                   train::ClipScale(train::GlobalGradNorm(parameters), 1.0));
  }

  // Held-out sequences: loss and greedy accuracy on the copied half.
  Rng test_rng(99);
  CopyTask::Make(256, test_rng, inputs, targets);
  NoGradGuard no_grad;
  const Tensor logits = model.Logits(inputs, 256, CopyTask::kSeq);
  const float loss = CrossEntropy(logits, targets).item();
  int64_t correct = 0, scored = 0;
  const std::vector<float> values = logits.ToVector();
  for (size_t row = 0; row < targets.size(); ++row) {
    if (targets[row] < 0) continue;
    const float* l = &values[row * CopyTask::kVocab];
    const int64_t predicted = std::max_element(l, l + CopyTask::kVocab) - l;
    correct += predicted == targets[row];
    ++scored;
  }
  const double accuracy = static_cast<double>(correct) / scored;
  // Chance is 1/8 (loss ln 8 = 2.08). Seeds 1..6 all reach a loss below
  // 0.01 and every token right in 150 steps (below 0.6 s on one thread).
  EXPECT_LT(loss, 0.05f);
  EXPECT_GT(accuracy, 0.99) << correct << " of " << scored;
}

// Packed documents: a row of two documents (lengths 5 and 7, the second
// starting at position 5) against each document run alone.
struct TwoDocuments {
  static constexpr int64_t kFirst = 5, kSecond = 7, kSeq = kFirst + kSecond;
  // SmallConfig with larger weights, so that the documents' logits differ
  // clearly where they see each other.
  static nn::TransformerConfig ModelConfig(bool tied) {
    nn::TransformerConfig config = SmallConfig(tied);
    config.initializer_range = 0.3;
    return config;
  }
  std::vector<int32_t> ids = RandomIds(kSeq, 11, 30);
  std::vector<int32_t> targets = RandomIds(kSeq, 11, 31);
  nn::PackedDocuments Documents(bool mask, bool positions) const {
    nn::PackedDocuments documents;
    documents.document_start = DocumentKeyStarts({{0, kFirst}}, kSeq);
    documents.mask_attention = mask;
    documents.restart_positions = positions;
    return documents;
  }
  // Tokens [start, start + length) of v.
  static std::vector<int32_t> Part(const std::vector<int32_t>& v, int64_t start,
                                   int64_t length) {
    return std::vector<int32_t>(v.begin() + start, v.begin() + start + length);
  }
};

// Largest |a - b| over the logits rows of a document.
float MaxDifference(const std::vector<float>& packed, int64_t first_row,
                    const std::vector<float>& alone) {
  float worst = 0.0f;
  for (size_t i = 0; i < alone.size(); ++i) {
    worst = std::max(worst, std::abs(packed[first_row * 11 + i] - alone[i]));
  }
  return worst;
}

// With the document mask and restarted positions each document's logits are
// those of the document alone, to float rounding: the packed row is a
// 12-row matrix product where a document alone is a 5- or 7-row one, and
// OpenBLAS rounds a row by its place in the call (core/ops/gemm.h). That
// holds with the mask alone too, since RoPE scores depend only on the
// distance between positions (to rounding of the rotations); without the
// mask the second document sees the first and its logits differ. That a
// document sees nothing of the other is bitwise:
// PackedDocumentsSeeNothingOfEachOther.
TEST(Transformer, PackedDocumentsLogitsEqualDocumentsAlone) {
  const TwoDocuments row;
  nn::Transformer model(TwoDocuments::ModelConfig(false), 11);
  NoGradGuard no_grad;
  const std::vector<float> first =
      model.Logits(TwoDocuments::Part(row.ids, 0, row.kFirst), 1, row.kFirst)
          .ToVector();
  const std::vector<float> second =
      model
          .Logits(TwoDocuments::Part(row.ids, row.kFirst, row.kSecond), 1,
                  row.kSecond)
          .ToVector();
  auto packed_logits = [&](bool mask, bool positions) {
    const nn::PackedDocuments documents = row.Documents(mask, positions);
    return model.Logits(row.ids, 1, row.kSeq, 0, nullptr, &documents)
        .ToVector();
  };
  const std::vector<float> both = packed_logits(true, true);
  EXPECT_LT(MaxDifference(both, 0, first), 1e-5f);
  EXPECT_LT(MaxDifference(both, row.kFirst, second), 1e-5f);
  const std::vector<float> mask_only = packed_logits(true, false);
  EXPECT_LT(MaxDifference(mask_only, 0, first), 1e-5f);
  EXPECT_LT(MaxDifference(mask_only, row.kFirst, second), 1e-4f);
  const std::vector<float> unmasked = packed_logits(false, false);
  EXPECT_LT(MaxDifference(unmasked, 0, first), 1e-5f);
  EXPECT_GT(MaxDifference(unmasked, row.kFirst, second), 1e-3f);
  // Restarted positions without the mask: the first document is unchanged,
  // the second sees the first at the wrong distances.
  const std::vector<float> positions_only = packed_logits(false, true);
  EXPECT_LT(MaxDifference(positions_only, 0, first), 1e-5f);
  EXPECT_GT(MaxDifference(positions_only, row.kFirst, second), 1e-3f);
}

// Isolation, bitwise on every OpenBLAS kernel (the products keep their
// shapes, so only the other document's tokens change): with the document
// mask, changing either document's tokens leaves the other's logits the
// same bits; without it, causality alone keeps the first document's logits,
// and the second's change.
TEST(Transformer, PackedDocumentsSeeNothingOfEachOther) {
  const TwoDocuments row;
  nn::Transformer model(TwoDocuments::ModelConfig(false), 11);
  NoGradGuard no_grad;
  std::vector<int32_t> other_first = row.ids, other_second = row.ids;
  for (int64_t i = 0; i < row.kSeq; ++i) {
    (i < row.kFirst ? other_first : other_second)[i] = (row.ids[i] + 1) % 11;
  }
  const int64_t vocab = 11, split = row.kFirst * vocab;
  for (bool mask : {true, false}) {
    const nn::PackedDocuments documents = row.Documents(mask, mask);
    auto logits = [&](const std::vector<int32_t>& ids) {
      return model.Logits(ids, 1, row.kSeq, 0, nullptr, &documents).ToVector();
    };
    const std::vector<float> base = logits(row.ids);
    const std::vector<float> changed_first = logits(other_first);
    const std::vector<float> changed_second = logits(other_second);
    auto part = [&](const std::vector<float>& v, bool first) {
      return first ? std::vector<float>(v.begin(), v.begin() + split)
                   : std::vector<float>(v.begin() + split, v.end());
    };
    EXPECT_TRUE(part(changed_second, true) == part(base, true))
        << "mask " << mask;
    if (mask) {
      EXPECT_TRUE(part(changed_first, false) == part(base, false));
    } else {
      EXPECT_FALSE(part(changed_first, false) == part(base, false));
    }
  }
}

// The packed row's loss is the token-weighted mean of the documents' losses
// (each scoring the same targets), and so are its gradients, to float
// rounding.
TEST(Transformer, PackedDocumentsLossAndGradientsEqualDocumentsAlone) {
  const TwoDocuments row;
  nn::Transformer model(TwoDocuments::ModelConfig(true), 12);
  const nn::PackedDocuments documents = row.Documents(true, true);
  model.ZeroGrad();
  const Tensor packed = model.Loss(row.ids, row.targets, 1, row.kSeq,
                                   nn::Transformer::kIgnoreIndex, &documents);
  packed.Backward();
  std::vector<std::vector<float>> packed_grads;
  for (const Tensor& p : model.Parameters()) {
    packed_grads.push_back(p.grad().ToVector());
  }
  model.ZeroGrad();
  double alone_loss = 0.0;
  for (const auto& [start, length] :
       {std::pair{int64_t{0}, row.kFirst}, {row.kFirst, row.kSecond}}) {
    const Tensor loss =
        model.Loss(TwoDocuments::Part(row.ids, start, length),
                   TwoDocuments::Part(row.targets, start, length), 1, length);
    const float weight = static_cast<float>(length) / row.kSeq;
    Mul(loss, weight).Backward();  // gradients accumulate
    alone_loss += weight * loss.item();
  }
  EXPECT_NEAR(packed.item(), alone_loss, 1e-5);
  const std::vector<Tensor> parameters = model.Parameters();
  for (size_t i = 0; i < parameters.size(); ++i) {
    const std::vector<float> alone = parameters[i].grad().ToVector();
    test::ExpectNear(packed_grads[i].data(), alone.data(), alone.size(), 1e-5,
                     1e-4, "gradient of parameter " + std::to_string(i));
  }
}

// RoPE inside the attention kernels and the separate Rope op give the same
// loss and gradients, bitwise: grouped-query heads, partial rotary, both
// pair layouts, with and without packed documents, at 1 and 2 threads.
TEST(Transformer, RopeInsideAttentionEqualsSeparateRopeBitwise) {
  const TwoDocuments row;
  for (RopeLayout layout : {RopeLayout::kSplitHalf, RopeLayout::kInterleaved}) {
    for (bool packed : {false, true}) {
      for (int threads : {1, 2}) {
        auto run = [&](bool inside) {
          nn::TransformerConfig config = Config(11, 32, 12, 2, 4, 2, 32, true);
          config.rope_layout = layout;
          config.rope.partial_rotary_factor = 0.5;
          config.rope_inside_attention = inside;
          nn::Transformer model(config, 13);
          const nn::PackedDocuments documents = row.Documents(true, true);
          return LossAndGradients(model, row.ids, row.targets, 1, row.kSeq,
                                  packed ? &documents : nullptr);
        };
        const auto inside =
            test::RunAtThreads(threads, [&] { return run(true); });
        const auto separate =
            test::RunAtThreads(threads, [&] { return run(false); });
        EXPECT_TRUE(inside == separate)
            << RopeLayoutName(layout) << (packed ? " packed" : "")
            << " threads=" << threads;
      }
    }
  }
}

// Recomputed layers (activation checkpointing) see the same documents in
// backward: bitwise the gradients of keeping every activation.
TEST(Transformer, PackedDocumentsWithActivationCheckpointing) {
  const TwoDocuments row;
  const nn::PackedDocuments documents = row.Documents(true, true);
  auto gradients = [&](int64_t every_k) {
    nn::Transformer model(SmallConfig(false), 13);
    model.SetActivationCheckpointing(every_k);
    model
        .Loss(row.ids, row.targets, 1, row.kSeq, nn::Transformer::kIgnoreIndex,
              &documents)
        .Backward();
    std::vector<std::vector<float>> grads;
    for (const Tensor& p : model.Parameters()) {
      grads.push_back(p.grad().ToVector());
    }
    return grads;
  };
  EXPECT_TRUE(gradients(1) == gradients(0));
}

TEST(Transformer, PackedDocumentsErrorsNameTheProblem) {
  nn::Transformer model(SmallConfig(false), 14);
  nn::PackedDocuments documents;
  documents.document_start = {0, 0, 2};
  ROTOR_EXPECT_ERROR(model.Logits({1, 2, 3, 4}, 1, 4, 0, nullptr, &documents),
                     "Transformer::Logits", "key_start has 3 entries", "1 * 4");
  documents.document_start = {0, 1, 1, 0};
  ROTOR_EXPECT_ERROR(model.Logits({1, 2, 3, 4}, 1, 4, 0, nullptr, &documents),
                     "decreases at position 3");
  nn::KvCache cache = model.NewKvCache(1, 4);
  documents.document_start = {0, 0, 2, 2};
  ROTOR_EXPECT_ERROR(model.Logits({1, 2, 3, 4}, 1, 4, 0, &cache, &documents),
                     "packed documents need offset 0 and no KV cache");
}

}  // namespace
}  // namespace rotor

// Sampling and generation (train/eval/generate.h): greedy, top-k, top-p and
// temperature draw from the right distributions; seeded runs repeat; cached
// greedy decoding picks what recomputing the whole sequence picks; the
// end-of-text token stops generation.
#include "train/eval/generate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/limits.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/config/model_config.h"
#include "train/tokenizer/byte_level_bpe_json.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "train/tokenizer/hf_tokenizer.h"

namespace rotor::train {
namespace {

SamplingOptions Options(double temperature, int64_t top_k = 0,
                        double top_p = 1.0) {
  SamplingOptions options;
  options.temperature = temperature;
  options.top_k = top_k;
  options.top_p = top_p;
  return options;
}

// Fraction of `draws` samples that picked each id.
std::vector<double> Frequencies(const std::vector<float>& logits,
                                const SamplingOptions& options,
                                int draws = 20000, uint64_t seed = 5) {
  Rng rng(seed);
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < draws; ++i) {
    ++counts[SampleToken(logits.data(), static_cast<int64_t>(logits.size()),
                         options, rng)];
  }
  std::vector<double> fractions;
  for (int count : counts) fractions.push_back(double(count) / draws);
  return fractions;
}

TEST(SampleToken, GreedyPicksTheFirstLargestLogit) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  Rng rng(1);
  EXPECT_EQ(SampleToken(logits.data(), 4, Options(0.0), rng), 1);
  const uint64_t state = rng.state();
  EXPECT_EQ(SampleToken(logits.data(), 4, Options(0.0, 3, 0.5), rng), 1);
  EXPECT_EQ(rng.state(), state);  // greedy draws no random numbers
  ROTOR_EXPECT_ERROR(SampleToken(logits.data(), 0, Options(1.0), rng),
                     "SampleToken: empty vocabulary");
}

TEST(SampleToken, TemperatureOneDrawsTheSoftmax) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f),
                                     std::log(0.15f), std::log(0.05f)};
  const std::vector<double> f = Frequencies(logits, Options(1.0));
  const double expected[4] = {0.5, 0.3, 0.15, 0.05};
  // 20000 draws: standard error <= 0.0036.
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f[i], expected[i], 0.015) << i;
}

TEST(SampleToken, TemperatureSharpensOrFlattens) {
  const std::vector<float> logits = {1.0f, 0.0f};
  // p0 = 1 / (1 + exp(-1 / T)).
  for (const double t : {0.25, 1.0, 10.0}) {
    const double p0 = 1.0 / (1.0 + std::exp(-1.0 / t));
    EXPECT_NEAR(Frequencies(logits, Options(t))[0], p0, 0.015) << "T " << t;
  }
}

TEST(SampleToken, TopKKeepsOnlyTheKLargest) {
  const std::vector<float> logits = {0.0f, 3.0f, 2.5f, 1.0f, 2.9f};
  EXPECT_EQ(Frequencies(logits, Options(1.0, 1), 500)[1], 1.0);
  const std::vector<double> f = Frequencies(logits, Options(1.0, 2));
  const double p1 = std::exp(3.0) / (std::exp(3.0) + std::exp(2.9));
  EXPECT_NEAR(f[1], p1, 0.015);
  EXPECT_NEAR(f[4], 1.0 - p1, 0.015);
  EXPECT_EQ(f[0] + f[2] + f[3], 0.0);
  // k beyond the vocabulary means all.
  EXPECT_GT(Frequencies(logits, Options(1.0, 99))[0], 0.0);
}

TEST(SampleToken, TopPKeepsTheSmallestPrefixReachingP) {
  const std::vector<float> logits = {std::log(0.05f), std::log(0.5f),
                                     std::log(0.15f), std::log(0.3f)};
  // 0.5 alone reaches p = 0.4.
  EXPECT_EQ(Frequencies(logits, Options(1.0, 0, 0.4), 500)[1], 1.0);
  // 0.5 + 0.3 reach 0.75: renormalised to 0.625 / 0.375.
  std::vector<double> f = Frequencies(logits, Options(1.0, 0, 0.75));
  EXPECT_NEAR(f[1], 0.625, 0.015);
  EXPECT_NEAR(f[3], 0.375, 0.015);
  EXPECT_EQ(f[0] + f[2], 0.0);
  // top-k first, then top-p within the k: k = 3 drops 0.05; p = 0.9 of
  // {0.5, 0.3, 0.15} / 0.95 needs all three.
  f = Frequencies(logits, Options(1.0, 3, 0.9));
  EXPECT_EQ(f[0], 0.0);
  EXPECT_NEAR(f[2], 0.15 / 0.95, 0.015);
}

TEST(SampleToken, SameSeedSameDraws) {
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(i * 1.7f);
  auto draws = [&](uint64_t seed) {
    Rng rng(seed);
    std::vector<TokenId> ids;
    for (int i = 0; i < 100; ++i) {
      ids.push_back(SampleToken(logits.data(), 50, Options(1.0, 20, 0.9), rng));
    }
    return ids;
  };
  EXPECT_EQ(draws(3), draws(3));
  EXPECT_NE(draws(3), draws(4));
}

nn::TransformerConfig ByteModelConfig(bool tied) {
  nn::TransformerConfig config = ResolveTransformerConfig(ParseModelConfigText(
      std::string("model:\n  vocab_size: 257\n  hidden_size: 16\n"
                  "  intermediate_size: 32\n  num_hidden_layers: 2\n"
                  "  num_attention_heads: 4\n  num_key_value_heads: 2\n"
                  "  max_position_embeddings: 32\n"
                  "  tie_word_embeddings: ") +
          (tied ? "true\n" : "false\n"),
      "test.yaml"));
  config.initializer_range = 0.3;  // decisive logits: no near-ties
  return config;
}

TEST(GenerateTokens, SeededSamplingRepeats) {
  nn::Transformer model(ByteModelConfig(true), 1);
  SamplingOptions options = Options(1.0, 50, 0.95);
  options.max_new_tokens = 20;
  options.stop_at_end_of_text = false;
  options.seed = 7;
  const std::vector<TokenId> prompt = {256, 'T', 'h', 'e'};
  const std::vector<TokenId> a =
      GenerateTokens(model, ByteTokenizer(), prompt, options);
  std::vector<TokenId> streamed;
  const std::vector<TokenId> b =
      GenerateTokens(model, ByteTokenizer(), prompt, options,
                     [&](TokenId id) { streamed.push_back(id); });
  EXPECT_EQ(a.size(), 20u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(streamed, a);
  options.seed = 8;
  EXPECT_NE(GenerateTokens(model, ByteTokenizer(), prompt, options), a);
}

// The KV cache is allocated once for the prompt and the new tokens and
// written in place: after the first decoded token no step asks the tensor
// pool for a buffer it has not handed out before (its bytes, live and
// cached, stay the same), however long the generation. Growing the cache by
// Concat asked for a buffer of a new size at every step. At the end every
// buffer of the generation is freed (live bytes as before it) and kept by
// the pool within its cap.
TEST(GenerateTokens, DecodingAllocatesNoNewBuffers) {
  ReleaseCachedMemory();  // other tests' buffers would hide growth
  nn::Transformer model(ByteModelConfig(true), 1);
  SamplingOptions options = Options(0.0, 0, 1.0);
  options.max_new_tokens = 24;
  options.stop_at_end_of_text = false;
  std::vector<size_t> totals;  // after the prefill, then each decode step
  const std::vector<TokenId> prompt(9, 'a');
  const size_t live_before = GetMemoryStats().live_bytes;
  GenerateTokens(model, ByteTokenizer(), prompt, options, [&](TokenId) {
    const MemoryStats stats = GetMemoryStats();
    totals.push_back(stats.live_bytes + stats.cached_bytes);
  });
  ASSERT_EQ(totals.size(), 24u);
  for (size_t step = 2; step < totals.size(); ++step) {
    EXPECT_EQ(totals[step], totals[1]) << "step " << step;
  }
  // The cache and the activations are freed; the pool keeps them for the
  // next generation, within its cap (core/buffer_pool.h), with no special
  // release.
  const MemoryStats after = GetMemoryStats();
  EXPECT_EQ(after.live_bytes, live_before);
  EXPECT_GT(after.cached_bytes, 0u);
  EXPECT_LE(after.cached_bytes, after.cap_bytes);
}

// The prompts for GenerateTokensBatch: `count` of `length` ids (bytes after
// the document separator), different in every row.
std::vector<std::vector<TokenId>> Prompts(int count, int length) {
  Rng rng(12);
  std::vector<std::vector<TokenId>> prompts(count, std::vector<TokenId>{256});
  for (auto& prompt : prompts) {
    while (static_cast<int>(prompt.size()) < length) {
      prompt.push_back(static_cast<TokenId>('a' + rng.Below(26)));
    }
  }
  return prompts;
}

// A batch gives each row the ids GenerateTokens gives its prompt alone, at
// 1 and 2 threads, greedy and sampled (each row with its own generator of
// the same seed), with rows that stop at end of text while others go on (a
// model whose end-of-text logit is raised, so sampled rows draw it at
// different steps).
TEST(GenerateTokensBatch, EachRowGetsWhatItsPromptGetsAlone) {
  nn::Transformer model(ByteModelConfig(false), 2);
  for (auto& [name, tensor] : model.NamedParameters()) {
    if (name != "lm_head.weight") continue;
    for (int64_t j = 0; j < 16; ++j) {
      tensor.data()[ByteTokenizer::kEndOfText * 16 + j] =
          tensor.data()['e' * 16 + j];
    }
  }
  const std::vector<std::vector<TokenId>> prompts = Prompts(5, 7);
  for (const double temperature : {0.0, 1.0}) {
    SCOPED_TRACE("temperature " + std::to_string(temperature));
    SamplingOptions options = Options(temperature);
    options.max_new_tokens = 16;
    options.seed = 3;
    const auto batched = test::RunAtThreads(1, [&] {
      return GenerateTokensBatch(model, ByteTokenizer(), prompts, options);
    });
    EXPECT_EQ(test::RunAtThreads(2,
                                 [&] {
                                   return GenerateTokensBatch(model,
                                                              ByteTokenizer(),
                                                              prompts, options);
                                 }),
              batched);
    ASSERT_EQ(batched.size(), prompts.size());
    size_t shortest = 16;
    for (size_t row = 0; row < prompts.size(); ++row) {
      EXPECT_EQ(batched[row],
                GenerateTokens(model, ByteTokenizer(), prompts[row], options))
          << "row " << row;
      shortest = std::min(shortest, batched[row].size());
    }
    if (temperature > 0.0) {
      EXPECT_LT(shortest, 16u);  // a row stopped early, the batch went on
    }
  }
}

// Greedy ids of a batch are the argmax of the whole sequence recomputed
// without a cache, step by step, for every row.
TEST(GenerateTokensBatch, GreedyIdsMatchFullRecomputation) {
  nn::Transformer model(ByteModelConfig(true), 4);
  const std::vector<std::vector<TokenId>> prompts = Prompts(3, 11);
  SamplingOptions options = Options(0.0);
  options.max_new_tokens = 25;  // beyond max_position_embeddings = 32
  options.stop_at_end_of_text = false;
  const auto batched =
      GenerateTokensBatch(model, ByteTokenizer(), prompts, options);
  NoGradGuard no_grad;
  for (size_t row = 0; row < prompts.size(); ++row) {
    ASSERT_EQ(batched[row].size(), 25u);
    std::vector<TokenId> sequence = prompts[row];
    for (size_t i = 0; i < batched[row].size(); ++i) {
      const int64_t length = static_cast<int64_t>(sequence.size());
      const Tensor logits = model.LastLogits(sequence, 1, length);
      EXPECT_EQ(
          std::max_element(logits.data(), logits.data() + 257) - logits.data(),
          batched[row][i])
          << "row " << row << " step " << i;
      sequence.push_back(batched[row][i]);
    }
  }
}

TEST(GenerateTokensBatch, PromptsOfOneLengthOnly) {
  nn::Transformer model(ByteModelConfig(true), 1);
  ROTOR_EXPECT_ERROR(
      GenerateTokensBatch(model, ByteTokenizer(), {{256, 'a', 'b'}, {256, 'a'}},
                          Options(0.0)),
      "prompt 0 has 3 tokens and prompt 1 has 2");
  ROTOR_EXPECT_ERROR(
      GenerateTokensBatch(model, ByteTokenizer(), {}, Options(0.0)),
      "generate: no prompts");
}

// The prefill needs the logits of the prompt's last position only: those of
// every position (prompt x vocab floats, 6 MB here; 1.6 GB for a 20,000-token
// prompt on a 20,600-token vocabulary) were computed and dropped. With a
// vocabulary large against the rest of the model, the peak of tensor memory
// stays under half of what all positions' logits would take.
TEST(GenerateTokens, PrefillComputesTheLastPositionsLogitsOnly) {
  nn::TransformerConfig config = ResolveTransformerConfig(ParseModelConfigText(
      "model:\n  vocab_size: 4096\n  hidden_size: 16\n"
      "  intermediate_size: 32\n  num_hidden_layers: 1\n"
      "  num_attention_heads: 2\n  num_key_value_heads: 2\n"
      "  max_position_embeddings: 512\n",
      "test.yaml"));
  nn::Transformer model(config, 1);
  SamplingOptions options = Options(0.0, 0, 1.0);
  options.max_new_tokens = 2;
  options.stop_at_end_of_text = false;
  const std::vector<TokenId> prompt(384, 'a');
  const size_t live = GetMemoryStats().live_bytes;
  ResetPeakMemory();
  EXPECT_EQ(GenerateTokens(model, ByteTokenizer(), prompt, options).size(), 2u);
  const size_t all_logits = prompt.size() * 4096 * sizeof(float);
  EXPECT_LT(GetMemoryStats().peak_live_bytes - live, all_logits / 2);
}

TEST(GenerateTokens, LengthsBeyondRotorsLimitAreErrors) {
  nn::Transformer model(ByteModelConfig(true), 1);
  SamplingOptions options = Options(0.0, 0, 1.0);
  const std::vector<TokenId> prompt = {256, 'T', 'h', 'e'};
  // prompt + max_new_tokens overflowed int64_t.
  options.max_new_tokens = std::numeric_limits<int64_t>::max();
  ROTOR_EXPECT_ERROR(GenerateTokens(model, ByteTokenizer(), prompt, options),
                     "integer overflow computing generate: prompt + "
                     "max_new_tokens: 4 + 9223372036854775807");
  options.max_new_tokens = limits::kMaxPositions;
  ROTOR_EXPECT_ERROR(GenerateTokens(model, ByteTokenizer(), prompt, options),
                     "generate: the prompt's 4 tokens + max_new_tokens "
                     "16777216 exceed rotor's limit of 16777216 positions");
}

// Greedy decoding with the KV cache (one token per step, beyond
// max_position_embeddings = 32) picks at every step the argmax of the full
// sequence recomputed without a cache.
TEST(GenerateTokens, CachedGreedyDecodingMatchesFullRecomputation) {
  nn::Transformer model(ByteModelConfig(false), 2);
  SamplingOptions options = Options(0.0);
  options.max_new_tokens = 30;
  options.stop_at_end_of_text = false;
  const std::vector<TokenId> prompt = {256, 'a', 'b', 'c', 'a', 'b'};
  const std::vector<TokenId> generated =
      GenerateTokens(model, ByteTokenizer(), prompt, options);
  ASSERT_EQ(generated.size(), 30u);
  NoGradGuard no_grad;
  std::vector<TokenId> sequence = prompt;
  for (size_t i = 0; i < generated.size(); ++i) {
    const int64_t length = static_cast<int64_t>(sequence.size());
    const Tensor logits = model.Logits(sequence, 1, length);
    const float* last = logits.data() + (length - 1) * 257;
    EXPECT_EQ(std::max_element(last, last + 257) - last, generated[i])
        << "step " << i;
    sequence.push_back(generated[i]);
  }
}

// LongRoPE picks its factors by the sequence's length: a generation whose
// prompt and new tokens fit in original_max_position_embeddings (16) uses
// the short factors throughout, as HF does (max_position_embeddings is 64).
TEST(GenerateTokens, ShortLongRopeSequenceUsesTheShortFactors) {
  nn::TransformerConfig config = ResolveTransformerConfig(
      ParseModelConfigText("model:\n  vocab_size: 257\n  hidden_size: 16\n"
                           "  intermediate_size: 32\n  num_hidden_layers: 2\n"
                           "  num_attention_heads: 4\n"
                           "  num_key_value_heads: 2\n"
                           "  max_position_embeddings: 64\n"
                           "  rope_scaling: {rope_type: longrope, factor: 4,\n"
                           "    original_max_position_embeddings: 16,\n"
                           "    short_factor: [1, 1], long_factor: [8, 30]}\n",
                           "test.yaml"));
  config.initializer_range = 0.3;
  nn::Transformer model(config, 3);
  SamplingOptions options = Options(0.0);
  options.max_new_tokens = 8;
  options.stop_at_end_of_text = false;
  const std::vector<TokenId> prompt = {256, 'a', 'b', 'c', 'a', 'b'};
  const std::vector<TokenId> generated =
      GenerateTokens(model, ByteTokenizer(), prompt, options);
  ASSERT_EQ(generated.size(), 8u);
  NoGradGuard no_grad;
  std::vector<TokenId> sequence = prompt;
  sequence.insert(sequence.end(), generated.begin(), generated.end());
  const int64_t total = static_cast<int64_t>(sequence.size());  // 14
  model.SetSequenceLength(total);                               // short factors
  const std::vector<float> short_logits =
      model.Logits(sequence, 1, total).ToVector();
  model.SetSequenceLength(64);  // long factors
  const std::vector<float> long_logits =
      model.Logits(sequence, 1, total).ToVector();
  ASSERT_NE(short_logits, long_logits);  // the factors matter here
  for (size_t i = 0; i < generated.size(); ++i) {
    const float* row = short_logits.data() + (prompt.size() - 1 + i) * 257;
    EXPECT_EQ(std::max_element(row, row + 257) - row, generated[i])
        << "step " << i;
  }
}

// Makes `model` (hidden size 16, untied) always predict `id`: hidden states
// are the embedding (attention and MLP outputs zeroed), every embedding row
// is all ones, and only lm_head's row `id` is non-zero.
void PredictAlways(nn::Transformer& model, TokenId id) {
  for (auto& [name, tensor] : model.NamedParameters()) {
    float fill = 0.0f;
    if (name == "model.embed_tokens.weight") fill = 1.0f;
    if (name.find("norm") != std::string::npos) fill = 1.0f;
    const bool keep = name.find("q_proj") != std::string::npos ||
                      name.find("k_proj") != std::string::npos ||
                      name.find("v_proj") != std::string::npos ||
                      name.find("gate_proj") != std::string::npos ||
                      name.find("up_proj") != std::string::npos;
    if (!keep) tensor.Fill(fill);
    if (name == "lm_head.weight") {
      for (int64_t j = 0; j < 16; ++j) tensor.data()[id * 16 + j] = 1.0f;
    }
  }
}

TEST(GenerateTokens, StopsAtEndOfText) {
  nn::Transformer model(ByteModelConfig(false), 3);
  PredictAlways(model, ByteTokenizer::kEndOfText);
  SamplingOptions options = Options(0.8);
  options.max_new_tokens = 5;
  EXPECT_TRUE(
      GenerateTokens(model, ByteTokenizer(), {256, 'x'}, options).empty());
  EXPECT_EQ(GenerateText(model, ByteTokenizer(), "x", options), "");
  options.stop_at_end_of_text = false;
  EXPECT_EQ(GenerateTokens(model, ByteTokenizer(), {256, 'x'}, options),
            std::vector<TokenId>(5, 256));
  options.max_new_tokens = 0;
  EXPECT_TRUE(GenerateTokens(model, ByteTokenizer(), {256}, options).empty());
  ROTOR_EXPECT_ERROR(GenerateTokens(model, ByteTokenizer(), {}, options),
                     "generate: the prompt is empty");
}

// model.vocab_size may exceed the tokenizer's 257 ids; the extra ids cannot
// be decoded, so sampling never draws them even when they score highest.
TEST(GenerateTokens, NeverDrawsIdsBeyondTheTokenizer) {
  nn::TransformerConfig config = ByteModelConfig(false);
  config.vocab_size = 300;
  nn::Transformer model(config, 3);
  PredictAlways(model, 271);
  for (const double temperature : {0.0, 0.8}) {
    SamplingOptions options = Options(temperature);
    options.max_new_tokens = 20;
    options.stop_at_end_of_text = false;
    for (const TokenId id :
         GenerateTokens(model, ByteTokenizer(), {256, 'x'}, options)) {
      EXPECT_LT(id, ByteTokenizer::kVocabSize) << "temperature " << temperature;
    }
    EXPECT_NO_THROW(GenerateText(model, ByteTokenizer(), "x", options));
  }
}

}  // namespace
}  // namespace rotor::train

namespace rotor::train {
namespace {

// A prompt starts as the model's texts did in training: a rotor model's
// with its document separator, a Hugging Face model's with the BOS its
// tokenizer adds, or none; then the text without special tokens.
TEST(PromptIds, StartWithTheBosTheModelWasTrainedWith) {
  const ByteTokenizer bytes;
  EXPECT_EQ(PromptIds(bytes, PromptStart::kDocumentSeparator, "ab"),
            (std::vector<TokenId>{256, 'a', 'b'}));
  // The text <|endoftext|> is 13 bytes, not the token.
  EXPECT_EQ(
      PromptIds(bytes, PromptStart::kTokenizerBos, "<|endoftext|>").size(),
      14u);
  const auto no_bos = HfTokenizer::Parse(
      ByteLevelBpeTokenizerJson({"a", "b", "ab", "<|endoftext|>"}, {3},
                                {{0, 1}}, ""),
      "no-bos");
  EXPECT_EQ(PromptIds(*no_bos, PromptStart::kDocumentSeparator, "ab"),
            (std::vector<TokenId>{3, 2}));
  EXPECT_EQ(PromptIds(*no_bos, PromptStart::kTokenizerBos, "ab"),
            (std::vector<TokenId>{2}));
}

TEST(EscapeControlBytes, KeepsTextNewlinesAndTabsEscapesTheRest) {
  EXPECT_EQ(EscapeControlBytes("a b\tc\nd"), "a b\tc\nd");
  EXPECT_EQ(EscapeControlBytes(std::string("x\x1b[2Jy\x7f\x0c", 8)),
            "x\\x1b[2Jy\\x7f\\x0c");
  EXPECT_EQ(EscapeControlBytes("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 kept
}

}  // namespace
}  // namespace rotor::train

// Text generation with a KV cache: the prompt is run once (prefill, one
// batched forward through the tiled causal attention), then each new token
// is one forward step at position p that writes its keys and values into
// the cache and attends over it, so step p costs O(p) instead of O(p^2).
// The cache is allocated once for the prompt and max_new_tokens
// (Transformer::NewKvCache) and written in place: decoding allocates no
// buffer whose size grows with p, and copies nothing already cached.
//
// Sampling: logits / temperature, keep the top_k largest (0 = all), keep the
// smallest set whose probability reaches top_p (1 = all), renormalise and
// draw with a seeded generator; temperature 0 picks the argmax (greedy).
#ifndef ROTOR_TRAIN_EVAL_GENERATE_H_
#define ROTOR_TRAIN_EVAL_GENERATE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/random.h"
#include "nn/transformer.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

struct SamplingOptions {
  int64_t max_new_tokens = 200;
  double temperature = 0.8;
  int64_t top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
  // Stop at the end of a document: the tokenizer's EndOfTextIds (its
  // document separator, <|endoftext|>, </s>, ...).
  bool stop_at_end_of_text = true;
};

// Draws one token id from `logits` ([vocab]) as described above.
TokenId SampleToken(const float* logits, int64_t vocab,
                    const SamplingOptions& options, Rng& rng);

// Generates a continuation of `prompt_ids` and returns only the new ids,
// all below tokenizer.VocabSize(): ids a larger model.vocab_size adds cannot
// be decoded, so their logits are left out of sampling. `on_token`, if set,
// is called with each new id as it is produced. Refuses a KV cache larger
// than the memory left (UsableMemory).
std::vector<TokenId> GenerateTokens(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::vector<TokenId>& prompt_ids, const SamplingOptions& options,
    const std::function<void(TokenId)>& on_token = nullptr);

// GenerateTokens for several prompts of one length (throws otherwise) as
// one batch: one prefill of [B, prompt length], then decode steps of
// [B, 1] until every row has stopped (a row that stopped keeps its place,
// its output unread). Each row samples with its own generator seeded with
// options.seed, so it gets what GenerateTokens gives its prompt alone, up
// to the rounding of the batched products: a matrix product rounds a row
// by the call's row count (core/ops/gemm.h), so logits differ from the
// single prompt's in the last bits, and a greedy id only where two logits
// are that close. Used by the passkey and retrieval evaluations.
std::vector<std::vector<TokenId>> GenerateTokensBatch(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::vector<std::vector<TokenId>>& prompts,
    const SamplingOptions& options);

// The decode loop of generation, from a KV cache that already holds each
// row's prompt (its first cache.length positions) and `last_logits`
// [cache.batch, vocab], each row's logits at its last prompt position:
// samples each row's next id from them, then runs each new id as one
// forward step [B, 1] at position cache.length and samples from its
// logits, until every row has max_new_tokens new ids or stopped at an end
// of text, as GenerateTokensBatch (a prefill, then this). Rows with
// skip[row] set (empty: none) start stopped: they run in the steps, their
// output is never read and comes back empty. The cache needs room for
// cache.length + max_new_tokens - 1 positions (the last id is not run).
// The passkey evaluation decodes its misses from the cache its
// teacher-forced pass filled.
std::vector<std::vector<TokenId>> DecodeFromCache(
    nn::Transformer& model, const Tokenizer& tokenizer, nn::KvCache& cache,
    Tensor last_logits, const SamplingOptions& options,
    const std::vector<bool>& skip = {},
    const std::function<void(int64_t, TokenId)>& on_token = nullptr);

// model.NewKvCache(batch, capacity), refused (rotor::Error: `what` "needs
// N bytes, more than the M left under" the limit) when it needs more
// memory than is left (UsableMemory).
nn::KvCache NewKvCacheInMemory(const nn::Transformer& model, int64_t batch,
                               int64_t capacity, const std::string& what);

// The ids generation starts from for the text `prompt`: the BOS the model's
// texts started with in training (PromptBos: the document separator of a
// model rotor trained; a Hugging Face model's own BOS, or none), then the
// prompt encoded without special tokens. llama.cpp starts a text the same
// way from the GGUF file rotor export writes (tokenizer.ggml.add_bos_token).
std::vector<TokenId> PromptIds(const Tokenizer& tokenizer, PromptStart start,
                               const std::string& prompt);

// Prompt tokens (rows x prompt length) one batch of GenerateTokensInBatches
// prefills at most, unless one prompt alone is longer: it bounds the
// prefill's activations (about 4 x (hidden + intermediate) floats a token
// in flight) and the batch's KV cache.
// 2,048 made rotor eval --passkey --retrieval 1.8x faster than prompts one
// by one at 256 tokens and 1.07x at 1,024 (the prefill's products are
// large already); 4,096 and 8,192 were at most 8% faster for 1.4x and 2.6x
// the peak memory (docs/training.md, "Generation").
inline constexpr int64_t kMaxBatchPromptTokens = 2048;

// Generates a continuation of each prompt, of max_new_tokens[i] new tokens
// at most (options.max_new_tokens is not read): the prompts that share a
// length and a max_new_tokens run through one KV cache in batches of at
// most kMaxBatchPromptTokens prompt tokens, as PlanPrefixBatches orders
// them (train/eval/shared_prefix.h), so their common beginnings run once;
// each batch is a prefill, then DecodeFromCache. The ids are each prompt's
// alone wherever no two logits are within rounding. Returns the new ids in
// the prompts' order.
std::vector<std::vector<TokenId>> GenerateTokensInBatches(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::vector<std::vector<TokenId>>& prompts,
    const std::vector<int64_t>& max_new_tokens, SamplingOptions options);

// Text in, text out, for a model rotor trains (the samples of rotor train):
// the prompt is encoded as PromptIds with kDocumentSeparator, and the new
// ids are decoded as a whole. `on_text` gets the text as it grows: after each
// token, whatever the decoded text gained, held back while it ends in an
// incomplete UTF-8 character (a byte-level BPE token may carry half of one).
std::string GenerateText(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::string& prompt, const SamplingOptions& options,
    const std::function<void(const std::string&)>& on_text = nullptr);
// The same from prompt ids, used as they are (e.g. the ids another tool
// generated from; nothing is added in front).
std::string GenerateText(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::vector<TokenId>& prompt_ids, const SamplingOptions& options,
    const std::function<void(const std::string&)>& on_text = nullptr);

// `text` with control bytes other than newline and tab written as "\xNN",
// so a sample from an undertrained model cannot move the terminal's cursor.
std::string EscapeControlBytes(const std::string& text);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EVAL_GENERATE_H_

#include "train/eval/generate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <utility>

#include "core/autograd.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/memory_limit.h"
#include "core/tensor.h"
#include "train/eval/shared_prefix.h"

namespace rotor::train {

TokenId SampleToken(const float* logits, int64_t vocab,
                    const SamplingOptions& options, Rng& rng) {
  ROTOR_CHECK(vocab > 0, "SampleToken: empty vocabulary");
  if (options.temperature <= 0.0) {
    return static_cast<TokenId>(std::max_element(logits, logits + vocab) -
                                logits);
  }
  // Candidates sorted by logit, largest first.
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  int64_t keep = vocab;
  if (options.top_k > 0) keep = std::min<int64_t>(keep, options.top_k);

  // Softmax over the kept candidates at the given temperature, in double.
  std::vector<double> probs(keep);
  const double max_logit = logits[order[0]];
  double total = 0.0;
  for (int64_t i = 0; i < keep; ++i) {
    probs[i] = std::exp((logits[order[i]] - max_logit) / options.temperature);
    total += probs[i];
  }
  if (options.top_p < 1.0) {  // nucleus: smallest prefix reaching top_p
    double cumulative = 0.0;
    for (int64_t i = 0; i < keep; ++i) {
      cumulative += probs[i] / total;
      if (cumulative >= options.top_p) {
        keep = i + 1;
        break;
      }
    }
    total = std::accumulate(probs.begin(), probs.begin() + keep, 0.0);
  }
  double draw = rng.Uniform() * total;
  for (int64_t i = 0; i < keep; ++i) {
    draw -= probs[i];
    if (draw < 0.0) return order[i];
  }
  return order[keep - 1];
}

nn::KvCache NewKvCacheInMemory(const nn::Transformer& model, int64_t batch,
                               int64_t capacity, const std::string& what) {
  const double cache_bytes = model.KvCacheBytes(batch, capacity);
  const MemoryLimit limit = UsableMemory();
  ROTOR_CHECK(cache_bytes <= static_cast<double>(limit.bytes), what, " needs ",
              FormatBytes(cache_bytes), ", more than the ",
              FormatBytes(limit.bytes), " left under ", limit.source);
  return model.NewKvCache(batch, capacity);
}

std::vector<std::vector<TokenId>> DecodeFromCache(
    nn::Transformer& model, const Tokenizer& tokenizer, nn::KvCache& cache,
    Tensor last_logits, const SamplingOptions& options,
    const std::vector<bool>& skip,
    const std::function<void(int64_t, TokenId)>& on_token) {
  const int64_t batch = cache.batch;
  const int64_t vocab = model.config().vocab_size;
  ROTOR_CHECK(last_logits.dim() == 2 && last_logits.size(0) == batch &&
                  last_logits.size(1) == vocab && last_logits.is_contiguous(),
              "generate: the last logits must be a contiguous [", batch, ", ",
              vocab, "] (the cache's rows x the vocabulary), got ",
              ShapeToString(last_logits.shape()));
  ROTOR_CHECK(skip.empty() || static_cast<int64_t>(skip.size()) == batch,
              "generate: ", skip.size(), " rows to skip for a batch of ",
              batch);
  ROTOR_CHECK(options.max_new_tokens >= 0,
              "generate: max_new_tokens must be >= 0, got ",
              options.max_new_tokens);
  NoGradGuard no_grad;
  // A model may have more ids than the tokenizer (model.vocab_size rounded
  // up); the extra ones cannot be decoded, so they are never drawn.
  const int64_t drawable = std::min<int64_t>(vocab, tokenizer.VocabSize());
  const std::vector<TokenId> end_ids = EndOfTextIds(tokenizer);
  // Each row draws from its own generator, as it would alone.
  std::vector<Rng> rngs(static_cast<size_t>(batch), Rng(options.seed));
  std::vector<std::vector<TokenId>> generated(static_cast<size_t>(batch));
  std::vector<bool> done(static_cast<size_t>(batch),
                         options.max_new_tokens == 0);
  for (int64_t row = 0; row < batch && !skip.empty(); ++row) {
    if (skip[row]) done[row] = true;
  }
  // One new id per row and step; a skipped row feeds id 0, unread.
  std::vector<TokenId> ids(static_cast<size_t>(batch), 0);
  // Each step's logits replace the last ones, which are freed then.
  Tensor logits = std::move(last_logits);  // [B, vocab]
  while (std::find(done.begin(), done.end(), false) != done.end()) {
    for (int64_t row = 0; row < batch; ++row) {
      if (done[row]) continue;  // it keeps feeding its last id, unread
      const TokenId next = SampleToken(logits.data() + row * vocab, drawable,
                                       options, rngs[row]);
      ids[row] = next;
      if (options.stop_at_end_of_text &&
          std::find(end_ids.begin(), end_ids.end(), next) != end_ids.end()) {
        done[row] = true;
        continue;
      }
      generated[row].push_back(next);
      if (on_token) on_token(row, next);
      done[row] =
          static_cast<int64_t>(generated[row].size()) == options.max_new_tokens;
    }
    if (std::find(done.begin(), done.end(), false) == done.end()) break;
    logits = model.LastLogits(ids, batch, 1, cache.length, &cache);
  }
  return generated;
}

namespace {

// prompt_length + max_new_tokens, the positions one generation's KV cache
// holds: throws unless the prompt is not empty, max_new_tokens >= 0 and
// the sum is within rotor's limit.
int64_t GenerationLength(int64_t prompt_length, int64_t max_new_tokens) {
  ROTOR_CHECK(prompt_length > 0, "generate: the prompt is empty");
  ROTOR_CHECK(max_new_tokens >= 0,
              "generate: max_new_tokens must be >= 0, got ", max_new_tokens);
  const int64_t total = CheckedAdd(prompt_length, max_new_tokens,
                                   "generate: prompt + max_new_tokens");
  ROTOR_CHECK(total <= limits::kMaxPositions, "generate: the prompt's ",
              prompt_length, " tokens + max_new_tokens ", max_new_tokens,
              " exceed rotor's limit of ", limits::kMaxPositions, " positions");
  return total;
}

// The KV cache of `rows` generations of `total` positions, allocated up
// front: refused now if it cannot fit.
nn::KvCache GenerationCache(const nn::Transformer& model, int64_t rows,
                            int64_t prompt_length,
                            const SamplingOptions& options) {
  return NewKvCacheInMemory(
      model, rows, GenerationLength(prompt_length, options.max_new_tokens),
      StrCat("generate: the KV cache of ", rows, " x (the prompt's ",
             prompt_length, " tokens + max_new_tokens ", options.max_new_tokens,
             ")"));
}

// GenerateTokens and GenerateTokensBatch: `prompts` of one length, run as
// one batch (a prefill, then DecodeFromCache); on_token(row, id) gets each
// row's new ids as they come.
std::vector<std::vector<TokenId>> Generate(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::vector<std::vector<TokenId>>& prompts,
    const SamplingOptions& options,
    const std::function<void(int64_t, TokenId)>& on_token) {
  const int64_t batch = static_cast<int64_t>(prompts.size());
  const int64_t prompt_length = PromptsLength(prompts, "generate");
  NoGradGuard no_grad;
  nn::KvCache cache = GenerationCache(model, batch, prompt_length, options);
  // One RoPE base for the whole sequence (prefill and every decoded token),
  // fixed from its final length: see nn/rope_scaling.h. (Dynamic NTK keeps
  // the plain base up to L0; LongRoPE takes its short factors while the
  // whole sequence fits in original_max_position_embeddings, as in HF.)
  model.SetSequenceLength(cache.capacity);
  // Prefill: every prompt position fills the cache; decoding starts from
  // each row's last logits, [B, vocab].
  return DecodeFromCache(
      model, tokenizer, cache,
      PrefillPlannedBatch(model, prompts, AllPrompts(prompts.size()), &cache,
                          1),
      options, {}, on_token);
}

}  // namespace

std::vector<TokenId> GenerateTokens(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::vector<TokenId>& prompt_ids, const SamplingOptions& options,
    const std::function<void(TokenId)>& on_token) {
  std::function<void(int64_t, TokenId)> on_row_token;
  if (on_token) on_row_token = [&](int64_t, TokenId id) { on_token(id); };
  return Generate(model, tokenizer, {prompt_ids}, options, on_row_token)[0];
}

std::vector<std::vector<TokenId>> GenerateTokensBatch(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::vector<std::vector<TokenId>>& prompts,
    const SamplingOptions& options) {
  return Generate(model, tokenizer, prompts, options, nullptr);
}

std::vector<std::vector<TokenId>> GenerateTokensInBatches(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::vector<std::vector<TokenId>>& prompts,
    const std::vector<int64_t>& max_new_tokens, SamplingOptions options) {
  ROTOR_CHECK(max_new_tokens.size() == prompts.size(),
              "generate: ", prompts.size(), " prompts but ",
              max_new_tokens.size(), " max_new_tokens");
  std::vector<std::vector<TokenId>> generated(prompts.size());
  // Prompts by (length, max_new_tokens), each group in the prompts' order.
  std::map<std::pair<size_t, int64_t>, std::vector<size_t>> groups;
  for (size_t i = 0; i < prompts.size(); ++i) {
    groups[{prompts[i].size(), max_new_tokens[i]}].push_back(i);
  }
  NoGradGuard no_grad;
  for (const auto& [key, members] : groups) {
    const auto& [length, new_tokens] = key;
    std::vector<std::vector<TokenId>> group;
    for (const size_t i : members) group.push_back(prompts[i]);
    const int64_t rows = std::min<int64_t>(
        static_cast<int64_t>(members.size()),
        std::max<int64_t>(
            1, kMaxBatchPromptTokens /
                   std::max<int64_t>(static_cast<int64_t>(length), 1)));
    options.max_new_tokens = new_tokens;
    // One cache for the group's batches, which share their prompts'
    // common beginnings through it (train/eval/shared_prefix.h).
    nn::KvCache cache =
        GenerationCache(model, rows, static_cast<int64_t>(length), options);
    model.SetSequenceLength(cache.capacity);
    for (const PrefixBatch& batch : PlanPrefixBatches(group, 1, rows)) {
      nn::KvCache view =
          FirstRows(cache, static_cast<int64_t>(batch.rows.size()));
      Tensor last = PrefillPlannedBatch(model, group, batch, &view, 1);
      std::vector<std::vector<TokenId>> out =
          DecodeFromCache(model, tokenizer, view, std::move(last), options);
      for (size_t row = 0; row < batch.rows.size(); ++row) {
        generated[members[batch.rows[row]]] = std::move(out[row]);
      }
    }
  }
  return generated;
}

namespace {

// Whether `text` ends inside a UTF-8 character: its last lead byte promises
// more continuation bytes than follow it, or it ends in U+FFFD (what a
// byte-level decoder makes of half a character).
bool EndsMidCharacter(const std::string& text) {
  if (text.size() >= 3 &&
      text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0) {
    return true;
  }
  size_t continuation = 0;
  for (size_t i = text.size(); i > 0 && continuation < 4; --i) {
    const auto byte = static_cast<unsigned char>(text[i - 1]);
    if ((byte & 0xC0) == 0x80) {
      ++continuation;
      continue;
    }
    const size_t length = byte >= 0xF0   ? 4
                          : byte >= 0xE0 ? 3
                          : byte >= 0xC0 ? 2
                                         : 1;
    return continuation + 1 < length;
  }
  return false;
}

}  // namespace

std::vector<TokenId> PromptIds(const Tokenizer& tokenizer, PromptStart start,
                               const std::string& prompt) {
  std::vector<TokenId> ids;
  if (const std::optional<TokenId> bos = PromptBos(tokenizer, start)) {
    ids.push_back(*bos);
  }
  const std::vector<TokenId> text_ids = tokenizer.Encode(prompt, false);
  ids.insert(ids.end(), text_ids.begin(), text_ids.end());
  return ids;
}

std::string GenerateText(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::string& prompt, const SamplingOptions& options,
    const std::function<void(const std::string&)>& on_text) {
  return GenerateText(
      model, tokenizer,
      PromptIds(tokenizer, PromptStart::kDocumentSeparator, prompt), options,
      on_text);
}

std::string GenerateText(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::vector<TokenId>& prompt_ids, const SamplingOptions& options,
    const std::function<void(const std::string&)>& on_text) {
  std::vector<TokenId> generated;
  std::string shown;
  std::function<void(TokenId)> on_token;
  if (on_text) {
    // Decoding the whole continuation each time keeps what a decoder does
    // across tokens (SentencePiece's leading space, byte fallback) right;
    // generation costs far more than this O(n^2) decoding.
    on_token = [&](TokenId id) {
      generated.push_back(id);
      const std::string text = tokenizer.Decode(generated, true);
      if (EndsMidCharacter(text) || text.compare(0, shown.size(), shown) != 0) {
        return;
      }
      on_text(text.substr(shown.size()));
      shown = text;
    };
  }
  const std::vector<TokenId> result =
      GenerateTokens(model, tokenizer, prompt_ids, options, on_token);
  const std::string text = tokenizer.Decode(result, true);
  if (on_text && text.size() > shown.size() &&
      text.compare(0, shown.size(), shown) == 0) {
    on_text(text.substr(shown.size()));
  }
  return text;
}

std::string EscapeControlBytes(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const unsigned char c : text) {
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace rotor::train

#include "train/eval/passkey_eval.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <utility>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/tensor.h"
#include "nn/rope_scaling.h"
#include "train/eval/generate.h"
#include "train/eval/shared_prefix.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {

bool PasskeyAnswerMatches(const std::string& generated,
                          const std::string& key) {
  const auto is_digit = [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  };
  const auto begin = std::find_if(generated.begin(), generated.end(), is_digit);
  if (begin == generated.end()) return false;
  const auto end = std::find_if_not(begin, generated.end(), is_digit);
  return std::string(begin, end) == key;
}

namespace {

// Whether the argmax of the logits row that predicts token `index` of the
// example (row index - 1 - first_row) is that token.
bool PredictsToken(const float* logits, int64_t vocab,
                   const PasskeyExample& example, int64_t index,
                   int64_t first_row) {
  const float* row = logits + (index - 1 - first_row) * vocab;
  return std::max_element(row, row + vocab) - row == example.tokens[index];
}

void CheckFirstRow(const PasskeyExample& example, int64_t first_row) {
  ROTOR_CHECK(first_row >= 0 && first_row <= example.answer.first - 1,
              "passkey: the logits start at position ", first_row,
              " but the answer's first token is predicted at position ",
              example.answer.first - 1);
}

}  // namespace

int64_t PasskeyDigitsRight(const float* logits, int64_t vocab,
                           const PasskeyExample& example,
                           const Tokenizer& tokenizer, int64_t first_row) {
  CheckFirstRow(example, first_row);
  int64_t right = 0;
  for (int64_t i = example.answer.first;
       i < example.answer.first + example.answer.count; ++i) {
    if (PredictsToken(logits, vocab, example, i, first_row)) {
      right += DigitsInToken(tokenizer, example.tokens[i]);
    }
  }
  return right;
}

bool PasskeyRetrieved(const float* logits, int64_t vocab,
                      const PasskeyExample& example, int64_t first_row) {
  CheckFirstRow(example, first_row);
  for (int64_t i = example.answer.first;
       i < example.answer.first + example.answer.count; ++i) {
    if (!PredictsToken(logits, vocab, example, i, first_row)) return false;
  }
  return true;
}

bool GeneratedAnswerMatches(const Tokenizer& tokenizer,
                            std::vector<TokenId> generated,
                            const std::string& key) {
  const int num_digits = static_cast<int>(key.size());
  size_t kept = 0;
  for (int digits = 0; kept < generated.size() && digits < num_digits; ++kept) {
    digits += DigitsInToken(tokenizer, generated[kept]);
  }
  generated.resize(kept);
  return PasskeyAnswerMatches(tokenizer.Decode(generated, false), key);
}

std::vector<bool> GreedyAnswersMatch(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const std::vector<PasskeyExample>& examples) {
  std::vector<std::vector<TokenId>> prompts;
  std::vector<int64_t> max_new_tokens;
  for (const PasskeyExample& example : examples) {
    prompts.emplace_back(example.tokens.begin(),
                         example.tokens.begin() + example.answer.first);
    max_new_tokens.push_back(static_cast<int64_t>(example.key.size()) + 1);
  }
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  const std::vector<std::vector<TokenId>> generated = GenerateTokensInBatches(
      model, tokenizer, prompts, max_new_tokens, greedy);
  std::vector<bool> matches;
  for (size_t i = 0; i < examples.size(); ++i) {
    matches.push_back(
        GeneratedAnswerMatches(tokenizer, generated[i], examples[i].key));
  }
  return matches;
}

bool GreedyAnswerMatches(nn::Transformer& model, const Tokenizer& tokenizer,
                         const PasskeyExample& example) {
  return GreedyAnswersMatch(model, tokenizer, {example})[0];
}

namespace {

// Whether `rope` rotates by the same angles, with the same attention
// factor, in sequences of a and b tokens (always, unless its frequencies
// depend on the sequence length: dynamic NTK past L0, LongRoPE across L0).
bool SameRopeAt(const RopeScalingConfig& rope, int64_t a, int64_t b) {
  if (!RopeDependsOnSequenceLength(rope.rope_type)) return true;
  const RopeFrequencies at_a = ComputeRopeFrequencies(rope, a);
  const RopeFrequencies at_b = ComputeRopeFrequencies(rope, b);
  return at_a.inv_freq == at_b.inv_freq &&
         at_a.attention_factor == at_b.attention_factor;
}

// What the check found for one example.
struct PasskeyOutcome {
  int64_t digits_right = 0;
  bool retrieved = false;
};

// One planned batch of a length's examples (`rows`, indices into
// `examples`) whose answers take as many tokens, so share the prompt length
// P, already teacher-forced (`logits`, the answer rows' [rows * answer
// tokens, vocab]; through `cache`, its rows, when continue_cache). Then, if
// a row missed and `continue_cache`, the cache is rewound to P and every row
// decoded greedily from there, the misses read (the first new token is the
// argmax of the logits at P - 1, each row's first answer row). Without
// `continue_cache` the misses go to `later`.
void CheckBatch(nn::Transformer& model, const Tokenizer& tokenizer,
                const std::vector<PasskeyExample>& examples,
                const std::vector<size_t>& rows, int64_t length,
                const Tensor& logits, nn::KvCache* cache,
                const SamplingOptions& greedy, bool decode_misses,
                bool continue_cache, std::vector<PasskeyOutcome>& outcomes,
                std::vector<size_t>& later) {
  const int64_t vocab = model.config().vocab_size;
  const int64_t batch = static_cast<int64_t>(rows.size());
  const int64_t answer_rows = examples[rows[0]].answer.count;
  std::vector<bool> skip(rows.size(), true);
  for (int64_t row = 0; row < batch; ++row) {
    const PasskeyExample& example = examples[rows[row]];
    const float* row_logits = logits.data() + row * answer_rows * vocab;
    const int64_t first_row = length - answer_rows;
    PasskeyOutcome& outcome = outcomes[rows[row]];
    outcome.digits_right =
        PasskeyDigitsRight(row_logits, vocab, example, tokenizer, first_row);
    outcome.retrieved = PasskeyRetrieved(row_logits, vocab, example, first_row);
    if (!decode_misses || outcome.retrieved) continue;
    skip[row] = false;
    if (!continue_cache) later.push_back(rows[row]);
  }
  if (!continue_cache ||
      std::find(skip.begin(), skip.end(), false) == skip.end()) {
    return;
  }
  cache->length = length + 1 - answer_rows;
  Tensor last = Reshape(
      Contiguous(Narrow(Reshape(logits, {batch, answer_rows, vocab}), 1, 0, 1)),
      {batch, vocab});
  const std::vector<std::vector<TokenId>> generated =
      DecodeFromCache(model, tokenizer, *cache, std::move(last), greedy, skip);
  for (int64_t row = 0; row < batch; ++row) {
    if (skip[row]) continue;
    outcomes[rows[row]].retrieved = GeneratedAnswerMatches(
        tokenizer, generated[row], examples[rows[row]].key);
  }
}

// A length's examples whose answers take as many tokens (`members`): their
// inputs (each example but its last token) teacher-forced through one KV
// cache of up to max_rows rows, in the batches PlanPrefixBatches makes, so
// the beginnings they share (the filler before each key) run once
// (train/eval/shared_prefix.h); CheckBatch checks each batch.
void CheckGroup(nn::Transformer& model, const Tokenizer& tokenizer,
                const std::vector<PasskeyExample>& examples,
                const std::vector<size_t>& members, int64_t length,
                int64_t max_rows, const SamplingOptions& greedy,
                bool decode_misses, bool continue_cache,
                std::vector<PasskeyOutcome>& outcomes,
                std::vector<size_t>& later) {
  const int64_t answer_rows = examples[members[0]].answer.count;
  const int64_t prompt = length + 1 - answer_rows;
  std::vector<std::vector<TokenId>> inputs;
  for (const size_t i : members) {
    inputs.emplace_back(examples[i].tokens.begin(),
                        examples[i].tokens.end() - 1);
  }
  const int64_t rows = std::min(max_rows, static_cast<int64_t>(members.size()));
  const std::vector<PrefixBatch> plan =
      PlanPrefixBatches(inputs, answer_rows, rows);
  // A cache when the misses decode on from it or batches share beginnings
  // through it; otherwise the plain prefill (the same bits, less memory).
  std::optional<nn::KvCache> cache;
  if (continue_cache || plan.size() > 1) {
    const int64_t capacity =
        continue_cache ? std::max(length, prompt + greedy.max_new_tokens)
                       : length;
    cache = NewKvCacheInMemory(model, rows, capacity,
                               StrCat("passkey eval: the KV cache of ", rows,
                                      " x ", capacity, " positions"));
  }
  for (const PrefixBatch& batch : plan) {
    const int64_t batch_rows = static_cast<int64_t>(batch.rows.size());
    std::optional<nn::KvCache> view;
    if (cache) view = FirstRows(*cache, batch_rows);
    const Tensor logits = PrefillPlannedBatch(
        model, inputs, batch, view ? &*view : nullptr, answer_rows);
    std::vector<size_t> batch_examples;
    for (const size_t row : batch.rows) batch_examples.push_back(members[row]);
    CheckBatch(model, tokenizer, examples, batch_examples, length, logits,
               view ? &*view : nullptr, greedy, decode_misses, continue_cache,
               outcomes, later);
  }
}
}  // namespace

std::vector<PasskeyCell> EvaluatePasskey(nn::Transformer& model,
                                         const Tokenizer& tokenizer,
                                         const PasskeyEvalOptions& options) {
  ROTOR_CHECK(options.trials >= 1, "passkey eval: trials must be >= 1, got ",
              options.trials);
  NoGradGuard no_grad;
  int64_t longest = 0;
  for (const int64_t length : options.lengths) {
    longest = std::max(longest, length);
  }
  const PasskeyMaker maker = options.filler.empty()
                                 ? PasskeyMaker(tokenizer, longest + 1)
                                 : PasskeyMaker(tokenizer, options.filler);
  // A byte is a token: greedy decoding writes the key only as its digits.
  const bool decode_misses = tokenizer.Name() != ByteTokenizer::kName;
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  std::vector<PasskeyCell> cells;
  for (const int64_t length : options.lengths) {
    // Every example at this length, depths outer.
    std::vector<PasskeyExample> examples;
    for (size_t d = 0; d < options.depths.size(); ++d) {
      // Keys depend on (seed, length, depth index) only.
      Rng rng = PasskeyItemRng(options.seed,
                               static_cast<uint64_t>(length) * 1000 + d);
      for (int64_t trial = 0; trial < options.trials; ++trial) {
        examples.push_back(
            maker.Make(length + 1, options.depths[d], rng, options.num_digits));
      }
    }
    if (examples.empty()) continue;  // no depths: no cells
    // The answer's tokens are an example's last, so the examples whose
    // answers have as many tokens (and keys as many digits) share the
    // prompt before it, P = length + 1 - count tokens: those run together.
    std::map<std::pair<int64_t, size_t>, std::vector<size_t>> groups;
    for (size_t i = 0; i < examples.size(); ++i) {
      groups[{examples[i].answer.count, examples[i].key.size()}].push_back(i);
    }
    model.SetSequenceLength(length);
    std::vector<PasskeyOutcome> outcomes(examples.size());
    std::vector<size_t> later;  // misses decoded from their prompts
    const int64_t batch = std::max<int64_t>(1, kMaxBatchPromptTokens / length);
    for (const auto& [key, members] : groups) {
      const int64_t answer_rows = key.first;
      const int64_t prompt = length + 1 - answer_rows;
      greedy.max_new_tokens = static_cast<int64_t>(key.second) + 1;
      const int64_t decoded_length = prompt + greedy.max_new_tokens;
      // Greedy decoding continues the teacher-forced pass's KV cache from
      // the prompt on. That pass rotates at the RoPE frequencies of
      // `length`, the decoding of a prompt alone at those of
      // decoded_length (GenerateTokens): where they differ (dynamic NTK
      // or LongRoPE across L0), the misses decode from their prompts
      // instead (GreedyAnswersMatch), to keep the greedy ids the same.
      const bool continue_cache =
          decode_misses &&
          SameRopeAt(model.config().rope, length, decoded_length);
      CheckGroup(model, tokenizer, examples, members, length, batch, greedy,
                 decode_misses, continue_cache, outcomes, later);
    }
    std::vector<PasskeyExample> missed;
    for (const size_t i : later) missed.push_back(examples[i]);
    const std::vector<bool> decoded =
        GreedyAnswersMatch(model, tokenizer, missed);
    for (size_t m = 0; m < later.size(); ++m) {
      outcomes[later[m]].retrieved = decoded[m];
    }
    for (size_t d = 0; d < options.depths.size(); ++d) {
      PasskeyCell cell;
      cell.length = length;
      cell.depth = options.depths[d];
      cell.trials = options.trials;
      cell.num_digits = options.num_digits;
      for (int64_t trial = 0; trial < options.trials; ++trial) {
        const size_t i = d * static_cast<size_t>(options.trials) +
                         static_cast<size_t>(trial);
        cell.digits_right += outcomes[i].digits_right;
        cell.correct += outcomes[i].retrieved ? 1 : 0;
      }
      cells.push_back(cell);
    }
  }
  return cells;
}

namespace {

// sum(part(cell)) / sum(whole(cell)) over the cells of one length.
template <typename Part, typename Whole>
double RatioAt(const std::vector<PasskeyCell>& cells, int64_t length, Part part,
               Whole whole) {
  int64_t numerator = 0, denominator = 0;
  for (const PasskeyCell& cell : cells) {
    if (cell.length != length) continue;
    numerator += part(cell);
    denominator += whole(cell);
  }
  ROTOR_CHECK(denominator > 0, "passkey: no cells for length ", length);
  return static_cast<double>(numerator) / static_cast<double>(denominator);
}

}  // namespace

double PasskeyAccuracyAt(const std::vector<PasskeyCell>& cells,
                         int64_t length) {
  return RatioAt(
      cells, length, [](const PasskeyCell& c) { return c.correct; },
      [](const PasskeyCell& c) { return c.trials; });
}

double PasskeyDigitAccuracyAt(const std::vector<PasskeyCell>& cells,
                              int64_t length) {
  return RatioAt(
      cells, length, [](const PasskeyCell& c) { return c.digits_right; },
      [](const PasskeyCell& c) { return c.trials * c.num_digits; });
}

}  // namespace rotor::train

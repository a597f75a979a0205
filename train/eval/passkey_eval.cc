#include "train/eval/passkey_eval.h"

#include <algorithm>
#include <cctype>

#include "core/autograd.h"
#include "core/error.h"
#include "train/eval/generate.h"
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

std::vector<PasskeyCell> EvaluatePasskey(nn::Transformer& model,
                                         const Tokenizer& tokenizer,
                                         const PasskeyEvalOptions& options) {
  ROTOR_CHECK(options.trials >= 1, "passkey eval: trials must be >= 1, got ",
              options.trials);
  NoGradGuard no_grad;
  const int64_t vocab = model.config().vocab_size;
  int64_t longest = 0;
  for (const int64_t length : options.lengths) {
    longest = std::max(longest, length);
  }
  const PasskeyMaker maker = options.filler.empty()
                                 ? PasskeyMaker(tokenizer, longest + 1)
                                 : PasskeyMaker(tokenizer, options.filler);
  // A byte is a token: greedy decoding writes the key only as its digits.
  const bool decode_misses = tokenizer.Name() != ByteTokenizer::kName;
  std::vector<PasskeyCell> cells;
  for (const int64_t length : options.lengths) {
    // Every example at this length, depths outer, their inputs row by row.
    std::vector<PasskeyExample> examples;
    std::vector<TokenId> inputs;
    // The answer's tokens are an example's last: the last `answer_rows`
    // input positions predict them in every example.
    int64_t answer_rows = 1;
    for (size_t d = 0; d < options.depths.size(); ++d) {
      // Keys depend on (seed, length, depth index) only.
      Rng rng = PasskeyItemRng(options.seed,
                               static_cast<uint64_t>(length) * 1000 + d);
      for (int64_t trial = 0; trial < options.trials; ++trial) {
        examples.push_back(
            maker.Make(length + 1, options.depths[d], rng, options.num_digits));
        inputs.insert(inputs.end(), examples.back().tokens.begin(),
                      examples.back().tokens.end() - 1);
        answer_rows = std::max(answer_rows, examples.back().answer.count);
      }
    }
    model.SetSequenceLength(length);
    // Teacher-forced, in batches of at most kMaxBatchPromptTokens input
    // tokens; only the answer rows' logits, [rows * answer_rows, vocab].
    const int64_t count = static_cast<int64_t>(examples.size());
    if (count == 0) continue;  // no depths: no cells
    const int64_t batch =
        std::clamp<int64_t>(kMaxBatchPromptTokens / length, 1, count);
    std::vector<bool> retrieved;
    std::vector<int64_t> digits_right;
    for (int64_t first = 0; first < count; first += batch) {
      const int64_t rows = std::min(batch, count - first);
      const std::vector<TokenId> batch_inputs(
          inputs.begin() + first * length,
          inputs.begin() + (first + rows) * length);
      const Tensor logits =
          model.LastLogits(batch_inputs, rows, length, 0, nullptr, answer_rows);
      for (int64_t row = 0; row < rows; ++row) {
        const float* row_logits = logits.data() + row * answer_rows * vocab;
        const PasskeyExample& example = examples[first + row];
        const int64_t first_row = length - answer_rows;
        digits_right.push_back(PasskeyDigitsRight(row_logits, vocab, example,
                                                  tokenizer, first_row));
        retrieved.push_back(
            PasskeyRetrieved(row_logits, vocab, example, first_row));
      }
    }
    // The misses, decoded greedily in batches.
    std::vector<size_t> misses;
    for (size_t i = 0; i < examples.size(); ++i) {
      if (decode_misses && !retrieved[i]) misses.push_back(i);
    }
    std::vector<PasskeyExample> missed;
    for (const size_t i : misses) missed.push_back(examples[i]);
    const std::vector<bool> decoded =
        GreedyAnswersMatch(model, tokenizer, missed);
    for (size_t m = 0; m < misses.size(); ++m) {
      retrieved[misses[m]] = decoded[m];
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
        cell.digits_right += digits_right[i];
        cell.correct += retrieved[i] ? 1 : 0;
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

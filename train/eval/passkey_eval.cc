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
// example is that token.
bool PredictsToken(const float* logits, int64_t vocab,
                   const PasskeyExample& example, int64_t index) {
  const float* row = logits + (index - 1) * vocab;
  return std::max_element(row, row + vocab) - row == example.tokens[index];
}

}  // namespace

int64_t PasskeyDigitsRight(const float* logits, int64_t vocab,
                           const PasskeyExample& example,
                           const Tokenizer& tokenizer) {
  int64_t right = 0;
  for (int64_t i = example.answer.first;
       i < example.answer.first + example.answer.count; ++i) {
    if (PredictsToken(logits, vocab, example, i)) {
      right += DigitsInToken(tokenizer, example.tokens[i]);
    }
  }
  return right;
}

bool PasskeyRetrieved(const float* logits, int64_t vocab,
                      const PasskeyExample& example) {
  for (int64_t i = example.answer.first;
       i < example.answer.first + example.answer.count; ++i) {
    if (!PredictsToken(logits, vocab, example, i)) return false;
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

bool GreedyAnswerMatches(nn::Transformer& model, const Tokenizer& tokenizer,
                         const PasskeyExample& example) {
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  greedy.max_new_tokens = static_cast<int64_t>(example.key.size()) + 1;
  const std::vector<TokenId> prompt(
      example.tokens.begin(), example.tokens.begin() + example.answer.first);
  return GeneratedAnswerMatches(
      tokenizer, GenerateTokens(model, tokenizer, prompt, greedy), example.key);
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
    for (size_t d = 0; d < options.depths.size(); ++d) {
      // Keys depend on (seed, length, depth index) only.
      Rng rng = PasskeyItemRng(options.seed,
                               static_cast<uint64_t>(length) * 1000 + d);
      std::vector<PasskeyExample> examples;
      std::vector<TokenId> inputs;
      inputs.reserve(static_cast<size_t>(options.trials * length));
      for (int64_t trial = 0; trial < options.trials; ++trial) {
        examples.push_back(
            maker.Make(length + 1, options.depths[d], rng, options.num_digits));
        inputs.insert(inputs.end(), examples.back().tokens.begin(),
                      examples.back().tokens.end() - 1);
      }
      model.SetSequenceLength(length);
      PasskeyCell cell;
      cell.length = length;
      cell.depth = options.depths[d];
      cell.trials = options.trials;
      cell.num_digits = options.num_digits;
      // The logits of a batch are [rows * length, vocab]: with a large
      // vocabulary the trials run in batches of at most kLogitBudget floats
      // (10 trials of 2,048 tokens over 8,192 ids would be 671 MB at once).
      constexpr int64_t kLogitBudget = int64_t{1} << 25;  // 128 MiB
      const int64_t batch = std::clamp<int64_t>(
          kLogitBudget / std::max<int64_t>(length * vocab, 1), 1,
          options.trials);
      std::vector<bool> retrieved;
      for (int64_t first = 0; first < options.trials; first += batch) {
        const int64_t rows = std::min(batch, options.trials - first);
        const std::vector<TokenId> batch_inputs(
            inputs.begin() + first * length,
            inputs.begin() + (first + rows) * length);
        const Tensor logits = model.Logits(batch_inputs, rows, length);
        for (int64_t row = 0; row < rows; ++row) {
          const float* row_logits = logits.data() + row * length * vocab;
          const PasskeyExample& example = examples[first + row];
          cell.digits_right +=
              PasskeyDigitsRight(row_logits, vocab, example, tokenizer);
          retrieved.push_back(PasskeyRetrieved(row_logits, vocab, example));
        }
      }
      for (int64_t trial = 0; trial < options.trials; ++trial) {
        const bool right =
            retrieved[trial] ||
            (decode_misses &&
             GreedyAnswerMatches(model, tokenizer, examples[trial]));
        cell.correct += right ? 1 : 0;
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

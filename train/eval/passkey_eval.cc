#include "train/eval/passkey_eval.h"

#include <cctype>

#include "core/autograd.h"
#include "core/error.h"

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

int64_t PasskeyDigitsRight(const float* logits, int64_t vocab,
                           const PasskeyExample& example) {
  const int64_t digits = static_cast<int64_t>(example.key.size());
  int64_t right = 0;
  for (int64_t i = 0; i < digits; ++i) {
    // The digit at token answer_start + i is predicted by input position
    // answer_start + i - 1.
    const float* row = logits + (example.answer_start + i - 1) * vocab;
    const TokenId predicted =
        static_cast<TokenId>(std::max_element(row, row + vocab) - row);
    right += predicted == example.tokens[example.answer_start + i] ? 1 : 0;
  }
  return right;
}

bool PasskeyRetrieved(const float* logits, int64_t vocab,
                      const PasskeyExample& example) {
  return PasskeyDigitsRight(logits, vocab, example) ==
         static_cast<int64_t>(example.key.size());
}

std::vector<PasskeyCell> EvaluatePasskey(nn::Transformer& model,
                                         const PasskeyEvalOptions& options) {
  ROTOR_CHECK(options.trials >= 1, "passkey eval: trials must be >= 1, got ",
              options.trials);
  NoGradGuard no_grad;
  const int64_t vocab = model.config().vocab_size;
  std::vector<PasskeyCell> cells;
  for (const int64_t length : options.lengths) {
    model.SetSequenceLength(length);
    for (size_t d = 0; d < options.depths.size(); ++d) {
      // Keys depend on (seed, length, depth index) only.
      Rng rng = PasskeyItemRng(options.seed,
                               static_cast<uint64_t>(length) * 1000 + d);
      std::vector<PasskeyExample> examples;
      std::vector<TokenId> inputs;
      inputs.reserve(static_cast<size_t>(options.trials * length));
      for (int64_t trial = 0; trial < options.trials; ++trial) {
        examples.push_back(MakePasskeyExample(length + 1, options.depths[d],
                                              rng, options.num_digits));
        inputs.insert(inputs.end(), examples.back().tokens.begin(),
                      examples.back().tokens.end() - 1);
      }
      const Tensor logits = model.Logits(inputs, options.trials, length);
      PasskeyCell cell;
      cell.length = length;
      cell.depth = options.depths[d];
      cell.trials = options.trials;
      cell.num_digits = options.num_digits;
      for (int64_t trial = 0; trial < options.trials; ++trial) {
        const int64_t right = PasskeyDigitsRight(
            logits.data() + trial * length * vocab, vocab, examples[trial]);
        cell.digits_right += right;
        cell.correct += right == options.num_digits ? 1 : 0;
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

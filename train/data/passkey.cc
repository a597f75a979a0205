#include "train/data/passkey.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace rotor::train {

namespace {

constexpr char kKeyLineStart[] = "The pass key is ";
constexpr char kKeyLineMiddle[] = ". Remember it. ";
constexpr char kKeyLineEnd[] = " is the pass key.";

// The key sentence "The pass key is K. Remember it. K is the pass key.".
std::string KeyLine(const std::string& key) {
  return kKeyLineStart + key + kKeyLineMiddle + key + kKeyLineEnd;
}

// The key line between newlines, the piece after the prefix filler.
std::string KeyPiece(const std::string& key) {
  return "\n" + KeyLine(key) + "\n";
}

// The question and the answer, the piece after the suffix filler.
std::string QuestionPiece(const std::string& key) {
  return "\n" + std::string(kPasskeyQuestion) + key;
}

}  // namespace

Rng PasskeyItemRng(uint64_t seed, uint64_t index) {
  Rng mixer(seed ^ 0x7061737365796b65ull);  // "passkey" in ASCII
  const uint64_t base = mixer.NextU64();
  return Rng(base ^ (index * 0x9E3779B97F4A7C15ull));
}

int64_t PasskeyMinLength(int num_digits) {
  // BOS, the two pieces' bytes.
  const std::string key(num_digits, '0');
  return 1 + static_cast<int64_t>(KeyPiece(key).size()) +
         static_cast<int64_t>(QuestionPiece(key).size());
}

std::vector<TokenId> LandmarkFiller(const Tokenizer& tokenizer,
                                    int64_t min_tokens) {
  return RepeatedTextTokens(tokenizer, kPasskeyFiller, min_tokens);
}

PasskeyMaker::PasskeyMaker(const Tokenizer& tokenizer, int64_t max_length)
    : parts_(tokenizer, LandmarkFiller(tokenizer, max_length)) {}

PasskeyMaker::PasskeyMaker(const Tokenizer& tokenizer,
                           std::vector<TokenId> filler)
    : parts_(tokenizer, std::move(filler)) {}

PasskeyExample PasskeyMaker::Make(int64_t length, double depth, Rng& rng,
                                  int num_digits) const {
  ROTOR_CHECK(depth >= 0.0 && depth <= 1.0,
              "passkey: depth must be in [0, 1], got ", depth);
  ROTOR_CHECK(num_digits >= 1 && num_digits <= kPasskeyMaxDigits,
              "passkey: num_digits must be in [1, ", kPasskeyMaxDigits,
              "], got ", num_digits);
  PasskeyExample example;
  for (int i = 0; i < num_digits; ++i) {
    example.key.push_back(static_cast<char>('0' + rng.Below(10)));
  }
  const std::vector<TokenId> key_piece =
      EncodeInText(parts_.tokenizer, KeyPiece(example.key));
  const std::vector<TokenId> question_piece =
      EncodeInText(parts_.tokenizer, QuestionPiece(example.key));
  const std::vector<TokenSpan> mentions =
      DigitRuns(parts_.tokenizer, key_piece);
  const std::vector<TokenSpan> answers =
      DigitRuns(parts_.tokenizer, question_piece);
  ROTOR_CHECK(mentions.size() == 2 && answers.size() == 1 &&
                  answers[0].first + answers[0].count ==
                      static_cast<int64_t>(question_piece.size()),
              "passkey: tokenizer ", parts_.tokenizer.Name(),
              " does not write the key ", example.key,
              " as tokens of digits apart from the text around it");
  const int64_t needed = 1 + static_cast<int64_t>(key_piece.size()) +
                         static_cast<int64_t>(question_piece.size());
  ROTOR_CHECK(length >= needed, "passkey: the example with key ", example.key,
              " needs at least ", needed, " tokens (",
              PasskeyMinLength(num_digits), " for every key of ", num_digits,
              " digits), got ", length, "; set a longer length");
  const int64_t filler = length - needed;
  parts_.CheckFiller(filler, length, "passkey");
  const int64_t prefix =
      static_cast<int64_t>(std::llround(depth * static_cast<double>(filler)));

  std::vector<TokenId>& tokens = example.tokens;
  tokens.reserve(static_cast<size_t>(length));
  tokens.push_back(parts_.separator);
  tokens.insert(tokens.end(), parts_.filler.begin(),
                parts_.filler.begin() + prefix);
  const int64_t key_start = static_cast<int64_t>(tokens.size());
  example.key_position =
      key_start + FirstNonBlankToken(parts_.tokenizer, key_piece);
  example.second_mention = {key_start + mentions[1].first, mentions[1].count};
  tokens.insert(tokens.end(), key_piece.begin(), key_piece.end());
  tokens.insert(tokens.end(), parts_.filler.begin(),
                parts_.filler.begin() + (filler - prefix));
  example.answer = {static_cast<int64_t>(tokens.size()) + answers[0].first,
                    answers[0].count};
  tokens.insert(tokens.end(), question_piece.begin(), question_piece.end());
  return example;
}

PasskeyLoss ParsePasskeyLoss(const std::string& name) {
  if (name == "retrieval") return PasskeyLoss::kRetrieval;
  if (name == "all") return PasskeyLoss::kAll;
  throw Error(
      StrCat("passkey loss must be 'retrieval' or 'all', got '", name, "'"));
}

const char* PasskeyLossName(PasskeyLoss loss) {
  return loss == PasskeyLoss::kRetrieval ? "retrieval" : "all";
}

void MixPasskeyExamples(Batch& batch, const PasskeyMaker& maker,
                        double fraction, PasskeyLoss loss, uint64_t seed,
                        uint64_t first_row, int num_digits) {
  ROTOR_CHECK(fraction >= 0.0 && fraction <= 1.0,
              "passkey mix: fraction must be in [0, 1], got ", fraction);
  if (fraction == 0.0) return;
  const int64_t seq = batch.seq_len;
  for (int64_t row = 0; row < batch.batch_size; ++row) {
    Rng rng = PasskeyItemRng(seed, first_row + static_cast<uint64_t>(row));
    if (rng.Uniform() >= fraction) continue;
    const double depth =
        rng.Uniform() < kPasskeyStartShare ? 0.0 : rng.Uniform();
    const PasskeyExample example = maker.Make(seq + 1, depth, rng, num_digits);
    std::copy(example.tokens.begin(), example.tokens.end() - 1,
              batch.inputs.begin() + row * seq);
    TokenId* targets = batch.targets.data() + row * seq;
    std::copy(example.tokens.begin() + 1, example.tokens.end(), targets);
    if (loss == PasskeyLoss::kRetrieval) {
      // Target t is token t + 1: keep the two copies of the key.
      const TokenSpan& second = example.second_mention;
      const auto copied = [&](int64_t token) {
        return (token >= second.first && token < second.first + second.count) ||
               token >= example.answer.first;
      };
      for (int64_t t = 0; t < seq; ++t) {
        if (!copied(t + 1)) targets[t] = kPasskeyIgnoredTarget;
      }
    }
  }
}

}  // namespace rotor::train

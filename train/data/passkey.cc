#include "train/data/passkey.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

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

// `count` bytes of the filler, repeated from its start.
void AppendFiller(int64_t count, std::vector<TokenId>& out) {
  const int64_t period = static_cast<int64_t>(std::strlen(kPasskeyFiller));
  for (int64_t i = 0; i < count; ++i) {
    out.push_back(static_cast<unsigned char>(kPasskeyFiller[i % period]));
  }
}

}  // namespace

Rng PasskeyItemRng(uint64_t seed, uint64_t index) {
  Rng mixer(seed ^ 0x7061737365796b65ull);  // "passkey" in ASCII
  const uint64_t base = mixer.NextU64();
  return Rng(base ^ (index * 0x9E3779B97F4A7C15ull));
}

int64_t PasskeyMinLength(int num_digits) {
  // BOS, "\n" after the prefix, the key line, "\n" after it, "\n" after the
  // suffix, the question and the answer.
  return 1 + 1 +
         static_cast<int64_t>(KeyLine(std::string(num_digits, '0')).size()) +
         1 + 1 + static_cast<int64_t>(std::strlen(kPasskeyQuestion)) +
         num_digits;
}

PasskeyExample MakePasskeyExample(int64_t length, double depth, Rng& rng,
                                  int num_digits) {
  ROTOR_CHECK(depth >= 0.0 && depth <= 1.0,
              "passkey: depth must be in [0, 1], got ", depth);
  ROTOR_CHECK(num_digits >= 1 && num_digits <= kPasskeyMaxDigits,
              "passkey: num_digits must be in [1, ", kPasskeyMaxDigits,
              "], got ", num_digits);
  const int64_t min_length = PasskeyMinLength(num_digits);
  ROTOR_CHECK(length >= min_length, "passkey: an example with ", num_digits,
              " digits needs at least ", min_length, " tokens, got ", length);
  PasskeyExample example;
  for (int i = 0; i < num_digits; ++i) {
    example.key.push_back(static_cast<char>('0' + rng.Below(10)));
  }
  const int64_t filler = length - min_length;
  const int64_t prefix =
      static_cast<int64_t>(std::llround(depth * static_cast<double>(filler)));

  std::vector<TokenId>& tokens = example.tokens;
  tokens.reserve(static_cast<size_t>(length));
  tokens.push_back(ByteTokenizer::kEndOfText);
  AppendFiller(prefix, tokens);
  tokens.push_back('\n');
  example.key_position = static_cast<int64_t>(tokens.size());
  ByteTokenizer::EncodeAppend(KeyLine(example.key), tokens);
  example.second_mention = static_cast<int64_t>(
      tokens.size() - example.key.size() - std::strlen(kKeyLineEnd));
  tokens.push_back('\n');
  AppendFiller(filler - prefix, tokens);
  tokens.push_back('\n');
  ByteTokenizer::EncodeAppend(kPasskeyQuestion, tokens);
  example.answer_start = static_cast<int64_t>(tokens.size());
  ByteTokenizer::EncodeAppend(example.key, tokens);
  ROTOR_CHECK(static_cast<int64_t>(tokens.size()) == length, "passkey: built ",
              tokens.size(), " tokens instead of ", length);
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

void MixPasskeyExamples(Batch& batch, double fraction, PasskeyLoss loss,
                        uint64_t seed, uint64_t first_row, int num_digits) {
  ROTOR_CHECK(fraction >= 0.0 && fraction <= 1.0,
              "passkey mix: fraction must be in [0, 1], got ", fraction);
  if (fraction == 0.0) return;
  const int64_t seq = batch.seq_len;
  for (int64_t row = 0; row < batch.batch_size; ++row) {
    Rng rng = PasskeyItemRng(seed, first_row + static_cast<uint64_t>(row));
    if (rng.Uniform() >= fraction) continue;
    const double depth =
        rng.Uniform() < kPasskeyStartShare ? 0.0 : rng.Uniform();
    const PasskeyExample example =
        MakePasskeyExample(seq + 1, depth, rng, num_digits);
    std::copy(example.tokens.begin(), example.tokens.end() - 1,
              batch.inputs.begin() + row * seq);
    TokenId* targets = batch.targets.data() + row * seq;
    std::copy(example.tokens.begin() + 1, example.tokens.end(), targets);
    if (loss == PasskeyLoss::kRetrieval) {
      // Target t is token t + 1: keep the two copies of the key.
      const auto copied = [&](int64_t token) {
        return (token >= example.second_mention &&
                token < example.second_mention + num_digits) ||
               token >= example.answer_start;
      };
      for (int64_t t = 0; t < seq; ++t) {
        if (!copied(t + 1)) targets[t] = kPasskeyIgnoredTarget;
      }
    }
  }
}

}  // namespace rotor::train

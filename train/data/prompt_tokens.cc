#include "train/data/prompt_tokens.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "core/error.h"

namespace rotor::train {

namespace {

// Texts put in front of a piece to encode it mid-text, the first that
// splits off cleanly: a newline, as before a line of text; a letter for a
// piece that starts with a newline (which byte-level pre-tokenizers join
// to a newline before it); a punctuation mark for a piece a letter would
// join.
constexpr const char* kAnchors[] = {"\n", "x", "|"};

// The text of one token on its own.
std::string TokenText(const Tokenizer& tokenizer, TokenId id) {
  return tokenizer.Decode({id}, /*skip_special_tokens=*/false);
}

}  // namespace

std::vector<TokenId> EncodeInText(const Tokenizer& tokenizer,
                                  std::string_view piece) {
  for (const char* anchor : kAnchors) {
    const std::vector<TokenId> alone = tokenizer.Encode(anchor, false);
    const std::vector<TokenId> joined =
        tokenizer.Encode(std::string(anchor) + std::string(piece), false);
    if (joined.size() >= alone.size() &&
        std::equal(alone.begin(), alone.end(), joined.begin())) {
      return std::vector<TokenId>(joined.begin() + alone.size(), joined.end());
    }
  }
  throw Error(StrCat("tokenizer ", tokenizer.Name(),
                     " joins every anchor to the text \"", piece,
                     "\": cannot encode it as in the middle of a text"));
}

std::vector<TokenId> RepeatedTextTokens(const Tokenizer& tokenizer,
                                        std::string_view text,
                                        int64_t min_tokens) {
  const int64_t per_copy =
      static_cast<int64_t>(EncodeInText(tokenizer, text).size());
  ROTOR_CHECK(per_copy > 0, "filler: the text \"", text, "\" has no tokens");
  // One copy more than the estimate, so the cut never reaches the tokens
  // of the text's end, which a tokenizer may split differently.
  int64_t copies = min_tokens / per_copy + 2;
  while (true) {
    std::string repeated;
    repeated.reserve(static_cast<size_t>(copies) * text.size());
    for (int64_t i = 0; i < copies; ++i) repeated.append(text);
    std::vector<TokenId> tokens = EncodeInText(tokenizer, repeated);
    if (static_cast<int64_t>(tokens.size()) > min_tokens) {
      tokens.resize(static_cast<size_t>(min_tokens));
      return tokens;
    }
    copies *= 2;
  }
}

std::vector<TokenId> TokenFileFiller(const TokenFile& file,
                                     int64_t min_tokens) {
  std::vector<TokenId> tokens;
  tokens.reserve(static_cast<size_t>(min_tokens));
  for (size_t i = 0;
       i < file.size() && static_cast<int64_t>(tokens.size()) < min_tokens;
       ++i) {
    if (file[i] != file.separator_id()) tokens.push_back(file[i]);
  }
  ROTOR_CHECK(!tokens.empty() || min_tokens == 0, file.path(),
              " holds no text to cut filler from");
  for (size_t i = 0; static_cast<int64_t>(tokens.size()) < min_tokens; ++i) {
    tokens.push_back(tokens[i]);
  }
  return tokens;
}

PromptParts::PromptParts(const Tokenizer& tokenizer,
                         std::vector<TokenId> filler)
    : tokenizer(tokenizer),
      separator(DocumentSeparator(tokenizer)),
      filler(std::move(filler)) {}

void PromptParts::CheckFiller(int64_t count, int64_t length,
                              const char* what) const {
  ROTOR_CHECK(count <= static_cast<int64_t>(filler.size()), what,
              ": an example of ", length, " tokens needs ", count,
              " filler tokens, but the filler holds ", filler.size());
}

int DigitsInToken(const Tokenizer& tokenizer, TokenId id) {
  const std::string text = TokenText(tokenizer, id);
  return static_cast<int>(std::count_if(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  }));
}

std::vector<TokenSpan> DigitRuns(const Tokenizer& tokenizer,
                                 const std::vector<TokenId>& ids) {
  std::vector<TokenSpan> runs;
  bool in_run = false;
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool digits = DigitsInToken(tokenizer, ids[i]) > 0;
    if (digits && !in_run) runs.push_back({static_cast<int64_t>(i), 0});
    if (digits) ++runs.back().count;
    in_run = digits;
  }
  return runs;
}

int64_t FirstNonBlankToken(const Tokenizer& tokenizer,
                           const std::vector<TokenId>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string text = TokenText(tokenizer, ids[i]);
    if (std::any_of(text.begin(), text.end(), [](char c) {
          return std::isspace(static_cast<unsigned char>(c)) == 0;
        })) {
      return static_cast<int64_t>(i);
    }
  }
  return static_cast<int64_t>(ids.size());
}

}  // namespace rotor::train

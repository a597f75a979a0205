#include "train/tokenizer/byte_tokenizer.h"

#include "core/error.h"
#include "train/tokenizer/byte_level_bpe_json.h"
#include "train/tokenizer/pre_tokenizers.h"

namespace rotor::train {

std::vector<TokenId> ByteTokenizer::Encode(std::string_view text) {
  std::vector<TokenId> ids;
  EncodeAppend(text, ids);
  return ids;
}

void ByteTokenizer::EncodeAppend(std::string_view text,
                                 std::vector<TokenId>& out) {
  out.reserve(out.size() + text.size());
  for (const char c : text) out.push_back(static_cast<unsigned char>(c));
}

std::string ByteTokenizer::Decode(const std::vector<TokenId>& ids) {
  return ByteTokenizer().Decode(ids, /*skip_special_tokens=*/false);
}

std::vector<TokenId> ByteTokenizer::Encode(std::string_view text,
                                           bool add_special_tokens) const {
  std::vector<TokenId> ids;
  if (add_special_tokens) ids.push_back(kEndOfText);
  EncodeAppend(text, ids);
  return ids;
}

std::string ByteTokenizer::Decode(const std::vector<TokenId>& ids,
                                  bool skip_special_tokens) const {
  std::string text;
  text.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const TokenId id = ids[i];
    if (id == kEndOfText) {
      if (!skip_special_tokens) text += kEndOfTextText;
      continue;
    }
    ROTOR_CHECK(id >= 0 && id < 256, "ByteTokenizer::Decode: token ", i, " is ",
                id, ", outside the vocabulary [0, ", kVocabSize, ")");
    text += static_cast<char>(id);
  }
  return text;
}

std::optional<TokenId> ByteTokenizer::TokenToId(std::string_view token) const {
  if (token == kEndOfTextText) return kEndOfText;
  return std::nullopt;
}

std::string LegacyByteTokenizerJson() {
  std::vector<std::string> vocab(ByteLevelChars().begin(),
                                 ByteLevelChars().end());
  vocab.push_back(ByteTokenizer::kEndOfTextText);
  return ByteLevelBpeTokenizerJson(vocab, {ByteTokenizer::kEndOfText},
                                   /*merges=*/{}, /*split_pattern=*/"");
}

std::string ByteTokenizerJson() {
  return TokenizerJsonWithBos(LegacyByteTokenizerJson(), "the byte tokenizer",
                              ByteTokenizer::kEndOfText);
}

}  // namespace rotor::train

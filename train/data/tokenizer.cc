#include "train/data/tokenizer.h"

#include "core/error.h"

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
  std::string text;
  text.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const TokenId id = ids[i];
    if (id == kEndOfText) {
      text += kEndOfTextText;
      continue;
    }
    ROTOR_CHECK(id >= 0 && id < 256, "ByteTokenizer::Decode: token ", i, " is ",
                id, ", outside the vocabulary [0, ", kVocabSize, ")");
    text += static_cast<char>(id);
  }
  return text;
}

}  // namespace rotor::train

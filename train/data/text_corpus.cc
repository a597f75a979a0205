#include "train/data/text_corpus.h"

#include <filesystem>

#include "core/error.h"
#include "train/data/prepare.h"
#include "train/data/token_file.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {
namespace fs = std::filesystem;

namespace {

// The documents of a prepared train.bin: the byte runs between end-of-text
// markers. O(tokens).
std::vector<std::string> ReadPreparedDocuments(const std::string& path) {
  const TokenFile tokens(path);
  ROTOR_CHECK(tokens.vocab_size() == ByteTokenizer::kVocabSize, "'", path,
              "' holds tokens of a vocabulary of ", tokens.vocab_size(),
              ", expected bytes (rotor prepare's byte tokenizer, ",
              ByteTokenizer::kVocabSize,
              "); train the tokenizer on the text files instead");
  std::vector<std::string> documents;
  std::string document;
  for (size_t i = 0; i <= tokens.size(); ++i) {
    if (i == tokens.size() || tokens[i] == ByteTokenizer::kEndOfText) {
      if (!document.empty()) documents.push_back(std::move(document));
      document.clear();
    } else {
      document += static_cast<char>(tokens[i]);
    }
  }
  return documents;
}

}  // namespace

TextCorpus ReadTextCorpus(const std::string& input) {
  TextCorpus corpus;
  const fs::path folder(input);
  std::error_code error;
  if (fs::is_regular_file(folder / "train.bin", error) &&
      fs::is_regular_file(folder / "meta.json", error)) {
    const std::string path = (folder / "train.bin").string();
    corpus.documents = ReadPreparedDocuments(path);
    corpus.description = "the training split " + path;
  } else {
    const std::vector<std::string> files =
        CollectInputFiles({input}, /*brown=*/false);
    for (const std::string& file : files) {
      std::string text = ReadInputFile(file);
      if (!text.empty()) corpus.documents.push_back(std::move(text));
    }
    corpus.description = std::to_string(files.size()) + " file(s) of " + input;
  }
  for (const std::string& document : corpus.documents) {
    corpus.bytes += document.size();
  }
  ROTOR_CHECK(corpus.bytes > 0, "input '", input, "' holds no text (",
              corpus.description, ")");
  return corpus;
}

}  // namespace rotor::train

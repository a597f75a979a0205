#include "train/tokenizer/tokenizer.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/limits.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "train/tokenizer/hf_tokenizer.h"

namespace rotor::train {

namespace {

bool IsFolder(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// Whether `path` exists; throws unless it is then a regular file (a folder,
// FIFO or device named tokenizer.json is a mistake, not "no tokenizer", and
// a FIFO would block the read).
bool IsTokenizerFile(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return false;
  ROTOR_CHECK(S_ISREG(info.st_mode), "tokenizer ", path,
              " is not a regular file");
  return true;
}

}  // namespace

std::string TokenizerFile(const std::string& spec) {
  if (spec == ByteTokenizer::kName) return "";
  return IsFolder(spec) ? spec + "/tokenizer.json" : spec;
}

std::string TokenizerSpecIn(const std::string& dir) {
  const std::string file = dir + "/tokenizer.json";
  if (!IsTokenizerFile(file)) return ByteTokenizer::kName;
  // An exported byte-level model's tokenizer.json is the byte tokenizer
  // (same ids), so it pairs with byte-level data again after an import.
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(file, error);
  for (const std::string& byte_json :
       {ByteTokenizerJson(), LegacyByteTokenizerJson()}) {
    if (!error && size == byte_json.size() && ReadFile(file) == byte_json) {
      return ByteTokenizer::kName;
    }
  }
  return file;
}

namespace {

// Whether `copy` is what WriteHfTokenizerFiles writes for a model rotor
// trained with the tokenizer.json `file` (text `original`) whose
// post-processor adds no BOS: `original` with its document separator added.
bool IsExportedCopyOf(const std::string& copy, const std::string& original,
                      const std::string& file) {
  const std::unique_ptr<Tokenizer> tokenizer = LoadTokenizer(file);
  if (PromptBos(*tokenizer, PromptStart::kTokenizerBos)) return false;
  const std::optional<TokenId> separator =
      PromptBos(*tokenizer, PromptStart::kDocumentSeparator);
  return TokenizerJsonWithBos(original, file, *separator) == copy;
}

}  // namespace

bool SameTokenizer(const std::string& a, const std::string& b) {
  const std::string file_a = TokenizerFile(a);
  const std::string file_b = TokenizerFile(b);
  if (file_a.empty() || file_b.empty()) return file_a.empty() && file_b.empty();
  const std::string text_a = ReadFile(file_a, limits::kMaxTokenizerJsonBytes);
  const std::string text_b = ReadFile(file_b, limits::kMaxTokenizerJsonBytes);
  if (text_a == text_b) return true;
  // Only then: a tokenizer without a document separator, or one that is
  // no added token, is simply another tokenizer.
  try {
    return IsExportedCopyOf(text_a, text_b, file_b) ||
           IsExportedCopyOf(text_b, text_a, file_a);
  } catch (const Error&) {
    return false;
  }
}

std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& spec) {
  const std::string file = TokenizerFile(spec);
  if (file.empty()) return std::make_unique<ByteTokenizer>();
  ROTOR_CHECK(IsTokenizerFile(file) || !IsFolder(spec), file,
              " does not exist: a tokenizer folder must hold a tokenizer.json "
              "(a Hugging Face model folder does, and so does a checkpoint "
              "trained with one); a byte-level model's tokenizer is 'byte'");
  return HfTokenizer::Load(file);
}

void CopyTokenizerInto(const std::string& spec, const std::string& dir) {
  const std::string file = TokenizerFile(spec);
  if (file.empty()) return;
  WriteFileAtomically(dir + "/tokenizer.json",
                      ReadFile(file, limits::kMaxTokenizerJsonBytes));
}

std::optional<TokenId> PromptBos(const Tokenizer& tokenizer,
                                 PromptStart start) {
  if (start == PromptStart::kDocumentSeparator) {
    return DocumentSeparator(tokenizer);
  }
  const std::vector<TokenId> around_empty = tokenizer.Encode("", true);
  if (around_empty.empty()) return std::nullopt;
  return around_empty.front();
}

std::string TokenizerJsonWithBos(const std::string& tokenizer_json,
                                 const std::string& where, TokenId bos) {
  Json root = ParseJson(tokenizer_json, where);
  // The template names the token by its text, an added token's content.
  std::string content;
  if (const auto added = root.find("added_tokens");
      added != root.end() && added->is_array()) {
    for (const Json& token : *added) {
      if (token.is_object() && token.value("id", Json()) == bos &&
          token.value("content", Json()).is_string()) {
        content = token["content"].get<std::string>();
      }
    }
  }
  ROTOR_CHECK(!content.empty(), where, ": added_tokens has no token with id ",
              bos, ", the BOS to put before every text");
  const Json bos_piece = {{"SpecialToken", {{"id", content}, {"type_id", 0}}}};
  const Json pair_bos = {{"SpecialToken", {{"id", content}, {"type_id", 1}}}};
  const Json template_processing = {
      {"type", "TemplateProcessing"},
      {"single", {bos_piece, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"pair",
       {bos_piece,
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
        pair_bos,
        {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
      {"special_tokens",
       {{content, {{"id", content}, {"ids", {bos}}, {"tokens", {content}}}}}}};
  Json& post_processor = root["post_processor"];
  post_processor =
      post_processor.is_null()
          ? template_processing
          : Json{{"type", "Sequence"},
                 {"processors", {post_processor, template_processing}}};
  return root.dump(2) + "\n";
}

void WriteHfTokenizerFiles(const std::string& tokenizer_spec,
                           const std::string& dir, PromptStart start) {
  const std::unique_ptr<Tokenizer> tokenizer = LoadTokenizer(tokenizer_spec);
  const std::optional<TokenId> bos = PromptBos(*tokenizer, start);
  // transformers decodes with clean_up_tokenization_spaces, which would
  // turn "a ." into "a.", unless told not to: rotor's decode, like HF's
  // tokenizers library, never does. add_bos_token says what the
  // tokenizer.json's post-processor does (transformers' Llama tokenizers
  // rebuild the post-processor from it).
  Json config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                 {"clean_up_tokenization_spaces", false},
                 {"add_bos_token", bos.has_value()}};
  if (bos) config["bos_token"] = tokenizer->Decode({*bos}, false);
  const std::string file = TokenizerFile(tokenizer_spec);
  if (file.empty()) {
    WriteFileAtomically(dir + "/tokenizer.json", ByteTokenizerJson());
    // <|endoftext|> also ends generation (EndOfTextIds), as in GPT-2.
    config["eos_token"] = ByteTokenizer::kEndOfTextText;
  } else {
    // A tokenizer.json does not say which of its added tokens is the eos
    // or pad token (the tokenizer_config.json it came with does, and rotor
    // keeps only the tokenizer.json), so they are left out rather than
    // guessed.
    std::string json = ReadFile(file, limits::kMaxTokenizerJsonBytes);
    if (bos && PromptBos(*tokenizer, PromptStart::kTokenizerBos) != bos) {
      json = TokenizerJsonWithBos(json, file, *bos);
    }
    WriteFileAtomically(dir + "/tokenizer.json", json);
  }
  WriteFileAtomically(dir + "/tokenizer_config.json", config.dump(2) + "\n");
}

TokenId DocumentSeparator(const Tokenizer& tokenizer) {
  if (const std::optional<TokenId> bos =
          PromptBos(tokenizer, PromptStart::kTokenizerBos)) {
    return *bos;
  }
  // Some files (e.g. Llama 3's first release) leave the BOS to the caller.
  for (const char* name :
       {"<|begin_of_text|>", "<s>", "<bos>", ByteTokenizer::kEndOfTextText}) {
    if (const std::optional<TokenId> id = tokenizer.TokenToId(name)) {
      return *id;
    }
  }
  throw Error(StrCat("tokenizer ", tokenizer.Name(),
                     " has no token to separate documents with: its "
                     "post-processor adds no BOS, and it has none of "
                     "<|begin_of_text|>, <s>, <bos>, <|endoftext|>"));
}

std::vector<TokenId> EndOfTextIds(const Tokenizer& tokenizer) {
  std::vector<TokenId> ids = {DocumentSeparator(tokenizer)};
  for (const char* name : {"<|endoftext|>", "</s>", "<|end_of_text|>",
                           "<|eot_id|>", "<|im_end|>", "<eos>"}) {
    const std::optional<TokenId> id = tokenizer.TokenToId(name);
    if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) {
      ids.push_back(*id);
    }
  }
  return ids;
}

}  // namespace rotor::train

#include "train/gguf/gguf_tokenizer.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "core/error.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/tokenizer/byte_tokenizer.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

namespace {

enum TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

constexpr char kGpt2Regex[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr char kLlama3Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr char kQwen2Regex[] =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The llama.cpp pre-tokenizers rotor maps to: the split regex of
// tokenizer.json, whether llama.cpp takes a whole piece that is in the
// vocabulary before merging (ignore_merges), and the name.
struct PreTokenizerName {
  const char* regex;
  bool ignore_merges;
  const char* name;
};
constexpr PreTokenizerName kPreTokenizers[] = {
    {kLlama3Regex, true, "llama-bpe"},
    {kLlama3Regex, false, "smaug-bpe"},
    {kGpt2Regex, false, "gpt-2"},
    {kQwen2Regex, false, "qwen2"},
};

// The pieces of a tokenizer.json's pipeline that decide llama.cpp's form.
struct PipelineShape {
  bool byte_level = false;        // a ByteLevel pre-tokenizer
  bool metaspace = false;         // SentencePiece-style spaces (U+2581)
  std::string split_regex;        // "" without one
  bool byte_level_regex = false;  // ByteLevel's own GPT-2 regex
};

void Inspect(const Json& pre, PipelineShape& shape) {
  if (!pre.is_object()) return;
  const std::string type = pre.value("type", "");
  if (type == "Sequence") {
    for (const Json& step : pre.value("pretokenizers", Json::array())) {
      Inspect(step, shape);
    }
  } else if (type == "ByteLevel") {
    shape.byte_level = true;
    shape.byte_level_regex = pre.value("use_regex", true);
  } else if (type == "Split") {
    const Json& pattern = pre.at("pattern");
    shape.split_regex = pattern.contains("Regex")
                            ? pattern.at("Regex").get<std::string>()
                            : pattern.value("String", "");
  } else if (type == "Metaspace") {
    shape.metaspace = true;
  }
}

bool ReplacesSpacesWithMetaspace(const Json& normalizer) {
  if (!normalizer.is_object()) return false;
  if (normalizer.value("type", "") == "Sequence") {
    for (const Json& step : normalizer.value("normalizers", Json::array())) {
      if (ReplacesSpacesWithMetaspace(step)) return true;
    }
    return false;
  }
  return normalizer.value("type", "") == "Replace" &&
         normalizer.value("content", "") == "\xE2\x96\x81";
}

std::string Show(const std::string& text) { return ShowAsJson(text); }

// The two tokens of a merge written as "a b" or as ["a", "b"] (LoadTokenizer
// has checked the form: a string has exactly one space).
std::pair<std::string, std::string> MergePair(const Json& merge,
                                              const std::string& where) {
  if (merge.is_string()) {
    const std::string text = merge.get<std::string>();
    const size_t space = text.find(' ');
    ROTOR_CHECK(space != std::string::npos, where, ": ", Show(text),
                " has no space");
    return {text.substr(0, space), text.substr(space + 1)};
  }
  ROTOR_CHECK(merge.is_array() && merge.size() == 2, where,
              ": expected \"a b\" or [\"a\", \"b\"]");
  return {merge[0].get<std::string>(), merge[1].get<std::string>()};
}

// GGUF's merge "a b": llama.cpp splits it at the first space after its
// first byte, which gives back (a, b) only when a is not empty and has no
// space after its first byte. Throws naming the merge otherwise.
std::string GgufMergeText(const std::pair<std::string, std::string>& merge,
                          const std::string& where) {
  const auto& [left, right] = merge;
  ROTOR_CHECK(!left.empty() && left.find(' ', 1) == std::string::npos, where,
              " [", Show(left), ", ", Show(right),
              "]: GGUF writes a merge as one string \"left right\", which "
              "llama.cpp splits at the first space after its first byte, so a "
              "left token that is empty or has a space after its first byte "
              "cannot be written (llama.cpp would read a different merge)");
  return left + " " + right;
}

GgufVocab FromTokenizerJson(const std::string& text, const std::string& file,
                            int64_t vocab_size) {
  const Json json = ParseJson(text, file);
  const Json& model = json.at("model");
  const std::string model_type = model.value("type", "");
  ROTOR_CHECK(model_type == "BPE", file, ": model.type ", Show(model_type),
              ": rotor writes BPE tokenizers to GGUF only");
  PipelineShape shape;
  Inspect(json.value("pre_tokenizer", Json()), shape);
  const Json normalizer = json.value("normalizer", Json());
  const bool sentencepiece =
      !shape.byte_level &&
      (shape.metaspace || ReplacesSpacesWithMetaspace(normalizer));
  ROTOR_CHECK(shape.byte_level || sentencepiece, file,
              ": the tokenizer is neither byte-level BPE (a ByteLevel "
              "pre-tokenizer) nor SentencePiece-style BPE (spaces as U+2581), "
              "the two kinds llama.cpp runs");

  GgufVocab vocab;
  // Tokens by id: the model's vocabulary, then the added tokens. No id has
  // two texts and no text two ids: LoadTokenizer (GgufVocabFor's first
  // step, HfTokenizer::Parse) refuses repeated vocabulary keys and ids, and
  // added tokens that repeat a content or an id, take a vocabulary
  // token's id or give a vocabulary token's text another id. So `put`
  // overwrites only an added token that is also in the vocabulary (same id,
  // same text), giving it its added type.
  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<int32_t> types(static_cast<size_t>(vocab_size), kNormal);
  std::vector<bool> filled(static_cast<size_t>(vocab_size), false);
  auto put = [&](int64_t id, const std::string& token, int32_t type,
                 const std::string& where) {
    ROTOR_CHECK(id >= 0 && id < vocab_size, file, ": ", where, ": id ", id,
                " is outside the model's vocab_size ", vocab_size);
    tokens[id] = token;
    types[id] = type;
    filled[id] = true;
  };
  const std::string unk = model.value("unk_token", Json()).is_string()
                              ? model.at("unk_token").get<std::string>()
                              : "";
  for (const auto& [token, id_json] : model.at("vocab").items()) {
    const int64_t id = id_json.get<int64_t>();
    int32_t type = kNormal;
    if (token == unk) {
      type = kUnknown;
      vocab.unknown_id = static_cast<int32_t>(id);
    } else if (sentencepiece && token.size() == 6 &&
               token.rfind("<0x", 0) == 0 && token.back() == '>') {
      type = kByte;
    }
    put(id, token, type, "model.vocab");
  }
  for (const Json& added : json.value("added_tokens", Json::array())) {
    put(added.at("id").get<int64_t>(), added.at("content").get<std::string>(),
        added.value("special", false) ? kControl : kUserDefined,
        "added_tokens");
  }
  // Unused ids are "[PAD<id>]", or, when that is a token's text,
  // "[PAD<id>.1]", "[PAD<id>.2]", ...: the padding, too, shares no text.
  std::set<std::string> texts;
  for (int64_t id = 0; id < vocab_size; ++id) {
    if (filled[id]) texts.insert(tokens[id]);
  }
  for (int64_t id = 0; id < vocab_size; ++id) {
    if (filled[id]) continue;
    std::string name = "[PAD" + std::to_string(id) + "]";
    for (int suffix = 1; texts.count(name) > 0; ++suffix) {
      name = "[PAD" + std::to_string(id) + "." + std::to_string(suffix) + "]";
    }
    texts.insert(name);
    tokens[id] = name;
    types[id] = kUnused;
  }
  const Json& merges = model.value("merges", Json::array());
  if (sentencepiece) {
    vocab.model = "llama";
    // score = -(rank of the first merge that makes the token); tokens no
    // merge makes score below every merge.
    std::map<std::string, size_t> first_rank;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const auto [left, right] =
          MergePair(merges[rank], StrCat(file, ": model.merges[", rank, "]"));
      first_rank.emplace(left + right, rank);
    }
    vocab.scores.assign(tokens.size(), 0.0f);
    for (size_t id = 0; id < tokens.size(); ++id) {
      if (types[id] != kNormal) continue;
      const auto found = first_rank.find(tokens[id]);
      vocab.scores[id] = found != first_rank.end()
                             ? -static_cast<float>(found->second)
                             : -static_cast<float>(merges.size());
    }
  } else {
    vocab.model = "gpt2";
    const bool ignore_merges = model.value("ignore_merges", false);
    std::string regex = shape.split_regex;
    if (regex.empty() && shape.byte_level_regex) regex = kGpt2Regex;
    if (merges.empty()) {
      // Each byte is its own token whatever the split.
      vocab.pre = "default";
    } else {
      for (const PreTokenizerName& known : kPreTokenizers) {
        if (regex == known.regex && ignore_merges == known.ignore_merges) {
          vocab.pre = known.name;
        }
      }
      ROTOR_CHECK(!vocab.pre.empty(), file,
                  ": pre_tokenizer: llama.cpp has no pre-tokenizer for the "
                  "split regex ",
                  regex.empty() ? std::string("(none)") : Show(regex),
                  " with model.ignore_merges ",
                  ignore_merges ? "true" : "false",
                  "; it knows Llama 3's, GPT-2's and Qwen2's (docs/gguf.md)");
    }
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const std::string where = StrCat(file, ": model.merges[", rank, "]");
      vocab.merges.push_back(
          GgufMergeText(MergePair(merges[rank], where), where));
    }
  }
  vocab.tokens = std::move(tokens);
  vocab.token_types = std::move(types);
  return vocab;
}

}  // namespace

GgufVocab GgufVocabFor(const std::string& tokenizer_spec, int64_t vocab_size,
                       const ModelConfig& model, PromptStart start) {
  const std::unique_ptr<Tokenizer> tokenizer = LoadTokenizer(tokenizer_spec);
  ROTOR_CHECK(tokenizer->VocabSize() <= vocab_size, "tokenizer ",
              tokenizer->Name(), " has ", tokenizer->VocabSize(),
              " ids, more than the model's vocab_size ", vocab_size);
  const std::string file = TokenizerFile(tokenizer_spec);
  GgufVocab vocab = file.empty()
                        ? FromTokenizerJson(ByteTokenizerJson(),
                                            "the byte tokenizer", vocab_size)
                        : FromTokenizerJson(ReadFile(file), file, vocab_size);
  // A text starts with the BOS the model's texts started with in training;
  // the post-processor may also put an EOS after it.
  const std::optional<TokenId> bos = PromptBos(*tokenizer, start);
  const std::vector<TokenId> around = tokenizer->Encode("", true);
  vocab.add_bos = bos.has_value();
  vocab.add_eos = around.size() >= 2;
  vocab.bos_id = bos ? *bos
                 : model.bos_token_id.has_value()
                     ? static_cast<int32_t>(*model.bos_token_id)
                     : DocumentSeparator(*tokenizer);
  if (model.eos_token_id.has_value() && !model.eos_token_id->empty()) {
    vocab.eos_id = static_cast<int32_t>(model.eos_token_id->front());
  } else if (vocab.add_eos) {
    vocab.eos_id = around.back();
  } else {
    // The first end-of-text token that is not the BOS, else the BOS (the
    // byte tokenizer's <|endoftext|> is both).
    const std::vector<TokenId> ends = EndOfTextIds(*tokenizer);
    vocab.eos_id = ends.size() > 1 ? ends[1] : ends[0];
  }
  if (model.pad_token_id.has_value()) {
    vocab.padding_id = static_cast<int32_t>(*model.pad_token_id);
  }
  return vocab;
}

void AddGgufVocab(const GgufVocab& vocab, GgufWriter& writer) {
  writer.AddString("tokenizer.ggml.model", vocab.model);
  if (!vocab.pre.empty()) writer.AddString("tokenizer.ggml.pre", vocab.pre);
  writer.AddStringArray("tokenizer.ggml.tokens", vocab.tokens);
  writer.AddInt32Array("tokenizer.ggml.token_type", vocab.token_types);
  if (!vocab.scores.empty()) {
    writer.AddFloat32Array("tokenizer.ggml.scores", vocab.scores);
  }
  if (vocab.model == "gpt2") {
    writer.AddStringArray("tokenizer.ggml.merges", vocab.merges);
  }
  writer.AddUint32("tokenizer.ggml.bos_token_id",
                   static_cast<uint32_t>(vocab.bos_id));
  writer.AddUint32("tokenizer.ggml.eos_token_id",
                   static_cast<uint32_t>(vocab.eos_id));
  if (vocab.unknown_id) {
    writer.AddUint32("tokenizer.ggml.unknown_token_id",
                     static_cast<uint32_t>(*vocab.unknown_id));
  }
  if (vocab.padding_id) {
    writer.AddUint32("tokenizer.ggml.padding_token_id",
                     static_cast<uint32_t>(*vocab.padding_id));
  }
  writer.AddBool("tokenizer.ggml.add_bos_token", vocab.add_bos);
  writer.AddBool("tokenizer.ggml.add_eos_token", vocab.add_eos);
  if (vocab.model == "llama") {
    writer.AddBool("tokenizer.ggml.add_space_prefix", true);
  }
}

}  // namespace rotor::train

// Reading a tokenizer.json into HfTokenizerParts: one function per section
// (normalizer, pre-tokenizer, model, post-processor, decoder, added tokens),
// each switching on the component's "type". Everything not supported is an
// error naming the file, the JSON path and what is supported, so a file
// rotor cannot encode exactly as HF does is never half-used.
#include <functional>
#include <unordered_set>

#include "core/error.h"
#include "core/limits.h"
#include "train/io/json.h"
#include "train/io/message.h"
#include "train/tokenizer/hf_tokenizer.h"
#include "train/tokenizer/unicode.h"

namespace rotor::train {
namespace {

// A part of a message about the file: every string the readers below pass
// is quoted from the file (a name, a token, a dumped value), so it is cut
// to an Excerpt; literals and numbers pass as they are.
std::string Bounded(const std::string& text) { return Excerpt(text); }
template <typename T>
const T& Bounded(const T& part) {
  return part;
}

// A place in the file, for messages: "<file>: <JSON path>: ...", each key
// of the path an Excerpt.
class Where {
 public:
  Where(const std::string& file, std::string path)
      : file_(&file), path_(std::move(path)) {}
  // The member `key` / element `index` of this value.
  Where operator/(std::string_view key) const {
    return Where(*file_, path_ + "/" + Excerpt(key));
  }
  Where operator/(size_t index) const {
    return Where(*file_, path_ + "/" + std::to_string(index));
  }
  // Throws rotor::Error with `parts` after the place.
  template <typename... Args>
  [[noreturn]] void Fail(const Args&... parts) const {
    throw Error(StrCat(*file_, ": ", path_.empty() ? "/" : path_, ": ",
                       Bounded(parts)...));
  }
  const std::string& file() const { return *file_; }

 private:
  const std::string* file_;
  std::string path_;
};

// JSON's name for the type of `value`, for messages.
const char* TypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "a number";
  }
}

void ExpectObject(const Json& value, const Where& where) {
  if (!value.is_object())
    where.Fail("expected an object, got ", TypeName(value));
}

void ExpectArray(const Json& value, const Where& where) {
  if (!value.is_array()) where.Fail("expected an array, got ", TypeName(value));
}

// The member `key` of `object`, or nullptr if it is missing.
const Json* Member(const Json& object, std::string_view key) {
  const auto found = object.find(std::string(key));
  return found == object.end() ? nullptr : &*found;
}

// The member `key` of `object`, which must be there.
const Json& Required(const Json& object, std::string_view key,
                     const Where& where) {
  const Json* value = Member(object, key);
  if (value == nullptr) where.Fail("missing \"", key, "\"");
  return *value;
}

std::string String(const Json& value, const Where& where) {
  if (!value.is_string())
    where.Fail("expected a string, got ", TypeName(value));
  return value.get<std::string>();
}

bool Bool(const Json& value, const Where& where) {
  if (!value.is_boolean()) {
    where.Fail("expected true or false, got ", TypeName(value));
  }
  return value.get<bool>();
}

// A member that may be missing or null: `fallback` then.
bool OptionalBool(const Json& object, std::string_view key, bool fallback,
                  const Where& where) {
  const Json* value = Member(object, key);
  if (value == nullptr || value->is_null()) return fallback;
  return Bool(*value, where / key);
}

std::optional<std::string> OptionalString(const Json& object,
                                          std::string_view key,
                                          const Where& where) {
  const Json* value = Member(object, key);
  if (value == nullptr || value->is_null()) return std::nullopt;
  return String(*value, where / key);
}

// A non-negative integer below `bound`.
int64_t Index(const Json& value, int64_t bound, const Where& where) {
  if (!value.is_number_integer() ||
      (value.is_number_integer() && !value.is_number_unsigned() &&
       value.get<int64_t>() < 0)) {
    where.Fail("expected a non-negative integer, got ",
               value.is_number() ? value.dump() : TypeName(value));
  }
  const uint64_t number = value.get<uint64_t>();
  if (number >= static_cast<uint64_t>(bound)) {
    where.Fail(number, " is not below the limit of ", bound);
  }
  return static_cast<int64_t>(number);
}

// The "type" of a component.
std::string TypeOf(const Json& value, const Where& where) {
  ExpectObject(value, where);
  return String(Required(value, "type", where), where / "type");
}

// One character (a Metaspace replacement, a Strip content).
char32_t SingleChar(const Json& value, const Where& where) {
  const std::string text = String(value, where);
  size_t pos = 0;
  if (text.empty() || !unicode::IsValidUtf8(text) ||
      (unicode::NextCodePoint(text, &pos), pos != text.size())) {
    where.Fail("expected a single character, got ", value.dump());
  }
  pos = 0;
  return unicode::NextCodePoint(text, &pos);
}

// A {"String": s} or {"Regex": r} pattern.
std::unique_ptr<Regex> Pattern(const Json& value, const Where& where) {
  ExpectObject(value, where);
  if (value.size() != 1) {
    where.Fail("expected {\"String\": ...} or {\"Regex\": ...}");
  }
  const bool literal = value.begin().key() == "String";
  if (!literal && value.begin().key() != "Regex") {
    where.Fail("unsupported pattern kind \"", value.begin().key(),
               "\" (supported: String, Regex)");
  }
  const Where inner = where / value.begin().key();
  const std::string text = String(value.begin().value(), inner);
  try {
    return std::make_unique<Regex>(text, literal);
  } catch (const Error& error) {
    inner.Fail(error.what());
  }
}

SplitBehavior Behavior(const Json& value, const Where& where) {
  const std::string name = String(value, where);
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  where.Fail("unsupported split behavior \"", name,
             "\" (supported: Removed, Isolated, MergedWithPrevious, "
             "MergedWithNext, Contiguous)");
}

// Metaspace's prepend scheme, from prepend_scheme and the older
// add_prefix_space (false means "never"), as HF reads them.
PrependScheme Scheme(const Json& object, const Where& where) {
  PrependScheme scheme = PrependScheme::kAlways;
  if (const std::optional<std::string> name =
          OptionalString(object, "prepend_scheme", where)) {
    if (*name == "always") {
      scheme = PrependScheme::kAlways;
    } else if (*name == "first") {
      scheme = PrependScheme::kFirst;
    } else if (*name == "never") {
      scheme = PrependScheme::kNever;
    } else {
      (where / "prepend_scheme")
          .Fail("unsupported prepend_scheme \"", *name,
                "\" (supported: always, first, never)");
    }
  }
  if (!OptionalBool(object, "add_prefix_space", true, where)) {
    if (scheme != PrependScheme::kNever && Member(object, "prepend_scheme")) {
      where.Fail("add_prefix_space does not match declared prepend_scheme");
    }
    scheme = PrependScheme::kNever;
  }
  return scheme;
}

// The steps of a "Sequence" component, listed under `key` and each read by
// `read_step` (a step may be a Sequence itself), as HF's sequence.rs of
// each pipeline stage holds them.
template <typename Step, typename ReadStep>
std::vector<std::unique_ptr<Step>> ReadSequence(const Json& value,
                                                const Where& where,
                                                std::string_view key,
                                                const ReadStep& read_step) {
  const Json& list = Required(value, key, where);
  const Where list_where = where / key;
  ExpectArray(list, list_where);
  std::vector<std::unique_ptr<Step>> steps;
  for (size_t i = 0; i < list.size(); ++i) {
    steps.push_back(read_step(list[i], list_where / i));
  }
  return steps;
}

std::unique_ptr<Normalizer> ReadNormalizer(const Json& value,
                                           const Where& where) {
  const std::string type = TypeOf(value, where);
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    using Form = unicode::NormalizationForm;
    const Form form = type == "NFC"    ? Form::kNfc
                      : type == "NFD"  ? Form::kNfd
                      : type == "NFKC" ? Form::kNfkc
                                       : Form::kNfkd;
    return std::make_unique<UnicodeNormalizer>(form);
  }
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(
        OptionalBool(value, "strip_left", true, where),
        OptionalBool(value, "strip_right", true, where));
  }
  if (type == "Prepend") {
    return std::make_unique<PrependNormalizer>(
        String(Required(value, "prepend", where), where / "prepend"));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(
        Pattern(Required(value, "pattern", where), where / "pattern"),
        String(Required(value, "content", where), where / "content"));
  }
  if (type == "Sequence") {
    return std::make_unique<SequenceNormalizer>(
        ReadSequence<Normalizer>(value, where, "normalizers", ReadNormalizer));
  }
  where.Fail("unsupported normalizer type \"", type,
             "\" (supported: NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, "
             "Replace, Sequence)");
}

std::unique_ptr<PreTokenizer> ReadPreTokenizer(const Json& value,
                                               const Where& where) {
  const std::string type = TypeOf(value, where);
  if (type == "Split") {
    return std::make_unique<SplitPreTokenizer>(
        Pattern(Required(value, "pattern", where), where / "pattern"),
        Behavior(Required(value, "behavior", where), where / "behavior"),
        Bool(Required(value, "invert", where), where / "invert"));
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(
        OptionalBool(value, "add_prefix_space", true, where),
        OptionalBool(value, "use_regex", true, where), /*map_bytes=*/true);
  }
  if (type == "Metaspace") {
    const char32_t replacement = SingleChar(
        Required(value, "replacement", where), where / "replacement");
    std::string text;
    unicode::AppendUtf8(replacement, text);
    return std::make_unique<MetaspacePreTokenizer>(
        text, Scheme(value, where), OptionalBool(value, "split", true, where));
  }
  if (type == "Digits") {
    return std::make_unique<DigitsPreTokenizer>(
        OptionalBool(value, "individual_digits", false, where));
  }
  if (type == "Whitespace") return std::make_unique<WhitespacePreTokenizer>();
  if (type == "WhitespaceSplit") {
    return std::make_unique<WhitespaceSplitPreTokenizer>();
  }
  if (type == "Punctuation") {
    const Json* behavior = Member(value, "behavior");
    return std::make_unique<PunctuationPreTokenizer>(
        behavior == nullptr ? SplitBehavior::kIsolated
                            : Behavior(*behavior, where / "behavior"));
  }
  if (type == "Sequence") {
    return std::make_unique<SequencePreTokenizer>(ReadSequence<PreTokenizer>(
        value, where, "pretokenizers", ReadPreTokenizer));
  }
  where.Fail("unsupported pre-tokenizer type \"", type,
             "\" (supported: Split, ByteLevel, Metaspace, Digits, Whitespace, "
             "WhitespaceSplit, Punctuation, Sequence)");
}

// The ByteLevel step that ends `pre_tokenizer`, if one does: the BPE model
// can then map the bytes itself (BpeOptions::byte_level).
ByteLevelPreTokenizer* FinalByteLevel(PreTokenizer* pre_tokenizer) {
  if (auto* byte_level = dynamic_cast<ByteLevelPreTokenizer*>(pre_tokenizer)) {
    return byte_level;
  }
  if (auto* sequence = dynamic_cast<SequencePreTokenizer*>(pre_tokenizer)) {
    if (!sequence->steps().empty()) {
      return FinalByteLevel(sequence->steps().back().get());
    }
  }
  return nullptr;
}

std::unique_ptr<BpeModel> ReadModel(const Json& value, const Where& where,
                                    bool byte_level) {
  ExpectObject(value, where);
  const Json* type = Member(value, "type");
  const std::string type_name =
      type == nullptr ? "BPE" : String(*type, where / "type");
  if (type_name != "BPE") {
    (where / "type")
        .Fail("unsupported model type \"", type_name, "\" (supported: BPE)");
  }
  if (const Json* dropout = Member(value, "dropout")) {
    if (!dropout->is_null() &&
        !(dropout->is_number() && dropout->get<double>() == 0.0)) {
      (where / "dropout")
          .Fail("unsupported dropout ", dropout->dump(),
                " (supported: null or 0; rotor encodes deterministically)");
    }
  }
  BpeOptions options;
  options.unk_token = OptionalString(value, "unk_token", where);
  options.fuse_unk = OptionalBool(value, "fuse_unk", false, where);
  options.byte_fallback = OptionalBool(value, "byte_fallback", false, where);
  options.ignore_merges = OptionalBool(value, "ignore_merges", false, where);
  options.continuing_subword_prefix =
      OptionalString(value, "continuing_subword_prefix", where).value_or("");
  options.end_of_word_suffix =
      OptionalString(value, "end_of_word_suffix", where).value_or("");
  options.byte_level = byte_level;

  const Json& vocab = Required(value, "vocab", where);
  const Where vocab_where = where / "vocab";
  ExpectObject(vocab, vocab_where);
  TokenTable table;
  table.Reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const Where entry = vocab_where / it.key();
    const TokenId id =
        static_cast<TokenId>(Index(it.value(), limits::kMaxVocabSize, entry));
    if (const std::optional<std::string_view> other = table.Token(id)) {
      entry.Fail("id ", id, " is also the id of ",
                 Json(std::string(*other)).dump(), " (each id has one token)");
    }
    table.Insert(it.key(), id);  // keys are unique: ParseJson checks
  }

  const Json& merges = Required(value, "merges", where);
  const Where merges_where = where / "merges";
  ExpectArray(merges, merges_where);
  auto model = std::make_unique<BpeModel>(std::move(table), options);
  const TokenTable& tokens = model->vocab();
  const size_t prefix_length = options.continuing_subword_prefix.size();
  std::string merged;
  for (size_t i = 0; i < merges.size(); ++i) {
    const Where entry = merges_where / i;
    const Json& merge = merges[i];
    std::string_view left, right;
    if (merge.is_string()) {
      // "a b": exactly one space.
      const std::string_view text = merge.get_ref<const std::string&>();
      const size_t space = text.find(' ');
      if (space == std::string::npos ||
          text.find(' ', space + 1) != std::string::npos) {
        entry.Fail("expected \"left right\" (two tokens, one space), got ",
                   merge.dump());
      }
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2) {
      for (size_t k = 0; k < 2; ++k) {
        if (!merge[k].is_string()) {
          (entry / k).Fail("expected a string, got ", TypeName(merge[k]));
        }
      }
      left = merge[0].get_ref<const std::string&>();
      right = merge[1].get_ref<const std::string&>();
    } else {
      entry.Fail("expected \"left right\" or [left, right], got ",
                 TypeName(merge));
    }
    const TokenId left_id = tokens.Find(left);
    const TokenId right_id = tokens.Find(right);
    if (left_id < 0 || right_id < 0) {
      entry.Fail("merge names a token not in the vocabulary: ",
                 Json(std::string(left_id < 0 ? left : right)).dump());
    }
    if (right.size() < prefix_length) {
      entry.Fail("the right token ", Json(std::string(right)).dump(),
                 " is shorter than continuing_subword_prefix");
    }
    merged.assign(left);
    merged.append(right.substr(prefix_length));
    const TokenId merged_id = tokens.Find(merged);
    if (merged_id < 0) {
      entry.Fail("the merged token ", Json(merged).dump(),
                 " is not in the vocabulary");
    }
    model->AddMerge(left_id, right_id, merged_id);
  }
  return model;
}

std::unique_ptr<PostProcessor> ReadPostProcessor(
    const Json& value, const Where& where, const HfTokenizerParts& parts) {
  const std::string type = TypeOf(value, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevelProcessor>();
  if (type == "TemplateProcessing") {
    const Json& special = Required(value, "special_tokens", where);
    const Where special_where = where / "special_tokens";
    ExpectObject(special, special_where);
    const Json& single = Required(value, "single", where);
    const Where single_where = where / "single";
    ExpectArray(single, single_where);
    std::vector<TemplateProcessor::Piece> pieces;
    for (size_t i = 0; i < single.size(); ++i) {
      const Where piece_where = single_where / i;
      const Json& piece = single[i];
      ExpectObject(piece, piece_where);
      if (piece.size() != 1) {
        piece_where.Fail(
            "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
      }
      const std::string kind = piece.begin().key();
      const Where inner = piece_where / kind;
      ExpectObject(piece.begin().value(), inner);
      if (kind == "Sequence") {
        pieces.push_back({true, {}});
        continue;
      }
      if (kind != "SpecialToken") {
        piece_where.Fail("unsupported template piece \"", kind,
                         "\" (supported: Sequence, SpecialToken)");
      }
      const std::string name =
          String(Required(piece.begin().value(), "id", inner), inner / "id");
      const Json* token = Member(special, name);
      if (token == nullptr) {
        (inner / "id").Fail("no special_tokens entry \"", name, "\"");
      }
      const Where token_where = special_where / name;
      ExpectObject(*token, token_where);
      const Json& ids = Required(*token, "ids", token_where);
      ExpectArray(ids, token_where / "ids");
      TemplateProcessor::Piece special_piece{false, {}};
      for (size_t k = 0; k < ids.size(); ++k) {
        special_piece.ids.push_back(static_cast<TokenId>(
            Index(ids[k], limits::kMaxVocabSize, token_where / "ids" / k)));
      }
      pieces.push_back(std::move(special_piece));
    }
    return std::make_unique<TemplateProcessor>(std::move(pieces));
  }
  if (type == "Sequence") {
    return std::make_unique<SequenceProcessor>(ReadSequence<PostProcessor>(
        value, where, "processors",
        [&parts](const Json& step, const Where& step_where) {
          return ReadPostProcessor(step, step_where, parts);
        }));
  }
  where.Fail("unsupported post-processor type \"", type,
             "\" (supported: TemplateProcessing, ByteLevel, Sequence)");
}

std::unique_ptr<Decoder> ReadDecoder(const Json& value, const Where& where) {
  const std::string type = TypeOf(value, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(
        Pattern(Required(value, "pattern", where), where / "pattern"),
        String(Required(value, "content", where), where / "content"));
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    return std::make_unique<StripDecoder>(
        SingleChar(Required(value, "content", where), where / "content"),
        static_cast<size_t>(Index(Required(value, "start", where),
                                  int64_t{1} << 20, where / "start")),
        static_cast<size_t>(Index(Required(value, "stop", where),
                                  int64_t{1} << 20, where / "stop")));
  }
  if (type == "Metaspace") {
    return std::make_unique<MetaspaceDecoder>(
        SingleChar(Required(value, "replacement", where),
                   where / "replacement"),
        Scheme(value, where) != PrependScheme::kNever);
  }
  if (type == "Sequence") {
    return std::make_unique<SequenceDecoder>(
        ReadSequence<Decoder>(value, where, "decoders", ReadDecoder));
  }
  where.Fail("unsupported decoder type \"", type,
             "\" (supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, "
             "Metaspace, Sequence)");
}

// The added tokens, with the ids HF would give them: a token already in the
// vocabulary keeps its id there; the others get the ids after the
// vocabulary's size, in the file's order. A file whose ids say otherwise is
// refused, as are repeated contents and ids.
void ReadAddedTokens(const Json& list, const Where& where,
                     HfTokenizerParts& parts) {
  ExpectArray(list, where);
  const TokenTable& vocab = parts.model->vocab();
  int64_t next_id = static_cast<int64_t>(vocab.size());
  std::unordered_set<std::string> contents;
  std::unordered_set<TokenId> ids;
  for (size_t i = 0; i < list.size(); ++i) {
    const Where entry = where / i;
    const Json& item = list[i];
    ExpectObject(item, entry);
    AddedToken token;
    token.id = static_cast<TokenId>(Index(Required(item, "id", entry),
                                          limits::kMaxVocabSize, entry / "id"));
    token.content = String(Required(item, "content", entry), entry / "content");
    token.special = OptionalBool(item, "special", false, entry);
    token.normalized = OptionalBool(item, "normalized", !token.special, entry);
    token.lstrip = OptionalBool(item, "lstrip", false, entry);
    token.rstrip = OptionalBool(item, "rstrip", false, entry);
    token.single_word = OptionalBool(item, "single_word", false, entry);
    if (token.content.empty()) entry.Fail("empty added token");
    if (!contents.insert(token.content).second) {
      entry.Fail("added token ", Json(token.content).dump(),
                 " is listed twice");
    }
    if (!ids.insert(token.id).second) {
      (entry / "id")
          .Fail("id ", token.id, " of added token ", Json(token.content).dump(),
                " is the id of an earlier added token");
    }
    const TokenId in_vocab = vocab.Find(token.content);
    if (in_vocab >= 0 && in_vocab != token.id) {
      (entry / "id")
          .Fail("added token ", Json(token.content).dump(), " has id ",
                token.id, " but the vocabulary gives it ", in_vocab);
    }
    if (in_vocab < 0) {
      if (const std::optional<std::string_view> other = vocab.Token(token.id)) {
        (entry / "id")
            .Fail("id ", token.id, " of added token ",
                  Json(token.content).dump(), " is the id of vocabulary token ",
                  Json(std::string(*other)).dump());
      }
      if (token.id != next_id) {
        (entry / "id")
            .Fail("added token ", Json(token.content).dump(), " has id ",
                  token.id, " where HF gives it ", next_id,
                  " (new tokens follow the vocabulary, in order)");
      }
      ++next_id;
    }
    parts.added.Add(std::move(token));
  }
}

}  // namespace

std::unique_ptr<HfTokenizer> HfTokenizer::Parse(std::string_view text,
                                                const std::string& name) {
  const Json root = ParseJson(text, name);
  const Where where(name, "");
  ExpectObject(root, where);
  HfTokenizerParts parts;
  if (const Json* value = Member(root, "normalizer");
      value && !value->is_null()) {
    parts.normalizer = ReadNormalizer(*value, where / "normalizer");
  }
  bool byte_level = false;
  if (const Json* value = Member(root, "pre_tokenizer");
      value && !value->is_null()) {
    parts.pre_tokenizer = ReadPreTokenizer(*value, where / "pre_tokenizer");
    if (ByteLevelPreTokenizer* last =
            FinalByteLevel(parts.pre_tokenizer.get())) {
      last->set_map_bytes(false);
      byte_level = true;
    }
  }
  parts.model =
      ReadModel(Required(root, "model", where), where / "model", byte_level);
  if (const Json* value = Member(root, "added_tokens");
      value && !value->is_null()) {
    ReadAddedTokens(*value, where / "added_tokens", parts);
  }
  parts.added.Build(parts.normalizer.get());
  if (const Json* value = Member(root, "post_processor");
      value && !value->is_null()) {
    parts.post_processor =
        ReadPostProcessor(*value, where / "post_processor", parts);
  }
  if (const Json* value = Member(root, "decoder"); value && !value->is_null()) {
    parts.decoder = ReadDecoder(*value, where / "decoder");
  }
  return std::make_unique<HfTokenizer>(std::move(parts), name);
}

}  // namespace rotor::train

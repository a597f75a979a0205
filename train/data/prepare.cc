#include "train/data/prepare.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/limits.h"
#include "core/memory_limit.h"
#include "core/parallel.h"
#include "core/random.h"
#include "train/data/brown.h"
#include "train/data/token_file.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {
namespace fs = std::filesystem;

namespace {

bool IsHidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

// Refuses an output that is an input, holds one or lies inside one:
// replacing it (--force) would delete input files, and a later run would
// read its own token files. Paths are compared canonically, so symlinks and
// ".." are no way around it.
void CheckNoOverlap(const PrepareOptions& options) {
  const auto canonical = [](const std::string& path) {
    std::error_code error;
    fs::path resolved = fs::weakly_canonical(path, error);
    ROTOR_CHECK(!error, "cannot resolve '", path, "': ", error.message());
    return resolved.has_filename() ? resolved : resolved.parent_path();
  };
  const auto within = [](const fs::path& path, const fs::path& folder) {
    return std::mismatch(path.begin(), path.end(), folder.begin(), folder.end())
               .second == folder.end();
  };
  const fs::path output = canonical(options.output);
  for (const std::string& input : options.inputs) {
    const fs::path resolved = canonical(input);
    ROTOR_CHECK(!within(resolved, output) && !within(output, resolved),
                "output '", options.output, "' overlaps input '", input,
                "' (the same, inside it or containing it): choose an output "
                "folder apart from every input");
  }
}

}  // namespace

std::vector<std::string> CollectInputFiles(
    const std::vector<std::string>& inputs, bool brown) {
  std::error_code error;
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    const fs::file_status status = fs::status(input, error);
    ROTOR_CHECK(fs::exists(status), "input '", input, "' does not exist");
    if (fs::is_regular_file(status)) {
      files.push_back(input);
      continue;
    }
    ROTOR_CHECK(fs::is_directory(status), "input '", input,
                "' is neither a file nor a folder");
    size_t found = 0;
    fs::recursive_directory_iterator it(input, error), end;
    ROTOR_CHECK(!error, "cannot read folder '", input, "': ", error.message());
    for (; it != end; it.increment(error)) {
      ROTOR_CHECK(!error, "cannot read folder '", input,
                  "': ", error.message());
      const fs::path& path = it->path();
      if (IsHidden(path)) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file()) continue;
      if (brown && !IsBrownDocumentName(path.filename().string())) continue;
      files.push_back(path.string());
      ++found;
    }
    ROTOR_CHECK(found > 0, "input folder '", input, "' contains no ",
                brown ? "Brown corpus files (ca01 .. cr09)" : "visible files");
  }
  std::sort(files.begin(), files.end());
  std::set<fs::path> seen;
  for (const std::string& file : files) {
    ROTOR_CHECK(seen.insert(fs::weakly_canonical(file, error)).second,
                "input file '", file,
                "' is given twice (directly and/or through a folder)");
  }
  return files;
}

namespace {

// Checks that `output` may be written; throws otherwise.
void CheckOutput(const PrepareOptions& options) {
  std::error_code error;
  const fs::file_status status = fs::status(options.output, error);
  if (!fs::exists(status)) return;
  ROTOR_CHECK(fs::is_directory(status), "output '", options.output,
              "' exists and is not a folder");
  ROTOR_CHECK(options.force || fs::is_empty(options.output, error),
              "output folder '", options.output,
              "' already exists and is not empty; pass --force to replace "
              "it");
}

struct Document {
  std::string source;
  std::string text;
};

Json SplitJson(const std::string& file_name, const PrepareSplitSummary& summary,
               const std::vector<const Document*>& documents) {
  Json sources = Json::array();
  for (const Document* document : documents) {
    sources.push_back(document->source);
  }
  return {{"file", file_name},
          {"documents", summary.documents},
          {"tokens", summary.tokens},
          {"sources", std::move(sources)}};
}

uint64_t TextBytes(const std::vector<const Document*>& documents) {
  uint64_t bytes = 0;
  for (const Document* document : documents) bytes += document->text.size();
  return bytes;
}

// <sep> doc1 <sep> doc2 ...: each document encoded without the
// post-processor's special tokens (the separator takes their place), in
// parallel, one document per task (Tokenizer::Encode is thread-safe).
std::vector<TokenId> Tokenize(const std::vector<const Document*>& documents,
                              const Tokenizer& tokenizer, TokenId separator) {
  std::vector<std::vector<TokenId>> encoded(documents.size());
  ParallelFor(static_cast<int64_t>(documents.size()), 1,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) {
                  encoded[i] = tokenizer.Encode(documents[i]->text, false);
                }
              });
  size_t total = 0;
  for (const std::vector<TokenId>& ids : encoded) total += 1 + ids.size();
  std::vector<TokenId> tokens;
  tokens.reserve(total);
  for (const std::vector<TokenId>& ids : encoded) {
    tokens.push_back(separator);
    tokens.insert(tokens.end(), ids.begin(), ids.end());
  }
  return tokens;
}

}  // namespace

std::string ReadInputFile(const std::string& file) {
  constexpr size_t kLimit = limits::kMaxTextFileBytes;
  std::error_code error;  // set for what is no regular file
  const uintmax_t size = fs::file_size(file, error);
  ROTOR_CHECK(error || size <= kLimit, file, " is ", size, " bytes (",
              FormatBytes(static_cast<double>(size)),
              "), more than the limit of ", kLimit, " bytes (",
              FormatBytes(static_cast<double>(kLimit)),
              ") for one input file, which is read whole as one document; "
              "split it into several files");
  return ReadFile(file, kLimit);
}

PrepareSummary RunPrepare(const PrepareOptions& options) {
  ROTOR_CHECK(options.val_fraction > 0.0 && options.val_fraction < 1.0,
              "val_fraction must be greater than 0 and less than 1, got ",
              options.val_fraction);
  ROTOR_CHECK(options.format == "text" || options.format == "brown",
              "format must be 'text' or 'brown', got '", options.format, "'");
  CheckNoOverlap(options);
  CheckOutput(options);  // fail before the (possibly slow) reading
  const std::unique_ptr<Tokenizer> tokenizer = LoadTokenizer(options.tokenizer);
  const TokenId separator = DocumentSeparator(*tokenizer);
  ROTOR_CHECK(tokenizer->VocabSize() <= limits::kMaxVocabSize, "tokenizer ",
              tokenizer->Name(), " has ", tokenizer->VocabSize(),
              " ids, more than token files hold (", limits::kMaxVocabSize, ")");
  const auto vocab_size = static_cast<uint32_t>(tokenizer->VocabSize());
  const std::vector<std::string> files =
      CollectInputFiles(options.inputs, options.format == "brown");
  // meta.json records the inputs and every file's name, and JSON text is
  // UTF-8: refuse other names before reading, rather than write invalid JSON.
  for (const auto* names : {&options.inputs, &files}) {
    for (const std::string& name : *names) {
      ROTOR_CHECK(IsValidUtf8(name), "input file name ", ShowAsJson(name),
                  " is not valid UTF-8 (meta.json records file names as "
                  "UTF-8 text); rename it");
    }
  }

  PrepareSummary summary;
  std::vector<Document> documents;
  for (const std::string& file : files) {
    std::string text = ReadInputFile(file);
    if (options.format == "brown") text = BrownToText(text, file);
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      summary.skipped_empty.push_back(file);
      continue;
    }
    documents.push_back({file, std::move(text)});
  }
  const size_t n = documents.size();
  ROTOR_CHECK(n > 0, "no documents: all ", files.size(),
              " input file(s) are empty");
  ROTOR_CHECK(n >= 2, "only one document (", documents[0].source,
              "); a train/validation split by document needs at least 2 "
              "files - split the text into several files");

  // Shuffle the document indices with the seed; the first n_val are
  // validation documents.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  Rng rng(options.seed);
  for (size_t i = n - 1; i > 0; --i) {
    std::swap(order[i], order[rng.Below(i + 1)]);
  }
  const size_t n_val = std::clamp<size_t>(
      static_cast<size_t>(std::llround(options.val_fraction * n)), 1, n - 1);
  std::vector<bool> is_val(n, false);
  for (size_t i = 0; i < n_val; ++i) is_val[order[i]] = true;
  std::vector<const Document*> train, val;
  for (size_t i = 0; i < n; ++i) {
    (is_val[i] ? val : train).push_back(&documents[i]);
  }

  const std::vector<TokenId> train_tokens =
      Tokenize(train, *tokenizer, separator);
  const std::vector<TokenId> val_tokens = Tokenize(val, *tokenizer, separator);
  summary.train = {train.size(), train_tokens.size()};
  summary.val = {val.size(), val_tokens.size()};

  const Json meta = {{"format", "rotor-tokens"},
                     {"format_version", kTokenFileVersion},
                     {"created_by", StrCat("rotor ", ROTOR_VERSION)},
                     {"tokenizer",
                      {{"name", tokenizer->Name()},
                       {"file", TokenizerFile(options.tokenizer).empty()
                                    ? Json(nullptr)
                                    : Json("tokenizer.json")},
                       {"vocab_size", vocab_size},
                       {"separator_id", separator},
                       {"separator", tokenizer->Decode({separator}, false)}}},
                     {"source_format", options.format},
                     {"inputs", options.inputs},
                     {"val_fraction", options.val_fraction},
                     {"seed", options.seed},
                     {"skipped_empty_files", summary.skipped_empty},
                     {"train", SplitJson("train.bin", summary.train, train)},
                     {"val", SplitJson("val.bin", summary.val, val)}};

  std::error_code ignored;
  const fs::path parent = fs::path(options.output).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ignored);
  ReplaceDirectoryAtomically(options.output, [&](const std::string& dir) {
    WriteTokenFile(dir + "/train.bin", train_tokens,
                   {vocab_size, train.size(), separator, TextBytes(train)});
    WriteTokenFile(dir + "/val.bin", val_tokens,
                   {vocab_size, val.size(), separator, TextBytes(val)});
    CopyTokenizerInto(options.tokenizer, dir);
    WriteFileAtomically(dir + "/meta.json", meta.dump(2) + "\n");
  });
  return summary;
}

}  // namespace rotor::train

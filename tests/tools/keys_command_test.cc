// `rotor keys` end to end: it prints every key path of the training config
// (or with --report the extend-report config) with its help line, from the
// field tables (core/fields.h KeyPathsOf), one per line; a SECTION keeps a
// key and the keys below it; a path that is no key is refused, naming the
// nearest one.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "core/fields.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/tools/run_rotor.h"
#include "train/config/report_config.h"
#include "train/config/train_config.h"

namespace rotor::tools {
namespace {

// Each printed line's key path and help, split at the first run of spaces.
std::vector<std::pair<std::string, std::string>> Lines(const std::string& out) {
  std::vector<std::pair<std::string, std::string>> lines;
  std::istringstream text(out);
  for (std::string line; std::getline(text, line);) {
    const size_t gap = line.find("  ");
    const size_t help = line.find_first_not_of(' ', gap);
    lines.push_back({line.substr(0, gap), line.substr(help)});
  }
  return lines;
}

// The table's entries the command keeps for `section`: the key itself and
// the keys below it (a path that only starts with the same letters is
// another key).
template <typename Struct>
std::vector<std::pair<std::string, std::string>> Expected(
    const std::string& section = "") {
  std::vector<std::pair<std::string, std::string>> expected;
  for (const KeyPaths::Entry& entry : KeyPathsOf<Struct>()) {
    if (section.empty() || entry.path == section ||
        entry.path.rfind(section + ".", 0) == 0) {
      expected.push_back({entry.path, entry.help});
    }
  }
  return expected;
}

// Whether `lines` holds each of `wanted`, as the tables spell them (so a
// bug in KeyPathsOf, which Expected shares, fails too).
void ExpectLines(
    const std::vector<std::pair<std::string, std::string>>& lines,
    const std::vector<std::pair<std::string, std::string>>& wanted) {
  for (const auto& line : wanted) {
    EXPECT_NE(std::find(lines.begin(), lines.end(), line), lines.end())
        << line.first << "  " << line.second;
  }
}

TEST(KeysCommand, PrintsEveryKeyWithItsHelp) {
  const test::TempDir dir;
  test::RotorResult r = test::RunRotor(dir, "keys");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Lines(r.out), Expected<train::TrainConfig>());
  ExpectLines(
      Lines(r.out),
      {{"model.rope_scaling",
        "the scaling method and its keys; null: default RoPE"},
       {"model.rope_scaling.beta_fast",
        "yarn: rotations within L0 above which pairs stay"},
       {"train.loss_chunk_rows", "rows of logits the loss computes at a time"},
       {"finetune.lora.target_modules",
        "the projections adapted in every layer"}});

  r = test::RunRotor(dir, "keys model.rope_scaling");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Lines(r.out), Expected<train::TrainConfig>("model.rope_scaling"));
  EXPECT_EQ(Lines(r.out).size(), 14u);  // the section, rope_type, 12 keys

  r = test::RunRotor(dir, "keys train.lr");
  EXPECT_EQ(Lines(r.out), (std::vector<std::pair<std::string, std::string>>{
                              {"train.lr", "peak learning rate"}}));

  r = test::RunRotor(dir, "keys --report");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Lines(r.out), Expected<train::ExtendReportConfig>());
  ExpectLines(Lines(r.out), {{"finetune.lora.lr",
                              "the adapters' peak rate; 0: finetune.lr"}});
}

TEST(KeysCommand, RefusesAPathThatIsNoKey) {
  const test::TempDir dir;
  const test::RotorResult r = test::RunRotor(dir, "keys model.rope_scalin");
  EXPECT_EQ(r.status, 1);
  EXPECT_CONTAINS(r.err,
                  "'model.rope_scalin' is no key of a training config, did "
                  "you mean 'model.rope_scaling'?");
}

}  // namespace
}  // namespace rotor::tools

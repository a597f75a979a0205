// ReadTextCorpus: a prepared folder gives its training split, a folder of
// text files every non-empty file.
#include "train/data/text_corpus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/limits.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/data/prepare.h"
#include "train/data/token_file.h"

namespace rotor::train {
namespace {

TEST(TextCorpus, FolderOfTextFilesGivesEveryNonEmptyFileInPathOrder) {
  test::TempDir dir;
  dir.Write("in/b.txt", "bravo\n");
  dir.Write("in/a.txt", "alpha \xFF");
  dir.Write("in/empty.txt", "");
  dir.Write("in/.hidden", "never");
  const TextCorpus corpus = ReadTextCorpus(dir.Path("in"));
  EXPECT_EQ(corpus.documents,
            (std::vector<std::string>{"alpha \xFF", "bravo\n"}));
  EXPECT_EQ(corpus.bytes, 13u);
  EXPECT_CONTAINS(corpus.description, "3 file(s)");
}

// The per-file limit of rotor prepare holds here too (a sparse file one
// byte over it, refused before it is read).
TEST(TextCorpus, RefusesAFileLargerThanTheLimit) {
  test::TempDir dir;
  dir.Write("in/a.txt", "alpha");
  dir.Write("in/big.txt", "");
  std::filesystem::resize_file(dir.Path("in/big.txt"),
                               limits::kMaxTextFileBytes + 1);
  ROTOR_EXPECT_ERROR(ReadTextCorpus(dir.Path("in")),
                     "in/big.txt is 1073741825 bytes (1.0 GiB)",
                     "limit of 1073741824 bytes");
}

TEST(TextCorpus, PreparedFolderGivesItsTrainingSplitOnly) {
  test::TempDir dir;
  const std::vector<std::string> texts = {"one doc", "two docs", "three",
                                          "four", "five"};
  for (size_t i = 0; i < texts.size(); ++i) {
    dir.Write("in/" + std::to_string(i) + ".txt", texts[i]);
  }
  PrepareOptions options;
  options.inputs = {dir.Path("in")};
  options.output = dir.Path("prepared");
  options.val_fraction = 0.2;
  const PrepareSummary summary = RunPrepare(options);
  const TextCorpus corpus = ReadTextCorpus(dir.Path("prepared"));
  EXPECT_EQ(corpus.documents.size(), summary.train.documents);
  EXPECT_EQ(corpus.bytes + summary.train.documents, summary.train.tokens);
  for (const std::string& document : corpus.documents) {
    EXPECT_NE(std::find(texts.begin(), texts.end(), document), texts.end())
        << document;
  }
  EXPECT_CONTAINS(corpus.description, "train.bin");
}

TEST(TextCorpus, RefusesNoTextAndTokensThatAreNotBytes) {
  test::TempDir dir;
  dir.Write("empty/a.txt", "");
  ROTOR_EXPECT_ERROR(ReadTextCorpus(dir.Path("empty")), "holds no text");
  ROTOR_EXPECT_ERROR(ReadTextCorpus(dir.Path("missing")), "does not exist");
  dir.Write("wide/meta.json", "{}");
  WriteTokenFile(dir.Path("wide/train.bin"), {300, 5}, {1000, 1, 300, 1});
  ROTOR_EXPECT_ERROR(ReadTextCorpus(dir.Path("wide")), "vocabulary of 1000",
                     "expected bytes");
}

}  // namespace
}  // namespace rotor::train

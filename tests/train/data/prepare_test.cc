// `rotor prepare`'s pipeline (train/data/prepare.h) end to end on temporary
// folders of small text files, and the bad inputs it must refuse without
// writing anything (its flags: tests/tools/prepare_command_test.cc).
#include "train/data/prepare.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/limits.h"
#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/data/token_file.h"
#include "train/io/atomic_file.h"
#include "train/io/json.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {
namespace {
namespace fs = std::filesystem;

PrepareOptions Options(const std::vector<std::string>& inputs,
                       const std::string& output) {
  PrepareOptions options;
  options.inputs = inputs;
  options.output = output;
  return options;
}

// Decodes a token file back to text ("<|endoftext|>" between documents).
std::string DecodeFile(const std::string& path) {
  TokenFile file(path);
  std::vector<TokenId> ids(file.size());
  file.Copy(0, file.size(), ids.data());
  return ByteTokenizer::Decode(ids);
}

TEST(Prepare, EndToEndOnAFolderOfTextFiles) {
  test::TempDir dir;
  dir.Write("corpus/b.txt", "bravo");
  dir.Write("corpus/a.txt", "alpha");
  dir.Write("corpus/sub/c.txt", "charlie\n");
  dir.Write("corpus/sub/d.txt", "delta");
  dir.Write("corpus/.hidden", "never read");
  dir.Write("corpus/.git/config", "never read");
  dir.Write("corpus/empty.txt", " \n");
  dir.Write("extra.txt", "echo");
  PrepareOptions options =
      Options({dir.Path("corpus"), dir.Path("extra.txt")}, dir.Path("out"));
  options.val_fraction = 0.4;  // 5 documents -> 2 validation
  options.seed = 3;
  const PrepareSummary summary = RunPrepare(options);
  EXPECT_EQ(summary.train.documents, 3u);
  EXPECT_EQ(summary.val.documents, 2u);
  EXPECT_EQ(summary.skipped_empty,
            (std::vector<std::string>{dir.Path("corpus/empty.txt")}));
  EXPECT_EQ(dir.List("out"),
            (std::vector<std::string>{"meta.json", "train.bin", "val.bin"}));

  // Every document lands in exactly one split, each preceded by
  // <|endoftext|>, in sorted path order within the split.
  const std::string train = DecodeFile(dir.Path("out/train.bin"));
  const std::string val = DecodeFile(dir.Path("out/val.bin"));
  const std::string all = train + val;
  for (const char* text : {"alpha", "bravo", "charlie\n", "delta", "echo"}) {
    EXPECT_EQ(
        all.find(std::string("<|endoftext|>") + text) == std::string::npos,
        false)
        << text;
  }
  EXPECT_EQ(all.find("never read"), std::string::npos);
  EXPECT_EQ(TokenFile(dir.Path("out/train.bin")).document_count(), 3u);
  EXPECT_EQ(TokenFile(dir.Path("out/train.bin")).size() +
                TokenFile(dir.Path("out/val.bin")).size(),
            summary.train.tokens + summary.val.tokens);
  EXPECT_EQ(summary.train.tokens + summary.val.tokens,
            5u + 5 + 5 + 8 + 5 + 4);  // five <|endoftext|> + the text bytes

  const Json meta = ParseJson(ReadFile(dir.Path("out/meta.json")), "meta.json");
  EXPECT_EQ(meta["tokenizer"]["vocab_size"], 257);
  EXPECT_EQ(meta["tokenizer"]["separator_id"], 256);
  EXPECT_EQ(meta["tokenizer"]["separator"], "<|endoftext|>");
  EXPECT_TRUE(meta["tokenizer"]["file"].is_null());
  EXPECT_FALSE(fs::exists(dir.Path("out/tokenizer.json")));
  EXPECT_EQ(meta["seed"], 3u);
  EXPECT_DOUBLE_EQ(meta["val_fraction"].get<double>(), 0.4);
  EXPECT_EQ(meta["val"]["documents"], 2u);
  EXPECT_EQ(meta["train"]["tokens"], summary.train.tokens);
  EXPECT_EQ(meta["train"]["sources"].size(), 3u);
  EXPECT_EQ(meta["source_format"], "text");

  // Same seed, same split; --force replaces; another seed changes it.
  options.force = true;
  RunPrepare(options);
  EXPECT_EQ(DecodeFile(dir.Path("out/val.bin")), val);
  bool some_seed_differs = false;
  for (uint64_t seed = 4; seed < 10 && !some_seed_differs; ++seed) {
    options.seed = seed;
    RunPrepare(options);
    some_seed_differs = DecodeFile(dir.Path("out/val.bin")) != val;
  }
  EXPECT_TRUE(some_seed_differs);
  EXPECT_EQ(dir.List(),
            (std::vector<std::string>{"corpus", "extra.txt", "out"}));
}

TEST(Prepare, BrownFormatTakesOnlyCorpusFilesAndCleansThem) {
  test::TempDir dir;
  dir.Write("brown/ca01", "\tThe/at jury/nn ./.\n");
  dir.Write("brown/cb02", "\t``/`` Yes/rb ''/'' ./.\n");
  dir.Write("brown/README", "BROWN CORPUS\n");
  dir.Write("brown/CONTENTS", "A. PRESS\n");
  PrepareOptions options = Options({dir.Path("brown")}, dir.Path("out"));
  options.format = "brown";
  const PrepareSummary summary = RunPrepare(options);
  EXPECT_EQ(summary.train.documents + summary.val.documents, 2u);
  const std::string all = DecodeFile(dir.Path("out/train.bin")) +
                          DecodeFile(dir.Path("out/val.bin"));
  EXPECT_NE(all.find("<|endoftext|>The jury.\n"), std::string::npos) << all;
  EXPECT_NE(all.find("<|endoftext|>\"Yes.\"\n"), std::string::npos) << all;
}

// An output that is an input, contains one or lies inside one is refused
// even with --force (which would delete the inputs), also through a symlink,
// "..", a trailing slash or any of several inputs; nothing is touched.
TEST(Prepare, RefusesAnOutputOverlappingAnInput) {
  test::TempDir dir;
  dir.Write("corpus/a.txt", "alpha");
  dir.Write("corpus/b.txt", "bravo");
  dir.Write("corpus/sub/c.txt", "charlie");
  dir.Write("other/d.txt", "delta");
  std::filesystem::create_directory_symlink(dir.Path("corpus"),
                                            dir.Path("link"));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{dir.Path("corpus")}, dir.Path("corpus")},
      {{dir.Path("corpus")}, dir.Path("corpus/")},
      {{dir.Path("corpus/sub")}, dir.Path("corpus")},
      {{dir.Path("corpus/a.txt"), dir.Path("other")}, dir.Path("corpus")},
      {{dir.Path("corpus")}, dir.Path("corpus/sub")},
      {{dir.Path("corpus")}, dir.Path("corpus/new")},
      {{dir.Path("other"), dir.Path("corpus")}, dir.Path("link")},
      {{dir.Path("link/sub")}, dir.Path("other/../corpus")},
      {{dir.Path("other")}, dir.Path("link/../other/x")}};
  for (const auto& [inputs, output] : cases) {
    PrepareOptions options = Options(inputs, output);
    options.force = true;
    ROTOR_EXPECT_ERROR(RunPrepare(options), "output '", "' overlaps input '",
                       "choose an output folder apart from every input");
  }
  EXPECT_EQ(dir.List(), (std::vector<std::string>{"corpus", "link", "other"}));
  EXPECT_EQ(dir.List("corpus"),
            (std::vector<std::string>{"a.txt", "b.txt", "sub"}));
  EXPECT_EQ(ReadFile(dir.Path("corpus/sub/c.txt")), "charlie");
  EXPECT_EQ(dir.List("other"), (std::vector<std::string>{"d.txt"}));
}

TEST(Prepare, RefusesBadInputsAndWritesNothing) {
  test::TempDir dir;
  dir.Write("one/a.txt", "alpha");
  dir.Write("two/a.txt", "alpha");
  dir.Write("two/b.txt", "bravo");
  dir.Write("empties/a.txt", "");
  dir.Write("empties/b.txt", "\n");
  std::filesystem::create_directories(dir.Path("nothing/.hidden"));
  dir.Write("existing/keep.txt", "precious");
  dir.Write("plain.txt", "not tagged at all");

  ROTOR_EXPECT_ERROR(RunPrepare(Options({dir.Path("missing")}, dir.Path("o"))),
                     "input '", "missing' does not exist");
  ROTOR_EXPECT_ERROR(RunPrepare(Options({dir.Path("nothing")}, dir.Path("o"))),
                     "contains no visible files");
  ROTOR_EXPECT_ERROR(RunPrepare(Options({dir.Path("empties")}, dir.Path("o"))),
                     "no documents", "2 input file(s) are empty");
  ROTOR_EXPECT_ERROR(RunPrepare(Options({dir.Path("one")}, dir.Path("o"))),
                     "only one document", "one/a.txt", "at least 2");
  ROTOR_EXPECT_ERROR(
      RunPrepare(
          Options({dir.Path("two"), dir.Path("two/b.txt")}, dir.Path("o"))),
      "b.txt' is given twice");
  ROTOR_EXPECT_ERROR(
      RunPrepare(Options({dir.Path("two")}, dir.Path("existing"))),
      "output folder", "existing' already exists", "--force");
  ROTOR_EXPECT_ERROR(
      RunPrepare(Options({dir.Path("two")}, dir.Path("plain.txt"))),
      "plain.txt' exists and is not a folder");
  PrepareOptions brown =
      Options({dir.Path("plain.txt"), dir.Path("two/a.txt")}, dir.Path("o"));
  brown.format = "brown";
  ROTOR_EXPECT_ERROR(RunPrepare(brown), "plain.txt", "line 1", "'not'",
                     "--format text");
  brown.inputs = {dir.Path("two")};
  ROTOR_EXPECT_ERROR(RunPrepare(brown), "no Brown corpus files");

  EXPECT_EQ(ReadFile(dir.Path("existing/keep.txt")), "precious");
  EXPECT_EQ(dir.List(),
            (std::vector<std::string>{"empties", "existing", "nothing", "one",
                                      "plain.txt", "two"}));
}

// A file is one document, read whole: one larger than
// limits::kMaxTextFileBytes (here a sparse file one byte over, which costs
// no disk) is refused before it is read, naming the file, its size and the
// limit. Before, a 3 GB sparse file was read and ended in "out of memory".
TEST(Prepare, RefusesAFileLargerThanTheLimitBeforeReadingIt) {
  test::TempDir dir;
  dir.Write("in/a.txt", "alpha");
  dir.Write("in/big.txt", "");
  fs::resize_file(dir.Path("in/big.txt"), limits::kMaxTextFileBytes + 1);
  ROTOR_EXPECT_ERROR(RunPrepare(Options({dir.Path("in")}, dir.Path("o"))),
                     "in/big.txt is 1073741825 bytes (1.0 GiB)",
                     "the limit of 1073741824 bytes (1.0 GiB) for one input "
                     "file",
                     "split it");
  EXPECT_FALSE(fs::exists(dir.Path("o")));
}

// meta.json lists every source file, and JSON text is UTF-8: a file name
// that is not (a Latin-1 "caf\xe9.txt") is refused before anything is read
// or written, named with its bad byte shown as U+FFFD.
TEST(Prepare, RefusesFileNamesThatAreNotUtf8) {
  test::TempDir dir;
  dir.Write("in/good.txt", "alpha");
  dir.Write("in/caf\xe9.txt", "bravo");
  ROTOR_EXPECT_ERROR(RunPrepare(Options({dir.Path("in")}, dir.Path("o"))),
                     "input file name \"", "in/caf\xef\xbf\xbd.txt\"",
                     "is not valid UTF-8");
  EXPECT_FALSE(std::filesystem::exists(dir.Path("o")));
  // Valid UTF-8 names ("café") are recorded as they are.
  std::filesystem::rename(dir.Path("in/caf\xe9.txt"),
                          dir.Path("in/caf\xc3\xa9.txt"));
  RunPrepare(Options({dir.Path("in")}, dir.Path("o")));
  EXPECT_CONTAINS(ReadFile(dir.Path("o/meta.json")), "caf\xc3\xa9.txt");
}

}  // namespace
}  // namespace rotor::train

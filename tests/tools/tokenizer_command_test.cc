// build/rotor tokenizer train|encode|decode as a user runs them: exit status
// 0 on success, 2 for bad flags, 1 for bad input, messages on stderr.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/temp_dir.h"
#include "tests/tools/run_rotor.h"
#include "train/io/atomic_file.h"

namespace rotor::tools {
namespace {

using Result = test::RotorResult;

// Runs `build/rotor tokenizer ARGS` (ARGS already shell-quoted).
Result RunTokenizer(const test::TempDir& dir, const std::string& args) {
  return test::RunRotor(dir, "tokenizer " + args);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(TokenizerCommand, TrainsEncodesAndDecodes) {
  test::TempDir dir;
  dir.Write("in/a.txt", "the cat sat on the mat. the cat sat.\n");
  dir.Write("in/b.txt", "then the hat, the bat and the cat.\n");
  const std::string in = "'" + dir.Path("in") + "'";
  const std::string json = "'" + dir.Path("tok.json") + "'";

  Result r = RunTokenizer(
      dir, "train --input " + in + " --vocab-size 270 --output " + json);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "read 2 documents")) << r.out;
  EXPECT_TRUE(Contains(r.out, "vocab 270 (1 special, 256 bytes, 13 merges)"))
      << r.out;

  // The same output again: refused without --force, replaced with it.
  r = RunTokenizer(
      dir, "train --input " + in + " --vocab-size 270 --output " + json);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.err, "rotor tokenizer train: error: --output " +
                                  dir.Path("tok.json") +
                                  " already exists; pass --force"))
      << r.err;
  const std::string first = train::ReadFile(dir.Path("tok.json"));
  r = RunTokenizer(dir, "train --input " + in + " --vocab-size 270 --output " +
                            json + " --force --threads 2");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(train::ReadFile(dir.Path("tok.json")), first);

  r = RunTokenizer(dir, "encode --tokenizer " + json + " --text 'the cat'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string ids = r.out.substr(0, r.out.size() - 1);
  r = RunTokenizer(dir,
                   "encode --tokenizer " + json + " --text 'the cat' --json");
  EXPECT_EQ(r.out,
            "[" + std::string(ids).replace(ids.find(' '), 1, ", ") + "]\n");
  r = RunTokenizer(dir, "decode --tokenizer " + json + " --ids '" + ids + "'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "the cat");
  dir.Write("ids.txt", "[0, 84]");
  r = RunTokenizer(dir, "decode --tokenizer " + json + " --input '" +
                            dir.Path("ids.txt") + "' --skip-special-tokens");
  EXPECT_EQ(r.out, "t");  // id 0 is <|endoftext|>, 84 is 't' (1 + 116 - 33)

  // The byte tokenizer's BOS, <|endoftext|>, first with special tokens.
  r = RunTokenizer(dir, "encode --tokenizer byte --text 'Hi'");
  EXPECT_EQ(r.out, "256 72 105\n");
  r = RunTokenizer(
      dir, "encode --tokenizer byte --text 'Hi' --no-add-special-tokens");
  EXPECT_EQ(r.out, "72 105\n");
}

TEST(TokenizerCommand, UsageAndInputErrors) {
  test::TempDir dir;
  dir.Write("in/a.txt", "text");
  dir.Write("empty/a.txt", "");
  const std::string in = "'" + dir.Path("in") + "'";
  const std::string out = " --output '" + dir.Path("t.json") + "'";

  Result r =
      RunTokenizer(dir, "train --input " + in + " --vocab-size 256" + out);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "--vocab-size")) << r.err;
  r = RunTokenizer(dir, "train --input " + in +
                            " --vocab-size 257 --special-token a "
                            "--special-token b" +
                            out);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err,
                       "rotor tokenizer train: --vocab-size: expects "
                       "at least 258 (256 bytes + 2 special tokens), "
                       "got 257"))
      << r.err;
  r = RunTokenizer(dir, "train --input " + in +
                            " --vocab-size 300 --special-token a "
                            "--special-token a" +
                            out);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "'a' is given twice")) << r.err;
  r = RunTokenizer(dir, "train --input " + in + " --vocab-size 1048577" + out);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "[257, 1048576]")) << r.err;
  r = RunTokenizer(
      dir, "train --input '" + dir.Path("empty") + "' --vocab-size 300" + out);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.err, "holds no text")) << r.err;
  r = RunTokenizer(dir, "train --input " + in +
                            " --vocab-size 300 --split-pattern '(' " + out);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.err, "split pattern \"(\"")) << r.err;

  r = RunTokenizer(dir, "encode --tokenizer byte");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "Exactly 1 option from [--text,--input]"))
      << r.err;
  r = RunTokenizer(dir, "encode --tokenizer byte --text a --input b");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "2 were given")) << r.err;
  // The empty text is a text: the BOS alone, or no ids for bytes, an
  // empty JSON array.
  r = RunTokenizer(dir, "encode --tokenizer byte --text '' --json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[256]\n");
  r = RunTokenizer(
      dir, "encode --tokenizer byte --text '' --json --no-add-special-tokens");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[]\n");
  r = RunTokenizer(dir, "decode --tokenizer byte --ids '1, 2 x'");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "--ids: item 2 ('x') is not an integer"))
      << r.err;
  r = RunTokenizer(dir, "decode --tokenizer byte --ids '1 2 300'");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.err, "token 2")) << r.err;
  r = RunTokenizer(dir, "decode --tokenizer byte --ids '[1, 2.5]'");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(Contains(r.err, "item 1 ('2.5')")) << r.err;
  r = RunTokenizer(dir, "");
  EXPECT_EQ(r.status, 2);
}

}  // namespace
}  // namespace rotor::tools

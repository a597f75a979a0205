// The RULER-style retrieval tasks' prompts and training rows: prompts of the
// exact length in the tokens of bytes, Llama 3, a SentencePiece-style BPE
// and a rotor-trained BPE, with the needle at its depth and the values
// decoding back; the same seed gives the same examples; training rows of
// prompt and answer that score the answer only, mixed beside the passkey
// rows without touching them.
#include "train/data/retrieval_examples.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "tests/train/data/prompt_tokenizers.h"
#include "train/data/passkey.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {
namespace {

TEST(RetrievalExamples, EveryTokenizerGetsTheExactLengthDepthAndValues) {
  const test::TempDir dir;
  for (const auto& tokenizer : test::PromptTokenizers(dir)) {
    SCOPED_TRACE(tokenizer->Name());
    const RetrievalMaker maker(*tokenizer, 2048);
    Rng rng(3);
    for (const RetrievalTask task : AllRetrievalTasks()) {
      for (const int64_t length : {int64_t{1024}, int64_t{2048}}) {
        for (const double depth : {0.0, 0.4, 1.0}) {
          SCOPED_TRACE(testing::Message() << RetrievalTaskName(task) << " "
                                          << length << " " << depth);
          const RetrievalExample example = maker.Make(task, length, depth, rng);
          EXPECT_EQ(static_cast<int64_t>(example.prompt.size()) +
                        example.max_new_tokens,
                    length);
          EXPECT_EQ(example.prompt[0], DocumentSeparator(*tokenizer));
          // The answer's tokens: every value, in the order expected.
          EXPECT_EQ(static_cast<int64_t>(example.answer.size()) +
                        kRetrievalAnswerSlack,
                    example.max_new_tokens);
          const std::string answer = tokenizer->Decode(example.answer, false);
          size_t from = 0;
          for (const std::string& value : example.expected) {
            from = answer.find(value, from);
            ASSERT_NE(from, std::string::npos) << answer;
          }
          // The needle asked about after round(depth * F) filler tokens.
          const TokenSpan asked = example.needles[0];
          int64_t before = asked.first - example.context_start;
          for (const TokenSpan& other : example.needles) {
            if (other.first < asked.first) before -= other.count;
          }
          EXPECT_EQ(before, std::llround(depth * example.filler_tokens));
          const std::string needle =
              test::SpanText(*tokenizer, example.prompt, asked);
          if (task == RetrievalTask::kVariableTracking) {
            ASSERT_EQ(example.expected.size(), 5u);
            EXPECT_NE(needle.find("VAR " + example.expected[0] + " = "),
                      std::string::npos)
                << needle;
            // The chain's hops follow its first assignment, in order.
            for (size_t i = 1; i < example.needles.size(); ++i) {
              EXPECT_GT(example.needles[i].first, example.needles[i - 1].first);
              EXPECT_NE(
                  test::SpanText(*tokenizer, example.prompt, example.needles[i])
                      .find("VAR " + example.expected[i] + " = VAR " +
                            example.expected[i - 1]),
                  std::string::npos);
            }
          } else {
            EXPECT_NE(needle.find("One of the special magic numbers for "),
                      std::string::npos)
                << needle;
            EXPECT_NE(needle.find(" is: " + example.expected[0] + "."),
                      std::string::npos)
                << needle;
            // Every value decodes back from its own needle.
            for (size_t i = 0; i < example.expected.size(); ++i) {
              EXPECT_NE(
                  test::SpanText(*tokenizer, example.prompt, example.needles[i])
                      .find(example.expected[i]),
                  std::string::npos);
              EXPECT_EQ(example.expected[i].size(), 7u);
            }
            const size_t needles = task == RetrievalTask::kNiahSingle ? 1 : 4;
            EXPECT_EQ(example.needles.size(), needles);
          }
          const std::string text = tokenizer->Decode(example.prompt, true);
          const std::string end =
              task == RetrievalTask::kVariableTracking
                  ? "variables are assigned the value"
                  : (task == RetrievalTask::kNiahMultivalue
                         ? " mentioned in the provided text are"
                         : " mentioned in the provided text is");
          EXPECT_NE(text.find(end, text.size() - 60), std::string::npos)
              << text.substr(text.size() - 60);
        }
      }
    }
  }
}

TEST(RetrievalExamples, SameSeedSameExamples) {
  const ByteTokenizer bytes;
  const RetrievalMaker maker(bytes, 1500);
  for (const RetrievalTask task : AllRetrievalTasks()) {
    Rng a(9), b(9), c(10);
    const RetrievalExample x = maker.Make(task, 1500, 0.5, a);
    const RetrievalExample y = maker.Make(task, 1500, 0.5, b);
    EXPECT_EQ(x.prompt, y.prompt);
    EXPECT_EQ(x.expected, y.expected);
    EXPECT_NE(maker.Make(task, 1500, 0.5, c).expected, x.expected);
  }
  Rng rng(1);
  ROTOR_EXPECT_ERROR(maker.Make(RetrievalTask::kNiahMultivalue, 300, 0.5, rng),
                     "niah_multivalue", "needs at least");
  ROTOR_EXPECT_ERROR(ParseRetrievalTasks("niah_single,niah"), "'niah'",
                     "variable_tracking");
  // A task named twice would be run and reported twice.
  ROTOR_EXPECT_ERROR(ParseRetrievalTasks("niah_single,variable_tracking,"
                                         "niah_single"),
                     "retrieval task 'niah_single' is given twice in "
                     "'niah_single,variable_tracking,niah_single'");
  EXPECT_EQ(ParseRetrievalTasks("variable_tracking,niah_single"),
            (std::vector<RetrievalTask>{RetrievalTask::kVariableTracking,
                                        RetrievalTask::kNiahSingle}));
}

// RetrievalMinLength holds every example of its task in every tokenizer,
// and a training row of RetrievalRowMinLength tokens holds a draw of every
// task (over many more rows than that length was sampled on; a longer draw
// is drawn again), far below the byte bound in a BPE: what lets a BPE model
// practise the tasks at L = 256. A task name
// round-trips while an unknown one is refused naming the tasks.
TEST(RetrievalExamples, MinLengthHoldsEveryExampleInEveryTokenizer) {
  const test::TempDir dir;
  for (const auto& tokenizer : test::PromptTokenizers(dir)) {
    SCOPED_TRACE(tokenizer->Name());
    const RetrievalMaker maker(*tokenizer, 1024);
    for (const RetrievalTask task : AllRetrievalTasks()) {
      SCOPED_TRACE(RetrievalTaskName(task));
      const int64_t row = RetrievalRowMinLength(maker, task);
      EXPECT_LE(row + kRetrievalAnswerSlack, RetrievalMinLength(task));
      Rng rng(11);
      for (int i = 0; i < 500; ++i) {
        EXPECT_NO_THROW(
            maker.Make(task, RetrievalMinLength(task), rng.Uniform(), rng));
        EXPECT_NO_THROW(maker.MakeRow(task, row, rng.Uniform(), rng));
      }
    }
  }
  for (const RetrievalTask task : AllRetrievalTasks()) {
    EXPECT_EQ(RetrievalTaskFromName(RetrievalTaskName(task)), task);
  }
  EXPECT_FALSE(RetrievalTaskFromName("niah"));
  ROTOR_EXPECT_ERROR(ParseRetrievalTasks("niah_single,niah"),
                     "unknown retrieval task 'niah'", "variable_tracking");
}

// A batch of `rows` rows of `seq` tokens, all `fill`.
Batch FilledBatch(int64_t rows, int64_t seq, TokenId fill) {
  Batch batch;
  batch.batch_size = rows;
  batch.seq_len = seq;
  batch.inputs.assign(rows * seq, fill);
  batch.targets.assign(rows * seq, fill);
  return batch;
}

// Row `row`'s scored targets, and whether they end the row as one run.
std::vector<TokenId> ScoredTail(const Batch& batch, int64_t row, bool* run) {
  const int64_t seq = batch.seq_len;
  std::vector<TokenId> scored;
  int64_t first = seq;
  for (int64_t t = 0; t < seq; ++t) {
    const TokenId target = batch.targets[row * seq + t];
    if (target == kPasskeyIgnoredTarget) continue;
    first = std::min(first, t);
    scored.push_back(target);
  }
  *run = first + static_cast<int64_t>(scored.size()) == seq;
  return scored;
}

// Every row is a prompt and its answer, seq_len + 1 tokens shifted into
// inputs and targets, and only the answer is scored: its values are those
// of a needle in the row (the chain's variables for variable_tracking),
// after the task's answer prefix. Each row depends on its index only.
TEST(RetrievalMix, RowsAreAPromptAndItsAnswerWithOnlyTheAnswerScored) {
  const test::TempDir dir;
  for (const auto& tokenizer : test::PromptTokenizers(dir)) {
    SCOPED_TRACE(tokenizer->Name());
    const int64_t rows = 8, seq = 700;
    const RetrievalMaker maker(*tokenizer, seq + 1 + kRetrievalAnswerSlack);
    Batch batch = FilledBatch(rows, seq, 1);
    MixRetrievalExamples(batch, maker, AllRetrievalTasks(), 0.0, 1.0, 8, 100);
    std::map<std::string, int> prefixes;
    for (int64_t row = 0; row < rows; ++row) {
      SCOPED_TRACE(row);
      const TokenId* inputs = batch.inputs.data() + row * seq;
      const TokenId* targets = batch.targets.data() + row * seq;
      EXPECT_EQ(inputs[0], DocumentSeparator(*tokenizer));
      bool run = false;
      const std::vector<TokenId> scored = ScoredTail(batch, row, &run);
      ASSERT_FALSE(scored.empty());
      EXPECT_TRUE(run);
      // Targets are the inputs shifted by one.
      for (int64_t t = 0; t + 1 < seq; ++t) {
        if (targets[t] != kPasskeyIgnoredTarget) {
          EXPECT_EQ(targets[t], inputs[t + 1]);
        }
      }
      const std::string prompt = tokenizer->Decode(
          std::vector<TokenId>(inputs, inputs + seq - scored.size() + 1),
          false);
      const std::string answer = tokenizer->Decode(scored, false);
      // " v1, v2, ...": each value was in the context before the question.
      size_t start = answer.find_first_not_of(' ');
      ASSERT_NE(start, std::string::npos) << answer;
      int values = 0;
      while (start < answer.size()) {
        const size_t end = std::min(answer.find(", ", start), answer.size());
        const std::string value = answer.substr(start, end - start);
        EXPECT_NE(prompt.find(value), std::string::npos) << value;
        ++values;
        start = end + 2;
      }
      for (const char* prefix :
           {" mentioned in the provided text is",
            " mentioned in the provided text are", "they are:"}) {
        const std::string ending(prefix);
        if (prompt.size() >= ending.size() &&
            prompt.compare(prompt.size() - ending.size(), ending.size(),
                           ending) == 0) {
          ++prefixes[ending];
          EXPECT_EQ(values, ending == " mentioned in the provided text is"
                                ? 1
                                : (ending == "they are:" ? 5 : 4))
              << answer;
        }
      }
    }
    int ended = 0;
    for (const auto& [ending, count] : prefixes) ended += count;
    EXPECT_EQ(ended, rows);  // every row ends with a task's answer prefix
    // A resumed run: rows 102 and 103 alone mix as in the whole batch.
    Batch part = FilledBatch(2, seq, 1);
    MixRetrievalExamples(part, maker, AllRetrievalTasks(), 0.0, 1.0, 8, 102);
    EXPECT_TRUE(std::equal(part.inputs.begin(), part.inputs.end(),
                           batch.inputs.begin() + 2 * seq));
    EXPECT_TRUE(std::equal(part.targets.begin(), part.targets.end(),
                           batch.targets.begin() + 2 * seq));
  }
}

// Mixed with passkey rows, the passkey rows are exactly those of the
// passkey mix alone, the retrieval rows take the next share of the rows'
// draws, every task is drawn, and the rest stays text.
TEST(RetrievalMix, PasskeyRowsStayAndTheSharesAreDisjoint) {
  const ByteTokenizer bytes;
  const int64_t rows = 8, seq = 700;
  const PasskeyMaker passkeys(bytes, seq + 1);
  const RetrievalMaker maker(bytes, seq + 1 + kRetrievalAnswerSlack);
  const std::vector<RetrievalTask> tasks = AllRetrievalTasks();
  int64_t passkey = 0, retrieval = 0, text = 0;
  std::map<std::string, int64_t> introductions;
  for (uint64_t index = 0; index < 100; ++index) {
    Batch alone = FilledBatch(rows, seq, 'x');
    MixPasskeyExamples(alone, passkeys, 0.5, PasskeyLoss::kRetrieval, 3,
                       index * rows);
    Batch both = alone;
    MixRetrievalExamples(both, maker, tasks, 0.5, 0.25, 3, index * rows);
    Batch without = alone;
    MixRetrievalExamples(without, maker, tasks, 0.5, 0.0, 3, index * rows);
    EXPECT_EQ(without.inputs, alone.inputs);  // fraction 0: untouched
    for (int64_t row = 0; row < rows; ++row) {
      const auto in = [&](const Batch& b) {
        return std::vector<TokenId>(b.inputs.begin() + row * seq,
                                    b.inputs.begin() + (row + 1) * seq);
      };
      if (alone.inputs[row * seq] != 'x') {
        ++passkey;
        EXPECT_EQ(in(both), in(alone));
      } else if (both.inputs[row * seq] != 'x') {
        ++retrieval;
        // The task's introduction follows the separator.
        const std::vector<TokenId> tokens = in(both);
        ++introductions[ByteTokenizer::Decode(
            std::vector<TokenId>(tokens.begin() + 1, tokens.begin() + 21))];
      } else {
        ++text;
      }
    }
  }
  EXPECT_NEAR(passkey / 800.0, 0.5, 0.06);
  EXPECT_NEAR(retrieval / 800.0, 0.25, 0.05);
  EXPECT_NEAR(text / 800.0, 0.25, 0.05);
  // niah_single and niah_multikey share an introduction: 3 distinct ones.
  EXPECT_EQ(introductions.size(), 3u);
}

TEST(RetrievalMix, BadSharesAndShortRowsAreRefused) {
  const ByteTokenizer bytes;
  const RetrievalMaker maker(bytes, 705);
  Batch batch = FilledBatch(2, 700, 'x');
  ROTOR_EXPECT_ERROR(
      MixRetrievalExamples(batch, maker, AllRetrievalTasks(), 0.75, 0.5, 1, 0),
      "add up to at most 1", "0.75 and 0.5");
  ROTOR_EXPECT_ERROR(MixRetrievalExamples(batch, maker, {}, 0.0, 0.5, 1, 0),
                     "no task");
  Batch short_rows = FilledBatch(2, 200, 'x');
  ROTOR_EXPECT_ERROR(
      MixRetrievalExamples(short_rows, maker, {RetrievalTask::kNiahMultivalue},
                           0.0, 1.0, 1, 0),
      "niah_multivalue example needs at least", "got 205");
  // The practice's first phase computes its shares as ratios.
  for (const double p : {0.1, 0.3, 0.7, 0.9}) {
    const double passkey = p / (p + 0.2);
    EXPECT_TRUE(RowSharesFit(passkey, 1.0 - passkey)) << p;
  }
  EXPECT_FALSE(RowSharesFit(0.5, 0.51));
  EXPECT_FALSE(RowSharesFit(-0.1, 0.5));
}

}  // namespace
}  // namespace rotor::train

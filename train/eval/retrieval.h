// RULER-style retrieval tasks (Hsieh et al. 2024, "RULER: What's the Real
// Context Size of Your Long-Context Language Models?"), built offline in the
// tokens of any tokenizer and scored by greedy generation:
//
//   niah_single        one needle "One of the special magic numbers for
//                      {key} is: {value}." in the filler; asked for {key}.
//   niah_multikey      the same needle among 3 distractor needles with other
//                      keys.
//   niah_multivalue    4 needles with one key and 4 values; asked for all.
//   variable_tracking  a chain "VAR A = 12345", "VAR B = VAR A", ... (4 hops)
//                      in the filler; asked for every variable that holds
//                      the value.
//
// A prompt is the tokenizer's document separator, the task's introduction,
// the context (filler cut by tokens, as for the passkey, with the needles
// placed in it) and the question ending with the answer prefix ("... The
// special magic number for {key} mentioned in the provided text is"). As in
// RULER, the requested length L holds the prompt and the tokens to
// generate: the prompt has exactly L - max_new_tokens tokens, where
// max_new_tokens is what the expected answer takes (its values joined by
// ", ") plus 4. The needle asked about (the first value's, the chain's
// first assignment) sits after round(depth * F) of the F filler tokens;
// distractors, the other values and the chain's later hops take positions
// drawn from the seeded generator (the hops after the first assignment, in
// order). Keys are adjective-noun words from a fixed list, values 7-digit
// numbers, variables 5 capital letters and their value 5 digits (RULER's).
//
// An example is correct when every expected value appears in the decoded
// continuation (RULER's string_match_all is the fraction that appears,
// averaged; both are reported). docs/context-extension.md, "Retrieval
// tasks", says where rotor's versions differ from RULER's.
#ifndef ROTOR_TRAIN_EVAL_RETRIEVAL_H_
#define ROTOR_TRAIN_EVAL_RETRIEVAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/fields.h"
#include "core/limits.h"
#include "core/random.h"
#include "nn/transformer.h"
#include "train/data/prompt_tokens.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

enum class RetrievalTask {
  kNiahSingle,
  kNiahMultikey,
  kNiahMultivalue,
  kVariableTracking,
};

// "niah_single", ... <-> RetrievalTask. RefuseRetrievalTask is the message
// for a name that is no task (naming the known ones); ParseRetrievalTasks
// reads a comma list and throws it, or for a task named twice.
const char* RetrievalTaskName(RetrievalTask task);
std::optional<RetrievalTask> RetrievalTaskFromName(const std::string& name);
std::string RefuseRetrievalTask(const std::string& given);
std::vector<RetrievalTask> ParseRetrievalTasks(const std::string& list);
// The four tasks, in the order above.
const std::vector<RetrievalTask>& AllRetrievalTasks();

// The fewest tokens that hold an example of `task` (prompt and answer) for
// every key and every tokenizer: its text's bytes without filler, with the
// longest key, plus the answer slack. As for PasskeyMinLength, each token
// of a piece carries at least one of its (ASCII) characters.
int64_t RetrievalMinLength(RetrievalTask task);

struct RetrievalExample {
  RetrievalTask task = RetrievalTask::kNiahSingle;
  std::vector<TokenId> prompt;        // L - max_new_tokens tokens; BOS first
  int64_t max_new_tokens = 0;         // the tokens left for the answer
  std::vector<std::string> expected;  // what the answer must contain
  int64_t context_start = 0;          // the first token after the intro
  // Each needle's tokens in the prompt ("\n<needle>\n"), the one asked about
  // (or the chain's first assignment) first, then in the order they were
  // drawn.
  std::vector<TokenSpan> needles;
  int64_t filler_tokens = 0;  // F
};

// Makes retrieval examples in one tokenizer's tokens (kept by reference).
class RetrievalMaker {
 public:
  // Filler from the Landmark passage, for examples of up to `max_length`
  // tokens.
  RetrievalMaker(const Tokenizer& tokenizer, int64_t max_length);
  // Filler cut from `filler` (e.g. TokenFileFiller of val.bin).
  RetrievalMaker(const Tokenizer& tokenizer, std::vector<TokenId> filler);

  // One example of `task` of `length` tokens (prompt and answer) with the
  // needle asked about at `depth`; keys and values drawn from `rng`.
  // Throws rotor::Error if depth is outside [0, 1] or the length cannot
  // hold the task's text (naming the task and the tokens it needs).
  RetrievalExample Make(RetrievalTask task, int64_t length, double depth,
                        Rng& rng) const;

 private:
  PromptParts parts_;
};

// RULER's string_match_all for one output: the fraction of `expected`
// found in `output`, ignoring case.
double RetrievalMatchFraction(const std::string& output,
                              const std::vector<std::string>& expected);

// Accuracy over tasks x lengths x depths.
struct RetrievalEvalOptions {
  std::vector<RetrievalTask> tasks;
  std::vector<int64_t> lengths;  // tokens per example, prompt and answer
  std::vector<double> depths = {0.0, 0.25, 0.5, 0.75, 1.0};
  int64_t trials = 10;  // examples per (task, length, depth)
  uint64_t seed = 1;    // the same examples for every model
  // The token stream filler is cut from; empty: the Landmark passage.
  std::vector<TokenId> filler;
};

struct RetrievalCell {
  RetrievalTask task = RetrievalTask::kNiahSingle;
  int64_t length = 0;
  double depth = 0.0;
  int64_t trials = 0;
  int64_t correct = 0;     // examples with every expected value written
  double match_sum = 0.0;  // the sum of RetrievalMatchFraction
  double accuracy() const {
    return trials > 0 ? static_cast<double>(correct) / trials : 0.0;
  }
  // RULER's string_match_all: the mean fraction of values written.
  double string_match_all() const {
    return trials > 0 ? match_sum / static_cast<double>(trials) : 0.0;
  }
};

// Its JSON keys (train/io/json.h, RecordJson): the report's results files
// store the counts, rotor eval --json shows the accuracies.
template <typename Visitor>
void VisitFields(Visitor& v, RetrievalCell& c) {
  v(Key{"task", "the task (niah_single, ...)"}, c.task,
    field::Choice<RetrievalTask>{RetrievalTaskName, RetrievalTaskFromName,
                                 RefuseRetrievalTask, "a task name"});
  v(Key{"length", "context length L: the prompt and answer tokens"}, c.length,
    field::Int{1, limits::kMaxPositions});
  v(Key{"depth",
        "where the needle asked about sits (0 = start, 1 = end of the "
        "filler)"},
    c.depth, field::Real{0.0, 1.0});
  v(Key{"trials", "examples"}, c.trials, field::Int{1, limits::kMaxEvalTrials},
    StoredLast{});
  v(Key{"correct", "examples with every expected value written"}, c.correct,
    field::Int{0, limits::kMaxEvalTrials});
  v(Key{"match_sum", "the sum over examples of the share of values written"},
    c.match_sum, field::Real{0.0, static_cast<double>(limits::kMaxEvalTrials)},
    StoredOnly{});
  v(Key{"accuracy", "correct / trials"}, c.accuracy(), field::Real{0.0, 1.0},
    ShownOnly{});
  v(Key{"string_match_all", "RULER's string_match_all: match_sum / trials"},
    c.string_match_all(), field::Real{0.0, 1.0}, ShownOnly{});
}

// One cell per (task, length, depth), tasks outer, then lengths. Each
// example is answered by greedy generation with a KV cache (temperature 0,
// max_new_tokens of the example), the prompts of one task and length that
// share a prompt length in batches (GenerateTokensInBatches). Examples
// depend only on the options and the tokenizer: the same seed gives the
// same examples.
std::vector<RetrievalCell> EvaluateRetrieval(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const RetrievalEvalOptions& options);

// The accuracy (whole answers) and RULER's string_match_all over the cells
// of one task and length (all depths), or nullopt when none was measured.
std::optional<double> RetrievalAccuracyAt(
    const std::vector<RetrievalCell>& cells, RetrievalTask task,
    int64_t length);
std::optional<double> RetrievalMatchAt(const std::vector<RetrievalCell>& cells,
                                       RetrievalTask task, int64_t length);
// The accuracy over every task measured at `length` (all depths; the tasks
// weigh as their examples), or nullopt when none was.
std::optional<double> RetrievalMeanAccuracyAt(
    const std::vector<RetrievalCell>& cells, int64_t length);

// Whether any example was answered, even in part (RULER's string_match_all
// above 0): any value written is retrieval forming.
bool AnyRetrievalAnswered(const std::vector<RetrievalCell>& cells);

// Why no retrieval question is answered, as a clause: a model learns
// retrieval only in training, and rotor's practise only the passkey
// (data.passkey_fraction, `passkey_fraction` for `whose` model, e.g. "this
// model"). rotor eval and extend-report each add what to try.
std::string RetrievalUnansweredReason(double passkey_fraction,
                                      const std::string& whose);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EVAL_RETRIEVAL_H_

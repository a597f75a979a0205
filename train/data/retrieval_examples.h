// RULER-style retrieval tasks (Hsieh et al. 2024, "RULER: What's the Real
// Context Size of Your Long-Context Language Models?"), built offline in the
// tokens of any tokenizer: the prompts train/eval/retrieval.h scores by
// greedy generation, and the training rows that teach them
// (data.retrieval_fraction, MixRetrievalExamples):
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
// ", ") plus kRetrievalAnswerSlack. The needle asked about (the first
// value's, the chain's first assignment) sits after round(depth * F) of the
// F filler tokens; distractors, the other values and the chain's later hops
// take positions drawn from the seeded generator (the hops after the first
// assignment, in order). Keys are adjective-noun words from a fixed list,
// values 7-digit numbers, variables 5 capital letters and their value 5
// digits (RULER's). docs/context-extension.md, "Retrieval tasks", says where
// rotor's versions differ from RULER's.
//
// A training row is a prompt followed by its answer " v1, v2, ...", with
// only the answer's tokens scored (like PasskeyLoss::kRetrieval: the filler
// and the needles cannot be predicted from the context, the answer can).
#ifndef ROTOR_TRAIN_DATA_RETRIEVAL_EXAMPLES_H_
#define ROTOR_TRAIN_DATA_RETRIEVAL_EXAMPLES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/random.h"
#include "train/data/batches.h"
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

// Tokens generated past the expected answer.
inline constexpr int64_t kRetrievalAnswerSlack = 4;

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
  // The expected answer " v1, v2, ..." as tokens after the prompt
  // (max_new_tokens - kRetrievalAnswerSlack of them).
  std::vector<TokenId> answer;
  int64_t context_start = 0;  // the first token after the intro
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
  // A training row: prompt and answer of exactly `row` tokens (no slack).
  // Keys and values are drawn again, up to kRetrievalRowDraws times, while
  // their text does not fit (see RetrievalRowMinLength), then as Make.
  RetrievalExample MakeRow(RetrievalTask task, int64_t row, double depth,
                           Rng& rng) const;

  const Tokenizer& tokenizer() const { return parts_.tokenizer; }

 private:
  // Make with up to `draws` draws of the task's text.
  RetrievalExample Build(RetrievalTask task, int64_t length, double depth,
                         Rng& rng, int draws) const;

  PromptParts parts_;
};

// Draws of a training row's keys and values before a row too short for
// them is refused.
inline constexpr int kRetrievalRowDraws = 64;

// The most tokens a training row of `task` took over a fixed sample of 64
// draws in `maker`'s tokenizer (prompt and answer, no filler): the row
// length train.seq_len + 1 must hold it. Keys and values change the count
// by a few tokens (niah_multikey's four keys the most), so a rarer, longer
// draw can exceed it: MakeRow then draws again, which at this length
// succeeds within kRetrievalRowDraws draws all but never (the chance that
// one draw does not fit is about 1 in 64 or less).
int64_t RetrievalRowMinLength(const RetrievalMaker& maker, RetrievalTask task);

// Whether shares `passkey` and `retrieval` of the rows fit in a batch:
// both >= 0 and their sum at most 1, up to the rounding of shares computed
// as ratios (the practice's first phase: p / (p + r) and 1 - that).
bool RowSharesFit(double passkey, double retrieval);

// Replaces the rows of `batch` that the per-row draw of MixPasskeyExamples
// (the same `seed` and `first_row`) puts in [passkey_fraction,
// passkey_fraction + retrieval_fraction) by retrieval rows: a task drawn
// uniformly from `tasks`, the needle at a depth drawn as a passkey's (0
// with probability kPasskeyStartShare, else uniform), the prompt and its
// answer as seq_len + 1 tokens (inputs the first seq_len, targets the last
// seq_len, every target but the answer's kPasskeyIgnoredTarget). So the
// passkey rows are those MixPasskeyExamples alone picks, no row is both,
// and each row is a pure function of (seed, its index in the run's
// stream). retrieval_fraction 0 leaves the batch untouched; the two
// fractions must add up to at most 1 and `tasks` must not be empty.
void MixRetrievalExamples(Batch& batch, const RetrievalMaker& maker,
                          const std::vector<RetrievalTask>& tasks,
                          double passkey_fraction, double retrieval_fraction,
                          uint64_t seed, uint64_t first_row);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_RETRIEVAL_EXAMPLES_H_

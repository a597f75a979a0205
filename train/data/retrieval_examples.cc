#include "train/data/retrieval_examples.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "train/data/passkey.h"

namespace rotor::train {

namespace {

constexpr RetrievalTask kTasks[] = {
    RetrievalTask::kNiahSingle, RetrievalTask::kNiahMultikey,
    RetrievalTask::kNiahMultivalue, RetrievalTask::kVariableTracking};

// Keys are "<adjective>-<noun>" (RULER draws them from wonderwords' lists).
constexpr const char* kAdjectives[] = {
    "ancient", "bitter", "brave",  "bright",  "calm",  "clever", "crimson",
    "curious", "dusty",  "eager",  "early",   "faint", "fancy",  "fierce",
    "gentle",  "golden", "hollow", "humble",  "icy",   "jolly",  "lively",
    "lucky",   "misty",  "noisy",  "patient", "quiet", "rapid",  "rusty",
    "silent",  "silver", "tender", "wild"};
constexpr const char* kNouns[] = {
    "anchor", "badger",  "basket", "beacon", "bridge",  "candle", "canyon",
    "castle", "cherry",  "comet",  "desert", "dragon",  "falcon", "forest",
    "garden", "harbor",  "island", "kettle", "lantern", "meadow", "mirror",
    "orchid", "pebble",  "pepper", "piano",  "rabbit",  "river",  "saddle",
    "temple", "thunder", "violin", "walnut"};

constexpr int kNiahValueDigits = 7;
constexpr int kChainValueDigits = 5;
constexpr int kDistractors = 3;  // niah_multikey: RULER's 4 keys
constexpr int kValues = 4;       // niah_multivalue: RULER's 4 values
constexpr int kHops = 4;         // variable_tracking: 5 variables

// An adjective-noun key not in `taken`.
std::string NewKey(Rng& rng, std::vector<std::string>& taken) {
  constexpr uint64_t kAdjectiveCount = std::size(kAdjectives);
  constexpr uint64_t kNounCount = std::size(kNouns);
  while (true) {
    std::string key = std::string(kAdjectives[rng.Below(kAdjectiveCount)]) +
                      "-" + kNouns[rng.Below(kNounCount)];
    if (std::find(taken.begin(), taken.end(), key) == taken.end()) {
      taken.push_back(key);
      return key;
    }
  }
}

// A number of `digits` digits without a leading zero, not in `taken`.
std::string NewNumber(Rng& rng, int digits, std::vector<std::string>& taken) {
  while (true) {
    std::string number(1, static_cast<char>('1' + rng.Below(9)));
    for (int i = 1; i < digits; ++i) {
      number.push_back(static_cast<char>('0' + rng.Below(10)));
    }
    if (std::find(taken.begin(), taken.end(), number) == taken.end()) {
      taken.push_back(number);
      return number;
    }
  }
}

// A variable name of 5 capital letters, not in `taken`.
std::string NewVariable(Rng& rng, std::vector<std::string>& taken) {
  while (true) {
    std::string name;
    for (int i = 0; i < 5; ++i) {
      name.push_back(static_cast<char>('A' + rng.Below(26)));
    }
    if (std::find(taken.begin(), taken.end(), name) == taken.end()) {
      taken.push_back(name);
      return name;
    }
  }
}

std::string Needle(const std::string& key, const std::string& value) {
  return "One of the special magic numbers for " + key + " is: " + value + ".";
}

// The text of one example before it is placed in the filler.
struct TaskText {
  std::string introduction;
  std::vector<std::string> needles;  // the one asked about first
  bool in_order = false;             // later needles follow the first
  std::string question;              // ends with the answer prefix
  std::vector<std::string> expected;
};

// RULER's NIAH prompt for one key: one value or all of them.
TaskText NiahText(const std::string& key, bool several_values) {
  TaskText text;
  if (several_values) {
    text.introduction =
        "Some special magic numbers are hidden within the following text. "
        "Make sure to memorize it. I will quiz you about the numbers "
        "afterwards.\n";
    text.question = "What are all the special magic numbers for " + key +
                    " mentioned in the provided text? The special magic "
                    "numbers for " +
                    key + " mentioned in the provided text are";
  } else {
    text.introduction =
        "A special magic number is hidden within the following text. Make "
        "sure to memorize it. I will quiz you about the number afterwards.\n";
    text.question = "What is the special magic number for " + key +
                    " mentioned in the provided text? The special magic "
                    "number for " +
                    key + " mentioned in the provided text is";
  }
  return text;
}

// The task's text with keys and values drawn from `rng`.
TaskText ComposeTask(RetrievalTask task, Rng& rng) {
  std::vector<std::string> keys, values;
  if (task == RetrievalTask::kVariableTracking) {
    std::vector<std::string> names;
    for (int i = 0; i <= kHops; ++i) NewVariable(rng, names);
    const std::string value = NewNumber(rng, kChainValueDigits, values);
    TaskText text;
    text.introduction =
        "Memorize and track the chain(s) of variable assignment hidden in "
        "the following text.\n";
    text.needles.push_back("VAR " + names[0] + " = " + value);
    for (int i = 1; i <= kHops; ++i) {
      text.needles.push_back("VAR " + names[i] + " = VAR " + names[i - 1]);
    }
    text.in_order = true;
    text.question =
        "Question: Find all variables that are assigned the value " + value +
        " in the text above. Answer: According to the chain(s) of variable "
        "assignment in the text above, " +
        std::to_string(kHops + 1) + " variables are assigned the value " +
        value + ", they are:";
    text.expected = names;
    return text;
  }
  const std::string key = NewKey(rng, keys);
  TaskText text = NiahText(key, task == RetrievalTask::kNiahMultivalue);
  const int own_values = task == RetrievalTask::kNiahMultivalue ? kValues : 1;
  for (int i = 0; i < own_values; ++i) {
    text.expected.push_back(NewNumber(rng, kNiahValueDigits, values));
    text.needles.push_back(Needle(key, text.expected.back()));
  }
  if (task == RetrievalTask::kNiahMultikey) {
    for (int i = 0; i < kDistractors; ++i) {
      const std::string other = NewKey(rng, keys);
      text.needles.push_back(
          Needle(other, NewNumber(rng, kNiahValueDigits, values)));
    }
  }
  return text;
}

// `parts` joined with `separator`.
std::string Joined(const std::vector<std::string>& parts,
                   const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    out += (i > 0 ? separator : "") + parts[i];
  }
  return out;
}

// A task's text in a tokenizer's tokens, each piece encoded in text.
struct TaskTokens {
  std::vector<TokenId> introduction;
  std::vector<std::vector<TokenId>> needles;  // "\n<needle>\n" each
  std::vector<TokenId> question;              // "\n<question>"
  std::vector<TokenId> answer;                // " v1, v2, ..."
  // The tokens of an example without filler and slack: BOS and the rest.
  int64_t size() const {
    int64_t total = 1 + static_cast<int64_t>(introduction.size() +
                                             question.size() + answer.size());
    for (const std::vector<TokenId>& needle : needles) {
      total += static_cast<int64_t>(needle.size());
    }
    return total;
  }
};

TaskTokens EncodeTask(const Tokenizer& tokenizer, const TaskText& text) {
  TaskTokens tokens;
  tokens.introduction = EncodeInText(tokenizer, text.introduction);
  for (const std::string& needle : text.needles) {
    tokens.needles.push_back(EncodeInText(tokenizer, "\n" + needle + "\n"));
  }
  tokens.question = EncodeInText(tokenizer, "\n" + text.question);
  tokens.answer = EncodeInText(tokenizer, " " + Joined(text.expected, ", "));
  return tokens;
}

}  // namespace

const char* RetrievalTaskName(RetrievalTask task) {
  switch (task) {
    case RetrievalTask::kNiahSingle:
      return "niah_single";
    case RetrievalTask::kNiahMultikey:
      return "niah_multikey";
    case RetrievalTask::kNiahMultivalue:
      return "niah_multivalue";
    case RetrievalTask::kVariableTracking:
      return "variable_tracking";
  }
  return "?";
}

std::optional<RetrievalTask> RetrievalTaskFromName(const std::string& name) {
  for (RetrievalTask task : kTasks) {
    if (name == RetrievalTaskName(task)) return task;
  }
  return std::nullopt;
}

std::string RefuseRetrievalTask(const std::string& given) {
  return StrCat("unknown retrieval task '", given,
                "'; the tasks are niah_single, niah_multikey, "
                "niah_multivalue and variable_tracking");
}

std::vector<RetrievalTask> ParseRetrievalTasks(const std::string& list) {
  std::vector<RetrievalTask> tasks;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, comma - start);
    const std::optional<RetrievalTask> task = RetrievalTaskFromName(name);
    if (!task) throw Error(RefuseRetrievalTask(name));
    ROTOR_CHECK(std::find(tasks.begin(), tasks.end(), *task) == tasks.end(),
                "retrieval task '", name, "' is given twice in '", list, "'");
    tasks.push_back(*task);
    start = comma + 1;
  }
  return tasks;
}

const std::vector<RetrievalTask>& AllRetrievalTasks() {
  static const std::vector<RetrievalTask> all(std::begin(kTasks),
                                              std::end(kTasks));
  return all;
}

int64_t RetrievalMinLength(RetrievalTask task) {
  Rng rng(0);
  TaskText text = ComposeTask(task, rng);
  if (task != RetrievalTask::kVariableTracking) {
    // Variable names and values have fixed lengths; keys do not.
    const auto longest = [](const auto& words) {
      return std::string(*std::max_element(
          std::begin(words), std::end(words), [](const char* a, const char* b) {
            return std::string_view(a).size() < std::string_view(b).size();
          }));
    };
    const std::string key = longest(kAdjectives) + "-" + longest(kNouns);
    TaskText widest = NiahText(key, task == RetrievalTask::kNiahMultivalue);
    for (size_t i = 0; i < text.needles.size(); ++i) {
      widest.needles.push_back(Needle(key, std::string(kNiahValueDigits, '1')));
    }
    widest.expected = text.expected;
    text = widest;
  }
  // BOS, the introduction, "\n" + question, each "\n<needle>\n", and the
  // answer " v1, v2, ..." with its slack.
  int64_t bytes = 1 + static_cast<int64_t>(text.introduction.size()) + 1 +
                  static_cast<int64_t>(text.question.size()) + 1 +
                  static_cast<int64_t>(Joined(text.expected, ", ").size()) +
                  kRetrievalAnswerSlack;
  for (const std::string& needle : text.needles) {
    bytes += static_cast<int64_t>(needle.size()) + 2;
  }
  return bytes;
}

RetrievalMaker::RetrievalMaker(const Tokenizer& tokenizer, int64_t max_length)
    : parts_(tokenizer, LandmarkFiller(tokenizer, max_length)) {}

RetrievalMaker::RetrievalMaker(const Tokenizer& tokenizer,
                               std::vector<TokenId> filler)
    : parts_(tokenizer, std::move(filler)) {}

RetrievalExample RetrievalMaker::Make(RetrievalTask task, int64_t length,
                                      double depth, Rng& rng) const {
  return Build(task, length, depth, rng, 1);
}

RetrievalExample RetrievalMaker::MakeRow(RetrievalTask task, int64_t row,
                                         double depth, Rng& rng) const {
  return Build(task, row + kRetrievalAnswerSlack, depth, rng,
               kRetrievalRowDraws);
}

RetrievalExample RetrievalMaker::Build(RetrievalTask task, int64_t length,
                                       double depth, Rng& rng,
                                       int draws) const {
  ROTOR_CHECK(depth >= 0.0 && depth <= 1.0,
              "retrieval: depth must be in [0, 1], got ", depth);
  TaskText text = ComposeTask(task, rng);
  TaskTokens pieces = EncodeTask(parts_.tokenizer, text);
  // Keys and values of other lengths until the text fits.
  for (int draw = 1;
       draw < draws && pieces.size() + kRetrievalAnswerSlack > length; ++draw) {
    text = ComposeTask(task, rng);
    pieces = EncodeTask(parts_.tokenizer, text);
  }
  const int64_t needed = pieces.size() + kRetrievalAnswerSlack;
  RetrievalExample example;
  example.task = task;
  example.expected = text.expected;
  example.answer = std::move(pieces.answer);
  example.max_new_tokens =
      static_cast<int64_t>(example.answer.size()) + kRetrievalAnswerSlack;
  const std::vector<TokenId>& introduction = pieces.introduction;
  const std::vector<TokenId>& question = pieces.question;
  const std::vector<std::vector<TokenId>>& needles = pieces.needles;
  ROTOR_CHECK(length >= needed, "retrieval: a ", RetrievalTaskName(task),
              " example needs at least ", needed, " tokens of ",
              parts_.tokenizer.Name(), ", got ", length,
              "; set a longer length");
  const int64_t filler = length - needed;
  parts_.CheckFiller(filler, length, "retrieval");
  example.filler_tokens = filler;
  // Where each needle goes, in filler tokens before it.
  const int64_t first =
      static_cast<int64_t>(std::llround(depth * static_cast<double>(filler)));
  const int64_t from = text.in_order ? first : 0;
  std::vector<int64_t> others;
  for (size_t i = 1; i < needles.size(); ++i) {
    others.push_back(from + static_cast<int64_t>(rng.Below(
                                static_cast<uint64_t>(filler - from + 1))));
  }
  if (text.in_order) std::sort(others.begin(), others.end());
  std::vector<std::pair<int64_t, size_t>> placed = {{first, 0}};
  for (size_t i = 1; i < needles.size(); ++i) {
    placed.push_back({others[i - 1], i});
  }
  std::sort(placed.begin(), placed.end());

  std::vector<TokenId>& tokens = example.prompt;
  tokens.reserve(static_cast<size_t>(length - example.max_new_tokens));
  tokens.push_back(parts_.separator);
  tokens.insert(tokens.end(), introduction.begin(), introduction.end());
  example.context_start = static_cast<int64_t>(tokens.size());
  example.needles.resize(needles.size());
  int64_t cursor = 0;
  for (const auto& [position, index] : placed) {
    tokens.insert(tokens.end(), parts_.filler.begin() + cursor,
                  parts_.filler.begin() + position);
    cursor = position;
    example.needles[index] = {static_cast<int64_t>(tokens.size()),
                              static_cast<int64_t>(needles[index].size())};
    tokens.insert(tokens.end(), needles[index].begin(), needles[index].end());
  }
  tokens.insert(tokens.end(), parts_.filler.begin() + cursor,
                parts_.filler.begin() + filler);
  tokens.insert(tokens.end(), question.begin(), question.end());
  return example;
}

int64_t RetrievalRowMinLength(const RetrievalMaker& maker, RetrievalTask task) {
  // Enough draws to meet the longer keys and the values whose digits split
  // into the most tokens.
  constexpr int kDraws = 64;
  Rng rng(0x726f77);  // "row"
  int64_t longest = 0;
  for (int i = 0; i < kDraws; ++i) {
    longest = std::max(
        longest, EncodeTask(maker.tokenizer(), ComposeTask(task, rng)).size());
  }
  return longest;
}

bool RowSharesFit(double passkey, double retrieval) {
  constexpr double kRounding = 1e-12;
  return passkey >= 0.0 && retrieval >= 0.0 &&
         passkey + retrieval <= 1.0 + kRounding;
}

void MixRetrievalExamples(Batch& batch, const RetrievalMaker& maker,
                          const std::vector<RetrievalTask>& tasks,
                          double passkey_fraction, double retrieval_fraction,
                          uint64_t seed, uint64_t first_row) {
  ROTOR_CHECK(RowSharesFit(passkey_fraction, retrieval_fraction),
              "retrieval mix: the passkey and retrieval fractions must be "
              ">= 0 and add up to at most 1, got ",
              passkey_fraction, " and ", retrieval_fraction);
  if (retrieval_fraction == 0.0) return;
  ROTOR_CHECK(!tasks.empty(), "retrieval mix: no task to draw rows from");
  const int64_t seq = batch.seq_len;
  for (int64_t row = 0; row < batch.batch_size; ++row) {
    // The draw MixPasskeyExamples makes first for this row.
    Rng rng = PasskeyItemRng(seed, first_row + static_cast<uint64_t>(row));
    const double share = rng.Uniform();
    if (share < passkey_fraction ||
        share >= passkey_fraction + retrieval_fraction) {
      continue;
    }
    const RetrievalTask task = tasks[rng.Below(tasks.size())];
    const double depth =
        rng.Uniform() < kPasskeyStartShare ? 0.0 : rng.Uniform();
    // seq + 1 tokens of prompt and answer: the slack is not generated here.
    const RetrievalExample example = maker.MakeRow(task, seq + 1, depth, rng);
    std::vector<TokenId> tokens = example.prompt;
    tokens.insert(tokens.end(), example.answer.begin(), example.answer.end());
    std::copy(tokens.begin(), tokens.end() - 1,
              batch.inputs.begin() + row * seq);
    TokenId* targets = batch.targets.data() + row * seq;
    std::copy(tokens.begin() + 1, tokens.end(), targets);
    // Target t is token t + 1: keep the answer's.
    const int64_t answer = static_cast<int64_t>(example.prompt.size());
    for (int64_t t = 0; t + 1 < answer; ++t) targets[t] = kPasskeyIgnoredTarget;
  }
}

}  // namespace rotor::train

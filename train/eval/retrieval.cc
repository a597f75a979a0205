#include "train/eval/retrieval.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>
#include <utility>

#include "core/autograd.h"
#include "core/error.h"
#include "train/data/passkey.h"
#include "train/eval/generate.h"

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
constexpr int kDistractors = 3;      // niah_multikey: RULER's 4 keys
constexpr int kValues = 4;           // niah_multivalue: RULER's 4 values
constexpr int kHops = 4;             // variable_tracking: 5 variables
constexpr int64_t kAnswerSlack = 4;  // tokens to generate past the answer

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

// `text` in lower case (ASCII).
std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(c));
  return text;
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
                  kAnswerSlack;
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
  ROTOR_CHECK(depth >= 0.0 && depth <= 1.0,
              "retrieval: depth must be in [0, 1], got ", depth);
  const TaskText text = ComposeTask(task, rng);
  RetrievalExample example;
  example.task = task;
  example.expected = text.expected;
  example.max_new_tokens =
      static_cast<int64_t>(
          EncodeInText(parts_.tokenizer, " " + Joined(text.expected, ", "))
              .size()) +
      kAnswerSlack;
  const std::vector<TokenId> introduction =
      EncodeInText(parts_.tokenizer, text.introduction);
  const std::vector<TokenId> question =
      EncodeInText(parts_.tokenizer, "\n" + text.question);
  std::vector<std::vector<TokenId>> needles;
  int64_t needed = 1 +
                   static_cast<int64_t>(introduction.size() + question.size()) +
                   example.max_new_tokens;
  for (const std::string& needle : text.needles) {
    needles.push_back(EncodeInText(parts_.tokenizer, "\n" + needle + "\n"));
    needed += static_cast<int64_t>(needles.back().size());
  }
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

double RetrievalMatchFraction(const std::string& output,
                              const std::vector<std::string>& expected) {
  if (expected.empty()) return 1.0;
  const std::string lower = Lower(output);
  int64_t found = 0;
  for (const std::string& value : expected) {
    found += lower.find(Lower(value)) != std::string::npos ? 1 : 0;
  }
  return static_cast<double>(found) / static_cast<double>(expected.size());
}

std::vector<RetrievalCell> EvaluateRetrieval(
    nn::Transformer& model, const Tokenizer& tokenizer,
    const RetrievalEvalOptions& options) {
  ROTOR_CHECK(options.trials >= 1, "retrieval eval: trials must be >= 1, got ",
              options.trials);
  NoGradGuard no_grad;
  int64_t longest = 0;
  for (const int64_t length : options.lengths) {
    longest = std::max(longest, length);
  }
  const RetrievalMaker maker = options.filler.empty()
                                   ? RetrievalMaker(tokenizer, longest)
                                   : RetrievalMaker(tokenizer, options.filler);
  std::vector<RetrievalCell> cells;
  for (const RetrievalTask task : options.tasks) {
    for (const int64_t length : options.lengths) {
      // Every example of the task at this length, depths outer, answered
      // by greedy generation in batches of prompts of one length.
      std::vector<RetrievalExample> examples;
      for (size_t d = 0; d < options.depths.size(); ++d) {
        // Examples depend on (seed, task, length, depth index) only.
        Rng rng = PasskeyItemRng(options.seed,
                                 ((static_cast<uint64_t>(task) + 1) * 1000003 +
                                  static_cast<uint64_t>(length)) *
                                         1000 +
                                     d);
        for (int64_t trial = 0; trial < options.trials; ++trial) {
          examples.push_back(maker.Make(task, length, options.depths[d], rng));
        }
      }
      std::vector<std::vector<TokenId>> prompts;
      std::vector<int64_t> max_new_tokens;
      for (const RetrievalExample& example : examples) {
        prompts.push_back(example.prompt);
        max_new_tokens.push_back(example.max_new_tokens);
      }
      SamplingOptions greedy;
      greedy.temperature = 0.0;
      const std::vector<std::vector<TokenId>> answers = GenerateTokensInBatches(
          model, tokenizer, prompts, max_new_tokens, greedy);
      for (size_t d = 0; d < options.depths.size(); ++d) {
        RetrievalCell cell;
        cell.task = task;
        cell.length = length;
        cell.depth = options.depths[d];
        cell.trials = options.trials;
        for (int64_t trial = 0; trial < options.trials; ++trial) {
          const size_t i = d * static_cast<size_t>(options.trials) +
                           static_cast<size_t>(trial);
          const double match = RetrievalMatchFraction(
              tokenizer.Decode(answers[i], false), examples[i].expected);
          cell.match_sum += match;
          cell.correct += match == 1.0 ? 1 : 0;
        }
        cells.push_back(cell);
      }
    }
  }
  return cells;
}

namespace {

// sum(part(cell)) / sum(trials) over the cells at `length` of `task`, or
// of every task when there is none.
template <typename Part>
std::optional<double> ShareAt(const std::vector<RetrievalCell>& cells,
                              std::optional<RetrievalTask> task, int64_t length,
                              Part part) {
  double numerator = 0.0;
  int64_t trials = 0;
  for (const RetrievalCell& cell : cells) {
    if ((task && cell.task != *task) || cell.length != length) continue;
    numerator += part(cell);
    trials += cell.trials;
  }
  if (trials == 0) return std::nullopt;
  return numerator / static_cast<double>(trials);
}

}  // namespace

std::optional<double> RetrievalAccuracyAt(
    const std::vector<RetrievalCell>& cells, RetrievalTask task,
    int64_t length) {
  return ShareAt(cells, task, length, [](const RetrievalCell& c) {
    return static_cast<double>(c.correct);
  });
}

std::optional<double> RetrievalMatchAt(const std::vector<RetrievalCell>& cells,
                                       RetrievalTask task, int64_t length) {
  return ShareAt(cells, task, length,
                 [](const RetrievalCell& c) { return c.match_sum; });
}

std::optional<double> RetrievalMeanAccuracyAt(
    const std::vector<RetrievalCell>& cells, int64_t length) {
  return ShareAt(cells, std::nullopt, length, [](const RetrievalCell& c) {
    return static_cast<double>(c.correct);
  });
}

bool AnyRetrievalAnswered(const std::vector<RetrievalCell>& cells) {
  for (const RetrievalCell& cell : cells) {
    if (cell.correct > 0 || cell.match_sum > 0.0) return true;
  }
  return false;
}

std::string RetrievalUnansweredReason(double passkey_fraction,
                                      const std::string& whose) {
  return StrCat(
      "a model answers RULER's questions only if it learned retrieval in "
      "training (rotor's models practise only the passkey: "
      "data.passkey_fraction, ",
      passkey_fraction, " for ", whose,
      "), and a small model that never did scores 0% on every task "
      "(docs/context-extension.md, 7.8)");
}

}  // namespace rotor::train

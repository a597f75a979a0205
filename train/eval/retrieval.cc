#include "train/eval/retrieval.h"

#include <algorithm>
#include <cctype>

#include "core/autograd.h"
#include "core/error.h"
#include "train/data/passkey.h"
#include "train/eval/generate.h"

namespace rotor::train {

namespace {

// `text` in lower case (ASCII).
std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(c));
  return text;
}

}  // namespace

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
      "training (data.retrieval_fraction practises these tasks, "
      "data.passkey_fraction the passkey: ",
      passkey_fraction, " for ", whose,
      "), and a small model that never did scores 0% on every task "
      "(docs/context-extension.md, 7.8)");
}

}  // namespace rotor::train

// Runs llama_cpp_reference.mjs (the real llama.cpp through node-llama-cpp,
// and @huggingface/gguf's reader) on a GGUF file rotor wrote. Installed
// into the cache by scripts/fetch_llama_cpp.sh; the tests skip, naming
// that command, when it is not there.
#ifndef ROTOR_TESTS_TRAIN_GGUF_LLAMA_CPP_REFERENCE_H_
#define ROTOR_TESTS_TRAIN_GGUF_LLAMA_CPP_REFERENCE_H_

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "train/data/data_dir.h"
#include "train/eval/score.h"
#include "train/io/atomic_file.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::test {

inline constexpr char kFetchLlamaCpp[] = "bash scripts/fetch_llama_cpp.sh";

inline std::string LlamaCppPackages() {
  return train::CacheDir() + "/llama-cpp-3.21.1";
}

// "" when node and the packages are there; otherwise why not.
inline std::string MissingLlamaCpp() {
  if (std::system("node --version >/dev/null 2>&1") != 0) {
    return std::string(
               "node is not on the PATH (sudo apt-get install npm), "
               "then run: ") +
           kFetchLlamaCpp;
  }
  if (!std::filesystem::is_directory(LlamaCppPackages() + "/node_modules")) {
    return LlamaCppPackages() +
           " is missing; install it with: " + kFetchLlamaCpp;
  }
  return "";
}

struct LlamaCppRequest {
  std::string gguf;
  std::vector<std::string> texts;   // to tokenize
  bool special_tokens = false;      // cut special tokens out of the texts
  std::vector<train::TokenId> ids;  // to score
  int64_t context = 0;              // 0: ids.size()
};

// The script's JSON (see llama_cpp_reference.mjs); fails the test and
// returns null when node fails.
inline nlohmann::json RunLlamaCpp(const LlamaCppRequest& request,
                                  const std::string& work_dir) {
  nlohmann::json json = {{"gguf", request.gguf},
                         {"texts", request.texts},
                         {"ids", request.ids},
                         {"special_tokens", request.special_tokens}};
  if (request.context > 0) json["context"] = request.context;
  const std::string input = work_dir + "/llama_cpp_request.json";
  const std::string output = work_dir + "/llama_cpp_output.json";
  const std::string errors = work_dir + "/llama_cpp_errors.txt";
  train::WriteFileAtomically(input, json.dump());
  const std::string command = "node '" + std::string(ROTOR_SOURCE_DIR) +
                              "/tests/train/gguf/llama_cpp_reference.mjs' '" +
                              LlamaCppPackages() + "' '" + input + "' >'" +
                              output + "' 2>'" + errors + "'";
  const int status = std::system(command.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ADD_FAILURE() << "llama_cpp_reference.mjs failed (status " << status
                  << "): " << train::ReadFile(errors);
    return nullptr;
  }
  return nlohmann::json::parse(train::ReadFile(output));
}

// rotor's scores of a sequence against llama.cpp's (the script's output).
struct LogProbComparison {
  double max_error = 0.0;   // max over t >= 1 of |rotor - llama.cpp|
  double mean_error = 0.0;  // their mean
  double spread = 0.0;      // max - min of rotor's log-probs
  // With rotor's logits: the positions where rotor's top two logits differ
  // by more than `margin`, and those where llama.cpp's top token is rotor's.
  int64_t decided = 0;
  int64_t agree = 0;
};

inline LogProbComparison CompareLogProbs(const train::TokenScores& rotor,
                                         const nlohmann::json& llama_cpp,
                                         double margin) {
  LogProbComparison out;
  const auto& theirs = llama_cpp.at("log_probs");
  const size_t n = rotor.log_probs.size();
  EXPECT_EQ(theirs.size(), n);
  double low = 1e300, high = -1e300, sum = 0.0;
  for (size_t t = 1; t < n && t < theirs.size(); ++t) {
    const double mine = rotor.log_probs[t];
    const double error = std::fabs(mine - theirs[t].get<double>());
    out.max_error = std::max(out.max_error, error);
    sum += error;
    low = std::min(low, mine);
    high = std::max(high, mine);
  }
  out.mean_error = n > 1 ? sum / static_cast<double>(n - 1) : 0.0;
  out.spread = high - low;
  if (!rotor.logits.defined()) return out;
  const int64_t vocab = rotor.logits.size(1);
  for (size_t t = 0; t + 1 < n; ++t) {
    const float* row = rotor.logits.data() + t * vocab;
    std::vector<float> top2(row, row + vocab);
    std::partial_sort(top2.begin(), top2.begin() + 2, top2.end(),
                      std::greater<float>());
    if (top2[0] - top2[1] <= margin) continue;
    ++out.decided;
    out.agree += llama_cpp.at("top")[t].get<int64_t>() ==
                 std::max_element(row, row + vocab) - row;
  }
  return out;
}

}  // namespace rotor::test

#endif  // ROTOR_TESTS_TRAIN_GGUF_LLAMA_CPP_REFERENCE_H_

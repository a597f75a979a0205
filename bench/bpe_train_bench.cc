// Byte-level BPE training speed (train/tokenizer/bpe_trainer.h): an
// 8,192-token vocabulary learned from the Brown corpus's training split
// (~/.cache/rotor/brown/train.bin, 5.7 MB, as `bash scripts/fetch_brown.sh`
// prepares it) at 1 and 2 threads, the whole of `rotor tokenizer train`
// but the file write: reading the documents, counting words (the only
// parallel stage), the merge loop and the tokenizer.json text.
//
// No Hugging Face trainer is available to compare with (python3 has no
// `tokenizers` module here and PyPI is unreachable), so the reference is
// the naive trainer of the tests (tests/train/tokenizer/
// naive_bpe_trainer.h: every pair recounted at every merge) against
// TrainBpe on a slice of the same words, with a check that both learn the
// same merges.
//
// Usage: build/bench/bpe_train_bench [--data DIR] [--vocab-size N]
//          [--repeats R] [--slice-words W] [--slice-vocab V]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_util.h"
#include "core/parallel.h"
#include "tests/train/tokenizer/naive_bpe_trainer.h"
#include "train/data/data_dir.h"
#include "train/data/text_corpus.h"
#include "train/tokenizer/bpe_trainer.h"

namespace rotor {
namespace bench {
namespace {

struct Args {
  std::string data = train::CacheDir() + "/brown";
  int64_t vocab_size = 8192;
  int repeats = 3;
  size_t slice_words = 2000;
  int64_t slice_vocab = 256 + 1 + 300;
};

Args ParseArgs(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--data") {
      args.data = value;
    } else if (flag == "--vocab-size") {
      args.vocab_size = std::atoll(value);
    } else if (flag == "--repeats") {
      args.repeats = std::atoi(value);
    } else if (flag == "--slice-words") {
      args.slice_words = static_cast<size_t>(std::atoll(value));
    } else if (flag == "--slice-vocab") {
      args.slice_vocab = std::atoll(value);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  return args;
}

// Trains once, timing each stage; prints one line.
void TimeFullTraining(const train::TextCorpus& corpus,
                      const train::BpeTrainerOptions& options, int threads,
                      int repeats) {
  SetNumThreads(threads);
  const std::vector<std::string_view> documents(corpus.documents.begin(),
                                                corpus.documents.end());
  double best_total = 1e300, best_count = 0, best_merge = 0, best_json = 0;
  size_t merges = 0, json_bytes = 0;
  for (int r = 0; r < repeats; ++r) {
    const double start = NowSeconds();
    const std::vector<train::WordCount> words =
        train::CountWords(documents, options.split_pattern);
    const double counted = NowSeconds();
    const train::BpeModel model = train::TrainBpe(words, options);
    const double merged = NowSeconds();
    json_bytes = train::BpeTokenizerJson(model, options).size();
    const double done = NowSeconds();
    merges = model.merges.size();
    if (done - start < best_total) {
      best_total = done - start;
      best_count = counted - start;
      best_merge = merged - counted;
      best_json = done - merged;
    }
  }
  const double megabytes = static_cast<double>(corpus.bytes) / 1e6;
  std::printf(
      "threads %d: %.2f s (count words %.2f s, merges %.2f s, json %.2f s), "
      "%.2f MB/s; %zu merges, %zu bytes of json\n",
      threads, best_total, best_count, best_merge, best_json,
      megabytes / best_total, merges, json_bytes);
}

// TrainBpe against the naive reference on the `slice_words` most frequent
// words: seconds of each and whether the merges agree.
void CompareWithNaive(const train::TextCorpus& corpus, const Args& args) {
  SetNumThreads(1);
  const std::vector<std::string_view> documents(corpus.documents.begin(),
                                                corpus.documents.end());
  std::vector<train::WordCount> words =
      train::CountWords(documents, train::kLlama3SplitPattern);
  std::stable_sort(words.begin(), words.end(),
                   [](const train::WordCount& a, const train::WordCount& b) {
                     return a.count > b.count;
                   });
  words.resize(std::min(words.size(), args.slice_words));
  train::BpeTrainerOptions options;
  options.vocab_size = args.slice_vocab;
  train::BpeModel fast, naive;
  const double fast_seconds =
      BestSeconds([&] { fast = train::TrainBpe(words, options); }, 2);
  const double start = NowSeconds();
  naive = test::NaiveTrain(words, options.vocab_size, options.special_tokens,
                           options.min_frequency);
  const double naive_seconds = NowSeconds() - start;
  std::printf(
      "slice of %zu words, vocab %lld: TrainBpe %.4f s, naive reference "
      "%.3f s (%.0fx); merges %s\n",
      words.size(), static_cast<long long>(options.vocab_size), fast_seconds,
      naive_seconds, naive_seconds / fast_seconds,
      fast.merges == naive.merges ? "identical" : "DIFFER");
}

}  // namespace
}  // namespace bench
}  // namespace rotor

int main(int argc, char** argv) {
  using namespace rotor;
  const bench::Args args = bench::ParseArgs(argc, argv);
  const double start = bench::NowSeconds();
  const train::TextCorpus corpus = train::ReadTextCorpus(args.data);
  std::printf("%s: %zu documents, %.2f MB, read in %.2f s\n",
              corpus.description.c_str(), corpus.documents.size(),
              static_cast<double>(corpus.bytes) / 1e6,
              bench::NowSeconds() - start);
  train::BpeTrainerOptions options;
  options.vocab_size = args.vocab_size;
  std::printf("vocab %lld, best of %d:\n",
              static_cast<long long>(options.vocab_size), args.repeats);
  for (const int threads : {1, 2}) {
    bench::TimeFullTraining(corpus, options, threads, args.repeats);
  }
  bench::CompareWithNaive(corpus, args);
  return 0;
}

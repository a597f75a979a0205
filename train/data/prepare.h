// `rotor prepare`: turns text files into token files ready for training.
//
//   rotor prepare --input PATH... --output DIR [--val-fraction 0.05]
//                 [--seed 1] [--format text|brown] [--force]
//
// (tools/prepare_command.cc reads those flags into PrepareOptions.)
//
// 1. Collects the input files: each PATH is a file or a folder (searched
//    recursively; hidden files and folders are skipped; with --format brown
//    only the corpus files ca01..cr09 are taken). The list is sorted by path
//    so the result never depends on directory order.
// 2. Reads each file as one document (--format brown: strips the word/tag
//    annotations, see train/data/brown.h). Empty documents are skipped and
//    listed in meta.json.
// 3. Splits BY DOCUMENT: a SplitMix64 shuffle seeded with --seed picks
//    round(val_fraction * documents) validation documents (at least one, and
//    at least one left for training). Documents keep their sorted order
//    within each split.
// 4. Tokenizes with --tokenizer (default "byte"; or a tokenizer.json, see
//    train/tokenizer/tokenizer.h), documents in parallel on the thread
//    pool, each preceded by the tokenizer's document separator
//    (DocumentSeparator: <|endoftext|> for bytes, BOS for Llama-style
//    tokenizers), and writes DIR/train.bin, DIR/val.bin
//    (train/data/token_file.h), DIR/meta.json and, for a tokenizer.json,
//    its copy DIR/tokenizer.json (so training and evaluation use exactly
//    the tokenizer the data was made with), all into a temporary folder that
//    then replaces DIR, so a
//    failure never leaves a half-written data set. An existing non-empty DIR
//    is only replaced with --force; an output that is an input, contains one
//    or lies inside one is always refused (canonical paths).
#ifndef ROTOR_TRAIN_DATA_PREPARE_H_
#define ROTOR_TRAIN_DATA_PREPARE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rotor::train {

struct PrepareOptions {
  std::vector<std::string> inputs;
  std::string output;
  double val_fraction = 0.05;
  uint64_t seed = 1;
  std::string format = "text";  // "text" or "brown"
  bool force = false;
  std::string tokenizer = "byte";  // "byte" or a tokenizer.json (or folder)
};

struct PrepareSplitSummary {
  uint64_t documents = 0;
  uint64_t tokens = 0;
};

struct PrepareSummary {
  PrepareSplitSummary train;
  PrepareSplitSummary val;
  std::vector<std::string> skipped_empty;  // files with no text
};

// Step 1: the files of `inputs` (files, and folders searched recursively,
// hidden files and folders skipped; with `brown`, only ca01..cr09), sorted
// by path. Throws rotor::Error for a missing input, a folder without files
// or a file given twice. `rotor tokenizer train` lists its inputs with it too.
std::vector<std::string> CollectInputFiles(
    const std::vector<std::string>& inputs, bool brown);

// Step 2's read of one input file. Refuses, before reading it, a file
// larger than limits::kMaxTextFileBytes, naming it, its size and the
// limit; a pipe or device stops there too (ReadFile).
std::string ReadInputFile(const std::string& file);

// Runs the whole pipeline. Throws rotor::Error (nothing written) for a
// missing input, no documents, a single document, an existing output
// without force, a malformed Brown file, ...
PrepareSummary RunPrepare(const PrepareOptions& options);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_PREPARE_H_

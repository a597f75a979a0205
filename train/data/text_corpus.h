// The text a tokenizer is trained on (`rotor tokenizer train --input PATH`),
// read from either
// - a folder prepared by `rotor prepare` (it holds meta.json and train.bin):
//   the documents of its training split, the bytes between the
//   <|endoftext|> markers of train.bin, so a tokenizer trained on
//   ~/.cache/rotor/brown sees exactly the text a model trains on and none
//   of the validation documents;
// - or a text file, or a folder of them listed as `rotor prepare` lists
//   its inputs (recursively, sorted by path, hidden files skipped): one
//   document per file, read as it is.
#ifndef ROTOR_TRAIN_DATA_TEXT_CORPUS_H_
#define ROTOR_TRAIN_DATA_TEXT_CORPUS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rotor::train {

struct TextCorpus {
  std::vector<std::string> documents;  // none empty
  uint64_t bytes = 0;                  // their total size
  std::string description;  // "train.bin of a prepared folder" or "N files"
};

// Reads `input` as above. Throws rotor::Error naming the path for a missing
// input, an unreadable file, a train.bin whose tokens are not bytes, or no
// text at all.
TextCorpus ReadTextCorpus(const std::string& input);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_TEXT_CORPUS_H_

// Fingerprints: of a model's weights, for checkpoints that refer to a base
// model instead of holding it (LoRA fine-tuning: train/checkpoint.h), and of
// files and text, for results that must say what they were computed from
// (the extension report's cache: train/extend/runner.cc).
//
// XXH3-64 (xxHash 0.8, Debian's libxxhash-dev, header-only here) over, for
// each tensor in order: the name's length (uint64) and bytes, the number of
// dimensions and each dimension (int64), and the float32 values as they are
// in memory, i.e. as loaded. So the hash does not depend on the file's dtype
// (a BF16 base and its float32 copy hash alike once loaded: the same
// floats), only on the names, shapes and values; it runs at memory speed
// (docs/lora.md has the measured time).
#ifndef ROTOR_TRAIN_IO_WEIGHTS_HASH_H_
#define ROTOR_TRAIN_IO_WEIGHTS_HASH_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace rotor::train {

// "xxh3-64:" and 16 lowercase hex digits.
std::string WeightsHash(
    const std::vector<std::pair<std::string, Tensor>>& tensors);

// XXH3-64 over each file in order: its name (without the folder) and its
// bytes, each preceded by its length; the files are mapped, not copied.
std::string FilesHash(const std::vector<std::string>& paths);

// XXH3-64 of `text`.
std::string TextHash(std::string_view text);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_IO_WEIGHTS_HASH_H_

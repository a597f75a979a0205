#include "train/tokenizer/tokenizer.h"

#include <sys/stat.h>

#include "train/tokenizer/byte_tokenizer.h"
#include "train/tokenizer/hf_tokenizer.h"

namespace rotor::train {

std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& spec) {
  if (spec == ByteTokenizer::kName) return std::make_unique<ByteTokenizer>();
  struct stat info;
  if (::stat(spec.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return HfTokenizer::Load(spec + "/tokenizer.json");
  }
  return HfTokenizer::Load(spec);
}

}  // namespace rotor::train

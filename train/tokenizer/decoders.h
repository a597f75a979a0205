// Decoders: tokens back to text (tokenizer.json's "decoder"). Each step
// rewrites the list of token strings (HF's decode_chain); the strings left
// at the end are joined.
//
//   ByteLevel     GPT-2's byte alphabet back to bytes, then UTF-8 with each
//                 invalid sequence as U+FFFD; the result is one string
//   Replace       every match of a string or regex in each token
//                 (Llama 2: "▁" -> " ")
//   ByteFallback  runs of <0xAB> tokens back to the bytes they stand for
//                 (U+FFFD per byte if the run is not valid UTF-8)
//   Fuse          all tokens into one
//   Strip         up to `start` leading and `stop` trailing `content`
//                 characters off each token
//   Metaspace     "▁" back to " " (dropped in the first token unless the
//                 prepend scheme is "never")
//   Sequence      each of a list in turn
#ifndef ROTOR_TRAIN_TOKENIZER_DECODERS_H_
#define ROTOR_TRAIN_TOKENIZER_DECODERS_H_

#include <memory>
#include <string>
#include <vector>

#include "train/tokenizer/regex.h"

namespace rotor::train {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Rewrites `tokens` in place.
  virtual void DecodeChain(std::vector<std::string>& tokens) const = 0;
};

class ByteLevelDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void DecodeChain(std::vector<std::string>& tokens) const override;

 private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

class ByteFallbackDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override;
};

class FuseDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override;
};

class StripDecoder : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void DecodeChain(std::vector<std::string>& tokens) const override;

 private:
  char32_t content_;
  size_t start_;
  size_t stop_;
};

class MetaspaceDecoder : public Decoder {
 public:
  // `drop_first`: the prepend scheme is not "never", so the "▁" of the
  // first token came from the pre-tokenizer and is dropped.
  MetaspaceDecoder(char32_t replacement, bool drop_first)
      : replacement_(replacement), drop_first_(drop_first) {}
  void DecodeChain(std::vector<std::string>& tokens) const override;

 private:
  char32_t replacement_;
  bool drop_first_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void DecodeChain(std::vector<std::string>& tokens) const override;

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_DECODERS_H_

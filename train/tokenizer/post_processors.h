// Post-processors: what HF adds around the ids of a sequence when
// add_special_tokens is set (tokenizer.json's "post_processor").
//
//   TemplateProcessing  the "single" template: special tokens (e.g.
//                       Llama's <s>) and the sequence ($A) in order
//   ByteLevel           changes offsets only: no ids
//   Sequence            each of a list in turn
// Type ids and pair templates are not kept: rotor encodes one sequence.
#ifndef ROTOR_TRAIN_TOKENIZER_POST_PROCESSORS_H_
#define ROTOR_TRAIN_TOKENIZER_POST_PROCESSORS_H_

#include <memory>
#include <vector>

#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Rewrites the ids of one encoded sequence.
  virtual void Process(std::vector<TokenId>& ids,
                       bool add_special_tokens) const = 0;
};

class TemplateProcessor : public PostProcessor {
 public:
  // One piece of the template: the sequence, or a special token's ids.
  struct Piece {
    bool is_sequence;
    std::vector<TokenId> ids;  // of the special token
  };
  explicit TemplateProcessor(std::vector<Piece> single)
      : single_(std::move(single)) {}
  void Process(std::vector<TokenId>& ids,
               bool add_special_tokens) const override;

 private:
  std::vector<Piece> single_;
};

class ByteLevelProcessor : public PostProcessor {
 public:
  void Process(std::vector<TokenId>& ids,
               bool add_special_tokens) const override {}
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  void Process(std::vector<TokenId>& ids,
               bool add_special_tokens) const override;

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_TOKENIZER_POST_PROCESSORS_H_

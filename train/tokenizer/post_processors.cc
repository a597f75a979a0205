#include "train/tokenizer/post_processors.h"

namespace rotor::train {

void TemplateProcessor::Process(std::vector<TokenId>& ids,
                                bool add_special_tokens) const {
  if (!add_special_tokens) return;
  std::vector<TokenId> out;
  out.reserve(ids.size() + 4);
  for (const Piece& piece : single_) {
    const std::vector<TokenId>& part = piece.is_sequence ? ids : piece.ids;
    out.insert(out.end(), part.begin(), part.end());
  }
  ids.swap(out);
}

void SequenceProcessor::Process(std::vector<TokenId>& ids,
                                bool add_special_tokens) const {
  for (const std::unique_ptr<PostProcessor>& step : steps_) {
    step->Process(ids, add_special_tokens);
  }
}

}  // namespace rotor::train

#include "train/eval/validation.h"

#include <cmath>

#include "core/autograd.h"
#include "core/error.h"
#include "train/data/batches.h"

namespace rotor::train {

ValidationResult Evaluate(nn::Transformer& model, const TokenFile& val,
                          int64_t batch_size, int64_t seq_len,
                          int64_t max_batches) {
  NoGradGuard no_grad;
  model.SetSequenceLength(seq_len);
  ValidationBatches batches(val, batch_size, seq_len);
  Batch batch;
  double total = 0.0;
  int64_t tokens = 0;
  for (int64_t i = 0;
       (max_batches == 0 || i < max_batches) && batches.Next(batch); ++i) {
    const Tensor loss = model.Loss(batch.inputs, batch.targets,
                                   batch.batch_size, batch.seq_len);
    const int64_t n = batch.batch_size * batch.seq_len;
    total += static_cast<double>(loss.item()) * n;
    tokens += n;
  }
  ROTOR_CHECK(tokens > 0, val.path(),
              ": too short for one validation window of ", seq_len + 1,
              " tokens");
  ValidationResult result;
  result.loss = total / tokens;
  result.perplexity = std::exp(result.loss);
  result.bits_per_byte = val.BitsPerByte(result.loss);
  result.tokens = tokens;
  return result;
}

}  // namespace rotor::train

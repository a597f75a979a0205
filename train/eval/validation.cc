#include "train/eval/validation.h"

#include <cmath>
#include <optional>

#include "core/autograd.h"
#include "core/error.h"
#include "train/data/batches.h"

namespace rotor::train {

std::optional<nn::PackedDocuments> BatchDocuments(
    const Batch& batch, TokenId separator, const DocumentPacking& packing) {
  if (!packing.any()) return std::nullopt;
  nn::PackedDocuments documents;
  documents.document_start = DocumentStarts(batch, separator);
  documents.mask_attention = packing.mask_attention;
  documents.restart_positions = packing.restart_positions;
  return documents;
}

ValidationResult Evaluate(nn::Transformer& model, const TokenFile& val,
                          int64_t batch_size, int64_t seq_len,
                          int64_t max_batches, const DocumentPacking& packing) {
  return ValidationFromSums(val, seq_len,
                            ValidationShareSums(model, val, batch_size, seq_len,
                                                max_batches, 0, 1, packing));
}

ValidationSums ValidationShareSums(nn::Transformer& model, const TokenFile& val,
                                   int64_t batch_size, int64_t seq_len,
                                   int64_t max_batches, int64_t share,
                                   int64_t num_shares,
                                   const DocumentPacking& packing) {
  NoGradGuard no_grad;
  model.SetSequenceLength(seq_len);
  ValidationBatches batches(val, batch_size, seq_len);
  Batch batch;
  ValidationSums sums;
  for (int64_t i = 0;
       (max_batches == 0 || i < max_batches) && batches.Next(batch); ++i) {
    if (i % num_shares != share) continue;
    const std::optional<nn::PackedDocuments> documents =
        BatchDocuments(batch, val.separator_id(), packing);
    const Tensor loss = model.Loss(
        batch.inputs, batch.targets, batch.batch_size, batch.seq_len,
        nn::Transformer::kIgnoreIndex, documents ? &*documents : nullptr);
    const int64_t n = batch.batch_size * batch.seq_len;
    sums.loss_times_tokens += static_cast<double>(loss.item()) * n;
    sums.tokens += n;
  }
  return sums;
}

ValidationResult ValidationFromSums(const TokenFile& val, int64_t seq_len,
                                    const ValidationSums& sums) {
  ROTOR_CHECK(sums.tokens > 0, val.path(),
              ": too short for one validation window of ", seq_len + 1,
              " tokens");
  ValidationResult result;
  result.loss = sums.loss_times_tokens / sums.tokens;
  result.perplexity = std::exp(result.loss);
  result.bits_per_byte = val.BitsPerByte(result.loss);
  result.tokens = sums.tokens;
  return result;
}

}  // namespace rotor::train

// Validation loss: the mean next-token cross-entropy over the validation
// token file, read in order (train/data/batches.h, ValidationBatches), without
// gradients. The trainer calls it every eval.every_n_steps; `rotor eval`
// calls it on a checkpoint.
#ifndef ROTOR_TRAIN_EVAL_VALIDATION_H_
#define ROTOR_TRAIN_EVAL_VALIDATION_H_

#include <cstdint>
#include <optional>

#include "nn/transformer.h"
#include "train/data/batches.h"
#include "train/data/token_file.h"

namespace rotor::train {

struct ValidationResult {
  double loss = 0.0;        // mean cross-entropy per token (nats)
  double perplexity = 0.0;  // exp(loss)
  // loss * tokens / text bytes / ln 2 over the split (TokenFile::
  // BitsPerByte): comparable between tokenizers, unlike the loss.
  double bits_per_byte = 0.0;
  int64_t tokens = 0;
};

// How the documents packed into each row are run (data.document_mask and
// data.document_positions, train/config/train_config.h): evaluation uses
// what training used.
struct DocumentPacking {
  bool mask_attention = false;     // attend only within the document
  bool restart_positions = false;  // RoPE positions restart at its start
  bool any() const { return mask_attention || restart_positions; }
};

// The documents of `batch`'s rows for Transformer::Loss (train/data/
// batches.h DocumentStarts: one begins at each `separator`), run as
// `packing` asks; nullopt when it asks for nothing.
std::optional<nn::PackedDocuments> BatchDocuments(
    const Batch& batch, TokenId separator, const DocumentPacking& packing);

// Mean validation loss over up to `max_batches` batches of `val` (0 = all)
// at sequence length `seq_len` (the RoPE tables are set for it), its rows'
// documents run as `packing` asks.
ValidationResult Evaluate(nn::Transformer& model, const TokenFile& val,
                          int64_t batch_size, int64_t seq_len,
                          int64_t max_batches,
                          const DocumentPacking& packing = {});

// Evaluate in pieces, for data-parallel training: each of `num_shares`
// ranks takes the batches i (of the first max_batches) with
// i % num_shares == share, the ranks add their sums, and the result is the
// mean over all of them, as one process would measure it (up to the order
// of the double additions).
struct ValidationSums {
  double loss_times_tokens = 0.0;  // sum over batches of mean loss * tokens
  int64_t tokens = 0;
};
ValidationSums ValidationShareSums(nn::Transformer& model, const TokenFile& val,
                                   int64_t batch_size, int64_t seq_len,
                                   int64_t max_batches, int64_t share,
                                   int64_t num_shares,
                                   const DocumentPacking& packing = {});
ValidationResult ValidationFromSums(const TokenFile& val, int64_t seq_len,
                                    const ValidationSums& sums);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EVAL_VALIDATION_H_

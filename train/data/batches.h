// Batches for training and evaluation, cut from a memory-mapped token file.
//
// Language-model training predicts each next token: a window of seq_len + 1
// consecutive tokens w[0..T] gives inputs w[0..T-1] and targets w[1..T]
// (targets are the inputs shifted left by one). A batch stacks batch_size
// windows into row-major [batch_size, seq_len] arrays.
//
// - BatchSampler draws windows at uniformly random start positions of the
//   train stream (windows may cross document boundaries; <|endoftext|> marks
//   them; DocumentStarts finds them for attention within documents). Its
//   state is two integers (generator counter, batches drawn), so a
//   checkpoint resumes the exact same batch sequence.
// - ValidationBatches walks the validation stream in order with
//   non-overlapping windows (window k starts at k * seq_len), so every
//   evaluation sees the same tokens and each target is scored once.
#ifndef ROTOR_TRAIN_DATA_BATCHES_H_
#define ROTOR_TRAIN_DATA_BATCHES_H_

#include <cstdint>
#include <vector>

#include "core/random.h"
#include "train/data/token_file.h"
#include "train/tokenizer/byte_tokenizer.h"

namespace rotor::train {

struct Batch {
  int64_t batch_size = 0;  // rows actually filled
  int64_t seq_len = 0;
  std::vector<TokenId> inputs;   // [batch_size, seq_len]
  std::vector<TokenId> targets;  // [batch_size, seq_len]
};

// Where the document holding each input token of `batch` begins, as a
// position in its row ([batch_size * seq_len], row-major): a document begins
// at each `separator` token (the token file puts one before every document)
// and, in a row that begins mid-document, at 0. This is core/ops/
// attention.h's key_start for attention within documents.
std::vector<int32_t> DocumentStarts(const Batch& batch, TokenId separator);

// Everything needed to continue the batch sequence after a restart.
struct SamplerState {
  uint64_t rng_state = 0;
  uint64_t batches_drawn = 0;
};

class BatchSampler {
 public:
  // `tokens` must outlive the sampler. Throws rotor::Error if batch_size or
  // seq_len < 1, or the file has fewer than seq_len + 1 tokens.
  BatchSampler(const TokenFile& tokens, int64_t batch_size, int64_t seq_len,
               uint64_t seed);

  // Fills `batch` (reusing its buffers) with the next batch_size windows.
  void Next(Batch& batch);

  SamplerState state() const { return {rng_.state(), batches_drawn_}; }
  void set_state(const SamplerState& state);

  int64_t batch_size() const { return batch_size_; }
  int64_t seq_len() const { return seq_len_; }

 private:
  const TokenFile* tokens_;
  int64_t batch_size_;
  int64_t seq_len_;
  Rng rng_;
  uint64_t batches_drawn_ = 0;
};

class ValidationBatches {
 public:
  // `tokens` must outlive this. Throws rotor::Error if batch_size or seq_len
  // < 1, or the file has fewer than seq_len + 1 tokens.
  ValidationBatches(const TokenFile& tokens, int64_t batch_size,
                    int64_t seq_len);

  // (token_count - 1) / seq_len windows; the last few tokens that do not
  // fill a window are not scored.
  int64_t num_windows() const { return num_windows_; }
  // Fills `batch` with up to batch_size next windows (the last batch may be
  // smaller: see batch.batch_size). Returns false, leaving `batch` alone,
  // once every window has been returned.
  bool Next(Batch& batch);
  // Starts again from the first window.
  void Reset() { next_window_ = 0; }

 private:
  const TokenFile* tokens_;
  int64_t batch_size_;
  int64_t seq_len_;
  int64_t num_windows_;
  int64_t next_window_ = 0;
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DATA_BATCHES_H_

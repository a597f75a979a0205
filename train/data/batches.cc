#include "train/data/batches.h"

#include <algorithm>

#include "core/checked_math.h"
#include "core/error.h"

namespace rotor::train {
namespace {

void CheckShape(const TokenFile& tokens, int64_t batch_size, int64_t seq_len,
                const char* what) {
  ROTOR_CHECK(batch_size >= 1, what, ": batch_size must be >= 1, got ",
              batch_size);
  ROTOR_CHECK(seq_len >= 1, what, ": seq_len must be >= 1, got ", seq_len);
  ROTOR_CHECK(tokens.size() >= static_cast<size_t>(seq_len) + 1, what, ": ",
              tokens.path(), " has ", tokens.size(),
              " tokens, fewer than seq_len + 1 = ", seq_len + 1,
              " (use a shorter seq_len or more text)");
}

// Copies window [start, start + seq_len] into row `row` of the batch.
void CopyWindow(const TokenFile& tokens, size_t start, int64_t row,
                Batch& batch) {
  TokenId* inputs = batch.inputs.data() + row * batch.seq_len;
  TokenId* targets = batch.targets.data() + row * batch.seq_len;
  const auto length = static_cast<size_t>(batch.seq_len);
  tokens.Copy(start, length, inputs);
  tokens.Copy(start + 1, length, targets);
}

void Resize(Batch& batch, int64_t rows, int64_t seq_len) {
  batch.batch_size = rows;
  batch.seq_len = seq_len;
  const auto tokens = static_cast<size_t>(CheckedMul(
      rows, seq_len, "the tokens of a batch (batch_size * seq_len)"));
  batch.inputs.resize(tokens);
  batch.targets.resize(tokens);
}

}  // namespace

BatchSampler::BatchSampler(const TokenFile& tokens, int64_t batch_size,
                           int64_t seq_len, uint64_t seed)
    : tokens_(&tokens), batch_size_(batch_size), seq_len_(seq_len), rng_(seed) {
  CheckShape(tokens, batch_size, seq_len, "BatchSampler");
}

void BatchSampler::Next(Batch& batch) {
  Resize(batch, batch_size_, seq_len_);
  // Start positions 0 .. N - (T + 1), all equally likely.
  const uint64_t num_starts = tokens_->size() - static_cast<uint64_t>(seq_len_);
  for (int64_t row = 0; row < batch_size_; ++row) {
    CopyWindow(*tokens_, rng_.Below(num_starts), row, batch);
  }
  ++batches_drawn_;
}

void BatchSampler::set_state(const SamplerState& state) {
  rng_.set_state(state.rng_state);
  batches_drawn_ = state.batches_drawn;
}

ValidationBatches::ValidationBatches(const TokenFile& tokens,
                                     int64_t batch_size, int64_t seq_len)
    : tokens_(&tokens), batch_size_(batch_size), seq_len_(seq_len) {
  CheckShape(tokens, batch_size, seq_len, "ValidationBatches");
  num_windows_ = static_cast<int64_t>(tokens.size() - 1) / seq_len;
}

bool ValidationBatches::Next(Batch& batch) {
  if (next_window_ >= num_windows_) return false;
  const int64_t rows = std::min(batch_size_, num_windows_ - next_window_);
  Resize(batch, rows, seq_len_);
  for (int64_t row = 0; row < rows; ++row) {
    CopyWindow(*tokens_, static_cast<size_t>((next_window_ + row) * seq_len_),
               row, batch);
  }
  next_window_ += rows;
  return true;
}

std::vector<int32_t> DocumentStarts(const Batch& batch, TokenId separator) {
  const auto seq = static_cast<size_t>(batch.seq_len);
  std::vector<int32_t> starts(static_cast<size_t>(batch.batch_size) * seq);
  for (size_t i = 0; i < starts.size(); ++i) {
    const auto t = static_cast<int32_t>(i % seq);
    starts[i] = (t == 0 || batch.inputs[i] == separator) ? t : starts[i - 1];
  }
  return starts;
}

}  // namespace rotor::train

// The largest sizes rotor accepts from a user: config keys, command-line
// overrides and flags. Each is far above anything rotor trains or runs on a
// CPU, and low enough that the products the code forms from a few of them
// stay far from 64-bit overflow (checked anyway: core/checked_math.h).
// Whether a run fits in memory is a separate check
// (train/config/memory_estimate.h). docs/limits.md lists every limit.
#ifndef ROTOR_CORE_LIMITS_H_
#define ROTOR_CORE_LIMITS_H_

#include <cstddef>
#include <cstdint>

namespace rotor::limits {

inline constexpr int64_t kMaxVocabSize = int64_t{1} << 20;         // 1048576
inline constexpr int64_t kMaxHiddenSize = int64_t{1} << 16;        // 65536
inline constexpr int64_t kMaxIntermediateSize = int64_t{1} << 18;  // 262144
inline constexpr int64_t kMaxLayers = int64_t{1} << 12;            // 4096
// num_attention_heads, num_key_value_heads, head_dim.
inline constexpr int64_t kMaxHeads = int64_t{1} << 12;    // 4096
inline constexpr int64_t kMaxHeadDim = int64_t{1} << 12;  // 4096
// Positions: max_position_embeddings, original_max_position_embeddings,
// every sequence length (train.seq_len, eval lengths) and a generated text
// with its prompt.
inline constexpr int64_t kMaxPositions = int64_t{1} << 24;  // 16777216
// Sequences per (micro-)batch and micro-batches per step.
inline constexpr int64_t kMaxBatchSize = int64_t{1} << 20;  // 1048576
inline constexpr int64_t kMaxAccumulationSteps = int64_t{1} << 20;
// Optimizer steps (train.max_steps, warm-up).
inline constexpr int64_t kMaxSteps = int64_t{1} << 40;
inline constexpr int64_t kMaxThreads = 4096;
// The counts of an evaluation (rotor eval's flags, the extension report's
// eval: keys). Each example is a forward pass over a whole context, so
// these are far past any use and still finish:
// - examples per length and depth (--trials, eval.trials,
//   eval.retrieval_trials): published passkey and RULER runs use 10 to 500;
inline constexpr int64_t kMaxEvalTrials = int64_t{1} << 14;  // 16384
// - validation documents per length (--documents, eval.documents): a
//   perplexity curve takes tens to thousands;
inline constexpr int64_t kMaxEvalDocuments = int64_t{1} << 20;  // 1048576
// - the lengths and the depths of one grid (--lengths, --passkey-lengths,
//   --depths, eval.lengths, eval.passkey_lengths, eval.retrieval_lengths,
//   eval.depths): real grids have 5 to 20 of each.
inline constexpr int64_t kMaxEvalGridPoints = 1024;
// The largest config file rotor reads (a training or report config, a
// checkpoint's config.yaml, a config.json): real ones are a few KiB.
inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;
// A tokenizer.json file (train/tokenizer/): Gemma's, among the largest, is
// about 34 MB. Its ids (vocabulary and added tokens) are below
// kMaxVocabSize, so a tokenizer always fits a model's vocab_size.
inline constexpr int64_t kMaxTokenizerJsonBytes = int64_t{256} << 20;
// A file of token ids (rotor score --tokens, tokenizer decode --input):
// 2^24 ids (kMaxPositions) of up to 7 digits and a separator or two fit
// in 256 MiB; an endless file (/dev/zero) stops here.
inline constexpr int64_t kMaxTokenIdsFileBytes = int64_t{256} << 20;
// One input text file of rotor prepare or tokenizer train, read whole as
// one document: enwik9 (10^9 bytes) fits; a larger file (a sparse one, a
// whole dump) is refused before it is read, rather than end in "out of
// memory". Split such a text into files.
inline constexpr size_t kMaxTextFileBytes = size_t{1} << 30;

}  // namespace rotor::limits

#endif  // ROTOR_CORE_LIMITS_H_

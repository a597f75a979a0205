// Prompts that begin alike prefill their common beginning once. The
// passkey's prompts of one length are one filler stream with the key placed
// at a depth: a prompt at depth d begins with the same BOS and round(d * F)
// filler tokens as every prompt at a depth >= d (RULER's prompts likewise,
// after their introduction, up to their first needle). A position's
// keys and values depend only on the tokens up to it, so a prompt's KV cache
// at positions [0, n), where it agrees with an earlier prompt, can be copied
// from that prompt's, and only positions [n, P) need running (a chunked
// prefill: CachedCausalAttention's queries at n .. P-1 over keys 0 .. P-1).
// At the depths 0, 0.25, 0.5, 0.75, 1 with 10 examples each (the report's
// passkey grid, one answer length), the plan runs 53% (at 2,048 tokens,
// one prompt a batch) to 74% (at 128, 16 a batch) of the prompt positions
// through the matrix products and 65-88% of attention's query-key pairs
// (the ideal: 1/2 and 5/8; batches that mix depths run from their least
// shared length). Prompts that fit in one batch share nothing.
//
// The copied keys and values were computed in another matrix product, of
// another row count, so they can differ from a full prefill's in the last
// bits (core/ops/gemm.h): logits agree to rounding, greedy ids wherever no
// two logits are that close (tests/train/eval/shared_prefix_test.cc).
//
// The plan runs every batch through one KV cache of max_rows rows, with no
// second cache: the first batch puts the reference prompt R (the one that
// shares the most tokens with the others) in cache row 0, and the later
// batches come in decreasing order of what they share with R, so row 0
// still holds R's keys and values on each batch's shared positions (a batch
// writes only past them, and no later batch shares more).
#ifndef ROTOR_TRAIN_EVAL_SHARED_PREFIX_H_
#define ROTOR_TRAIN_EVAL_SHARED_PREFIX_H_

#include <cstdint>
#include <vector>

#include "nn/transformer.h"
#include "train/tokenizer/tokenizer.h"

namespace rotor::train {

// The length of `prompts`, which must all have it (throws, naming
// `caller`, on no prompts or two lengths).
int64_t PromptsLength(const std::vector<std::vector<TokenId>>& prompts,
                      const char* caller);

// One batch of a plan: the prompts in cache rows 0 .. rows.size() - 1, each
// taking positions [0, shared) from cache row 0 as it stands.
struct PrefixBatch {
  std::vector<size_t> rows;  // indices into the prompts
  int64_t shared = 0;
};

// The batches, of at most max_rows prompts (>= 1), that run `prompts` (one
// length P, not empty), each prompt exactly once. Its shared length with R
// is n = min(common prefix with R, P - keep), so that each row still runs
// its last `keep` (>= 1) positions (the logits its caller reads).
// - Prompts that all fit in one batch: that batch, in their order, shared
//   0 (nothing runs before it to share from).
// - Otherwise the first batch is R (the first of the prompts with the
//   largest sum of common-prefix lengths with all) in row 0 and the
//   max_rows - 1 prompts that share the least with R, shared 0; then the
//   rest by decreasing n (ties in the prompts' order), max_rows at a time,
//   each batch's shared its rows' least n.
std::vector<PrefixBatch> PlanPrefixBatches(
    const std::vector<std::vector<TokenId>>& prompts, int64_t keep,
    int64_t max_rows);

// The first `rows` rows of `cache` as a cache of its own (views of its
// tensors, its capacity, length 0): a plan's last batch may have fewer rows
// than the cache.
nn::KvCache FirstRows(nn::KvCache& cache, int64_t rows);

// Prefills one planned batch into `cache` (exactly batch.rows.size() rows,
// e.g. FirstRows of the plan's cache; capacity >= P): copies row 0's
// positions [0, batch.shared) to the other rows, then runs each row's
// positions [shared, P) at offset `shared`, which leaves cache->length = P.
// Without a cache (shared must be 0) it is the plain prefill of the rows.
// Returns the logits of each row's last `last` positions, [rows * last,
// vocab] (Transformer::LastLogits).
Tensor PrefillPlannedBatch(nn::Transformer& model,
                           const std::vector<std::vector<TokenId>>& prompts,
                           const PrefixBatch& batch, nn::KvCache* cache,
                           int64_t last);

// The batch of prompts 0 .. count - 1 in their order, sharing nothing: one
// plain batched prefill.
PrefixBatch AllPrompts(size_t count);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_EVAL_SHARED_PREFIX_H_

#include "train/eval/shared_prefix.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/ops/ops.h"

namespace rotor::train {

namespace {

// The number of leading tokens a and b have in common.
int64_t CommonPrefix(const std::vector<TokenId>& a,
                     const std::vector<TokenId>& b) {
  const auto [end_a, end_b] =
      std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<int64_t>(end_a - a.begin());
}

// R: the first of the prompts with the largest sum of common prefixes with
// the others (O(count^2 P) token comparisons, far below one prefill's
// arithmetic).
size_t ReferencePrompt(const std::vector<std::vector<TokenId>>& prompts) {
  size_t reference = 0;
  int64_t best = -1;
  for (size_t i = 0; i < prompts.size(); ++i) {
    int64_t sum = 0;
    for (size_t j = 0; j < prompts.size(); ++j) {
      if (j != i) sum += CommonPrefix(prompts[i], prompts[j]);
    }
    if (sum > best) {
      best = sum;
      reference = i;
    }
  }
  return reference;
}

}  // namespace

int64_t PromptsLength(const std::vector<std::vector<TokenId>>& prompts,
                      const char* caller) {
  ROTOR_CHECK(!prompts.empty(), caller, ": no prompts");
  const size_t length = prompts[0].size();
  for (size_t i = 1; i < prompts.size(); ++i) {
    ROTOR_CHECK(prompts[i].size() == length, caller,
                ": the prompts must have one length, but prompt 0 has ", length,
                " tokens and prompt ", i, " has ", prompts[i].size());
  }
  return static_cast<int64_t>(length);
}

std::vector<PrefixBatch> PlanPrefixBatches(
    const std::vector<std::vector<TokenId>>& prompts, int64_t keep,
    int64_t max_rows) {
  ROTOR_CHECK(max_rows >= 1, "shared prefix: max_rows must be >= 1, got ",
              max_rows);
  ROTOR_CHECK(keep >= 1,
              "shared prefix: keep must be >= 1 (the positions "
              "whose logits are read), got ",
              keep);
  const size_t count = prompts.size();
  const int64_t length = PromptsLength(prompts, "shared prefix");
  if (count <= static_cast<size_t>(max_rows)) return {AllPrompts(count)};
  const size_t reference = ReferencePrompt(prompts);
  const int64_t most = std::max<int64_t>(0, length - keep);
  std::vector<int64_t> shared(count);
  for (size_t i = 0; i < count; ++i) {
    shared[i] = std::min(CommonPrefix(prompts[i], prompts[reference]), most);
  }
  // The others by decreasing n, the prompts' order on ties.
  std::vector<size_t> others;
  for (size_t i = 0; i < count; ++i) {
    if (i != reference) others.push_back(i);
  }
  std::stable_sort(others.begin(), others.end(),
                   [&](size_t a, size_t b) { return shared[a] > shared[b]; });
  // First batch: R and the max_rows - 1 that share the least (the end of
  // `others`), run whole.
  const size_t first_others = static_cast<size_t>(max_rows) - 1;
  PrefixBatch first;
  first.rows.push_back(reference);
  first.rows.insert(first.rows.end(), others.end() - first_others,
                    others.end());
  others.resize(others.size() - first_others);
  std::vector<PrefixBatch> plan = {first};
  for (size_t start = 0; start < others.size();
       start += static_cast<size_t>(max_rows)) {
    PrefixBatch batch;
    const size_t end =
        std::min(others.size(), start + static_cast<size_t>(max_rows));
    batch.rows.assign(others.begin() + static_cast<std::ptrdiff_t>(start),
                      others.begin() + static_cast<std::ptrdiff_t>(end));
    batch.shared = shared[others[end - 1]];  // the batch's least
    plan.push_back(std::move(batch));
  }
  return plan;
}

nn::KvCache FirstRows(nn::KvCache& cache, int64_t rows) {
  ROTOR_CHECK(rows >= 1 && rows <= cache.batch, "shared prefix: ", rows,
              " rows of a KV cache of ", cache.batch);
  nn::KvCache view;
  view.batch = rows;
  view.capacity = cache.capacity;
  for (nn::LayerKvCache& layer : cache.layers) {
    view.layers.push_back(
        {Narrow(layer.keys, 0, 0, rows), Narrow(layer.values, 0, 0, rows)});
  }
  return view;
}

Tensor PrefillPlannedBatch(nn::Transformer& model,
                           const std::vector<std::vector<TokenId>>& prompts,
                           const PrefixBatch& batch, nn::KvCache* cache,
                           int64_t last) {
  const int64_t rows = static_cast<int64_t>(batch.rows.size());
  ROTOR_CHECK(cache == nullptr || cache->batch == rows,
              "shared prefix: a batch of ", rows, " prompts in a KV cache of ",
              cache ? cache->batch : 0, " rows");
  const int64_t length = static_cast<int64_t>(prompts[batch.rows[0]].size());
  const int64_t shared = batch.shared;
  ROTOR_CHECK(shared >= 0 && shared + last <= length, "shared prefix: ", shared,
              " shared positions leave fewer than ", last, " of a ", length,
              "-token prompt to run");
  ROTOR_CHECK(cache != nullptr || shared == 0, "shared prefix: ", shared,
              " shared positions but no KV cache to take them from");
  if (cache != nullptr && rows > 1 && shared > 0) {
    // Row 0's keys and values at [0, shared), [1, Hkv, shared, D] per
    // layer, into rows 1 .. rows - 1: read out once (the rows share its
    // storage), then written into each.
    for (nn::LayerKvCache& layer : cache->layers) {
      for (Tensor* cached : {&layer.keys, &layer.values}) {
        const Tensor row0 = Narrow(Narrow(*cached, 0, 0, 1), 2, 0, shared);
        const Tensor source = Tensor::FromVector(row0.shape(), row0.ToVector());
        for (int64_t row = 1; row < rows; ++row) {
          Narrow(Narrow(*cached, 0, row, 1), 2, 0, shared).CopyFrom(source);
        }
      }
    }
  }
  std::vector<TokenId> ids;
  ids.reserve(static_cast<size_t>(rows * (length - shared)));
  for (const size_t i : batch.rows) {
    ids.insert(ids.end(), prompts[i].begin() + shared, prompts[i].end());
  }
  if (cache != nullptr) cache->length = shared;
  return model.LastLogits(ids, rows, length - shared, shared, cache, last);
}

PrefixBatch AllPrompts(size_t count) {
  PrefixBatch all;
  all.rows.resize(count);
  std::iota(all.rows.begin(), all.rows.end(), size_t{0});
  return all;
}

}  // namespace rotor::train

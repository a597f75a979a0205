// Highway implementation of core/kernels/cross_entropy.h (file anatomy as in
// core/kernels/softmax.cc).
#include "core/kernels/cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "core/kernels/row_split.h"
#include "core/parallel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/cross_entropy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target helpers, after highway.h:
#include "core/kernels/row_math-inl.h"
#include "core/kernels/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// Returns logsumexp(row) = max + log(sum exp(row - max)), prefetching the
// next row meanwhile.
float LogSumExpRow(const float* row, size_t n, const float* next_row) {
  const float shift = Max(row, n);
  return shift +
         std::log(SumExpShifted<false>(row, nullptr, n, shift, next_row));
}

// drow = scale * (exp(row - lse) - onehot(target))
void CrossEntropyBackwardRow(const float* HWY_RESTRICT row, float lse,
                             int32_t target, float scale,
                             float* HWY_RESTRICT drow, size_t n) {
  ForEachVector(n, [&](auto d, size_t j) HWY_ATTR {
    const auto p = ExpShifted(d, hn::LoadU(d, row + j), lse);
    hn::StoreU(hn::Mul(p, hn::Set(d, scale)), d, drow + j);
  });
  drow[target] -= scale;
}

void CrossEntropyForward(const float* HWY_RESTRICT logits,
                         const int32_t* HWY_RESTRICT targets, size_t rows,
                         size_t vocab, int32_t ignore_index,
                         float* HWY_RESTRICT losses,
                         float* HWY_RESTRICT logsumexp) {
  const auto body = [&](int64_t begin, int64_t end) HWY_ATTR {
    for (int64_t r = begin; r < end; ++r) {
      losses[r] = logsumexp[r] = 0.0f;
      if (targets[r] == ignore_index) continue;
      const float* row = logits + r * vocab;
      logsumexp[r] =
          LogSumExpRow(row, vocab, NextRowOrSelf(logits, r, rows, vocab));
      losses[r] = logsumexp[r] - row[targets[r]];
    }
  };
  ParallelFor(rows, RowsPerTask(vocab), body);
}

void CrossEntropyBackward(const float* HWY_RESTRICT logits,
                          const float* HWY_RESTRICT logsumexp,
                          const int32_t* HWY_RESTRICT targets, size_t rows,
                          size_t vocab, int32_t ignore_index, float scale,
                          float* HWY_RESTRICT dlogits) {
  const auto body = [&](int64_t begin, int64_t end) HWY_ATTR {
    for (int64_t r = begin; r < end; ++r) {
      if (targets[r] == ignore_index) {
        std::fill(dlogits + r * vocab, dlogits + (r + 1) * vocab, 0.0f);
        continue;
      }
      CrossEntropyBackwardRow(logits + r * vocab, logsumexp[r], targets[r],
                              scale, dlogits + r * vocab, vocab);
    }
  };
  ParallelFor(rows, RowsPerTask(vocab), body);
}

// The row is read three times (max, sum of exponentials, gradient) while it
// is in cache; p * scale is the product CrossEntropyBackwardRow stores, so
// the result is bitwise the same.
void CrossEntropyForwardBackwardInPlace(float* HWY_RESTRICT logits,
                                        const int32_t* HWY_RESTRICT targets,
                                        size_t rows, size_t vocab,
                                        int32_t ignore_index, float scale,
                                        float* HWY_RESTRICT losses) {
  const auto body = [&](int64_t begin, int64_t end) HWY_ATTR {
    for (int64_t r = begin; r < end; ++r) {
      float* row = logits + r * vocab;
      losses[r] = 0.0f;
      if (targets[r] == ignore_index) {
        std::fill(row, row + vocab, 0.0f);
        continue;
      }
      const float lse =
          LogSumExpRow(row, vocab, NextRowOrSelf(logits, r, rows, vocab));
      losses[r] = lse - row[targets[r]];
      ForEachVector(vocab, [&](auto d, size_t j) HWY_ATTR {
        const auto p = ExpShifted(d, hn::LoadU(d, row + j), lse);
        hn::StoreU(hn::Mul(p, hn::Set(d, scale)), d, row + j);
      });
      row[targets[r]] -= scale;
    }
  };
  ParallelFor(rows, RowsPerTask(vocab), body);
}

const char* CrossEntropyTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rotor {
namespace kernels {

HWY_EXPORT(CrossEntropyForward);
HWY_EXPORT(CrossEntropyBackward);
HWY_EXPORT(CrossEntropyForwardBackwardInPlace);
HWY_EXPORT(CrossEntropyTarget);

void CrossEntropyForward(const float* logits, const int32_t* targets,
                         size_t rows, size_t vocab, int32_t ignore_index,
                         float* losses, float* logsumexp) {
  HWY_DYNAMIC_DISPATCH(CrossEntropyForward)
  (logits, targets, rows, vocab, ignore_index, losses, logsumexp);
}
void CrossEntropyBackward(const float* logits, const float* logsumexp,
                          const int32_t* targets, size_t rows, size_t vocab,
                          int32_t ignore_index, float scale, float* dlogits) {
  HWY_DYNAMIC_DISPATCH(CrossEntropyBackward)
  (logits, logsumexp, targets, rows, vocab, ignore_index, scale, dlogits);
}
void CrossEntropyForwardBackwardInPlace(float* logits, const int32_t* targets,
                                        size_t rows, size_t vocab,
                                        int32_t ignore_index, float scale,
                                        float* losses) {
  HWY_DYNAMIC_DISPATCH(CrossEntropyForwardBackwardInPlace)
  (logits, targets, rows, vocab, ignore_index, scale, losses);
}
const char* CrossEntropyTarget() {
  return HWY_DYNAMIC_DISPATCH(CrossEntropyTarget)();
}

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

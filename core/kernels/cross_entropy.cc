// Highway implementation of core/kernels/cross_entropy.h (file anatomy as in
// core/kernels/softmax.cc).
#include "core/kernels/cross_entropy.h"

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

void CrossEntropyForward(const float* HWY_RESTRICT logits,
                         const int32_t* HWY_RESTRICT targets, size_t rows,
                         size_t vocab, int32_t ignore_index,
                         float* HWY_RESTRICT losses,
                         float* HWY_RESTRICT logsumexp) {
  ParallelFor(rows, RowsPerTask(vocab),
              [&](int64_t begin, int64_t end) HWY_ATTR {
                for (int64_t r = begin; r < end; ++r) {
                  losses[r] = logsumexp[r] = 0.0f;
                  if (targets[r] == ignore_index) continue;
                  const float* row = logits + r * vocab;
                  const float shift = Max(row, vocab);
                  const float lse = shift + std::log(SumExpShifted<false>(
                                                row, nullptr, vocab, shift));
                  logsumexp[r] = lse;
                  losses[r] = lse - row[targets[r]];
                }
              });
}

void CrossEntropyBackward(const float* HWY_RESTRICT logits,
                          const float* HWY_RESTRICT logsumexp,
                          const int32_t* HWY_RESTRICT targets, size_t rows,
                          size_t vocab, int32_t ignore_index, float scale,
                          float* HWY_RESTRICT dlogits) {
  ParallelFor(
      rows, RowsPerTask(vocab), [&](int64_t begin, int64_t end) HWY_ATTR {
        for (int64_t r = begin; r < end; ++r) {
          if (targets[r] == ignore_index) continue;
          const float* row = logits + r * vocab;
          float* drow = dlogits + r * vocab;
          const float lse = logsumexp[r];
          // drow += scale * softmax(row); then the one-hot term at the target.
          ForEachVector(vocab, [&](auto d, size_t j) HWY_ATTR {
            const auto p = ExpShifted(d, hn::LoadU(d, row + j), lse);
            hn::StoreU(hn::MulAdd(p, hn::Set(d, scale), hn::LoadU(d, drow + j)),
                       d, drow + j);
          });
          drow[targets[r]] -= scale;
        }
      });
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
const char* CrossEntropyTarget() {
  return HWY_DYNAMIC_DISPATCH(CrossEntropyTarget)();
}

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

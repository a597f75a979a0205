// Highway implementation of core/kernels/adamw.h (file anatomy as in
// core/kernels/softmax.cc).
#include "core/kernels/adamw.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/kernels/row_split.h"
#include "core/parallel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/adamw.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target helpers, after highway.h:
#include "core/kernels/simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// The ParallelFor work items of a call: fixed pieces of each array, so a
// piece never depends on the thread count.
struct Chunk {
  size_t segment;
  size_t begin;
  size_t end;
};

template <typename SizeOf>
std::vector<Chunk> Chunks(size_t count, const SizeOf& size_of) {
  std::vector<Chunk> chunks;
  for (size_t s = 0; s < count; ++s) {
    const size_t n = size_of(s);
    for (size_t begin = 0; begin < n; begin += kMinFloatsPerTask) {
      chunks.push_back({s, begin, std::min(n, begin + kMinFloatsPerTask)});
    }
  }
  return chunks;
}

void AdamWUpdate(const AdamWSegment* segments, size_t count,
                 const AdamWHyperparams& hyper, int64_t step) {
  const double t = static_cast<double>(step);
  const float decays[2] = {1.0f, 1.0f - hyper.lr * hyper.weight_decay};
  const float step_size =
      static_cast<float>(hyper.lr / (1.0 - std::pow(double(hyper.beta1), t)));
  const float inverse_correction2_sqrt = static_cast<float>(
      1.0 / std::sqrt(1.0 - std::pow(double(hyper.beta2), t)));
  const float beta1 = hyper.beta1, beta2 = hyper.beta2, eps = hyper.eps;
  const float grad_scale = hyper.grad_scale;
  const std::vector<Chunk> chunks =
      Chunks(count, [&](size_t s) { return segments[s].n; });
  ParallelFor(chunks.size(), 1, [&](int64_t c_begin, int64_t c_end) HWY_ATTR {
    for (int64_t c = c_begin; c < c_end; ++c) {
      const Chunk& chunk = chunks[c];
      const AdamWSegment& seg = segments[chunk.segment];
      const float decay = decays[seg.decay];
      float* HWY_RESTRICT param = seg.param + chunk.begin;
      const float* HWY_RESTRICT grad = seg.grad + chunk.begin;
      float* HWY_RESTRICT m = seg.m + chunk.begin;
      float* HWY_RESTRICT v = seg.v + chunk.begin;
      ForEachVector(chunk.end - chunk.begin, [&](auto d, size_t i) HWY_ATTR {
        const auto g = grad_scale == 1.0f ? hn::LoadU(d, grad + i)
                                          : hn::Mul(hn::LoadU(d, grad + i),
                                                    hn::Set(d, grad_scale));
        const auto m_new = hn::MulAdd(hn::Set(d, beta1), hn::LoadU(d, m + i),
                                      hn::Mul(hn::Set(d, 1.0f - beta1), g));
        const auto v_new =
            hn::MulAdd(hn::Set(d, beta2), hn::LoadU(d, v + i),
                       hn::Mul(hn::Mul(hn::Set(d, 1.0f - beta2), g), g));
        const auto denominator =
            hn::MulAdd(hn::Sqrt(v_new), hn::Set(d, inverse_correction2_sqrt),
                       hn::Set(d, eps));
        const auto p = hn::Mul(hn::LoadU(d, param + i), hn::Set(d, decay));
        const auto update =
            hn::Div(hn::Mul(hn::Set(d, step_size), m_new), denominator);
        hn::StoreU(m_new, d, m + i);
        hn::StoreU(v_new, d, v + i);
        hn::StoreU(hn::Sub(p, update), d, param + i);
      });
    }
  });
}

// sum of x[i]^2 over one chunk, in double: floats widened lane by lane into
// vector-wide partial sums, then the lanes added.
double ChunkSumOfSquares(const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many floats as doubles
  const size_t lanes = hn::Lanes(dd);
  auto sum = hn::Zero(dd);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto xv = hn::PromoteTo(dd, hn::LoadU(df, x + i));
    sum = hn::MulAdd(xv, xv, sum);
  }
  double total = hn::GetLane(hn::SumOfLanes(dd, sum));
  for (; i < n; ++i) total += static_cast<double>(x[i]) * x[i];
  return total;
}

double SumOfSquaresOfSpans(const FloatSpan* spans, size_t count) {
  const std::vector<Chunk> chunks =
      Chunks(count, [&](size_t s) { return spans[s].n; });
  std::vector<double> sums(chunks.size());
  ParallelFor(chunks.size(), 1, [&](int64_t c_begin, int64_t c_end) HWY_ATTR {
    for (int64_t c = c_begin; c < c_end; ++c) {
      const Chunk& chunk = chunks[c];
      sums[c] = ChunkSumOfSquares(spans[chunk.segment].data + chunk.begin,
                                  chunk.end - chunk.begin);
    }
  });
  double total = 0.0;
  for (const double s : sums) total += s;  // in chunk order
  return total;
}

const char* AdamWTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rotor {
namespace kernels {

HWY_EXPORT(AdamWUpdate);
HWY_EXPORT(SumOfSquaresOfSpans);
HWY_EXPORT(AdamWTarget);

void AdamWUpdate(const AdamWSegment* segments, size_t count,
                 const AdamWHyperparams& hyper, int64_t step) {
  HWY_DYNAMIC_DISPATCH(AdamWUpdate)(segments, count, hyper, step);
}
double SumOfSquaresOfSpans(const FloatSpan* spans, size_t count) {
  return HWY_DYNAMIC_DISPATCH(SumOfSquaresOfSpans)(spans, count);
}
const char* AdamWTarget() { return HWY_DYNAMIC_DISPATCH(AdamWTarget)(); }

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

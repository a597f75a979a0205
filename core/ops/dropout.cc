// Inverted dropout: y = x * keep / (1 - p), where keep is 0 with probability
// p. dL/dx = g * keep / (1 - p) (the same mask).
//
// The mask is a pure function of (seed, element index): element i is kept
// when a hash of both, read as a uniform number in [0, 1), is >= p. So the
// mask does not depend on the thread count or on the order of evaluation,
// and backward recomputes it instead of storing it.
#include <algorithm>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/ops/strided.h"
#include "core/profile.h"
#include "core/random.h"

namespace rotor {

namespace {

// y[i] = x[i] * scale if element i is kept, else 0, for x and y contiguous
// with n elements.
void ApplyMask(const float* x, float* y, int64_t n, float p, uint64_t seed) {
  const float scale = 1.0f / (1.0f - p);
  // Rng(z).NextU64() is SplitMix64's mixing of z: a fresh generator per
  // element, keyed by the seed and the element's index.
  const uint64_t key = Rng(seed).NextU64();
  ParallelFor(n, internal::kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      // Top 24 bits as a float in [0, 1) (exact: 24 bits fit the mantissa).
      const uint64_t bits = Rng(key ^ static_cast<uint64_t>(i)).NextU64();
      const float u = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
      y[i] = u >= p ? x[i] * scale : 0.0f;
    }
  });
}

}  // namespace

Tensor Dropout(const Tensor& x, float p, uint64_t seed) {
  profile::Scope scope(profile::Phase::kKernels);
  ROTOR_CHECK(p >= 0.0f && p < 1.0f, "Dropout: probability p = ", p,
              " must be in [0, 1)");
  if (p == 0.0f) return x;
  const Tensor xc = x.is_contiguous() ? x : internal::ContiguousCopy(x);
  Tensor out = Tensor::Empty(x.shape());
  ApplyMask(xc.data(), out.data(), out.numel(), p, seed);
  return RecordOp(out, "Dropout", {x}, [p, seed](const Tensor& g) {
    const Tensor gc = g.is_contiguous() ? g : internal::ContiguousCopy(g);
    Tensor dx = Tensor::Empty(g.shape());
    ApplyMask(gc.data(), dx.data(), dx.numel(), p, seed);
    return std::vector<Tensor>{dx};
  });
}

}  // namespace rotor

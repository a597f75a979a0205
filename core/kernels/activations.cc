// Highway implementation of core/kernels/activations.h (file anatomy as in
// core/kernels/softmax.cc). Elementwise, so the flat array is split into
// chunks of kMinFloatsPerTask floats over threads.
#include "core/kernels/activations.h"

#include "core/kernels/row_split.h"
#include "core/parallel.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/activations.cc"
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

// silu'(x) given x and s = sigmoid(x): s * (1 + x * (1 - s)).
template <class D>
HWY_INLINE hn::Vec<D> SiluDerivative(D d, hn::Vec<D> x, hn::Vec<D> s) {
  const auto one = hn::Set(d, 1.0f);
  return hn::Mul(s, hn::MulAdd(x, hn::Sub(one, s), one));
}

void SiluForward(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, size_t n) {
  ParallelFor(n, kMinFloatsPerTask, [&](int64_t begin, int64_t end) HWY_ATTR {
    ForEachVector(end - begin, [&](auto d, size_t offset) HWY_ATTR {
      const size_t i = begin + offset;
      const auto xv = hn::LoadU(d, x + i);
      hn::StoreU(hn::Mul(xv, Sigmoid(d, xv)), d, y + i);
    });
  });
}

void SiluBackward(const float* HWY_RESTRICT x, const float* HWY_RESTRICT dy,
                  float* HWY_RESTRICT dx, size_t n) {
  ParallelFor(n, kMinFloatsPerTask, [&](int64_t begin, int64_t end) HWY_ATTR {
    ForEachVector(end - begin, [&](auto d, size_t offset) HWY_ATTR {
      const size_t i = begin + offset;
      const auto xv = hn::LoadU(d, x + i);
      const auto grad = SiluDerivative(d, xv, Sigmoid(d, xv));
      hn::StoreU(hn::Mul(hn::LoadU(d, dy + i), grad), d, dx + i);
    });
  });
}

void SwiGluForward(const float* HWY_RESTRICT gate, const float* HWY_RESTRICT up,
                   float* HWY_RESTRICT out, size_t n) {
  ParallelFor(n, kMinFloatsPerTask, [&](int64_t begin, int64_t end) HWY_ATTR {
    ForEachVector(end - begin, [&](auto d, size_t offset) HWY_ATTR {
      const size_t i = begin + offset;
      const auto g = hn::LoadU(d, gate + i);
      const auto silu = hn::Mul(g, Sigmoid(d, g));
      hn::StoreU(hn::Mul(silu, hn::LoadU(d, up + i)), d, out + i);
    });
  });
}

void SwiGluBackward(const float* HWY_RESTRICT gate,
                    const float* HWY_RESTRICT up,
                    const float* HWY_RESTRICT dout, float* HWY_RESTRICT dgate,
                    float* HWY_RESTRICT dup, size_t n) {
  ParallelFor(n, kMinFloatsPerTask, [&](int64_t begin, int64_t end) HWY_ATTR {
    ForEachVector(end - begin, [&](auto d, size_t offset) HWY_ATTR {
      const size_t i = begin + offset;
      const auto g = hn::LoadU(d, gate + i);
      const auto s = Sigmoid(d, g);
      const auto dout_v = hn::LoadU(d, dout + i);
      const auto dout_up = hn::Mul(dout_v, hn::LoadU(d, up + i));
      hn::StoreU(hn::Mul(dout_up, SiluDerivative(d, g, s)), d, dgate + i);
      hn::StoreU(hn::Mul(dout_v, hn::Mul(g, s)), d, dup + i);
    });
  });
}

const char* ActivationsTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rotor {
namespace kernels {

HWY_EXPORT(SiluForward);
HWY_EXPORT(SiluBackward);
HWY_EXPORT(SwiGluForward);
HWY_EXPORT(SwiGluBackward);
HWY_EXPORT(ActivationsTarget);

void SiluForward(const float* x, float* y, size_t n) {
  HWY_DYNAMIC_DISPATCH(SiluForward)(x, y, n);
}
void SiluBackward(const float* x, const float* dy, float* dx, size_t n) {
  HWY_DYNAMIC_DISPATCH(SiluBackward)(x, dy, dx, n);
}
void SwiGluForward(const float* gate, const float* up, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(SwiGluForward)(gate, up, out, n);
}
void SwiGluBackward(const float* gate, const float* up, const float* dout,
                    float* dgate, float* dup, size_t n) {
  HWY_DYNAMIC_DISPATCH(SwiGluBackward)(gate, up, dout, dgate, dup, n);
}
const char* ActivationsTarget() {
  return HWY_DYNAMIC_DISPATCH(ActivationsTarget)();
}

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

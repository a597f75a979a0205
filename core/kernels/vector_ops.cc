// Highway implementation of core/kernels/vector_ops.h. This file is compiled
// once per SIMD target (foreach_target.h re-includes it); HWY_EXPORT builds a
// table of the per-target functions and HWY_DYNAMIC_DISPATCH picks the best
// one the CPU supports on first call.
#include "core/kernels/vector_ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/vector_ops.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target helpers, after highway.h:
#include "core/kernels/simd-inl.h"
#include "core/parallel.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
// The per-target bodies sit in an anonymous namespace so that equal names in
// other kernel files cannot clash; HWY_EXPORT still finds them.
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// Elementwise work is split into chunks of this many floats (64 KiB), so two
// threads only help on arrays that are large enough to amortise a task.
constexpr int64_t kChunk = 16384;

// x and y may be the same array (vector_ops.h), so no HWY_RESTRICT here.
void Axpy(float alpha, const float* x, float* y, size_t n) {
  ParallelFor(n, kChunk, [&](int64_t begin, int64_t end) HWY_ATTR {
    ForEachVector(end - begin, [&](auto d, size_t i) HWY_ATTR {
      const size_t k = begin + i;
      const auto v = hn::MulAdd(hn::Set(d, alpha), hn::LoadU(d, x + k),
                                hn::LoadU(d, y + k));
      hn::StoreU(v, d, y + k);
    });
  });
}

void Scale(float alpha, float* HWY_RESTRICT x, size_t n) {
  ParallelFor(n, kChunk, [&](int64_t begin, int64_t end) HWY_ATTR {
    ForEachVector(end - begin, [&](auto d, size_t i) HWY_ATTR {
      const size_t k = begin + i;
      hn::StoreU(hn::Mul(hn::Set(d, alpha), hn::LoadU(d, x + k)), d, x + k);
    });
  });
}

// out[k] = op(a[k], b[k]) for a Highway binary op (Add, Sub, Mul, Div) given
// as a generic lambda; it inlines into the strip-mined loop, so each caller
// below compiles to the same code as a hand-written loop. a, b and out may be
// the same array, so no HWY_RESTRICT here.
template <class VectorOp>
void Elementwise(const float* a, const float* b, float* out, size_t n,
                 const VectorOp& op) {
  ParallelFor(n, kChunk, [&](int64_t begin, int64_t end) HWY_ATTR {
    ForEachVector(end - begin, [&](auto d, size_t i) HWY_ATTR {
      const size_t k = begin + i;
      hn::StoreU(op(hn::LoadU(d, a + k), hn::LoadU(d, b + k)), d, out + k);
    });
  });
}

void Add(const float* a, const float* b, float* out, size_t n) {
  Elementwise(a, b, out, n,
              [](auto x, auto y) HWY_ATTR { return hn::Add(x, y); });
}

void Sub(const float* a, const float* b, float* out, size_t n) {
  Elementwise(a, b, out, n,
              [](auto x, auto y) HWY_ATTR { return hn::Sub(x, y); });
}

void Mul(const float* a, const float* b, float* out, size_t n) {
  Elementwise(a, b, out, n,
              [](auto x, auto y) HWY_ATTR { return hn::Mul(x, y); });
}

// IEEE division on every target (Highway's Div is exact, not an
// approximate reciprocal), so results equal the scalar reference.
void Div(const float* a, const float* b, float* out, size_t n) {
  Elementwise(a, b, out, n,
              [](auto x, auto y) HWY_ATTR { return hn::Div(x, y); });
}

void ExpForBf16Array(const float* x, float* out, size_t n) {
  ParallelFor(n, kChunk, [&](int64_t begin, int64_t end) HWY_ATTR {
    ForEachVector(end - begin, [&](auto d, size_t i) HWY_ATTR {
      const size_t k = begin + i;
      hn::StoreU(ExpForBf16(d, hn::LoadU(d, x + k)), d, out + k);
    });
  });
}

const char* VectorOpsTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rotor {
namespace kernels {

HWY_EXPORT(Axpy);
HWY_EXPORT(Scale);
HWY_EXPORT(Add);
HWY_EXPORT(Sub);
HWY_EXPORT(Mul);
HWY_EXPORT(Div);
HWY_EXPORT(ExpForBf16Array);
HWY_EXPORT(VectorOpsTarget);

void Axpy(float alpha, const float* x, float* y, size_t n) {
  HWY_DYNAMIC_DISPATCH(Axpy)(alpha, x, y, n);
}
void Scale(float alpha, float* x, size_t n) {
  HWY_DYNAMIC_DISPATCH(Scale)(alpha, x, n);
}
void Add(const float* a, const float* b, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(Add)(a, b, out, n);
}
void Sub(const float* a, const float* b, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(Sub)(a, b, out, n);
}
void Mul(const float* a, const float* b, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(Mul)(a, b, out, n);
}
void Div(const float* a, const float* b, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(Div)(a, b, out, n);
}
void ExpForBf16(const float* x, float* out, size_t n) {
  HWY_DYNAMIC_DISPATCH(ExpForBf16Array)(x, out, n);
}
const char* VectorOpsTarget() {
  return HWY_DYNAMIC_DISPATCH(VectorOpsTarget)();
}

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

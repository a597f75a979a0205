// Vector basics on contiguous float arrays, Highway-vectorised with dynamic
// dispatch (core/kernels/vector_ops.cc) and parallel over chunks. Scalar
// references: core/kernels/vector_ops_scalar.h.
//
// Arrays may be unaligned. Unless stated, output arrays may alias inputs
// exactly (same pointer) but must not partially overlap them.
#ifndef ROTOR_CORE_KERNELS_VECTOR_OPS_H_
#define ROTOR_CORE_KERNELS_VECTOR_OPS_H_

#include <cstddef>

namespace rotor {
namespace kernels {

// y[i] += alpha * x[i]                          x, y: [n]
void Axpy(float alpha, const float* x, float* y, size_t n);
// x[i] *= alpha                                 x: [n]
void Scale(float alpha, float* x, size_t n);
// out[i] = a[i] + b[i]                          a, b, out: [n]
void Add(const float* a, const float* b, float* out, size_t n);
// out[i] = a[i] - b[i]                          a, b, out: [n]
void Sub(const float* a, const float* b, float* out, size_t n);
// out[i] = a[i] * b[i]                          a, b, out: [n]
void Mul(const float* a, const float* b, float* out, size_t n);
// out[i] = a[i] / b[i]                          a, b, out: [n]
void Div(const float* a, const float* b, float* out, size_t n);

// out[i] = exp(x[i]) to bfloat16's needs, the probabilities of attention's
// bf16 tiles (AttentionShape::bf16), which round them to 8 bits next:
// relative error below 2^-17 for x in [-86.5, 0], 0 below about -86.6 and
// for -inf, finite up to x = 88 (core/kernels/simd-inl.h says how).
void ExpForBf16(const float* x, float* out, size_t n);

// Name of the Highway target the vector-ops dispatch chose ("AVX3", "AVX2",
// "SSE4", "SSSE3", "SCALAR", ...): tests use it to prove which target ran.
const char* VectorOpsTarget();

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_VECTOR_OPS_H_

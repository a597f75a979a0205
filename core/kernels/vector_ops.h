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

// Name of the Highway target the vector-ops dispatch chose ("AVX3", "AVX2",
// "SSE4", "SSSE3", "SCALAR", ...): tests use it to prove which target ran.
const char* VectorOpsTarget();

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_VECTOR_OPS_H_

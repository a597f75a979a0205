// SiLU and SwiGLU on flat float arrays: Highway kernels with dynamic dispatch
// (core/kernels/activations.cc), parallel over chunks of the array. Scalar
// references: core/kernels/activations_scalar.h.
//
// Arrays hold n floats, may be unaligned and must not alias each other.
//
// With sigmoid(x) = 1 / (1 + exp(-x)):
//   silu(x)  = x * sigmoid(x)
//   silu'(x) = sigmoid(x) * (1 + x * (1 - sigmoid(x)))
#ifndef ROTOR_CORE_KERNELS_ACTIVATIONS_H_
#define ROTOR_CORE_KERNELS_ACTIVATIONS_H_

#include <cstddef>

namespace rotor {
namespace kernels {

// y[i] = silu(x[i])
void SiluForward(const float* x, float* y, size_t n);
// dx[i] = dy[i] * silu'(x[i])           (the forward input x is the state)
void SiluBackward(const float* x, const float* dy, float* dx, size_t n);

// The gated unit of a Llama MLP: out[i] = silu(gate[i]) * up[i]
void SwiGluForward(const float* gate, const float* up, float* out, size_t n);
// dgate[i] = dout[i] * up[i] * silu'(gate[i])
// dup[i]   = dout[i] * silu(gate[i])
// Both in one pass over the arrays (sigmoid(gate) computed once).
void SwiGluBackward(const float* gate, const float* up, const float* dout,
                    float* dgate, float* dup, size_t n);

// Name of the Highway target this family dispatches to.
const char* ActivationsTarget();

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ACTIVATIONS_H_

// A small, fully reproducible random number generator: SplitMix64 (Steele,
// Lea, Flood 2014). Its whole state is one 64-bit integer, so checkpoints can
// save and restore it exactly, and its output is the same on every platform
// and standard library (unlike std::normal_distribution).
#ifndef ROTOR_CORE_RANDOM_H_
#define ROTOR_CORE_RANDOM_H_

#include <cmath>
#include <cstdint>

#include "core/tensor.h"

namespace rotor {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  // The next 64 random bits.
  uint64_t NextU64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 random bits.
  double Uniform() { return (NextU64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n) (n > 0), without modulo bias.
  uint64_t Below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
      x = NextU64();
    } while (x >= limit);
    return x % n;
  }
  // Standard normal, by the Box-Muller transform (one value per call).
  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]: log is finite
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  uint64_t state() const { return state_; }
  void set_state(uint64_t state) { state_ = state; }

 private:
  uint64_t state_;
};

// A tensor of independent N(0, stddev^2) values.
inline Tensor RandomNormal(const Shape& shape, double stddev, Rng& rng,
                           bool requires_grad = false) {
  Tensor t = Tensor::Empty(shape, requires_grad);
  float* data = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) data[i] = stddev * rng.Normal();
  return t;
}

}  // namespace rotor

#endif  // ROTOR_CORE_RANDOM_H_

// SplitMix64: a tiny, fast, well-mixed 64-bit generator (Steele, Lea &
// Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014).
// Its whole state is one uint64 counter, so a checkpoint saves and restores
// it exactly, and results are identical on every platform and compiler.
//
//   state += 0x9E3779B97F4A7C15            (the golden-ratio increment)
//   z = state
//   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//   z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//   return z ^ (z >> 31)
#ifndef ROTOR_TRAIN_RNG_H_
#define ROTOR_TRAIN_RNG_H_

#include <cstdint>

namespace rotor {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed = 0) : state_(seed) {}

  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform integer in [0, n), n >= 1, without modulo bias (Lemire 2019,
  // "Fast random integer generation in an interval"): the high 64 bits of
  // Next() * n, rejecting the few low products that would favour some values.
  uint64_t Uniform(uint64_t n) {
    unsigned __int128 product = static_cast<unsigned __int128>(Next()) * n;
    uint64_t low = static_cast<uint64_t>(product);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
      while (low < threshold) {
        product = static_cast<unsigned __int128>(Next()) * n;
        low = static_cast<uint64_t>(product);
      }
    }
    return static_cast<uint64_t>(product >> 64);
  }

  uint64_t state() const { return state_; }
  void set_state(uint64_t state) { state_ = state; }

 private:
  uint64_t state_;
};

}  // namespace rotor

#endif  // ROTOR_TRAIN_RNG_H_

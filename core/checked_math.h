// Checked integer arithmetic for element and byte counts. Sizes come from
// users (config keys, flags, file headers), so their products can exceed
// 64 bits; a wrapped count would allocate too little and let a copy run
// past the buffer. Every such product goes through these functions, which
// throw rotor::Error naming what was being computed instead.
#ifndef ROTOR_CORE_CHECKED_MATH_H_
#define ROTOR_CORE_CHECKED_MATH_H_

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace rotor {

// a * b; throws "integer overflow computing WHAT: A * B" if it does not fit
// in T.
template <typename T>
T CheckedMul(T a, T b, std::string_view what) {
  static_assert(std::is_integral_v<T>, "CheckedMul takes integers");
  T product;
  ROTOR_CHECK(!__builtin_mul_overflow(a, b, &product),
              "integer overflow computing ", what, ": ", a, " * ", b);
  return product;
}

// a + b; throws "integer overflow computing WHAT: A + B" if it does not fit
// in T.
template <typename T>
T CheckedAdd(T a, T b, std::string_view what) {
  static_assert(std::is_integral_v<T>, "CheckedAdd takes integers");
  T sum;
  ROTOR_CHECK(!__builtin_add_overflow(a, b, &sum),
              "integer overflow computing ", what, ": ", a, " + ", b);
  return sum;
}

// The product of `extents` (1 for none), which must be >= 0; throws naming
// `what` for a negative extent or an overflow.
inline int64_t CheckedElementCount(const std::vector<int64_t>& extents,
                                   std::string_view what) {
  int64_t count = 1;
  for (const int64_t extent : extents) {
    ROTOR_CHECK(extent >= 0, what, ": negative extent ", extent);
    count = CheckedMul(count, extent, what);
  }
  return count;
}

// CheckedElementCount(extents) * element_size bytes.
inline uint64_t CheckedByteCount(const std::vector<int64_t>& extents,
                                 uint64_t element_size, std::string_view what) {
  return CheckedMul(static_cast<uint64_t>(CheckedElementCount(extents, what)),
                    element_size, what);
}

}  // namespace rotor

#endif  // ROTOR_CORE_CHECKED_MATH_H_

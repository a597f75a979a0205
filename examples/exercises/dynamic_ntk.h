// Exercise (rung 07, docs/context-extension.md "dynamic"): the base that
// dynamic NTK scaling uses for a sequence of `length` tokens.
//
// Dynamic NTK is NTK-aware scaling (linear_ntk.h: the base b' that slows
// the slowest of the r/2 pairs by a factor, the fastest not at all) with a
// factor that grows with the length, in HF's convention
//   L = max(length, L0),   s_L = s * L / L0 - (s - 1)
// (L0 = original_length). Return the NTK base for the factor s_L. Up to L0
// this is the base itself (the model runs unchanged); the factor s is a
// slope, reached at L = (2 - 1/s) L0 and passed beyond it.
// Test: ctest -R Learn.DynamicNtkBase (against rotor's DynamicNtkBase).
#ifndef ROTOR_EXAMPLES_EXERCISES_DYNAMIC_NTK_H_
#define ROTOR_EXAMPLES_EXERCISES_DYNAMIC_NTK_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace learn {

inline double DynamicNtkBase(double base, int64_t r, double s,
                             int64_t original_length, int64_t length) {
  double result = base;
  // ---- REFERENCE SOLUTION: delete from here ...
  const double l0 = static_cast<double>(original_length);
  const double l = std::max(static_cast<double>(length), l0);
  result = base * std::pow(s * l / l0 - (s - 1), r / (r - 2.0));
  // ---- ... to here, and write your own. ----
  return result;
}

}  // namespace learn

#endif  // ROTOR_EXAMPLES_EXERCISES_DYNAMIC_NTK_H_

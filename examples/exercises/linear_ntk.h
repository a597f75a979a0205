// Exercise (rung 07, docs/context-extension.md "linear" and "ntk"): the two
// oldest ways to stretch RoPE by a factor s, as inverse frequencies.
//
// For rotary dimension r and base b, plain RoPE turns pair i by
//   theta_i = b^(-2i/r) per position,  i = 0 .. r/2 - 1.
// linear (position interpolation): every pair is slowed by s (position p
// turns as far as position p / s did).
// ntk (NTK-aware): keep the form b'^(-2i/r) and raise the base to b' such
// that the slowest pair (i = r/2 - 1) is slowed by exactly s; the fastest
// (i = 0) is then not slowed at all. Solve that condition for b'.
// Return r/2 inverse frequencies each, pair 0 first.
// Test: ctest -R Learn.LinearNtkInvFreq (against ComputeRopeFrequencies).
#ifndef ROTOR_EXAMPLES_EXERCISES_LINEAR_NTK_H_
#define ROTOR_EXAMPLES_EXERCISES_LINEAR_NTK_H_

#include <cmath>
#include <cstdint>
#include <vector>

namespace learn {

inline std::vector<double> LinearInvFreq(int64_t r, double base, double s) {
  std::vector<double> inv_freq(r / 2);
  // ---- REFERENCE SOLUTION: delete from here ...
  for (int64_t i = 0; i < r / 2; ++i) {
    inv_freq[i] = std::pow(base, -2.0 * i / r) / s;
  }
  // ---- ... to here, and write your own. ----
  return inv_freq;
}

inline std::vector<double> NtkInvFreq(int64_t r, double base, double s) {
  std::vector<double> inv_freq(r / 2);
  // ---- REFERENCE SOLUTION: delete from here ...
  const double raised = base * std::pow(s, r / (r - 2.0));
  for (int64_t i = 0; i < r / 2; ++i) {
    inv_freq[i] = std::pow(raised, -2.0 * i / r);
  }
  // ---- ... to here, and write your own. ----
  return inv_freq;
}

}  // namespace learn

#endif  // ROTOR_EXAMPLES_EXERCISES_LINEAR_NTK_H_

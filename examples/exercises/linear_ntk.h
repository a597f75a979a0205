// Exercise (rung 07, docs/context-extension.md "linear" and "ntk"): the two
// oldest ways to stretch RoPE by a factor s, as inverse frequencies.
//
// For rotary dimension r and base b, plain RoPE turns pair i by
//   theta_i = b^(-2i/r) per position,  i = 0 .. r/2 - 1.
// linear (position interpolation): every pair slowed by s,
//   inv_freq_i = theta_i / s
// ntk (NTK-aware): the base raised so that the slowest pair is slowed by
// exactly s and the fastest not at all,
//   b' = b * s^(r / (r - 2)),   inv_freq_i = b'^(-2i/r)
// Return r/2 numbers each.
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

// Exercise (rung 07, docs/context-extension.md "yarn"): YaRN's
// frequencies.
//
// For rotary dimension r, base b, factor s and original length L0, plain
// RoPE turns pair i by theta_i = b^(-2i/r) per position, i = 0 .. r/2 - 1.
// YaRN leaves the fast pairs alone, interpolates the slow ones (theta_i
// slowed by s, as linear scaling does) and ramps between them:
//   corr(n): the (fractional) pair index i whose wavelength 2 pi / theta_i
//            fits exactly n times into L0; solve that for i.
//   low  = floor(corr(beta_fast)), clamped below at 0
//   high = ceil(corr(beta_slow)), clamped above at r - 1 (not r/2 - 1:
//          HF's convention); if low == high, add 0.001 to high.
//   ramp_i rises linearly in i from 0 at i = low to 1 at i = high, and is
//          clamped to [0, 1] outside.
// Pair i's inverse frequency mixes the interpolated one (weight ramp_i)
// and the original one (weight 1 - ramp_i) linearly.
// Return inv_freq (r/2 numbers, pair 0 first).
// Test: ctest -R Learn.YarnRamp (against rotor's ComputeRopeFrequencies).
#ifndef ROTOR_EXAMPLES_EXERCISES_YARN_RAMP_H_
#define ROTOR_EXAMPLES_EXERCISES_YARN_RAMP_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace learn {

inline std::vector<double> YarnInvFreq(int64_t r, double base, double s,
                                       double original_length, double beta_fast,
                                       double beta_slow) {
  std::vector<double> inv_freq(r / 2);
  // ---- REFERENCE SOLUTION: delete from here ...
  const double kPi = 3.14159265358979323846;
  auto corr = [&](double n) {
    return r * std::log(original_length / (2 * kPi * n)) / (2 * std::log(base));
  };
  const double low = std::max(std::floor(corr(beta_fast)), 0.0);
  double high = std::min(std::ceil(corr(beta_slow)), r - 1.0);
  if (low == high) high += 0.001;
  for (int64_t i = 0; i < r / 2; ++i) {
    const double theta = 1.0 / std::pow(base, 2.0 * i / r);
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    inv_freq[i] = theta / s * ramp + theta * (1 - ramp);
  }
  // ---- ... to here, and write your own. ----
  return inv_freq;
}

}  // namespace learn

#endif  // ROTOR_EXAMPLES_EXERCISES_YARN_RAMP_H_

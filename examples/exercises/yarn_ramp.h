// Exercise (rung 07, docs/context-extension.md "yarn"): YaRN's
// frequencies.
//
// For rotary dimension r, base b, factor s and original length L0:
//   theta_i = b^(-2i/r),  i = 0 .. r/2 - 1
//   corr(n) = r * ln(L0 / (2 pi n)) / (2 ln b)   the pair whose wavelength
//                                                fits n times into L0
//   low  = max(floor(corr(beta_fast)), 0)
//   high = min(ceil(corr(beta_slow)), r - 1)     (if low == high: high +=
//   0.001) ramp_i = clamp((i - low) / (high - low), 0, 1) inv_freq_i = theta_i
//   / s * ramp_i + theta_i * (1 - ramp_i)
// Return inv_freq (r/2 numbers).
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

// Exercise (rung 05, docs/rope.md): rotate one row of a query or key.
//
// x holds `dim` channels (dim even) of one head at position `position`.
// Pair i (i = 0 .. dim/2 - 1) turns by the angle position * theta_i with
// theta_i = base^(-2i/dim):
//   y_a = x_a cos - x_b sin,   y_b = x_b cos + x_a sin,
// where the pair is (a, b) = (i, i + dim/2) in the split-half layout and
// (2i, 2i + 1) when `interleaved`. Compute the angle in double.
// Test: ctest -R Learn.RopeRotate (against rotor's Rope op).
#ifndef ROTOR_EXAMPLES_EXERCISES_ROPE_ROTATE_H_
#define ROTOR_EXAMPLES_EXERCISES_ROPE_ROTATE_H_

#include <cmath>
#include <cstdint>
#include <vector>

namespace learn {

inline std::vector<double> RotateRow(const std::vector<double>& x,
                                     int64_t position, double base,
                                     bool interleaved) {
  std::vector<double> y = x;
  // ---- REFERENCE SOLUTION: delete from here ...
  const int64_t dim = static_cast<int64_t>(x.size()), half = dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double theta = std::pow(base, -2.0 * i / static_cast<double>(dim));
    const double c = std::cos(position * theta), s = std::sin(position * theta);
    const int64_t a = interleaved ? 2 * i : i;
    const int64_t b = interleaved ? 2 * i + 1 : i + half;
    y[a] = x[a] * c - x[b] * s;
    y[b] = x[b] * c + x[a] * s;
  }
  // ---- ... to here, and write your own. ----
  return y;
}

}  // namespace learn

#endif  // ROTOR_EXAMPLES_EXERCISES_ROPE_ROTATE_H_

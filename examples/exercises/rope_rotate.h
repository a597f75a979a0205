// Exercise (rung 05, docs/rope.md): rotate one row of a query or key.
//
// x holds `dim` channels (dim even) of one head at position `position`;
// return the rotated row, the same size. The channels form dim/2 pairs
// (a, b): (i, i + dim/2) in the split-half layout and (2i, 2i + 1) when
// `interleaved`, i = 0 .. dim/2 - 1. Pair i is rotated, as the point
// (x_a, x_b) of the plane, by the angle position * theta_i with
// theta_i = base^(-2i/dim), counter-clockwise (a positive angle turns the
// a axis towards the b axis). Compute the angle in double.
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

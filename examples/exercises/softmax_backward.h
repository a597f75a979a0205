// Exercise (rung 01, docs/autograd-and-ops.md): the backward of one op by
// hand, softmax over one row, checked against rotor's autograd.
//
// Forward:   y_i = exp(x_i) / sum_j exp(x_j)   over one row of n numbers.
// Backward:  given y (the forward's output) and dy = dL/dy, both of n
// numbers, return dx = dL/dx (n numbers). Derive it with the chain rule.
// Hint: find the partial derivative of y_j with respect to x_i first (the
// cases i == j and i != j differ). The result can be written with y alone,
// without x: that is why rotor's Softmax saves its output for the backward.
// Test: ctest -R Learn.SoftmaxBackward (y.Backward(dy) on rotor's Softmax).
#ifndef ROTOR_EXAMPLES_EXERCISES_SOFTMAX_BACKWARD_H_
#define ROTOR_EXAMPLES_EXERCISES_SOFTMAX_BACKWARD_H_

#include <cstddef>
#include <vector>

namespace learn {

inline std::vector<double> SoftmaxBackward(const std::vector<double>& y,
                                           const std::vector<double>& dy) {
  std::vector<double> dx(y.size(), 0.0);
  // ---- REFERENCE SOLUTION: delete from here ...
  double dot = 0.0;
  for (size_t j = 0; j < y.size(); ++j) dot += dy[j] * y[j];
  for (size_t i = 0; i < y.size(); ++i) dx[i] = y[i] * (dy[i] - dot);
  // ---- ... to here, and write your own. ----
  return dx;
}

}  // namespace learn

#endif  // ROTOR_EXAMPLES_EXERCISES_SOFTMAX_BACKWARD_H_

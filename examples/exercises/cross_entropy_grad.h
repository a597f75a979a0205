// Exercise (rung 02, docs/autograd-and-ops.md): the gradient of the loss
// every rung from 02 on trains with, by hand, checked against rotor's
// autograd.
//
// For N rows of logits z (each of V numbers, row-major [N * V]; N is
// targets.size(), V is `vocab`) and targets t (t_n in 0 .. V-1):
//   L = (1/N) sum_n -log softmax(z_n)[t_n]
// Return dL/dz, row-major [N * V]. Hint: write -log softmax(z)[t] as
// log(sum_v exp(z_v)) - z_t and differentiate the log-sum-exp first; don't
// forget the mean over N. Subtract each row's maximum before exp (one of
// the test's rows has logits from 700 to 800: exp(710) overflows even in
// double).
// Test: ctest -R Learn.CrossEntropyGrad (against CrossEntropy's backward).
#ifndef ROTOR_EXAMPLES_EXERCISES_CROSS_ENTROPY_GRAD_H_
#define ROTOR_EXAMPLES_EXERCISES_CROSS_ENTROPY_GRAD_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace learn {

inline std::vector<double> CrossEntropyGrad(const std::vector<double>& logits,
                                            const std::vector<int>& targets,
                                            int64_t vocab) {
  std::vector<double> grad(logits.size(), 0.0);
  // ---- REFERENCE SOLUTION: delete from here ...
  const int64_t rows = static_cast<int64_t>(targets.size());
  for (int64_t n = 0; n < rows; ++n) {
    const double* z = logits.data() + n * vocab;
    double* g = grad.data() + n * vocab;
    const double top = *std::max_element(z, z + vocab);
    double sum = 0.0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(z[v] - top);
    for (int64_t v = 0; v < vocab; ++v) {
      g[v] = (std::exp(z[v] - top) / sum - (v == targets[n] ? 1.0 : 0.0)) /
             static_cast<double>(rows);
    }
  }
  // ---- ... to here, and write your own. ----
  return grad;
}

}  // namespace learn

#endif  // ROTOR_EXAMPLES_EXERCISES_CROSS_ENTROPY_GRAD_H_

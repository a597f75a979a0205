// Exercise (rung 04, docs/attention.md): causal attention of one head from
// its definition.
//
// q, k, v are [T, D] row-major. Return O = softmax(S) V, [T, D], with
// S[i][j] = <q_i, k_j> / sqrt(D) for j <= i and query i seeing no key
// j > i (weight 0). Subtract each row's maximum before exp, as every real
// softmax does, so large scores do not overflow.
// Test: ctest -R Learn.CausalAttention (against rotor's fused kernel).
#ifndef ROTOR_EXAMPLES_EXERCISES_CAUSAL_ATTENTION_H_
#define ROTOR_EXAMPLES_EXERCISES_CAUSAL_ATTENTION_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace learn {

inline std::vector<double> CausalAttention(const std::vector<double>& q,
                                           const std::vector<double>& k,
                                           const std::vector<double>& v,
                                           int64_t T, int64_t D) {
  std::vector<double> out(T * D, 0.0);
  // ---- REFERENCE SOLUTION: delete from here ...
  for (int64_t i = 0; i < T; ++i) {
    std::vector<double> s(i + 1);
    for (int64_t j = 0; j <= i; ++j) {
      double dot = 0.0;
      for (int64_t d = 0; d < D; ++d) dot += q[i * D + d] * k[j * D + d];
      s[j] = dot / std::sqrt(static_cast<double>(D));
    }
    const double m = *std::max_element(s.begin(), s.end());
    double sum = 0.0;
    for (double& x : s) sum += (x = std::exp(x - m));
    for (int64_t j = 0; j <= i; ++j) {
      for (int64_t d = 0; d < D; ++d)
        out[i * D + d] += s[j] / sum * v[j * D + d];
    }
  }
  // ---- ... to here, and write your own. ----
  return out;
}

}  // namespace learn

#endif  // ROTOR_EXAMPLES_EXERCISES_CAUSAL_ATTENTION_H_

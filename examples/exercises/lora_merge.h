// Exercise (rung 09, docs/lora.md "merging"): fold a LoRA adapter into its
// weight, what `rotor export` does to a LoRA checkpoint.
//
// An adapted Linear computes  y = x W^T + (alpha / r) (x A^T) B^T  with
// W: [out, in], A: [r, in], B: [out, r], all row-major. Find the single
// matrix W' ([out, in]) with x W'^T equal to that y for every x, and return
// it row-major [out * in]. Hint: the transpose of a product.
// Test: ctest -R Learn.LoraMerge (x W'^T against the adapted nn::Linear's
// output, and W' against Linear::MergeLora).
#ifndef ROTOR_EXAMPLES_EXERCISES_LORA_MERGE_H_
#define ROTOR_EXAMPLES_EXERCISES_LORA_MERGE_H_

#include <cstdint>
#include <vector>

namespace learn {

inline std::vector<double> MergeLora(const std::vector<double>& w,
                                     const std::vector<double>& a,
                                     const std::vector<double>& b, int64_t out,
                                     int64_t in, int64_t r, double alpha) {
  std::vector<double> merged = w;
  // ---- REFERENCE SOLUTION: delete from here ...
  const double scale = alpha / static_cast<double>(r);
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) {
      double sum = 0.0;
      for (int64_t k = 0; k < r; ++k) sum += b[o * r + k] * a[k * in + i];
      merged[o * in + i] += scale * sum;
    }
  }
  // ---- ... to here, and write your own. ----
  return merged;
}

}  // namespace learn

#endif  // ROTOR_EXAMPLES_EXERCISES_LORA_MERGE_H_

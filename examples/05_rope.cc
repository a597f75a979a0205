// Rung 05 of the ladder (docs/learn.md, docs/rope.md): rotary position
// embedding in 30 lines, its one property, and its two memory layouts.
//
// RoPE rotates pair i of a query or key at position p by the angle
// p * theta_i, theta_i = base^(-2i/D) (i = 0 .. D/2 - 1): fast clock hands
// for small i, slow ones for large i. With c = cos, s = sin of that angle,
//   y_a = x_a c - x_b s
//   y_b = x_b c + x_a s
// A rotation by m followed by the inverse of a rotation by n is a rotation
// by m - n, so <R(m) q, R(n) k> = <q, R(m - n) k>: the attention score
// depends on the positions only through their distance.
//
// Which two channels form pair i is a convention: split-half (i, i + D/2),
// as in Hugging Face Llama, or interleaved (2i, 2i + 1), as in Meta's
// reference code. They are the same rotation up to a fixed permutation of
// the channels.
//
//   ./build/examples/05_rope
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/ops/rope.h"
#include "core/random.h"
#include "core/tensor.h"

namespace {

constexpr int kD = 8;  // head_dim: 4 pairs
constexpr double kBase = 10000.0;

// ---- RoPE in 30 lines (double precision) ----
// Rotates the D channels of x in place for position p. `interleaved`
// chooses the pairs: (2i, 2i + 1) instead of (i, i + D/2).
void Rotate(std::vector<double>& x, int64_t p, bool interleaved) {
  const int half = static_cast<int>(x.size()) / 2;
  for (int i = 0; i < half; ++i) {
    const double theta =
        std::pow(kBase, -2.0 * i / static_cast<double>(x.size()));
    const double c = std::cos(p * theta), s = std::sin(p * theta);
    const int a = interleaved ? 2 * i : i;
    const int b = interleaved ? 2 * i + 1 : i + half;
    const double xa = x[a], xb = x[b];
    x[a] = xa * c - xb * s;
    x[b] = xb * c + xa * s;
  }
}

std::vector<double> Rotated(std::vector<double> x, int64_t p,
                            bool interleaved = false) {
  Rotate(x, p, interleaved);
  return x;
}

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

int main() {
  rotor::Rng rng(5);
  std::vector<double> q(kD), k(kD);
  for (double& v : q) v = 2.0 * rng.Uniform() - 1.0;
  for (double& v : k) v = 2.0 * rng.Uniform() - 1.0;

  // ---- 1. q.k depends only on m - n ----
  std::printf("score <R(m) q, R(n) k> for a few positions:\n");
  std::printf("  %6s %6s %6s   score\n", "m", "n", "m - n");
  const int64_t pairs[][2] = {{3, 0},     {10, 7}, {1003, 1000}, {5, 5},
                              {105, 105}, {0, 3},  {1000, 1003}};
  double spread_at_3 = 0.0;
  const double at_3 = Dot(Rotated(q, 3), Rotated(k, 0));
  for (const auto& mn : pairs) {
    const double score = Dot(Rotated(q, mn[0]), Rotated(k, mn[1]));
    if (mn[0] - mn[1] == 3)
      spread_at_3 = std::fmax(spread_at_3, std::fabs(score - at_3));
    std::printf("  %6lld %6lld %6lld   %+.12f\n", static_cast<long long>(mn[0]),
                static_cast<long long>(mn[1]),
                static_cast<long long>(mn[0] - mn[1]), score);
  }
  std::printf(
      "same distance, same score: largest difference at m - n = 3 is "
      "%.1e\n\n",
      spread_at_3);

  // ---- 2. Split-half vs interleaved: a permutation apart ----
  // perm = [0, 2, 4, 6, 1, 3, 5, 7] gathers the interleaved pairs into
  // split-half order: split_half(x[perm]) == interleaved(x)[perm].
  std::vector<int> perm;
  for (int i = 0; i < kD; i += 2) perm.push_back(i);
  for (int i = 1; i < kD; i += 2) perm.push_back(i);
  std::vector<double> gathered(kD);
  for (int j = 0; j < kD; ++j) gathered[j] = q[perm[j]];
  const std::vector<double> split = Rotated(gathered, 7);
  const std::vector<double> inter = Rotated(q, 7, /*interleaved=*/true);
  double layout_diff = 0.0;
  for (int j = 0; j < kD; ++j) {
    layout_diff = std::fmax(layout_diff, std::fabs(split[j] - inter[perm[j]]));
  }
  std::printf(
      "split-half(q[perm]) vs interleaved(q)[perm] at p = 7: max "
      "difference %.1e\n",
      layout_diff);

  // ---- 3. Against rotor's kernel (float32, a cos/sin table) ----
  // One head, positions 0..T-1; row t of the result is R(t) q.
  constexpr int64_t kT = 64;
  std::vector<float> rows;
  for (int64_t t = 0; t < kT; ++t) {
    for (double v : q) rows.push_back(static_cast<float>(v));
  }
  rotor::RopeTable table = rotor::RopeTable::Default(kD, kBase);
  double kernel_diff = 0.0;
  for (rotor::RopeLayout layout :
       {rotor::RopeLayout::kSplitHalf, rotor::RopeLayout::kInterleaved}) {
    const rotor::Tensor x = rotor::Tensor::FromVector({1, 1, kT, kD}, rows);
    const std::vector<float> y =
        rotor::Rope(x, table, rotor::RopePositions{0}, layout).ToVector();
    for (int64_t t = 0; t < kT; ++t) {
      const std::vector<double> mine =
          Rotated(q, t, layout == rotor::RopeLayout::kInterleaved);
      for (int j = 0; j < kD; ++j) {
        kernel_diff =
            std::fmax(kernel_diff, std::fabs(mine[j] - y[t * kD + j]));
      }
    }
  }
  std::printf(
      "these 30 lines vs rotor's Rope op, both layouts, positions "
      "0..%lld: max difference %.1e (float32)\n",
      static_cast<long long>(kT - 1), kernel_diff);

  const bool ok =
      spread_at_3 < 1e-12 && layout_diff < 1e-15 && kernel_diff < 1e-6;
  std::printf("%s\n", ok ? "RoPE checks pass" : "RoPE checks FAIL");
  return ok ? 0 : 1;
}

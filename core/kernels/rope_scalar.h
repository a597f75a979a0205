// Scalar references for the RoPE kernels of core/kernels/rope.h, templated
// on the element type T so tests can run them in double (and in
// std::complex<double> for complex-step derivatives). Same data layout and
// position rules as the SIMD kernels; one plain loop per formula.
#ifndef ROTOR_CORE_KERNELS_ROPE_SCALAR_H_
#define ROTOR_CORE_KERNELS_ROPE_SCALAR_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/kernels/rope.h"

namespace rotor {
namespace kernels {

// The table rows [0, num_positions) as RopeRows holds them (row p =
// [a cos(p f_0) .. a cos(p f_{h-1}), a sin(p f_0) .. a sin(p f_{h-1})]),
// computed in double and converted to T: for T = float this is exactly the
// table the SIMD kernels use, for T = double it is the float64 truth.
template <typename T>
std::vector<T> RopeRowsRef(const std::vector<double>& inv_freq,
                           double attention_factor, int64_t num_positions) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  std::vector<T> values(static_cast<size_t>(num_positions * 2 * half));
  for (int64_t p = 0; p < num_positions; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * inv_freq[i];
      values[p * 2 * half + i] =
          static_cast<T>(attention_factor * std::cos(angle));
      values[p * 2 * half + half + i] =
          static_cast<T>(attention_factor * std::sin(angle));
    }
  }
  return values;
}

// One RoPE operand for the reference: like RopeOperand, for element type T.
template <typename T>
struct RopeOperandRef {
  const T* src = nullptr;
  RopeStrides src_strides = {0, 0, 0};
  T* dst = nullptr;
  RopeStrides dst_strides = {0, 0, 0};
  int64_t heads = 0;
};

// Position of token t of batch row b (see RopePositions).
inline int64_t RopePositionRef(const RopeShape& shape,
                               const RopePositions& positions, int64_t b,
                               int64_t t) {
  if (positions.ids.empty()) return positions.offset + t;
  const bool shared = static_cast<int64_t>(positions.ids.size()) == shape.seq;
  return positions.ids[(shared ? 0 : b * shape.seq) + t];
}

// One row: y = R(+-theta) x on the rotary channels, pass-through after them;
// `inverse` uses -theta (backward), `accumulate` adds to y instead of
// overwriting. cos_sin is a table row. x and y may be the same row.
template <typename T>
void RopeRowRef(RopeLayout layout, const T* cos_sin, int64_t rotary_dim,
                int64_t head_dim, bool inverse, bool accumulate, const T* x,
                T* y) {
  const int64_t half = rotary_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    // The channels of pair i in this layout.
    const int64_t ia = layout == RopeLayout::kSplitHalf ? i : 2 * i;
    const int64_t ib = layout == RopeLayout::kSplitHalf ? i + half : 2 * i + 1;
    const T c = cos_sin[i];
    const T s = inverse ? -cos_sin[half + i] : cos_sin[half + i];
    const T ya = x[ia] * c - x[ib] * s;
    const T yb = x[ib] * c + x[ia] * s;
    y[ia] = accumulate ? y[ia] + ya : ya;
    y[ib] = accumulate ? y[ib] + yb : yb;
  }
  for (int64_t j = rotary_dim; j < head_dim; ++j) {
    y[j] = accumulate ? y[j] + x[j] : x[j];
  }
}

// Rotates every row (b, h, t) of `op` whose token index b * seq + t lies in
// [token_begin, token_end) (the whole array for [0, batch * seq)). `rows` is
// a table from RopeRowsRef covering every position used.
template <typename T>
void RopeTokensRef(const T* rows, const RopeShape& shape,
                   const RopePositions& positions, const RopeOperandRef<T>& op,
                   bool inverse, bool accumulate, int64_t token_begin,
                   int64_t token_end) {
  for (int64_t token = token_begin; token < token_end; ++token) {
    const int64_t b = token / shape.seq;
    const int64_t t = token % shape.seq;
    const T* cos_sin =
        rows + RopePositionRef(shape, positions, b, t) * shape.rotary_dim;
    for (int64_t h = 0; h < op.heads; ++h) {
      const T* x = op.src + b * op.src_strides.batch + h * op.src_strides.head +
                   t * op.src_strides.seq;
      T* y = op.dst + b * op.dst_strides.batch + h * op.dst_strides.head +
             t * op.dst_strides.seq;
      RopeRowRef(shape.layout, cos_sin, shape.rotary_dim, shape.head_dim,
                 inverse, accumulate, x, y);
    }
  }
}

// Forward: dst = R(theta) src for the whole array.
template <typename T>
void RopeForwardRef(const T* rows, const RopeShape& shape,
                    const RopePositions& positions,
                    const RopeOperandRef<T>& op) {
  RopeTokensRef(rows, shape, positions, op, /*inverse=*/false,
                /*accumulate=*/false, 0, shape.batch * shape.seq);
}

// Backward: dst (+)= R(-theta) src = R(theta)^T src.
template <typename T>
void RopeBackwardRef(const T* rows, const RopeShape& shape,
                     const RopePositions& positions,
                     const RopeOperandRef<T>& op, bool accumulate) {
  RopeTokensRef(rows, shape, positions, op, /*inverse=*/true, accumulate, 0,
                shape.batch * shape.seq);
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ROPE_SCALAR_H_

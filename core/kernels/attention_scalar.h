// Scalar reference for core/kernels/attention.h: plain softmax attention that
// materialises each query's row of scores, templated on the element type so
// tests run it in double and in std::complex<double> (complex-step
// derivatives). Same layout, masking (key_start included) and grouped-query
// rules as the kernels.
#ifndef ROTOR_CORE_KERNELS_ATTENTION_SCALAR_H_
#define ROTOR_CORE_KERNELS_ATTENTION_SCALAR_H_

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <limits>
#include <vector>

#include "core/kernels/attention.h"

namespace rotor {
namespace kernels {

namespace attention_ref_internal {

// Ordering for the softmax's max shift: the real part (for complex steps the
// imaginary part is an infinitesimal and must not pick the max).
inline double RealPart(double x) { return x; }
inline double RealPart(const std::complex<double>& x) { return x.real(); }

// Keys FirstVisibleKey() .. VisibleKeys() - 1 are visible to query i of
// batch element b.
inline size_t VisibleKeys(const AttentionShape& s, size_t i) {
  return s.causal ? std::min(s.kv_len, s.q_offset + i + 1) : s.kv_len;
}
inline size_t FirstVisibleKey(const AttentionShape& s, size_t b, size_t i) {
  return s.key_start == nullptr
             ? 0
             : static_cast<size_t>(s.key_start[b * s.kv_len + s.q_offset + i]);
}

// p[j] = softmax_j(scale * <q_row, k_j>) over the visible keys of query i of
// batch element b, and p[j] = 0 for the masked keys before them, with the
// rows of one kv head at k_head. Returns the logsumexp L_i.
template <typename T>
T SoftmaxRow(const AttentionShape& s, size_t b, size_t i, const T* q_row,
             const T* k_head, std::vector<T>& p) {
  using std::exp;
  using std::log;
  const size_t first = FirstVisibleKey(s, b, i);
  const size_t visible = VisibleKeys(s, i);
  const size_t dim = s.head_dim;
  p.assign(visible, T(0));
  double max = -std::numeric_limits<double>::infinity();
  for (size_t j = first; j < visible; ++j) {
    T dot = T(0);
    for (size_t d = 0; d < dim; ++d) dot += q_row[d] * k_head[j * dim + d];
    p[j] = T(s.scale) * dot;
    max = std::max(max, RealPart(p[j]));
  }
  if (visible <= first) return T(-std::numeric_limits<double>::infinity());
  T sum = T(0);
  for (size_t j = first; j < visible; ++j) {
    p[j] = exp(p[j] - T(max));
    sum += p[j];
  }
  for (size_t j = first; j < visible; ++j) p[j] /= sum;
  return T(max) + log(sum);
}

}  // namespace attention_ref_internal

// out_i = sum_j softmax_j(scale <q_i, k_j>) v_j and lse_i = L_i (see
// attention.h). Overwrites x.out and x.lse. Contiguous operands only (the
// shape's strides are not read).
template <typename T>
void AttentionForwardRef(const AttentionShape& s,
                         const AttentionForwardOperandsOf<T>& x) {
  const T* q = x.q;
  const T* k = x.k;
  const T* v = x.v;
  T* out = x.out;
  T* lse = x.lse;
  const size_t dim = s.head_dim;
  const size_t group = s.q_heads / s.kv_heads;
  std::vector<T> p;
  for (size_t b = 0; b < s.batch; ++b) {
    for (size_t h = 0; h < s.q_heads; ++h) {
      const size_t kv_head = (b * s.kv_heads + h / group) * s.kv_len * dim;
      for (size_t i = 0; i < s.q_len; ++i) {
        const size_t row = (b * s.q_heads + h) * s.q_len + i;
        lse[row] = attention_ref_internal::SoftmaxRow(s, b, i, q + row * dim,
                                                      k + kv_head, p);
        T* out_row = out + row * dim;
        std::fill(out_row, out_row + dim, T(0));
        for (size_t j = 0; j < p.size(); ++j) {
          for (size_t d = 0; d < dim; ++d) {
            out_row[d] += p[j] * v[kv_head + j * dim + d];
          }
        }
      }
    }
  }
}

// Gradients of sum(dout * out) by the textbook softmax backward, row by row:
//   dp_j = <dout_i, v_j>,  ds_j = p_j (dp_j - sum_l p_l dp_l),
//   dq_i = scale sum_j ds_j k_j,  dk_j += scale ds_j q_i,  dv_j += p_j dout_i.
// Reads x.q, x.k, x.v and x.dout (it recomputes the probabilities, so not
// x.out, x.lse or x.delta) and overwrites x.dq, x.dk and x.dv.
template <typename T>
void AttentionBackwardRef(const AttentionShape& s,
                          const AttentionBackwardOperandsOf<T>& x) {
  const T* q = x.q;
  const T* k = x.k;
  const T* v = x.v;
  const T* dout = x.dout;
  T* dq = x.dq;
  T* dk = x.dk;
  T* dv = x.dv;
  const size_t dim = s.head_dim;
  const size_t group = s.q_heads / s.kv_heads;
  std::fill(dk, dk + s.batch * s.kv_heads * s.kv_len * dim, T(0));
  std::fill(dv, dv + s.batch * s.kv_heads * s.kv_len * dim, T(0));
  std::vector<T> p, dp;
  for (size_t b = 0; b < s.batch; ++b) {
    for (size_t h = 0; h < s.q_heads; ++h) {
      const size_t kv_head = (b * s.kv_heads + h / group) * s.kv_len * dim;
      for (size_t i = 0; i < s.q_len; ++i) {
        const size_t row = (b * s.q_heads + h) * s.q_len + i;
        const T* q_row = q + row * dim;
        const T* dout_row = dout + row * dim;
        attention_ref_internal::SoftmaxRow(s, b, i, q_row, k + kv_head, p);
        dp.assign(p.size(), T(0));
        T p_dot_dp = T(0);
        for (size_t j = 0; j < p.size(); ++j) {
          for (size_t d = 0; d < dim; ++d) {
            dp[j] += dout_row[d] * v[kv_head + j * dim + d];
          }
          p_dot_dp += p[j] * dp[j];
        }
        T* dq_row = dq + row * dim;
        std::fill(dq_row, dq_row + dim, T(0));
        for (size_t j = 0; j < p.size(); ++j) {
          const T ds = p[j] * (dp[j] - p_dot_dp);
          for (size_t d = 0; d < dim; ++d) {
            dq_row[d] += T(s.scale) * ds * k[kv_head + j * dim + d];
            dk[kv_head + j * dim + d] += T(s.scale) * ds * q_row[d];
            dv[kv_head + j * dim + d] += p[j] * dout_row[d];
          }
        }
      }
    }
  }
}

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_ATTENTION_SCALAR_H_

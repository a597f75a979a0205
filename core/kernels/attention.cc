// Highway implementation of core/kernels/attention.h, compiled once per SIMD
// target (foreach_target.h re-includes this file). docs/attention.md explains
// the algorithm; the comments here name the formula each step computes.
//
// Building blocks (per target):
//   TransposeTile          a key (or value) tile [count, D] -> [D, kKeyTile],
//                          so a row of scores is D broadcast-FMAs over keys
//   TransposeKeyTiles      every key tile once, for all the forward's tasks
//   ScoreRows              s_c = scale * <x, key_c> for the keys of a tile,
//                          for one or two rows x
//   ScoreRowDirect         the same from the untransposed tile (decoding)
//   ExpShift               p_c = exp(s_c - shift), vectorised hn::Exp
//   AccumulateWeightedRows acc += sum_j w_j * row_j (p v, ds k, p^T dout, ...)
// Masks (causal, and the optional lower bound key_start of packed
// documents): VisibleKeys and FirstVisibleKey bound the keys of one query;
// FirstKeyTile, FirstRowSeeing and RowsSeeingBefore pick the key tiles and
// the rows a task visits; VisibleInTile is a row's range of keys in a tile.
// Strided operands and RoPE: RowAt finds a row of any operand;
// RotateRows rotates query rows (forward) and key rows (in
// TransposeKeyTiles) as they are loaded; RotateHeads rotates whole
// operands, q and k into a workspace for the backward (BackwardWithRope)
// and dq and dk back out of it.
// Tasks:
//   ForwardTask   one query tile of one head: online softmax over key tiles
//   QueryGradTask one query tile of one head: delta, then dq
//   KeyGradTask   one key tile of one kv head: dk and dv, summed over the
//                 group's query heads in a fixed order (and, in one-pass
//                 mode, the tile's share of dq)
//   FusedGradTask one kv head and its query heads: the whole backward in one
//                 pass over the key tiles (used when there are enough kv
//                 heads to keep the threads busy)
#include "core/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target helpers, after highway.h:
#include "core/kernels/rope-inl.h"
#include "core/kernels/simd-inl.h"
#include "core/parallel.h"
#include "hwy/aligned_allocator.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

constexpr size_t kQueryTile = kAttentionQueryTile;
constexpr size_t kKeyTile = kAttentionKeyTile;
// Query tiles of at most this many rows score keys with ScoreRowDirect.
constexpr size_t kDirectScoreRows = 2;

size_t DivCeil(size_t a, size_t b) { return (a + b - 1) / b; }

// Keys 0 .. VisibleKeys(i) - 1 are visible to query i (see attention.h).
size_t VisibleKeys(const AttentionShape& s, size_t i) {
  return s.causal ? std::min(s.kv_len, s.q_offset + i + 1) : s.kv_len;
}

// The first key visible to query i of batch element b: keys before it are
// masked by the optional lower bound s.key_start (see attention.h).
size_t FirstVisibleKey(const AttentionShape& s, size_t b, size_t i) {
  if (s.key_start == nullptr) return 0;
  return static_cast<size_t>(s.key_start[b * s.kv_len + s.q_offset + i]);
}

// The start of the key tile holding FirstVisibleKey(s, b, i). Key tiles stay
// aligned to multiples of kKeyTile with or without a lower bound, so every
// task splits a row's keys at the same places and the two backward schemes
// sum dq in the same blocks (the same bits).
size_t FirstKeyTile(const AttentionShape& s, size_t b, size_t i) {
  return FirstVisibleKey(s, b, i) / kKeyTile * kKeyTile;
}

// The first of the query rows q0 .. q0 + rows - 1 that sees key k0 (rows
// when none does): visibility only grows with the row.
size_t FirstRowSeeing(const AttentionShape& s, size_t q0, size_t rows,
                      size_t k0) {
  size_t r = 0;
  while (r < rows && VisibleKeys(s, q0 + r) <= k0) ++r;
  return r;
}

// How many of the query rows q0 .. q0 + rows - 1 of batch element b see a
// key before k_end: all of them without a lower bound; with one, the rows
// whose first visible key is below k_end, a prefix since key_start does not
// decrease.
size_t RowsSeeingBefore(const AttentionShape& s, size_t b, size_t q0,
                        size_t rows, size_t k_end) {
  if (s.key_start == nullptr) return rows;
  const int32_t* first = s.key_start + b * s.kv_len + s.q_offset + q0;
  return static_cast<size_t>(
      std::lower_bound(first, first + rows, static_cast<int64_t>(k_end)) -
      first);
}

// The keys [begin, end) of the tile [k0, k0 + count) that query i of batch
// element b sees, as offsets into the tile. Non-empty for every row a task
// visits: such a row sees a key at or after k0 and one before k0 + count,
// and its visible keys are contiguous.
struct TileKeys {
  size_t begin;
  size_t end;
  size_t count() const { return end - begin; }
};
TileKeys VisibleInTile(const AttentionShape& s, size_t b, size_t i, size_t k0,
                       size_t count) {
  const size_t first = FirstVisibleKey(s, b, i);
  return {first > k0 ? first - k0 : 0, std::min(count, VisibleKeys(s, i) - k0)};
}

// The key/value head read by query head `head` (= b * q_heads + h): the
// q_heads / kv_heads query heads of a group share one (grouped-query
// attention), so it is b * kv_heads + h / (q_heads / kv_heads).
size_t KvHeadOf(const AttentionShape& s, size_t head) {
  const size_t b = head / s.q_heads;
  return b * s.kv_heads + (head % s.q_heads) / (s.q_heads / s.kv_heads);
}

// Offset in floats of row t of flat head `head` (= b * heads + h) of an
// operand with strides `st` (see AttentionStrides).
size_t RowAt(const AttentionStrides& st, size_t heads, size_t head, size_t t) {
  return (head / heads) * st.batch + (head % heads) * st.head + t * st.row;
}

// RoPE (s.rope): dst row r = R(theta(p)) src row r for r < rows, or
// R(-theta(p)) with kInverse, where p is the position of token t0 + r of
// batch row b; src rows lie src_stride floats apart, dst rows dst_stride.
// The same RotateRow as RopeForward and RopeBackward, so the same bits.
template <bool kInverse>
void RotateRows(const AttentionShape& s, size_t b, size_t t0, size_t rows,
                const float* HWY_RESTRICT src, size_t src_stride,
                float* HWY_RESTRICT dst, size_t dst_stride) {
  const size_t dim = s.head_dim;
  const size_t half = s.rope.rotary_dim / 2;
  const size_t pass = dim - s.rope.rotary_dim;
  for (size_t r = 0; r < rows; ++r) {
    const int64_t position = RopePositionOf(
        *s.rope.positions, static_cast<int64_t>(b),
        static_cast<int64_t>(t0 + r), static_cast<int64_t>(s.kv_len));
    RotateRow<kInverse>(s.rope.layout, s.rope.rows->row(position), half, pass,
                        src + r * src_stride, dst + r * dst_stride);
  }
}

// RotateRows over every row of the `heads` heads of each batch row of an
// operand, from src laid out by `from` into dst laid out by `to`, in
// parallel over the heads.
template <bool kInverse>
void RotateHeads(const AttentionShape& s, size_t heads,
                 const float* HWY_RESTRICT src, const AttentionStrides& from,
                 float* HWY_RESTRICT dst, const AttentionStrides& to) {
  ParallelFor(s.batch * heads, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
    for (int64_t head = begin; head < end; ++head) {
      RotateRows<kInverse>(s, head / heads, 0, s.kv_len,
                           src + RowAt(from, heads, head, 0), from.row,
                           dst + RowAt(to, heads, head, 0), to.row);
    }
  });
}

// One task's scratch, carved out of a single aligned allocation of
// AttentionTaskScratchFloats(head_dim) floats.
struct TaskScratch {
  explicit TaskScratch(size_t head_dim)
      : buffer(
            hwy::AllocateAligned<float>(AttentionTaskScratchFloats(head_dim))) {
    float* next = buffer.get();
    auto take = [&next](size_t floats) {
      float* block = next;
      next += floats;
      return block;
    };
    keys_t = take(head_dim * kKeyTile);
    values_t = take(head_dim * kKeyTile);
    probs = take(kQueryTile * kKeyTile);
    grads = take(kQueryTile * kKeyTile);
    acc = take(kQueryTile * head_dim);
    queries = take(kQueryTile * head_dim);
    row_max = take(kQueryTile);
    row_sum = take(kQueryTile);
  }
  hwy::AlignedFreeUniquePtr<float[]> buffer;
  float* keys_t;    // [D, kKeyTile]: the key tile, transposed
  float* values_t;  // [D, kKeyTile]: the value tile, transposed (backward)
  float* probs;     // [kQueryTile, kKeyTile]: scores, then probabilities
  float* grads;     // [kQueryTile, kKeyTile]: dp, then ds (backward)
  float* acc;       // [kQueryTile, D]: forward output accumulator
  float* queries;   // [kQueryTile, D]: a rotated query or key tile (RoPE)
  float* row_max;   // [kQueryTile]: running max m_i (forward)
  float* row_sum;   // [kQueryTile]: running sum l_i (forward)
};

// out[e * kKeyTile + c] = rows[c * stride + e] for c < count, and 0 for
// count <= c < cols (padding to whole vectors, so ScoreRows needs no tail).
void TransposeTile(const float* HWY_RESTRICT rows, size_t stride, size_t count,
                   size_t dim, size_t cols, float* HWY_RESTRICT out) {
  for (size_t e = 0; e < dim; ++e) {
    float* out_row = out + e * kKeyTile;
    for (size_t c = 0; c < count; ++c) out_row[c] = rows[c * stride + e];
    for (size_t c = count; c < cols; ++c) out_row[c] = 0.0f;
  }
}

// s0[c] = scale * sum_e x0[e] * keys_t[e * kKeyTile + c] for c < cols, i.e.
// scale * <x0, key_c>, and with kRows = 2 the same for x1 into s1. cols is a
// multiple of the vector length and keys_t is aligned. Four independent
// accumulators per row hide the FMA latency; with two rows each key vector
// loaded serves both (a 2 x 4-vector register block), which halves the
// loads per FMA. A score is the same chain of FMAs over e either way, so
// pairing rows does not change any bit.
template <size_t kRows>
void ScoreRows(const float* HWY_RESTRICT x0, const float* HWY_RESTRICT x1,
               const float* HWY_RESTRICT keys_t, size_t dim, size_t cols,
               float scale, float* HWY_RESTRICT s0, float* HWY_RESTRICT s1) {
  static_assert(kRows == 1 || kRows == 2, "one or two rows");
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const auto vscale = hn::Set(d, scale);
  size_t c = 0;
  for (; c + 4 * lanes <= cols; c += 4 * lanes) {
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    auto b0 = hn::Zero(d), b1 = hn::Zero(d), b2 = hn::Zero(d), b3 = hn::Zero(d);
    const float* col = keys_t + c;
    for (size_t e = 0; e < dim; ++e, col += kKeyTile) {
      const auto k0 = hn::Load(d, col), k1 = hn::Load(d, col + lanes);
      const auto k2 = hn::Load(d, col + 2 * lanes);
      const auto k3 = hn::Load(d, col + 3 * lanes);
      const auto x0e = hn::Set(d, x0[e]);
      a0 = hn::MulAdd(x0e, k0, a0);
      a1 = hn::MulAdd(x0e, k1, a1);
      a2 = hn::MulAdd(x0e, k2, a2);
      a3 = hn::MulAdd(x0e, k3, a3);
      if constexpr (kRows == 2) {
        const auto x1e = hn::Set(d, x1[e]);
        b0 = hn::MulAdd(x1e, k0, b0);
        b1 = hn::MulAdd(x1e, k1, b1);
        b2 = hn::MulAdd(x1e, k2, b2);
        b3 = hn::MulAdd(x1e, k3, b3);
      }
    }
    hn::StoreU(hn::Mul(a0, vscale), d, s0 + c);
    hn::StoreU(hn::Mul(a1, vscale), d, s0 + c + lanes);
    hn::StoreU(hn::Mul(a2, vscale), d, s0 + c + 2 * lanes);
    hn::StoreU(hn::Mul(a3, vscale), d, s0 + c + 3 * lanes);
    if constexpr (kRows == 2) {
      hn::StoreU(hn::Mul(b0, vscale), d, s1 + c);
      hn::StoreU(hn::Mul(b1, vscale), d, s1 + c + lanes);
      hn::StoreU(hn::Mul(b2, vscale), d, s1 + c + 2 * lanes);
      hn::StoreU(hn::Mul(b3, vscale), d, s1 + c + 3 * lanes);
    }
  }
  for (; c < cols; c += lanes) {
    auto a0 = hn::Zero(d), b0 = hn::Zero(d);
    const float* col = keys_t + c;
    for (size_t e = 0; e < dim; ++e, col += kKeyTile) {
      const auto k0 = hn::Load(d, col);
      a0 = hn::MulAdd(hn::Set(d, x0[e]), k0, a0);
      if constexpr (kRows == 2) b0 = hn::MulAdd(hn::Set(d, x1[e]), k0, b0);
    }
    hn::StoreU(hn::Mul(a0, vscale), d, s0 + c);
    if constexpr (kRows == 2) hn::StoreU(hn::Mul(b0, vscale), d, s1 + c);
  }
}

// Scores of `rows` rows x_r = x + r * stride against a transposed key tile:
// scores[r * kKeyTile + c] = scale * <x_r, key_c>, two rows at a time, an
// odd last row alone.
void ScoreTile(const float* HWY_RESTRICT x, size_t stride, size_t rows,
               const float* HWY_RESTRICT keys_t, size_t dim, size_t cols,
               float scale, float* HWY_RESTRICT scores) {
  size_t r = 0;
  for (; r + 2 <= rows; r += 2) {
    ScoreRows<2>(x + r * stride, x + (r + 1) * stride, keys_t, dim, cols, scale,
                 scores + r * kKeyTile, scores + (r + 1) * kKeyTile);
  }
  if (r < rows) {
    ScoreRows<1>(x + r * stride, nullptr, keys_t, dim, cols, scale,
                 scores + r * kKeyTile, nullptr);
  }
}

// s[c] = scale * <x, key_c> for c < n, straight from the key rows (key c at
// keys + c * stride): one Dot (with a horizontal sum) per key. Used for
// query tiles of at most kDirectScoreRows rows (decoding), for which
// transposing the key tile would cost as much as scoring it.
void ScoreRowDirect(const float* HWY_RESTRICT x, const float* HWY_RESTRICT keys,
                    size_t stride, size_t n, size_t dim, float scale,
                    float* HWY_RESTRICT s) {
  for (size_t c = 0; c < n; ++c) s[c] = scale * Dot(x, keys + c * stride, dim);
}

// s[c] = exp(s[c] - shift) for c < n; returns sum_c s[c].
float ExpShift(float* HWY_RESTRICT s, size_t n, float shift) {
  const hn::ScalableTag<float> df;
  auto sum = hn::Zero(df);
  float tail_sum = 0.0f;
  ForEachVector(n, [&](auto d, size_t c) HWY_ATTR {
    const auto p = hn::Exp(d, hn::Sub(hn::LoadU(d, s + c), hn::Set(d, shift)));
    hn::StoreU(p, d, s + c);
    if constexpr (hn::MaxLanes(decltype(d)()) == 1) {  // the one-lane tail
      tail_sum += hn::GetLane(p);
    } else {
      sum = hn::Add(sum, p);
    }
  });
  return ReduceSum(df, sum) + tail_sum;
}

// ds[c] = p[c] * (ds[c] - delta) for c < n: on entry ds holds dp.
void SoftmaxGrad(const float* HWY_RESTRICT p, float delta,
                 float* HWY_RESTRICT ds, size_t n) {
  ForEachVector(n, [&](auto d, size_t c) HWY_ATTR {
    const auto dp = hn::Sub(hn::LoadU(d, ds + c), hn::Set(d, delta));
    hn::StoreU(hn::Mul(hn::LoadU(d, p + c), dp), d, ds + c);
  });
}

// x[e] *= alpha for e < n.
void ScaleRow(float alpha, float* HWY_RESTRICT x, size_t n) {
  ForEachVector(n, [&](auto d, size_t e) HWY_ATTR {
    hn::StoreU(hn::Mul(hn::Set(d, alpha), hn::LoadU(d, x + e)), d, x + e);
  });
}

// acc[e] += sum_{j < n} w[j * w_stride] * rows[j * stride + e] for e < dim:
// a weighted sum of n rows (p v, ds k, p^T dout, ds^T q).
// Loads are the bottleneck (one vector load per FMA is the most a core
// sustains), so the main loop keeps four vectors of acc in registers and
// broadcasts each weight once for all four. What remains of the row (fewer
// than four vectors, then single lanes) goes one vector at a time, with four
// partial sums over j, added in a fixed order.
void AccumulateWeightedRows(const float* HWY_RESTRICT w, size_t w_stride,
                            const float* HWY_RESTRICT rows, size_t stride,
                            size_t n, size_t dim, float* HWY_RESTRICT acc) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  size_t e = 0;
  for (; e + 4 * lanes <= dim; e += 4 * lanes) {
    auto a0 = hn::LoadU(df, acc + e);
    auto a1 = hn::LoadU(df, acc + e + lanes);
    auto a2 = hn::LoadU(df, acc + e + 2 * lanes);
    auto a3 = hn::LoadU(df, acc + e + 3 * lanes);
    const float* row = rows + e;
    for (size_t j = 0; j < n; ++j, row += stride) {
      const auto wj = hn::Set(df, w[j * w_stride]);
      a0 = hn::MulAdd(wj, hn::LoadU(df, row), a0);
      a1 = hn::MulAdd(wj, hn::LoadU(df, row + lanes), a1);
      a2 = hn::MulAdd(wj, hn::LoadU(df, row + 2 * lanes), a2);
      a3 = hn::MulAdd(wj, hn::LoadU(df, row + 3 * lanes), a3);
    }
    hn::StoreU(a0, df, acc + e);
    hn::StoreU(a1, df, acc + e + lanes);
    hn::StoreU(a2, df, acc + e + 2 * lanes);
    hn::StoreU(a3, df, acc + e + 3 * lanes);
  }
  ForEachVector(dim - e, [&](auto d, size_t i) HWY_ATTR {
    float* acc_e = acc + e + i;
    auto a0 = hn::LoadU(d, acc_e);
    auto a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    const float* row = rows + e + i;
    size_t j = 0;
    for (; j + 4 <= n; j += 4, row += 4 * stride) {
      a0 = hn::MulAdd(hn::Set(d, w[j * w_stride]), hn::LoadU(d, row), a0);
      a1 = hn::MulAdd(hn::Set(d, w[(j + 1) * w_stride]),
                      hn::LoadU(d, row + stride), a1);
      a2 = hn::MulAdd(hn::Set(d, w[(j + 2) * w_stride]),
                      hn::LoadU(d, row + 2 * stride), a2);
      a3 = hn::MulAdd(hn::Set(d, w[(j + 3) * w_stride]),
                      hn::LoadU(d, row + 3 * stride), a3);
    }
    for (; j < n; ++j, row += stride) {
      a0 = hn::MulAdd(hn::Set(d, w[j * w_stride]), hn::LoadU(d, row), a0);
    }
    hn::StoreU(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), d, acc_e);
  });
}

// The same weighted sum for four outputs over the same n rows:
// clang-format off
//   acc[o * acc_stride + e] += sum_{j < n} w[o + j * w_stride] * rows[j * stride + e]
// clang-format on
// for o < 4 and e < dim (dk and dv of four neighbouring keys, whose weights
// sit side by side in a [rows, keys] block). Each vector of a row is loaded
// once for four FMAs, and each broadcast weight serves two vectors, which
// roughly halves the loads per FMA of four separate calls. One chain of
// FMAs per output vector, over j in order.
void AccumulateWeightedRows4(const float* HWY_RESTRICT w, size_t w_stride,
                             const float* HWY_RESTRICT rows, size_t stride,
                             size_t n, size_t dim, float* HWY_RESTRICT acc,
                             size_t acc_stride) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  float* acc0 = acc;
  float* acc1 = acc + acc_stride;
  float* acc2 = acc + 2 * acc_stride;
  float* acc3 = acc + 3 * acc_stride;
  size_t e = 0;
  for (; e + 2 * lanes <= dim; e += 2 * lanes) {
    auto a0 = hn::LoadU(df, acc0 + e), b0 = hn::LoadU(df, acc0 + e + lanes);
    auto a1 = hn::LoadU(df, acc1 + e), b1 = hn::LoadU(df, acc1 + e + lanes);
    auto a2 = hn::LoadU(df, acc2 + e), b2 = hn::LoadU(df, acc2 + e + lanes);
    auto a3 = hn::LoadU(df, acc3 + e), b3 = hn::LoadU(df, acc3 + e + lanes);
    const float* row = rows + e;
    const float* wj = w;
    for (size_t j = 0; j < n; ++j, row += stride, wj += w_stride) {
      const auto x = hn::LoadU(df, row);
      const auto y = hn::LoadU(df, row + lanes);
      const auto w0 = hn::Set(df, wj[0]);
      a0 = hn::MulAdd(w0, x, a0);
      b0 = hn::MulAdd(w0, y, b0);
      const auto w1 = hn::Set(df, wj[1]);
      a1 = hn::MulAdd(w1, x, a1);
      b1 = hn::MulAdd(w1, y, b1);
      const auto w2 = hn::Set(df, wj[2]);
      a2 = hn::MulAdd(w2, x, a2);
      b2 = hn::MulAdd(w2, y, b2);
      const auto w3 = hn::Set(df, wj[3]);
      a3 = hn::MulAdd(w3, x, a3);
      b3 = hn::MulAdd(w3, y, b3);
    }
    hn::StoreU(a0, df, acc0 + e);
    hn::StoreU(b0, df, acc0 + e + lanes);
    hn::StoreU(a1, df, acc1 + e);
    hn::StoreU(b1, df, acc1 + e + lanes);
    hn::StoreU(a2, df, acc2 + e);
    hn::StoreU(b2, df, acc2 + e + lanes);
    hn::StoreU(a3, df, acc3 + e);
    hn::StoreU(b3, df, acc3 + e + lanes);
  }
  ForEachVector(dim - e, [&](auto d, size_t i) HWY_ATTR {
    const size_t at = e + i;
    auto a0 = hn::LoadU(d, acc0 + at), a1 = hn::LoadU(d, acc1 + at);
    auto a2 = hn::LoadU(d, acc2 + at), a3 = hn::LoadU(d, acc3 + at);
    const float* row = rows + at;
    const float* wj = w;
    for (size_t j = 0; j < n; ++j, row += stride, wj += w_stride) {
      const auto x = hn::LoadU(d, row);
      a0 = hn::MulAdd(hn::Set(d, wj[0]), x, a0);
      a1 = hn::MulAdd(hn::Set(d, wj[1]), x, a1);
      a2 = hn::MulAdd(hn::Set(d, wj[2]), x, a2);
      a3 = hn::MulAdd(hn::Set(d, wj[3]), x, a3);
    }
    hn::StoreU(a0, d, acc0 + at);
    hn::StoreU(a1, d, acc1 + at);
    hn::StoreU(a2, d, acc2 + at);
    hn::StoreU(a3, d, acc3 + at);
  });
}

// Where TransposeKeyTiles (below) puts key tile k0 of kv head `kv_head`,
// in floats from the start of its buffer.
size_t TransposedKeyTileOffset(const AttentionShape& s, size_t kv_head,
                               size_t k0) {
  return (kv_head * DivCeil(s.kv_len, kKeyTile) + k0 / kKeyTile) * s.head_dim *
         kKeyTile;
}

// True when the operand's rows are laid out contiguous [batch, heads, len,
// D].
bool IsContiguous(const AttentionStrides& st, size_t heads, size_t len,
                  size_t dim) {
  return st.row == dim && st.head == len * dim && st.batch == heads * len * dim;
}

// Workspace blocks start on 64-byte boundaries: sizes round up to 16
// floats.
size_t BlockFloats(size_t floats) { return DivCeil(floats, 16) * 16; }

// Blocks carved in order off the caller's workspace, or off an allocation
// of its own of `floats` when the caller gave none.
class Workspace {
 public:
  Workspace(float* given, size_t floats) : next_(given) {
    if (next_ == nullptr && floats > 0) {
      owned_ = hwy::AllocateAligned<float>(floats);
      next_ = owned_.get();
    }
  }
  float* Take(size_t floats) {
    float* block = next_;
    next_ += BlockFloats(floats);
    return block;
  }

 private:
  hwy::AlignedFreeUniquePtr<float[]> owned_{nullptr, hwy::AlignedFreer()};
  float* next_;
};

size_t QueryFloats(const AttentionShape& s) {
  return s.batch * s.q_heads * s.q_len * s.head_dim;
}
size_t KeyFloats(const AttentionShape& s) {
  return s.batch * s.kv_heads * s.kv_len * s.head_dim;
}

// q_rot = R(theta) q and k_rot = R(theta) k written contiguous into q_rot
// and k_rot. Returns the shape that attends with them: s without RoPE, q
// and k contiguous.
AttentionShape RotateQueriesAndKeys(const AttentionShape& s, const float* q,
                                    const float* k, float* q_rot,
                                    float* k_rot) {
  AttentionShape plain = s;
  plain.rope = AttentionRope();
  plain.q_strides = ContiguousAttentionStrides(s.q_heads, s.q_len, s.head_dim);
  plain.k_strides =
      ContiguousAttentionStrides(s.kv_heads, s.kv_len, s.head_dim);
  RotateHeads<false>(s, s.q_heads, q, s.q_strides, q_rot, plain.q_strides);
  RotateHeads<false>(s, s.kv_heads, k, s.k_strides, k_rot, plain.k_strides);
  return plain;
}

// Forward for query rows [q0, q0 + rows) of head `head` (= b * q_heads + h):
// the online softmax. Per row i it keeps the running max m_i, the running
// sum l_i = sum_j exp(s_ij - m_i) and acc_i = sum_j exp(s_ij - m_i) v_j over
// the key tiles seen so far. A new tile with max m' rescales both by
// exp(m_i - m') before adding its terms; at the end out_i = acc_i / l_i and
// L_i = m_i + log l_i.
//
// `keys_t` (optional) holds every key tile of every kv head already
// transposed (TransposeKeyTiles, and with RoPE rotated); without it each
// task transposes the tiles it reads. With RoPE the task first rotates its
// query rows into scratch.queries.
void ForwardTask(const AttentionShape& s, size_t head, size_t q0,
                 const float* HWY_RESTRICT q, const float* HWY_RESTRICT k,
                 const float* HWY_RESTRICT v, const float* HWY_RESTRICT keys_t,
                 float* HWY_RESTRICT out, float* HWY_RESTRICT lse,
                 TaskScratch& scratch) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const size_t dim = s.head_dim;
  const size_t rows = std::min(kQueryTile, s.q_len - q0);
  const size_t kv_head = KvHeadOf(s, head);
  const size_t b = head / s.q_heads;
  const size_t k_stride = s.k_strides.row;
  const size_t v_stride = s.v_strides.row;
  const float* k_head = k + RowAt(s.k_strides, s.kv_heads, kv_head, 0);
  const float* v_head = v + RowAt(s.v_strides, s.kv_heads, kv_head, 0);
  const float* q_tile = q + RowAt(s.q_strides, s.q_heads, head, q0);
  size_t q_stride = s.q_strides.row;
  if (s.rope.rows != nullptr) {
    RotateRows<false>(s, b, q0, rows, q_tile, q_stride, scratch.queries, dim);
    q_tile = scratch.queries;
    q_stride = dim;
  }
  float* acc = scratch.acc;
  float* row_max = scratch.row_max;
  float* row_sum = scratch.row_sum;

  std::fill(acc, acc + rows * dim, 0.0f);
  std::fill(row_max, row_max + rows, -std::numeric_limits<float>::infinity());
  std::fill(row_sum, row_sum + rows, 0.0f);
  // With RoPE the keys come rotated in keys_t, so every tile scores from it.
  const bool transpose_keys = rows > kDirectScoreRows || keys_t != nullptr;
  // The tile's first row sees the earliest key, its last row the latest.
  const size_t keys = VisibleKeys(s, q0 + rows - 1);
  for (size_t k0 = FirstKeyTile(s, b, q0); k0 < keys; k0 += kKeyTile) {
    const size_t count = std::min(kKeyTile, keys - k0);
    const size_t cols = DivCeil(count, lanes) * lanes;
    // Only rows first_row .. end_row - 1 see keys of this tile.
    const size_t first_row = FirstRowSeeing(s, q0, rows, k0);
    const size_t end_row = RowsSeeingBefore(s, b, q0, rows, k0 + count);
    if (transpose_keys) {
      const float* tile_t = scratch.keys_t;
      if (keys_t != nullptr) {
        tile_t = keys_t + TransposedKeyTileOffset(s, kv_head, k0);
      } else {
        TransposeTile(k_head + k0 * k_stride, k_stride, count, dim, cols,
                      scratch.keys_t);
      }
      ScoreTile(q_tile + first_row * q_stride, q_stride, end_row - first_row,
                tile_t, dim, cols, s.scale,
                scratch.probs + first_row * kKeyTile);
    }
    for (size_t r = first_row; r < end_row; ++r) {
      // Masking is a range of the tile's keys, not a -inf sentinel: masked
      // scores are never exponentiated.
      const TileKeys seen = VisibleInTile(s, b, q0 + r, k0, count);
      const size_t n = seen.count();
      float* scores = scratch.probs + r * kKeyTile + seen.begin;
      const float* values = v_head + (k0 + seen.begin) * v_stride;
      if (!transpose_keys) {
        ScoreRowDirect(q_tile + r * q_stride,
                       k_head + (k0 + seen.begin) * k_stride, k_stride, n, dim,
                       s.scale, scores);
      }
      const float new_max = std::max(row_max[r], Max(scores, n));
      const float tile_sum = ExpShift(scores, n, new_max);
      // exp(m_old - m_new): 0 on the first tile (m_old = -inf), where acc
      // and l are still 0.
      const float correction = std::exp(row_max[r] - new_max);
      row_sum[r] = row_sum[r] * correction + tile_sum;
      if (correction != 1.0f) ScaleRow(correction, acc + r * dim, dim);
      AccumulateWeightedRows(scores, 1, values, v_stride, n, dim,
                             acc + r * dim);
      row_max[r] = new_max;
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    const size_t row = head * s.q_len + q0 + r;
    float* out_row = out + RowAt(s.out_strides, s.q_heads, head, q0 + r);
    std::copy(acc + r * dim, acc + (r + 1) * dim, out_row);
    if (row_sum[r] > 0.0f) {
      ScaleRow(1.0f / row_sum[r], out_row, dim);
      lse[row] = row_max[r] + std::log(row_sum[r]);
    } else {  // no visible key: zero output (acc is 0), L = log 0
      lse[row] = -std::numeric_limits<float>::infinity();
    }
  }
}

// Every key tile of every kv head transposed once, [kv head][tile][D,
// kKeyTile] (TransposeTile's layout, zero-padded to whole tiles): all the
// forward's query tiles, of all the group's query heads, read them, so
// each tile is transposed once instead of once per query tile and head.
// With RoPE each tile's rows are rotated first (into a scratch tile), so
// the keys are rotated once and never stored rotated in k's layout.
size_t KeyTileFloats(const AttentionShape& s) {
  return s.batch * s.kv_heads * DivCeil(s.kv_len, kKeyTile) * s.head_dim *
         kKeyTile;
}

void TransposeKeyTiles(const AttentionShape& s, const float* HWY_RESTRICT k,
                       float* HWY_RESTRICT keys_t) {
  static_assert(kKeyTile <= kQueryTile, "a key tile fits scratch.queries");
  const size_t dim = s.head_dim;
  const size_t k_tiles = DivCeil(s.kv_len, kKeyTile);
  const size_t tiles = s.batch * s.kv_heads * k_tiles;
  ParallelFor(tiles, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
    TaskScratch scratch(dim);
    for (int64_t t = begin; t < end; ++t) {
      const size_t kv_head = t / k_tiles, k0 = (t % k_tiles) * kKeyTile;
      const size_t count = std::min(kKeyTile, s.kv_len - k0);
      const float* rows = k + RowAt(s.k_strides, s.kv_heads, kv_head, k0);
      size_t stride = s.k_strides.row;
      if (s.rope.rows != nullptr) {
        RotateRows<false>(s, kv_head / s.kv_heads, k0, count, rows, stride,
                          scratch.queries, dim);
        rows = scratch.queries;
        stride = dim;
      }
      TransposeTile(rows, stride, count, dim, kKeyTile,
                    keys_t + TransposedKeyTileOffset(s, kv_head, k0));
    }
  });
}

// The forward's short RoPE path (below) runs on at most kDirectScoreRows
// tokens.
bool ShortWithRope(const AttentionShape& s) {
  return s.rope.rows != nullptr && s.q_len <= kDirectScoreRows;
}

// Whether the forward transposes every key tile once for all its tasks:
// not when decoding (query tiles of at most kDirectScoreRows rows score
// keys untransposed), nor with one query tile and one query head per kv
// head (every key tile is read once anyway). RoPE rotates the keys there,
// once.
bool SharesKeyTiles(const AttentionShape& s) {
  const size_t q_tiles = DivCeil(s.q_len, kQueryTile);
  return (s.rope.rows != nullptr && !ShortWithRope(s)) ||
         (s.q_len > kDirectScoreRows && q_tiles * (s.q_heads / s.kv_heads) > 1);
}

size_t ForwardWorkspaceFloats(const AttentionShape& s) {
  return SharesKeyTiles(s) ? BlockFloats(KeyTileFloats(s)) : 0;
}

// Backward with RoPE: q_rot, k_rot, dq_rot and dk_rot, plus contiguous dout
// when it is not already. Rows far apart in memory cost the backward dearly:
// every key tile reads every query's rows again, and rows spread over many
// pages defeat the TLB and the prefetchers (measured at B1 Hq9 Hkv3 T4096
// D64: out and dout token-major made the backward 13% slower, q and k 21%);
// one copy costs a pass.
bool GathersOutputRows(const AttentionShape& s) {
  return !IsContiguous(s.out_strides, s.q_heads, s.q_len, s.head_dim);
}
size_t BackwardWorkspaceFloats(const AttentionShape& s) {
  if (s.rope.rows == nullptr) return 0;
  return 2 * BlockFloats(QueryFloats(s)) + 2 * BlockFloats(KeyFloats(s)) +
         (GathersOutputRows(s) ? BlockFloats(QueryFloats(s)) : 0);
}

void AttentionForward(const AttentionShape& s, const float* HWY_RESTRICT q,
                      const float* HWY_RESTRICT k, const float* HWY_RESTRICT v,
                      float* HWY_RESTRICT out, float* HWY_RESTRICT lse,
                      float* HWY_RESTRICT workspace) {
  if (ShortWithRope(s)) {
    // At most kDirectScoreRows tokens score keys without transposed tiles:
    // from rows rotated into a (small) buffer first, as the separate kernels
    // do.
    Workspace rotated(nullptr,
                      BlockFloats(QueryFloats(s)) + BlockFloats(KeyFloats(s)));
    float* q_rot = rotated.Take(QueryFloats(s));
    float* k_rot = rotated.Take(KeyFloats(s));
    const AttentionShape plain = RotateQueriesAndKeys(s, q, k, q_rot, k_rot);
    HWY_NAMESPACE::AttentionForward(plain, q_rot, k_rot, v, out, lse,
                                    /*workspace=*/nullptr);
    return;
  }
  const size_t q_tiles = DivCeil(s.q_len, kQueryTile);
  const size_t heads = s.batch * s.q_heads;
  Workspace blocks(workspace, ForwardWorkspaceFloats(s));
  float* keys_t = nullptr;
  if (SharesKeyTiles(s)) {
    keys_t = blocks.Take(KeyTileFloats(s));
    TransposeKeyTiles(s, k, keys_t);
  }
  ParallelFor(heads * q_tiles, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
    TaskScratch scratch(s.head_dim);
    for (int64_t task = begin; task < end; ++task) {
      ForwardTask(s, task / q_tiles, (task % q_tiles) * kQueryTile, q, k, v,
                  keys_t, out, lse, scratch);
    }
  });
}

// delta_i = <dout_i, out_i> and dq_i = 0 for rows [t0, t0 + rows) of each
// head in [head0, head0 + heads). Null out: delta holds them already (the
// RoPE backward computes them from out where it lies).
void StartQueryRows(const AttentionShape& s, size_t head0, size_t heads,
                    size_t t0, size_t rows, const float* HWY_RESTRICT out,
                    const float* HWY_RESTRICT dout, float* HWY_RESTRICT delta,
                    float* HWY_RESTRICT dq) {
  const size_t dim = s.head_dim;
  for (size_t head = head0; head < head0 + heads; ++head) {
    for (size_t t = t0; t < t0 + rows; ++t) {
      if (out != nullptr) {
        const size_t at = RowAt(s.out_strides, s.q_heads, head, t);
        delta[head * s.q_len + t] = Dot(dout + at, out + at, dim);
      }
      float* dq_row = dq + RowAt(s.q_strides, s.q_heads, head, t);
      std::fill(dq_row, dq_row + dim, 0.0f);
    }
  }
}

// row_i *= scale for `rows` rows of `stride` floats from `first`.
void ScaleRows(float scale, float* HWY_RESTRICT first, size_t stride,
               size_t rows, size_t dim) {
  for (size_t r = 0; r < rows; ++r) ScaleRow(scale, first + r * stride, dim);
}

// Backward, pass 1, for query rows [q0, q0 + rows) of head `head`:
//   delta_i = <dout_i, out_i>          (stored for pass 2)
//   p_ij = exp(s_ij - L_i)             (recomputed from the saved L)
//   dp_ij = <dout_i, v_j>
//   ds_ij = p_ij (dp_ij - delta_i)
//   dq_i = scale * sum_j ds_ij k_j
void QueryGradTask(const AttentionShape& s, size_t head, size_t q0,
                   const float* HWY_RESTRICT q, const float* HWY_RESTRICT k,
                   const float* HWY_RESTRICT v, const float* HWY_RESTRICT out,
                   const float* HWY_RESTRICT lse,
                   const float* HWY_RESTRICT dout, float* HWY_RESTRICT delta,
                   float* HWY_RESTRICT dq, TaskScratch& scratch) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const size_t dim = s.head_dim;
  const size_t rows = std::min(kQueryTile, s.q_len - q0);
  const size_t kv_head = KvHeadOf(s, head);
  const size_t q_stride = s.q_strides.row;
  const size_t k_stride = s.k_strides.row;
  const size_t o_stride = s.out_strides.row;
  const float* k_head = k + RowAt(s.k_strides, s.kv_heads, kv_head, 0);
  const float* v_head = v + RowAt(s.v_strides, s.kv_heads, kv_head, 0);
  const float* q_head = q + RowAt(s.q_strides, s.q_heads, head, 0);
  const float* dout_head = dout + RowAt(s.out_strides, s.q_heads, head, 0);
  float* dq_head = dq + RowAt(s.q_strides, s.q_heads, head, 0);

  StartQueryRows(s, head, 1, q0, rows, out, dout, delta, dq);
  const size_t b = head / s.q_heads;
  const size_t keys = VisibleKeys(s, q0 + rows - 1);
  for (size_t k0 = FirstKeyTile(s, b, q0); k0 < keys; k0 += kKeyTile) {
    const size_t count = std::min(kKeyTile, keys - k0);
    const size_t cols = DivCeil(count, lanes) * lanes;
    TransposeTile(k_head + k0 * k_stride, k_stride, count, dim, cols,
                  scratch.keys_t);
    TransposeTile(v_head + k0 * s.v_strides.row, s.v_strides.row, count, dim,
                  cols, scratch.values_t);
    // Only rows r0 .. r1 - 1 see keys of this tile.
    const size_t r0 = FirstRowSeeing(s, q0, rows, k0);
    const size_t r1 = RowsSeeingBefore(s, b, q0, rows, k0 + count);
    ScoreTile(q_head + (q0 + r0) * q_stride, q_stride, r1 - r0, scratch.keys_t,
              dim, cols, s.scale, scratch.probs);
    ScoreTile(dout_head + (q0 + r0) * o_stride, o_stride, r1 - r0,
              scratch.values_t, dim, cols, 1.0f, scratch.grads);
    for (size_t r = r0; r < r1; ++r) {
      const TileKeys seen = VisibleInTile(s, b, q0 + r, k0, count);
      const size_t n = seen.count();
      const size_t row = head * s.q_len + q0 + r;
      float* probs = scratch.probs + (r - r0) * kKeyTile + seen.begin;
      float* grads = scratch.grads + (r - r0) * kKeyTile + seen.begin;
      ExpShift(probs, n, lse[row]);
      SoftmaxGrad(probs, delta[row], grads, n);
      AccumulateWeightedRows(grads, 1, k_head + (k0 + seen.begin) * k_stride,
                             k_stride, n, dim, dq_head + (q0 + r) * q_stride);
    }
  }
  ScaleRows(s.scale, dq_head + q0 * q_stride, q_stride, rows, dim);
}

// Backward, pass 2, for keys [k0, k0 + count) of kv head `kv_head` (=
// b * kv_heads + g), over every query of the group's query heads in order:
//   dv_j = sum_i p_ij dout_i,   dk_j = scale * sum_i ds_ij q_i.
// Probabilities and ds of a query tile are kept as [rows, keys] blocks
// (zero where masked), then each key's row of dk and dv is one weighted sum
// over the block's column.
// With `dq_unscaled` (the one-pass backward, FusedGradTask) it also adds
// this key tile's share of dq_i / scale = sum_j ds_ij k_j to every query row,
// with the same ds and in the same order as QueryGradTask.
void KeyGradTask(const AttentionShape& s, size_t kv_head, size_t k0,
                 const float* HWY_RESTRICT q, const float* HWY_RESTRICT k,
                 const float* HWY_RESTRICT v, const float* HWY_RESTRICT lse,
                 const float* HWY_RESTRICT dout,
                 const float* HWY_RESTRICT delta, float* HWY_RESTRICT dk,
                 float* HWY_RESTRICT dv, float* HWY_RESTRICT dq_unscaled,
                 TaskScratch& scratch) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const size_t dim = s.head_dim;
  const size_t group = s.q_heads / s.kv_heads;
  const size_t b = kv_head / s.kv_heads;
  const size_t g = kv_head % s.kv_heads;
  const size_t count = std::min(kKeyTile, s.kv_len - k0);
  const size_t cols = DivCeil(count, lanes) * lanes;
  const size_t q_stride = s.q_strides.row;
  const size_t k_stride = s.k_strides.row;
  const size_t v_stride = s.v_strides.row;
  const size_t o_stride = s.out_strides.row;
  const size_t k_at = RowAt(s.k_strides, s.kv_heads, kv_head, k0);
  const size_t v_at = RowAt(s.v_strides, s.kv_heads, kv_head, k0);
  float* dk_tile = dk + k_at;
  float* dv_tile = dv + v_at;
  for (size_t c = 0; c < count; ++c) {
    std::fill(dk_tile + c * k_stride, dk_tile + c * k_stride + dim, 0.0f);
    std::fill(dv_tile + c * v_stride, dv_tile + c * v_stride + dim, 0.0f);
  }
  TransposeTile(k + k_at, k_stride, count, dim, cols, scratch.keys_t);
  TransposeTile(v + v_at, v_stride, count, dim, cols, scratch.values_t);
  // Only queries first_query .. end_query - 1 see any of these keys.
  const size_t first_query =
      (s.causal && k0 > s.q_offset) ? k0 - s.q_offset : 0;
  const size_t end_query = RowsSeeingBefore(s, b, 0, s.q_len, k0 + count);
  for (size_t h = g * group; h < (g + 1) * group; ++h) {
    const size_t head = b * s.q_heads + h;
    const float* q_head = q + RowAt(s.q_strides, s.q_heads, head, 0);
    const float* dout_head = dout + RowAt(s.out_strides, s.q_heads, head, 0);
    for (size_t i0 = first_query; i0 < end_query; i0 += kQueryTile) {
      const size_t rows = std::min(kQueryTile, end_query - i0);
      const float* q_rows = q_head + i0 * q_stride;
      const float* dout_rows = dout_head + i0 * o_stride;
      ScoreTile(q_rows, q_stride, rows, scratch.keys_t, dim, cols, s.scale,
                scratch.probs);
      ScoreTile(dout_rows, o_stride, rows, scratch.values_t, dim, cols, 1.0f,
                scratch.grads);
      for (size_t r = 0; r < rows; ++r) {
        const size_t row = head * s.q_len + i0 + r;
        // At least one key, since first_query <= i0 + r < end_query.
        const TileKeys seen = VisibleInTile(s, b, i0 + r, k0, count);
        const size_t n = seen.count();
        float* p = scratch.probs + r * kKeyTile;
        float* ds = scratch.grads + r * kKeyTile;
        ExpShift(p + seen.begin, n, lse[row]);
        SoftmaxGrad(p + seen.begin, delta[row], ds + seen.begin, n);
        if (dq_unscaled != nullptr) {
          AccumulateWeightedRows(
              ds + seen.begin, 1, k + k_at + seen.begin * k_stride, k_stride, n,
              dim, dq_unscaled + RowAt(s.q_strides, s.q_heads, head, i0 + r));
        }
        // Masked keys.
        std::fill(p, p + seen.begin, 0.0f);
        std::fill(ds, ds + seen.begin, 0.0f);
        std::fill(p + seen.end, p + count, 0.0f);
        std::fill(ds + seen.end, ds + count, 0.0f);
      }
      // Four keys at a time, then one by one.
      size_t c = 0;
      for (; c + 4 <= count; c += 4) {
        AccumulateWeightedRows4(scratch.probs + c, kKeyTile, dout_rows,
                                o_stride, rows, dim, dv_tile + c * v_stride,
                                v_stride);
        AccumulateWeightedRows4(scratch.grads + c, kKeyTile, q_rows, q_stride,
                                rows, dim, dk_tile + c * k_stride, k_stride);
      }
      for (; c < count; ++c) {
        AccumulateWeightedRows(scratch.probs + c, kKeyTile, dout_rows, o_stride,
                               rows, dim, dv_tile + c * v_stride);
        AccumulateWeightedRows(scratch.grads + c, kKeyTile, q_rows, q_stride,
                               rows, dim, dk_tile + c * k_stride);
      }
    }
  }
  ScaleRows(s.scale, dk_tile, k_stride, count, dim);
}

// The one-pass backward of kv head `kv_head` (= b * kv_heads + g) and its
// group of query heads b * q_heads + g * group .. + group - 1: delta for
// all their rows, then KeyGradTask over the key tiles in order, each adding
// its share to dq. Every p_ij and ds_ij is computed once instead of once
// per pass, and the results are bitwise those of the two passes (the same
// sums in the same order).
void FusedGradTask(const AttentionShape& s, size_t kv_head,
                   const float* HWY_RESTRICT q, const float* HWY_RESTRICT k,
                   const float* HWY_RESTRICT v, const float* HWY_RESTRICT out,
                   const float* HWY_RESTRICT lse,
                   const float* HWY_RESTRICT dout, float* HWY_RESTRICT delta,
                   float* HWY_RESTRICT dq, float* HWY_RESTRICT dk,
                   float* HWY_RESTRICT dv, TaskScratch& scratch) {
  const size_t group = s.q_heads / s.kv_heads;
  const size_t first_head =
      (kv_head / s.kv_heads) * s.q_heads + (kv_head % s.kv_heads) * group;
  StartQueryRows(s, first_head, group, 0, s.q_len, out, dout, delta, dq);
  for (size_t k0 = 0; k0 < s.kv_len; k0 += kKeyTile) {
    KeyGradTask(s, kv_head, k0, q, k, v, lse, dout, delta, dk, dv, dq, scratch);
  }
  for (size_t head = first_head; head < first_head + group; ++head) {
    ScaleRows(s.scale, dq + RowAt(s.q_strides, s.q_heads, head, 0),
              s.q_strides.row, s.q_len, s.head_dim);
  }
}

// The one-pass FusedGradTask gives each thread whole kv heads (over the
// batch); the two passes split finer: pass 1 (QueryGradTask, per query
// tile) writes delta and dq; pass 2 (KeyGradTask, per key tile), which
// reads delta, writes dk and dv. Both give the same bits, so the choice is
// speed alone. One pass does 10 D flops per query-key pair and two passes
// 14, but whole kv heads may not divide evenly over the threads: with H kv
// heads on T threads the one-pass time goes as ceil(H / T) * 10 and the
// two-pass time as H / T * 14 (their tasks are small enough to balance).
// One thread, or SmolLM2's 3 kv heads on 2 threads (20 against 21), takes
// one pass; 1 kv head on 2 threads takes two.
bool OnePassIsFaster(size_t kv_heads, size_t threads) {
  return DivCeil(kv_heads, threads) * 10 * threads <= kv_heads * 14;
}

// The backward without RoPE. out may be null when delta already holds
// <dout_i, out_i> (the RoPE path computes them itself).
void PlainBackward(const AttentionShape& s, const float* HWY_RESTRICT q,
                   const float* HWY_RESTRICT k, const float* HWY_RESTRICT v,
                   const float* HWY_RESTRICT out, const float* HWY_RESTRICT lse,
                   const float* HWY_RESTRICT dout, float* HWY_RESTRICT delta,
                   float* HWY_RESTRICT dq, float* HWY_RESTRICT dk,
                   float* HWY_RESTRICT dv) {
  const size_t kv_heads = s.batch * s.kv_heads;
  if (OnePassIsFaster(kv_heads, static_cast<size_t>(NumThreads()))) {
    ParallelFor(kv_heads, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
      TaskScratch scratch(s.head_dim);
      for (int64_t kv_head = begin; kv_head < end; ++kv_head) {
        FusedGradTask(s, kv_head, q, k, v, out, lse, dout, delta, dq, dk, dv,
                      scratch);
      }
    });
    return;
  }
  const size_t q_tiles = DivCeil(s.q_len, kQueryTile);
  ParallelFor(s.batch * s.q_heads * q_tiles, 1,
              [&](int64_t begin, int64_t end) HWY_ATTR {
                TaskScratch scratch(s.head_dim);
                for (int64_t task = begin; task < end; ++task) {
                  QueryGradTask(s, task / q_tiles,
                                (task % q_tiles) * kQueryTile, q, k, v, out,
                                lse, dout, delta, dq, scratch);
                }
              });
  const size_t k_tiles = DivCeil(s.kv_len, kKeyTile);
  ParallelFor(s.batch * s.kv_heads * k_tiles, 1,
              [&](int64_t begin, int64_t end) HWY_ATTR {
                TaskScratch scratch(s.head_dim);
                for (int64_t task = begin; task < end; ++task) {
                  KeyGradTask(s, task / k_tiles, (task % k_tiles) * kKeyTile, q,
                              k, v, lse, dout, delta, dk, dv,
                              /*dq_unscaled=*/nullptr, scratch);
                }
              });
}

// Backward with RoPE, on the plain kernels: q_rot = R(theta) q and k_rot =
// R(theta) k into the workspace (every query row is read once per key tile,
// so rotating on each load would repeat the work), and dout there too when
// it is not contiguous (see GathersOutputRows; delta is then taken from out
// where it lies), the backward without RoPE into dq_rot and dk_rot, then
// dq = R(-theta) dq_rot and dk = R(-theta) dk_rot into q's and k's layout.
// (Staging each kv head's rows inside its one-pass task instead, while they
// are in cache, measured no faster.)
void BackwardWithRope(const AttentionShape& s, const float* HWY_RESTRICT q,
                      const float* HWY_RESTRICT k, const float* HWY_RESTRICT v,
                      const float* HWY_RESTRICT out,
                      const float* HWY_RESTRICT lse,
                      const float* HWY_RESTRICT dout, float* HWY_RESTRICT delta,
                      float* HWY_RESTRICT dq, float* HWY_RESTRICT dk,
                      float* HWY_RESTRICT dv, float* HWY_RESTRICT workspace) {
  const size_t dim = s.head_dim;
  Workspace blocks(workspace, BackwardWorkspaceFloats(s));
  float* q_rot = blocks.Take(QueryFloats(s));
  float* k_rot = blocks.Take(KeyFloats(s));
  float* dq_rot = blocks.Take(QueryFloats(s));
  float* dk_rot = blocks.Take(KeyFloats(s));
  const bool gather = GathersOutputRows(s);
  float* dout_rows = gather ? blocks.Take(QueryFloats(s)) : nullptr;
  AttentionShape plain = RotateQueriesAndKeys(s, q, k, q_rot, k_rot);
  if (gather) {
    plain.out_strides = ContiguousAttentionStrides(s.q_heads, s.q_len, dim);
    ParallelFor(
        s.batch * s.q_heads, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
          for (int64_t head = begin; head < end; ++head) {
            for (size_t t = 0; t < s.q_len; ++t) {
              const size_t at = RowAt(s.out_strides, s.q_heads, head, t);
              delta[head * s.q_len + t] = Dot(dout + at, out + at, dim);
              std::copy(dout + at, dout + at + dim,
                        dout_rows + (head * s.q_len + t) * dim);
            }
          }
        });
  }
  // With gathered rows, out is null: delta is ready.
  PlainBackward(plain, q_rot, k_rot, v, gather ? nullptr : out, lse,
                gather ? dout_rows : dout, delta, dq_rot, dk_rot, dv);
  RotateHeads<true>(s, s.q_heads, dq_rot, plain.q_strides, dq, s.q_strides);
  RotateHeads<true>(s, s.kv_heads, dk_rot, plain.k_strides, dk, s.k_strides);
}

void AttentionBackward(const AttentionShape& s, const float* HWY_RESTRICT q,
                       const float* HWY_RESTRICT k, const float* HWY_RESTRICT v,
                       const float* HWY_RESTRICT out,
                       const float* HWY_RESTRICT lse,
                       const float* HWY_RESTRICT dout,
                       float* HWY_RESTRICT delta, float* HWY_RESTRICT dq,
                       float* HWY_RESTRICT dk, float* HWY_RESTRICT dv,
                       float* HWY_RESTRICT workspace) {
  if (s.rope.rows != nullptr) {
    BackwardWithRope(s, q, k, v, out, lse, dout, delta, dq, dk, dv, workspace);
  } else {
    PlainBackward(s, q, k, v, out, lse, dout, delta, dq, dk, dv);
  }
}

const char* AttentionTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/error.h"

namespace rotor {
namespace kernels {

HWY_EXPORT(AttentionForward);
HWY_EXPORT(AttentionBackward);
HWY_EXPORT(ForwardWorkspaceFloats);
HWY_EXPORT(BackwardWorkspaceFloats);
HWY_EXPORT(AttentionTarget);

size_t AttentionTaskScratchFloats(size_t head_dim) {
  return 2 * head_dim * kAttentionKeyTile +
         2 * kAttentionQueryTile * kAttentionKeyTile +
         2 * kAttentionQueryTile * head_dim + 2 * kAttentionQueryTile;
}

AttentionStrides ContiguousAttentionStrides(size_t heads, size_t len,
                                            size_t head_dim) {
  return {heads * len * head_dim, len * head_dim, head_dim};
}

AttentionStrides TokenMajorAttentionStrides(size_t len, size_t row_width,
                                            size_t head_dim) {
  return {len * row_width, head_dim, row_width};
}

namespace {

// `shape` with default (all zero) strides made contiguous, and its RoPE
// checked.
AttentionShape Resolved(const AttentionShape& shape) {
  AttentionShape s = shape;
  auto resolve = [&s](AttentionStrides& st, size_t heads, size_t len) {
    if (st.batch == 0 && st.head == 0 && st.row == 0) {
      st = ContiguousAttentionStrides(heads, len, s.head_dim);
    }
  };
  resolve(s.q_strides, s.q_heads, s.q_len);
  resolve(s.out_strides, s.q_heads, s.q_len);
  resolve(s.k_strides, s.kv_heads, s.kv_len);
  resolve(s.v_strides, s.kv_heads, s.kv_len);
  if (s.rope.rows != nullptr) {
    ROTOR_CHECK(s.causal && s.q_offset == 0 && s.q_len == s.kv_len,
                "attention with RoPE inside: causal self-attention only "
                "(q_offset 0, q_len == kv_len), got q_offset ",
                s.q_offset, ", q_len ", s.q_len, ", kv_len ", s.kv_len);
    ROTOR_CHECK(
        s.rope.positions != nullptr &&
            s.rope.rotary_dim ==
                static_cast<size_t>(s.rope.rows->rotary_dim()) &&
            s.rope.rotary_dim % 2 == 0 && s.rope.rotary_dim <= s.head_dim,
        "attention with RoPE inside: rotary dim ", s.rope.rotary_dim,
        " must be even, at most head_dim ", s.head_dim, " and the table's ",
        s.rope.rows->rotary_dim(), ", with positions");
    RopeShape rope_shape;
    rope_shape.batch = static_cast<int64_t>(s.batch);
    rope_shape.seq = static_cast<int64_t>(s.kv_len);
    rope_shape.head_dim = static_cast<int64_t>(s.head_dim);
    rope_shape.rotary_dim = static_cast<int64_t>(s.rope.rotary_dim);
    const int64_t end = RopePositionsEnd(rope_shape, *s.rope.positions);
    ROTOR_CHECK(end <= s.rope.rows->num_positions(),
                "attention with RoPE inside: position ", end - 1,
                " is past the end of the table (", s.rope.rows->num_positions(),
                " positions)");
  }
  return s;
}

}  // namespace

size_t AttentionForwardWorkspaceFloats(const AttentionShape& shape) {
  return HWY_DYNAMIC_DISPATCH(ForwardWorkspaceFloats)(Resolved(shape));
}

size_t AttentionBackwardWorkspaceFloats(const AttentionShape& shape) {
  return HWY_DYNAMIC_DISPATCH(BackwardWorkspaceFloats)(Resolved(shape));
}

void AttentionForward(const AttentionShape& shape, const float* q,
                      const float* k, const float* v, float* out, float* lse,
                      float* workspace) {
  HWY_DYNAMIC_DISPATCH(AttentionForward)
  (Resolved(shape), q, k, v, out, lse, workspace);
}

void AttentionBackward(const AttentionShape& shape, const float* q,
                       const float* k, const float* v, const float* out,
                       const float* lse, const float* dout, float* delta,
                       float* dq, float* dk, float* dv, float* workspace) {
  HWY_DYNAMIC_DISPATCH(AttentionBackward)
  (Resolved(shape), q, k, v, out, lse, dout, delta, dq, dk, dv, workspace);
}

const char* AttentionTarget() {
  return HWY_DYNAMIC_DISPATCH(AttentionTarget)();
}

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

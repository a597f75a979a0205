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
    row_max = take(kQueryTile);
    row_sum = take(kQueryTile);
  }
  hwy::AlignedFreeUniquePtr<float[]> buffer;
  float* keys_t;    // [D, kKeyTile]: the key tile, transposed
  float* values_t;  // [D, kKeyTile]: the value tile, transposed (backward)
  float* probs;     // [kQueryTile, kKeyTile]: scores, then probabilities
  float* grads;     // [kQueryTile, kKeyTile]: dp, then ds (backward)
  float* acc;       // [kQueryTile, D]: forward output accumulator
  float* row_max;   // [kQueryTile]: running max m_i (forward)
  float* row_sum;   // [kQueryTile]: running sum l_i (forward)
};

// out[e * kKeyTile + c] = rows[c * dim + e] for c < count, and 0 for
// count <= c < cols (padding to whole vectors, so ScoreRows needs no tail).
void TransposeTile(const float* HWY_RESTRICT rows, size_t count, size_t dim,
                   size_t cols, float* HWY_RESTRICT out) {
  for (size_t e = 0; e < dim; ++e) {
    float* out_row = out + e * kKeyTile;
    for (size_t c = 0; c < count; ++c) out_row[c] = rows[c * dim + e];
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

// Scores of `rows` consecutive rows x_r = x + r * dim against a transposed
// key tile: scores[r * kKeyTile + c] = scale * <x_r, key_c>, two rows at a
// time, an odd last row alone.
void ScoreTile(const float* HWY_RESTRICT x, size_t rows,
               const float* HWY_RESTRICT keys_t, size_t dim, size_t cols,
               float scale, float* HWY_RESTRICT scores) {
  size_t r = 0;
  for (; r + 2 <= rows; r += 2) {
    ScoreRows<2>(x + r * dim, x + (r + 1) * dim, keys_t, dim, cols, scale,
                 scores + r * kKeyTile, scores + (r + 1) * kKeyTile);
  }
  if (r < rows) {
    ScoreRows<1>(x + r * dim, nullptr, keys_t, dim, cols, scale,
                 scores + r * kKeyTile, nullptr);
  }
}

// s[c] = scale * <x, keys[c]> for c < n, straight from the row-major key
// tile [n, dim]: one Dot (with a horizontal sum) per key. Used for query
// tiles of at most kDirectScoreRows rows (decoding), for which transposing
// the key tile would cost as much as scoring it.
void ScoreRowDirect(const float* HWY_RESTRICT x, const float* HWY_RESTRICT keys,
                    size_t n, size_t dim, float scale, float* HWY_RESTRICT s) {
  for (size_t c = 0; c < n; ++c) s[c] = scale * Dot(x, keys + c * dim, dim);
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

// acc[e] += sum_{j < n} w[j * w_stride] * rows[j * dim + e] for e < dim:
// a weighted sum of n contiguous rows (p v, ds k, p^T dout, ds^T q).
// Loads are the bottleneck (one vector load per FMA is the most a core
// sustains), so the main loop keeps four vectors of acc in registers and
// broadcasts each weight once for all four. What remains of the row (fewer
// than four vectors, then single lanes) goes one vector at a time, with four
// partial sums over j, added in a fixed order.
void AccumulateWeightedRows(const float* HWY_RESTRICT w, size_t w_stride,
                            const float* HWY_RESTRICT rows, size_t n,
                            size_t dim, float* HWY_RESTRICT acc) {
  const hn::ScalableTag<float> df;
  const size_t lanes = hn::Lanes(df);
  size_t e = 0;
  for (; e + 4 * lanes <= dim; e += 4 * lanes) {
    auto a0 = hn::LoadU(df, acc + e);
    auto a1 = hn::LoadU(df, acc + e + lanes);
    auto a2 = hn::LoadU(df, acc + e + 2 * lanes);
    auto a3 = hn::LoadU(df, acc + e + 3 * lanes);
    const float* row = rows + e;
    for (size_t j = 0; j < n; ++j, row += dim) {
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
    for (; j + 4 <= n; j += 4, row += 4 * dim) {
      a0 = hn::MulAdd(hn::Set(d, w[j * w_stride]), hn::LoadU(d, row), a0);
      a1 = hn::MulAdd(hn::Set(d, w[(j + 1) * w_stride]),
                      hn::LoadU(d, row + dim), a1);
      a2 = hn::MulAdd(hn::Set(d, w[(j + 2) * w_stride]),
                      hn::LoadU(d, row + 2 * dim), a2);
      a3 = hn::MulAdd(hn::Set(d, w[(j + 3) * w_stride]),
                      hn::LoadU(d, row + 3 * dim), a3);
    }
    for (; j < n; ++j, row += dim) {
      a0 = hn::MulAdd(hn::Set(d, w[j * w_stride]), hn::LoadU(d, row), a0);
    }
    hn::StoreU(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)), d, acc_e);
  });
}

// The same weighted sum for four outputs over the same n rows:
// clang-format off
//   acc[o * acc_stride + e] += sum_{j < n} w[o + j * w_stride] * rows[j * dim + e]
// clang-format on
// for o < 4 and e < dim (dk and dv of four neighbouring keys, whose weights
// sit side by side in a [rows, keys] block). Each vector of a row is loaded
// once for four FMAs, and each broadcast weight serves two vectors, which
// roughly halves the loads per FMA of four separate calls. One chain of
// FMAs per output vector, over j in order.
void AccumulateWeightedRows4(const float* HWY_RESTRICT w, size_t w_stride,
                             const float* HWY_RESTRICT rows, size_t n,
                             size_t dim, float* HWY_RESTRICT acc,
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
    for (size_t j = 0; j < n; ++j, row += dim, wj += w_stride) {
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
    for (size_t j = 0; j < n; ++j, row += dim, wj += w_stride) {
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

// Forward for query rows [q0, q0 + rows) of head `head` (= b * q_heads + h):
// the online softmax. Per row i it keeps the running max m_i, the running
// sum l_i = sum_j exp(s_ij - m_i) and acc_i = sum_j exp(s_ij - m_i) v_j over
// the key tiles seen so far. A new tile with max m' rescales both by
// exp(m_i - m') before adding its terms; at the end out_i = acc_i / l_i and
// L_i = m_i + log l_i.
//
// Where TransposeKeyTiles (below) puts key tile k0 of kv head `kv_head`,
// in floats from the start of its buffer.
size_t TransposedKeyTileOffset(const AttentionShape& s, size_t kv_head,
                               size_t k0) {
  return (kv_head * DivCeil(s.kv_len, kKeyTile) + k0 / kKeyTile) * s.head_dim *
         kKeyTile;
}

// `keys_t` (optional) holds every key tile of every kv head already
// transposed (TransposeKeyTiles); without it each task transposes the tiles
// it reads.
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
  const float* q_tile = q + (head * s.q_len + q0) * dim;
  const float* k_head = k + kv_head * s.kv_len * dim;
  const float* v_head = v + kv_head * s.kv_len * dim;
  float* acc = scratch.acc;
  float* row_max = scratch.row_max;
  float* row_sum = scratch.row_sum;

  std::fill(acc, acc + rows * dim, 0.0f);
  std::fill(row_max, row_max + rows, -std::numeric_limits<float>::infinity());
  std::fill(row_sum, row_sum + rows, 0.0f);
  const bool transpose_keys = rows > kDirectScoreRows;
  const size_t b = head / s.q_heads;
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
        TransposeTile(k_head + k0 * dim, count, dim, cols, scratch.keys_t);
      }
      ScoreTile(q_tile + first_row * dim, end_row - first_row, tile_t, dim,
                cols, s.scale, scratch.probs + first_row * kKeyTile);
    }
    for (size_t r = first_row; r < end_row; ++r) {
      // Masking is a range of the tile's keys, not a -inf sentinel: masked
      // scores are never exponentiated.
      const TileKeys seen = VisibleInTile(s, b, q0 + r, k0, count);
      const size_t n = seen.count();
      float* scores = scratch.probs + r * kKeyTile + seen.begin;
      const float* values = v_head + (k0 + seen.begin) * dim;
      if (!transpose_keys) {
        ScoreRowDirect(q_tile + r * dim, k_head + (k0 + seen.begin) * dim, n,
                       dim, s.scale, scores);
      }
      const float new_max = std::max(row_max[r], Max(scores, n));
      const float tile_sum = ExpShift(scores, n, new_max);
      // exp(m_old - m_new): 0 on the first tile (m_old = -inf), where acc
      // and l are still 0.
      const float correction = std::exp(row_max[r] - new_max);
      row_sum[r] = row_sum[r] * correction + tile_sum;
      if (correction != 1.0f) ScaleRow(correction, acc + r * dim, dim);
      AccumulateWeightedRows(scores, 1, values, n, dim, acc + r * dim);
      row_max[r] = new_max;
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    const size_t row = head * s.q_len + q0 + r;
    float* out_row = out + row * dim;
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
hwy::AlignedFreeUniquePtr<float[]> TransposeKeyTiles(
    const AttentionShape& s, const float* HWY_RESTRICT k) {
  const size_t dim = s.head_dim;
  const size_t k_tiles = DivCeil(s.kv_len, kKeyTile);
  const size_t tiles = s.batch * s.kv_heads * k_tiles;
  auto keys_t = hwy::AllocateAligned<float>(tiles * dim * kKeyTile);
  ParallelFor(tiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const size_t kv_head = t / k_tiles, k0 = (t % k_tiles) * kKeyTile;
      TransposeTile(k + (kv_head * s.kv_len + k0) * dim,
                    std::min(kKeyTile, s.kv_len - k0), dim, kKeyTile,
                    keys_t.get() + TransposedKeyTileOffset(s, kv_head, k0));
    }
  });
  return keys_t;
}

void AttentionForward(const AttentionShape& s, const float* HWY_RESTRICT q,
                      const float* HWY_RESTRICT k, const float* HWY_RESTRICT v,
                      float* HWY_RESTRICT out, float* HWY_RESTRICT lse) {
  const size_t q_tiles = DivCeil(s.q_len, kQueryTile);
  const size_t heads = s.batch * s.q_heads;
  // Decoding (query tiles of at most kDirectScoreRows rows) scores keys
  // untransposed, and with one query tile and one query head per kv head
  // every key tile is read once anyway.
  const bool shared_tiles =
      s.q_len > kDirectScoreRows && q_tiles * (s.q_heads / s.kv_heads) > 1;
  const hwy::AlignedFreeUniquePtr<float[]> keys_t =
      shared_tiles
          ? TransposeKeyTiles(s, k)
          : hwy::AlignedFreeUniquePtr<float[]>(nullptr, hwy::AlignedFreer());
  ParallelFor(heads * q_tiles, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
    TaskScratch scratch(s.head_dim);
    for (int64_t task = begin; task < end; ++task) {
      ForwardTask(s, task / q_tiles, (task % q_tiles) * kQueryTile, q, k, v,
                  keys_t.get(), out, lse, scratch);
    }
  });
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
  const size_t first_row = head * s.q_len + q0;
  const float* k_head = k + kv_head * s.kv_len * dim;
  const float* v_head = v + kv_head * s.kv_len * dim;

  for (size_t r = 0; r < rows; ++r) {
    const size_t row = first_row + r;
    delta[row] = Dot(dout + row * dim, out + row * dim, dim);
  }
  std::fill(dq + first_row * dim, dq + (first_row + rows) * dim, 0.0f);
  const size_t b = head / s.q_heads;
  const size_t keys = VisibleKeys(s, q0 + rows - 1);
  for (size_t k0 = FirstKeyTile(s, b, q0); k0 < keys; k0 += kKeyTile) {
    const size_t count = std::min(kKeyTile, keys - k0);
    const size_t cols = DivCeil(count, lanes) * lanes;
    TransposeTile(k_head + k0 * dim, count, dim, cols, scratch.keys_t);
    TransposeTile(v_head + k0 * dim, count, dim, cols, scratch.values_t);
    // Only rows r0 .. r1 - 1 see keys of this tile.
    const size_t r0 = FirstRowSeeing(s, q0, rows, k0);
    const size_t r1 = RowsSeeingBefore(s, b, q0, rows, k0 + count);
    const size_t row0 = first_row + r0;
    ScoreTile(q + row0 * dim, r1 - r0, scratch.keys_t, dim, cols, s.scale,
              scratch.probs);
    ScoreTile(dout + row0 * dim, r1 - r0, scratch.values_t, dim, cols, 1.0f,
              scratch.grads);
    for (size_t r = r0; r < r1; ++r) {
      const TileKeys seen = VisibleInTile(s, b, q0 + r, k0, count);
      const size_t n = seen.count();
      const size_t row = first_row + r;
      float* probs = scratch.probs + (r - r0) * kKeyTile + seen.begin;
      float* grads = scratch.grads + (r - r0) * kKeyTile + seen.begin;
      ExpShift(probs, n, lse[row]);
      SoftmaxGrad(probs, delta[row], grads, n);
      AccumulateWeightedRows(grads, 1, k_head + (k0 + seen.begin) * dim, n, dim,
                             dq + row * dim);
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    ScaleRow(s.scale, dq + (first_row + r) * dim, dim);
  }
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
  const size_t key_row = kv_head * s.kv_len + k0;
  float* dk_tile = dk + key_row * dim;
  float* dv_tile = dv + key_row * dim;
  std::fill(dk_tile, dk_tile + count * dim, 0.0f);
  std::fill(dv_tile, dv_tile + count * dim, 0.0f);
  TransposeTile(k + key_row * dim, count, dim, cols, scratch.keys_t);
  TransposeTile(v + key_row * dim, count, dim, cols, scratch.values_t);
  // Only queries first_query .. end_query - 1 see any of these keys.
  const size_t first_query =
      (s.causal && k0 > s.q_offset) ? k0 - s.q_offset : 0;
  const size_t end_query = RowsSeeingBefore(s, b, 0, s.q_len, k0 + count);
  for (size_t h = g * group; h < (g + 1) * group; ++h) {
    const size_t head = b * s.q_heads + h;
    for (size_t i0 = first_query; i0 < end_query; i0 += kQueryTile) {
      const size_t rows = std::min(kQueryTile, end_query - i0);
      const size_t first_row = head * s.q_len + i0;
      ScoreTile(q + first_row * dim, rows, scratch.keys_t, dim, cols, s.scale,
                scratch.probs);
      ScoreTile(dout + first_row * dim, rows, scratch.values_t, dim, cols, 1.0f,
                scratch.grads);
      for (size_t r = 0; r < rows; ++r) {
        const size_t row = first_row + r;
        // At least one key, since first_query <= i0 + r < end_query.
        const TileKeys seen = VisibleInTile(s, b, i0 + r, k0, count);
        const size_t n = seen.count();
        float* p = scratch.probs + r * kKeyTile;
        float* ds = scratch.grads + r * kKeyTile;
        ExpShift(p + seen.begin, n, lse[row]);
        SoftmaxGrad(p + seen.begin, delta[row], ds + seen.begin, n);
        if (dq_unscaled != nullptr) {
          AccumulateWeightedRows(ds + seen.begin, 1,
                                 k + (key_row + seen.begin) * dim, n, dim,
                                 dq_unscaled + row * dim);
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
        AccumulateWeightedRows4(scratch.probs + c, kKeyTile,
                                dout + first_row * dim, rows, dim,
                                dv_tile + c * dim, dim);
        AccumulateWeightedRows4(scratch.grads + c, kKeyTile,
                                q + first_row * dim, rows, dim,
                                dk_tile + c * dim, dim);
      }
      for (; c < count; ++c) {
        AccumulateWeightedRows(scratch.probs + c, kKeyTile,
                               dout + first_row * dim, rows, dim,
                               dv_tile + c * dim);
        AccumulateWeightedRows(scratch.grads + c, kKeyTile, q + first_row * dim,
                               rows, dim, dk_tile + c * dim);
      }
    }
  }
  for (size_t c = 0; c < count; ++c) ScaleRow(s.scale, dk_tile + c * dim, dim);
}

// The one-pass backward of kv head `kv_head` (= b * kv_heads + g) and its
// group of query heads: delta for all their rows, then KeyGradTask over the
// key tiles in order, each adding its share to dq. Every p_ij and ds_ij is
// computed once instead of once per pass, and the results are bitwise those
// of the two passes (the same sums in the same order).
void FusedGradTask(const AttentionShape& s, size_t kv_head,
                   const float* HWY_RESTRICT q, const float* HWY_RESTRICT k,
                   const float* HWY_RESTRICT v, const float* HWY_RESTRICT out,
                   const float* HWY_RESTRICT lse,
                   const float* HWY_RESTRICT dout, float* HWY_RESTRICT delta,
                   float* HWY_RESTRICT dq, float* HWY_RESTRICT dk,
                   float* HWY_RESTRICT dv, TaskScratch& scratch) {
  const size_t dim = s.head_dim;
  const size_t group = s.q_heads / s.kv_heads;
  // The group's query rows are contiguous: heads b * q_heads + g * group ..
  // + group - 1, q_len rows each.
  const size_t first_row =
      ((kv_head / s.kv_heads) * s.q_heads + (kv_head % s.kv_heads) * group) *
      s.q_len;
  const size_t rows = group * s.q_len;
  for (size_t row = first_row; row < first_row + rows; ++row) {
    delta[row] = Dot(dout + row * dim, out + row * dim, dim);
  }
  std::fill(dq + first_row * dim, dq + (first_row + rows) * dim, 0.0f);
  for (size_t k0 = 0; k0 < s.kv_len; k0 += kKeyTile) {
    KeyGradTask(s, kv_head, k0, q, k, v, lse, dout, delta, dk, dv, dq, scratch);
  }
  for (size_t row = first_row; row < first_row + rows; ++row) {
    ScaleRow(s.scale, dq + row * dim, dim);
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

void AttentionBackward(const AttentionShape& s, const float* HWY_RESTRICT q,
                       const float* HWY_RESTRICT k, const float* HWY_RESTRICT v,
                       const float* HWY_RESTRICT out,
                       const float* HWY_RESTRICT lse,
                       const float* HWY_RESTRICT dout,
                       float* HWY_RESTRICT delta, float* HWY_RESTRICT dq,
                       float* HWY_RESTRICT dk, float* HWY_RESTRICT dv) {
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

const char* AttentionTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rotor {
namespace kernels {

HWY_EXPORT(AttentionForward);
HWY_EXPORT(AttentionBackward);
HWY_EXPORT(AttentionTarget);

size_t AttentionTaskScratchFloats(size_t head_dim) {
  return 2 * head_dim * kAttentionKeyTile +
         2 * kAttentionQueryTile * kAttentionKeyTile +
         kAttentionQueryTile * head_dim + 2 * kAttentionQueryTile;
}

void AttentionForward(const AttentionShape& shape, const float* q,
                      const float* k, const float* v, float* out, float* lse) {
  HWY_DYNAMIC_DISPATCH(AttentionForward)(shape, q, k, v, out, lse);
}

void AttentionBackward(const AttentionShape& shape, const float* q,
                       const float* k, const float* v, const float* out,
                       const float* lse, const float* dout, float* delta,
                       float* dq, float* dk, float* dv) {
  HWY_DYNAMIC_DISPATCH(AttentionBackward)
  (shape, q, k, v, out, lse, dout, delta, dq, dk, dv);
}

const char* AttentionTarget() {
  return HWY_DYNAMIC_DISPATCH(AttentionTarget)();
}

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

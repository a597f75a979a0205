// Highway implementation of core/kernels/attention.h, compiled once per SIMD
// target (foreach_target.h re-includes this file). docs/attention.md explains
// the algorithm; the comments here name the formula each step computes.
//
// Building blocks (per target):
//   TransposeTile          a key (or value) tile [count, D] -> [D, kKeyTile]
//   TransposeKeyTiles      every key tile once, for all the forward's tasks
//   TileProduct            C (+)= A B on tiles, register-tiled
//                          (tile_product-inl.h): every product below,
//                          through Product, which in bf16 runs
//                          Bf16TileProduct (bf16_tile_product.h) on
//                          operands packed there or earlier: once per
//                          forward (PackKeyValueTiles), per backward
//                          (PackQueries) or per key tile (LoadKeyValueTile)
//   ScoreRowDirect         s_c = scale * <x, key_c> untransposed (decoding)
//   ExpShift               p_c = exp(s_c - shift), vectorised hn::Exp (in
//                          bf16 ExpForBf16, as ProbsAndScoreGrads)
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
//   KeyGradTask   one key tile of one kv head: dk and dv, summed per query
//                 head and then over the group's heads in order (and, in
//                 one-pass mode, the tile's share of dq)
//   FusedGradTask one kv head and its query heads: the whole backward in one
//                 pass over the key tiles
//   HeadGradTask  one query head: the whole backward of its rows, its dk
//                 and dv kept apart and added in head order afterwards
// ChooseBackwardScheme picks among the last three ways by thread count.
#include "core/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/kernels/bf16_tile_product.h"

// Defined once, before the per-target passes below re-include this file.
#ifndef ROTOR_CORE_KERNELS_ATTENTION_CC_SHARED_
#define ROTOR_CORE_KERNELS_ATTENTION_CC_SHARED_
namespace rotor {
namespace kernels {
namespace {
// `buffer`, an allocation of `floats` floats for `what`, or an error naming
// it (under an address-space limit a task's scratch can fail to allocate).
template <class Buffer>
Buffer Allocated(Buffer buffer, size_t floats, const char* what) {
  ROTOR_CHECK(buffer != nullptr || floats == 0,
              "attention: out of memory "
              "allocating ",
              floats * sizeof(float), " bytes of ", what);
  return buffer;
}

// uint32 words of each of a task's bfloat16 operand buffers. With E =
// max(D, tile), a product is a tile's rows by E over a depth of E, or E by
// E over a tile's depth: packed A is at most tile x (E + 1) / 2 words,
// packed B (E + 1) / 2 x 16-rounded tile or tile / 2 x 16-rounded E.
size_t PackedTileWords(size_t head_dim) {
  constexpr size_t kTile = std::max(kAttentionQueryTile, kAttentionKeyTile);
  const size_t extent = std::max(head_dim, kTile);
  return std::max(kTile * ((extent + 1) / 2),
                  (kTile + 1) / 2 * Bf16PackedColumns(extent));
}
}  // namespace
}  // namespace kernels
}  // namespace rotor
#endif  // ROTOR_CORE_KERNELS_ATTENTION_CC_SHARED_

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target helpers, after highway.h:
#include "core/kernels/rope-inl.h"
#include "core/kernels/simd-inl.h"
#include "core/kernels/tile_product-inl.h"
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

// The bf16 backward's q and dout packed once for all its tasks
// (PackQueries), per query head: rows as A of S and dp, [head][t][(D + 1) /
// 2] pairs, and pairs of rows as B of dk and dv, [head][ceil(T / 2)]
// [Bf16PackedColumns(D)].
struct PackedQueries {
  const uint32_t* q_rows = nullptr;
  const uint32_t* q_pairs = nullptr;
  const uint32_t* dout_rows = nullptr;
  const uint32_t* dout_pairs = nullptr;
};

// One task's scratch, carved out of a single aligned allocation of
// AttentionTaskScratchFloats(head_dim) floats.
struct TaskScratch {
  explicit TaskScratch(size_t head_dim)
      : buffer(Allocated(
            hwy::AllocateAligned<float>(AttentionTaskScratchFloats(head_dim)),
            AttentionTaskScratchFloats(head_dim), "a task's scratch")) {
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
    corrections = take(kQueryTile);
    packed_a = reinterpret_cast<uint32_t*>(take(PackedTileWords(head_dim)));
    packed_b = reinterpret_cast<uint32_t*>(take(PackedTileWords(head_dim)));
    packed_q = reinterpret_cast<uint32_t*>(take(PackedTileWords(head_dim)));
    packed_keys = reinterpret_cast<uint32_t*>(take(PackedTileWords(head_dim)));
    packed_values =
        reinterpret_cast<uint32_t*>(take(PackedTileWords(head_dim)));
    packed_key_rows =
        reinterpret_cast<uint32_t*>(take(PackedTileWords(head_dim)));
    static_assert(kKeyTile <= kQueryTile, "a key tile's rows fit acc");
    dk_part = acc;
    dv_part = queries;
  }
  hwy::AlignedFreeUniquePtr<float[]> buffer;
  float* keys_t;       // [D, kKeyTile]: the key tile, transposed
  float* values_t;     // [D, kKeyTile]: the value tile, transposed (backward)
  float* probs;        // [kQueryTile, kKeyTile]: scores, then probabilities
  float* grads;        // [kQueryTile, kKeyTile]: dp, then ds (backward)
  float* acc;          // [kQueryTile, D]: forward output accumulator
  float* queries;      // [kQueryTile, D]: a rotated query or key tile (RoPE)
  float* row_max;      // [kQueryTile]: running max m_i (forward)
  float* row_sum;      // [kQueryTile]: running sum l_i (forward)
  float* corrections;  // [kQueryTile]: exp(m_i - m_i') of a tile (forward)
  // With s.bf16: a product's A and B rounded to bfloat16 pairs (Product).
  uint32_t* packed_a;
  uint32_t* packed_b;
  uint32_t* packed_q;  // the forward's query tile, packed once per task
  // The backward's key tile packed once for its products (LoadKeyValueTile):
  // K^T and V^T as B of S and dp, K's rows as B of dq.
  uint32_t* packed_keys;
  uint32_t* packed_values;
  uint32_t* packed_key_rows;
  // The backward's q and dout packed once for all tasks (bf16), or null.
  const PackedQueries* queries_packed = nullptr;
  // The backward's [kKeyTile, D] sums of dk and dv of one query head (the
  // forward's acc and queries, which the backward does not use).
  float* dk_part;
  float* dv_part;
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

// An operand of a bf16 product already packed (bf16_tile_product.h): A's
// pairs A(m, j) at words[m * row + j * col], or B's rows of pairs `row`
// words apart. Null words: not packed.
struct Packed {
  const uint32_t* words = nullptr;
  size_t row = 0;
  size_t col = 0;
};

// C (+)= A B, every product of the tasks below, with TileProduct's operands
// (tile_product-inl.h): in float32, or with s.bf16 A and B rounded to
// bfloat16 pairs and multiplied by AVX512_BF16's dot products with float32
// sums (core/kernels/bf16_tile_product.h), from packed_a and packed_b when
// the caller packed them once for several products (the same words), else
// packed here into the task's scratch. A is read row-major (a_col = 1) or
// transposed (a_row = 1), as every product here reads it.
template <bool kAccumulate>
void Product(const AttentionShape& s, TaskScratch& scratch, size_t rows,
             size_t cols, size_t depth, const float* HWY_RESTRICT a,
             size_t a_row, size_t a_col, const float* HWY_RESTRICT b,
             size_t ldb, float alpha, float* HWY_RESTRICT c, size_t ldc,
             Packed packed_a = {}, Packed packed_b = {}) {
  if (!s.bf16) {
    TileProduct<kAccumulate>(rows, cols, depth, a, a_row, a_col, b, ldb, alpha,
                             c, ldc);
    return;
  }
  const size_t pairs = (depth + 1) / 2;
  if (packed_a.words == nullptr && a_col == 1) {
    PackBf16Rows(a, a_row, rows, depth, scratch.packed_a, pairs);
    packed_a = {scratch.packed_a, pairs, 1};
  } else if (packed_a.words == nullptr) {  // A^T [depth, rows], a_col apart
    packed_a = {scratch.packed_a, 1, Bf16PackedColumns(rows)};
    PackBf16PairRows(a, a_col, depth, rows, scratch.packed_a, packed_a.col);
  }
  if (packed_b.words == nullptr) {
    packed_b = {scratch.packed_b, Bf16PackedColumns(cols)};
    PackBf16PairRows(b, ldb, depth, cols, scratch.packed_b, packed_b.row);
  }
  Bf16TileProduct(kAccumulate, rows, cols, pairs, alpha,
                  {packed_a.words, packed_a.row, packed_a.col, packed_b.words,
                   packed_b.row, c, ldc});
}

// The packed operands of the backward's products (bf16), or none: K^T, V^T
// and K's rows of the key tile LoadKeyValueTile loaded, and query rows [i0, i0
// + rows) of head `head` from scratch.queries_packed, as A (rows) or B (pairs
// of rows; only for a tile starting on an even row with an even number of rows,
// which the pairs of the whole head match).
Packed KeysPacked(const AttentionShape& s, const TaskScratch& scratch) {
  return s.bf16 ? Packed{scratch.packed_keys, kKeyTile} : Packed{};
}
Packed ValuesPacked(const AttentionShape& s, const TaskScratch& scratch) {
  return s.bf16 ? Packed{scratch.packed_values, kKeyTile} : Packed{};
}
Packed KeyRowsPacked(const AttentionShape& s, const TaskScratch& scratch) {
  return s.bf16 ? Packed{scratch.packed_key_rows, Bf16PackedColumns(s.head_dim)}
                : Packed{};
}
Packed QueryRowsPacked(const AttentionShape& s, const uint32_t* rows,
                       size_t head, size_t i0) {
  if (rows == nullptr) return {};
  const size_t dim_pairs = (s.head_dim + 1) / 2;
  return {rows + (head * s.q_len + i0) * dim_pairs, dim_pairs, 1};
}
Packed QueryPairsPacked(const AttentionShape& s, const uint32_t* pairs,
                        size_t head, size_t i0, size_t rows) {
  if (pairs == nullptr || i0 % 2 != 0 || rows % 2 != 0) return {};
  const size_t ld = Bf16PackedColumns(s.head_dim);
  return {pairs + (head * DivCeil(s.q_len, 2) + i0 / 2) * ld, ld};
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

// exp(x) of a probability: hn::Exp, or with bf16 tiles, which round the
// probabilities to 8 bits, ExpForBf16 (simd-inl.h: within 2^-17, at half
// the cost).
template <bool kBf16, class D>
HWY_INLINE hn::Vec<D> ProbabilityExp(D d, hn::Vec<D> x) {
  if constexpr (kBf16) {
    return ExpForBf16(d, x);
  } else {
    return hn::Exp(d, x);
  }
}

// s[c] = exp(s[c] - shift) for c < n; returns sum_c s[c].
template <bool kBf16>
float ExpShift(float* HWY_RESTRICT s, size_t n, float shift) {
  const hn::ScalableTag<float> df;
  auto sum = hn::Zero(df);
  float tail_sum = 0.0f;
  ForEachVector(n, [&](auto d, size_t c) HWY_ATTR {
    const auto p = ProbabilityExp<kBf16>(
        d, hn::Sub(hn::LoadU(d, s + c), hn::Set(d, shift)));
    hn::StoreU(p, d, s + c);
    if constexpr (hn::MaxLanes(decltype(d)()) == 1) {  // the one-lane tail
      tail_sum += hn::GetLane(p);
    } else {
      sum = hn::Add(sum, p);
    }
  });
  return ReduceSum(df, sum) + tail_sum;
}

// x[c] = exp(x[c]) for c < n (0 for -inf).
void ExpInPlace(float* HWY_RESTRICT x, size_t n) {
  ForEachVector(n, [&](auto d, size_t c) HWY_ATTR {
    hn::StoreU(hn::Exp(d, hn::LoadU(d, x + c)), d, x + c);
  });
}

// One pass for the backward: p[c] = exp(p[c] - lse) (on entry p holds the
// scores s), then ds[c] = p[c] * (ds[c] - delta) (on entry ds holds dp),
// for c < n.
template <bool kBf16>
void ProbsAndScoreGrads(float lse, float delta, float* HWY_RESTRICT p,
                        float* HWY_RESTRICT ds, size_t n) {
  ForEachVector(n, [&](auto d, size_t c) HWY_ATTR {
    const auto probs =
        ProbabilityExp<kBf16>(d, hn::Sub(hn::LoadU(d, p + c), hn::Set(d, lse)));
    hn::StoreU(probs, d, p + c);
    const auto dp = hn::Sub(hn::LoadU(d, ds + c), hn::Set(d, delta));
    hn::StoreU(hn::Mul(probs, dp), d, ds + c);
  });
}

// x[e] *= alpha for e < n.
void ScaleRow(float alpha, float* HWY_RESTRICT x, size_t n) {
  ForEachVector(n, [&](auto d, size_t e) HWY_ATTR {
    hn::StoreU(hn::Mul(hn::Set(d, alpha), hn::LoadU(d, x + e)), d, x + e);
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
      owned_ =
          Allocated(hwy::AllocateAligned<float>(floats), floats, "workspace");
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

// The forward's tiles made once for all its tasks (SharesKeyTiles): in
// float32 the key tiles transposed (TransposeKeyTiles); in bf16 the key and
// value tiles as packed B operands (PackKeyValueTiles).
struct SharedTiles {
  const float* keys_t = nullptr;
  const uint32_t* keys = nullptr;
  const uint32_t* values = nullptr;
};

// Where PackKeyValueTiles puts key or value tile k0 of kv head `kv_head`,
// in words from the start of its buffer: [kv head][tile][pairs][columns],
// key tiles of (D + 1) / 2 pairs of kKeyTile keys (B of S = scale Q K^T),
// value tiles of kKeyTile / 2 pairs of Bf16PackedColumns(D) (B of P V).
size_t PackedKeyTileWords(const AttentionShape& s) {
  return (s.head_dim + 1) / 2 * kKeyTile;
}
size_t PackedValueTileWords(const AttentionShape& s) {
  return kKeyTile / 2 * Bf16PackedColumns(s.head_dim);
}
size_t PackedKeyTileOffset(const AttentionShape& s, size_t kv_head, size_t k0) {
  return (kv_head * DivCeil(s.kv_len, kKeyTile) + k0 / kKeyTile) *
         PackedKeyTileWords(s);
}
size_t PackedValueTileOffset(const AttentionShape& s, size_t kv_head,
                             size_t k0) {
  return (kv_head * DivCeil(s.kv_len, kKeyTile) + k0 / kKeyTile) *
         PackedValueTileWords(s);
}

// Forward for query rows [q0, q0 + rows) of head `head` (= b * q_heads + h):
// the online softmax. Per row i it keeps the running max m_i, the running
// sum l_i = sum_j exp(s_ij - m_i) and acc_i = sum_j exp(s_ij - m_i) v_j over
// the key tiles seen so far. A new tile with max m' rescales both by
// exp(m_i - m') before adding its terms; at the end out_i = acc_i / l_i and
// L_i = m_i + log l_i.
//
// `tiles` (optional) holds every key tile of every kv head already
// transposed (TransposeKeyTiles, and with RoPE rotated), or in bf16 every
// key and value tile packed (PackKeyValueTiles); without them each task
// transposes the tiles it reads. With RoPE the task first rotates its query
// rows into scratch.queries; in bf16 it packs them once.
void ForwardTask(const AttentionShape& s, size_t head, size_t q0,
                 const AttentionForwardOperands& x, const SharedTiles& tiles,
                 TaskScratch& scratch) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const size_t dim = s.head_dim;
  const size_t rows = std::min(kQueryTile, s.q_len - q0);
  const size_t kv_head = KvHeadOf(s, head);
  const size_t b = head / s.q_heads;
  const size_t k_stride = s.k_strides.row;
  const size_t v_stride = s.v_strides.row;
  const float* k_head = x.k + RowAt(s.k_strides, s.kv_heads, kv_head, 0);
  const float* v_head = x.v + RowAt(s.v_strides, s.kv_heads, kv_head, 0);
  const float* q_tile = x.q + RowAt(s.q_strides, s.q_heads, head, q0);
  size_t q_stride = s.q_strides.row;
  if (s.rope.rows != nullptr) {
    RotateRows<false>(s, b, q0, rows, q_tile, q_stride, scratch.queries, dim);
    q_tile = scratch.queries;
    q_stride = dim;
  }
  float* acc = scratch.acc;
  float* row_max = scratch.row_max;
  float* row_sum = scratch.row_sum;
  float* corrections = scratch.corrections;

  std::fill(acc, acc + rows * dim, 0.0f);
  std::fill(row_max, row_max + rows, -std::numeric_limits<float>::infinity());
  std::fill(row_sum, row_sum + rows, 0.0f);
  const bool packed = tiles.keys != nullptr;
  const size_t dim_pairs = (dim + 1) / 2;
  if (packed)
    PackBf16Rows(q_tile, q_stride, rows, dim, scratch.packed_q, dim_pairs);
  // With RoPE the keys come rotated in the shared tiles, so every tile
  // scores from them.
  const bool transpose_keys =
      rows > kDirectScoreRows || tiles.keys_t != nullptr || packed;
  // The tile's first row sees the earliest key, its last row the latest.
  const size_t keys = VisibleKeys(s, q0 + rows - 1);
  for (size_t k0 = FirstKeyTile(s, b, q0); k0 < keys; k0 += kKeyTile) {
    const size_t count = std::min(kKeyTile, keys - k0);
    const size_t cols = DivCeil(count, lanes) * lanes;
    // Only rows first_row .. end_row - 1 see keys of this tile.
    const size_t first_row = FirstRowSeeing(s, q0, rows, k0);
    const size_t end_row = RowsSeeingBefore(s, b, q0, rows, k0 + count);
    if (packed) {  // S = scale Q K^T on the packed tiles
      Bf16TileProduct(
          false, end_row - first_row, cols, dim_pairs, s.scale,
          {scratch.packed_q + first_row * dim_pairs, dim_pairs, 1,
           tiles.keys + PackedKeyTileOffset(s, kv_head, k0), kKeyTile,
           scratch.probs + first_row * kKeyTile, kKeyTile});
    } else if (transpose_keys) {
      const float* tile_t = scratch.keys_t;
      if (tiles.keys_t != nullptr) {
        tile_t = tiles.keys_t + TransposedKeyTileOffset(s, kv_head, k0);
      } else {
        TransposeTile(k_head + k0 * k_stride, k_stride, count, dim, cols,
                      scratch.keys_t);
      }
      Product<false>(s, scratch, end_row - first_row, cols, dim,
                     q_tile + first_row * q_stride, q_stride, 1, tile_t,
                     kKeyTile, s.scale, scratch.probs + first_row * kKeyTile,
                     kKeyTile);
    }
    // Masking is a range of the tile's keys, not a -inf sentinel: masked
    // scores are never exponentiated, and their probabilities are 0. First
    // the new running maxima m' and the rescaling factors exp(m - m') of
    // all rows (one vector pass of exp), then each row's probabilities.
    for (size_t r = first_row; r < end_row; ++r) {
      const TileKeys seen = VisibleInTile(s, b, q0 + r, k0, count);
      float* scores = scratch.probs + r * kKeyTile + seen.begin;
      if (!transpose_keys) {
        ScoreRowDirect(q_tile + r * q_stride,
                       k_head + (k0 + seen.begin) * k_stride, k_stride,
                       seen.count(), dim, s.scale, scores);
      }
      const float new_max = std::max(row_max[r], Max(scores, seen.count()));
      // m - m' is -inf on a row's first tile, where acc and l are still 0.
      corrections[r] = row_max[r] - new_max;
      row_max[r] = new_max;
    }
    ExpInPlace(corrections + first_row, end_row - first_row);
    for (size_t r = first_row; r < end_row; ++r) {
      const TileKeys seen = VisibleInTile(s, b, q0 + r, k0, count);
      float* probs = scratch.probs + r * kKeyTile;
      const float tile_sum =
          s.bf16
              ? ExpShift<true>(probs + seen.begin, seen.count(), row_max[r])
              : ExpShift<false>(probs + seen.begin, seen.count(), row_max[r]);
      std::fill(probs, probs + seen.begin, 0.0f);
      std::fill(probs + seen.end, probs + count, 0.0f);
      row_sum[r] = row_sum[r] * corrections[r] + tile_sum;
      if (corrections[r] != 1.0f) ScaleRow(corrections[r], acc + r * dim, dim);
    }
    // acc += P V over the rows that see the tile. The shared value tile
    // pairs its rows across the whole tile: with an odd count short of it,
    // the last pair would multiply P's zero padding by a value no row sees
    // (a NaN there would spread), so that product packs V itself.
    const bool whole_pairs =
        count % 2 == 0 || count == std::min(kKeyTile, s.kv_len - k0);
    if (packed && whole_pairs) {
      constexpr size_t kKeyPairs = kKeyTile / 2;
      PackBf16Rows(scratch.probs + first_row * kKeyTile, kKeyTile,
                   end_row - first_row, count, scratch.packed_a, kKeyPairs);
      Bf16TileProduct(true, end_row - first_row, dim, (count + 1) / 2, 1.0f,
                      {scratch.packed_a, kKeyPairs, 1,
                       tiles.values + PackedValueTileOffset(s, kv_head, k0),
                       Bf16PackedColumns(dim), acc + first_row * dim, dim});
    } else {
      Product<true>(s, scratch, end_row - first_row, dim, count,
                    scratch.probs + first_row * kKeyTile, kKeyTile, 1,
                    v_head + k0 * v_stride, v_stride, 1.0f,
                    acc + first_row * dim, dim);
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    const size_t row = head * s.q_len + q0 + r;
    float* out_row = x.out + RowAt(s.out_strides, s.q_heads, head, q0 + r);
    std::copy(acc + r * dim, acc + (r + 1) * dim, out_row);
    if (row_sum[r] > 0.0f) {
      ScaleRow(1.0f / row_sum[r], out_row, dim);
      x.lse[row] = row_max[r] + std::log(row_sum[r]);
    } else {  // no visible key: zero output (acc is 0), L = log 0
      x.lse[row] = -std::numeric_limits<float>::infinity();
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

// fn(kv_head, k0, count, rows, stride, scratch) for every key tile of every
// kv head, in parallel, with the tile's key rows (rows `stride` floats
// apart) rotated into scratch.queries first under RoPE.
template <class Fn>
void ForEachKeyTile(const AttentionShape& s, const float* HWY_RESTRICT k,
                    const Fn& fn) {
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
      fn(kv_head, k0, count, rows, stride, scratch);
    }
  });
}

void TransposeKeyTiles(const AttentionShape& s, const float* HWY_RESTRICT k,
                       float* HWY_RESTRICT keys_t) {
  ForEachKeyTile(s, k,
                 [&](size_t kv_head, size_t k0, size_t count, const float* rows,
                     size_t stride, TaskScratch&) {
                   TransposeTile(
                       rows, stride, count, s.head_dim, kKeyTile,
                       keys_t + TransposedKeyTileOffset(s, kv_head, k0));
                 });
}

// A tile's `count` rows (`stride` floats apart, D = dim each) as B of a
// product with their transpose, tile[j * kKeyTile + c] = (row c's elements
// 2j, 2j + 1), zero for count <= c < kKeyTile: the rows packed into pairs
// along D (into `rows_packed`, count x (D + 1) / 2 words), then transposed.
void PackTransposedTile(const float* HWY_RESTRICT rows, size_t stride,
                        size_t count, size_t dim,
                        uint32_t* HWY_RESTRICT rows_packed,
                        uint32_t* HWY_RESTRICT tile) {
  const size_t dim_pairs = (dim + 1) / 2;
  PackBf16Rows(rows, stride, count, dim, rows_packed, dim_pairs);
  for (size_t j = 0; j < dim_pairs; ++j) {
    for (size_t c = 0; c < kKeyTile; ++c) {
      tile[j * kKeyTile + c] = c < count ? rows_packed[c * dim_pairs + j] : 0u;
    }
  }
}

// Words of the bf16 forward's packed key and value tiles.
size_t PackedKeyValueWords(const AttentionShape& s) {
  const size_t tiles = s.batch * s.kv_heads * DivCeil(s.kv_len, kKeyTile);
  return tiles * (PackedKeyTileWords(s) + PackedValueTileWords(s));
}

// Every key and value tile of every kv head packed once for the bf16
// forward, at PackedKeyTileOffset and PackedValueTileOffset (RoPE rotates
// the keys first): a key tile's rows packed into pairs along D, then
// transposed to pairs x keys (B of S = Q K^T, zero past the tile's keys),
// and a value tile's rows packed in pairs of rows (B of P V).
void PackKeyValueTiles(const AttentionShape& s, const float* HWY_RESTRICT k,
                       const float* HWY_RESTRICT v, uint32_t* HWY_RESTRICT keys,
                       uint32_t* HWY_RESTRICT values) {
  const size_t dim = s.head_dim;
  ForEachKeyTile(
      s, k,
      [&](size_t kv_head, size_t k0, size_t count, const float* rows,
          size_t stride, TaskScratch& scratch) {
        PackTransposedTile(rows, stride, count, dim, scratch.packed_a,
                           keys + PackedKeyTileOffset(s, kv_head, k0));
        PackBf16PairRows(v + RowAt(s.v_strides, s.kv_heads, kv_head, k0),
                         s.v_strides.row, count, dim,
                         values + PackedValueTileOffset(s, kv_head, k0),
                         Bf16PackedColumns(dim));
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
// In bf16 every forward but decoding shares its key and value tiles, packed.
bool SharesKeyTiles(const AttentionShape& s) {
  const size_t q_tiles = DivCeil(s.q_len, kQueryTile);
  return (s.rope.rows != nullptr && !ShortWithRope(s)) ||
         (s.q_len > kDirectScoreRows &&
          (s.bf16 || q_tiles * (s.q_heads / s.kv_heads) > 1));
}

size_t ForwardWorkspaceFloats(const AttentionShape& s) {
  if (!SharesKeyTiles(s)) return 0;
  return BlockFloats(s.bf16 ? PackedKeyValueWords(s) : KeyTileFloats(s));
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
size_t RopeBackwardFloats(const AttentionShape& s) {
  if (s.rope.rows == nullptr) return 0;
  return 2 * BlockFloats(QueryFloats(s)) + 2 * BlockFloats(KeyFloats(s)) +
         (GathersOutputRows(s) ? BlockFloats(QueryFloats(s)) : 0);
}

void AttentionForward(const AttentionShape& s,
                      const AttentionForwardOperands& x,
                      float* HWY_RESTRICT workspace) {
  if (ShortWithRope(s)) {
    // At most kDirectScoreRows tokens score keys without transposed tiles:
    // from rows rotated into a (small) buffer first, as the separate kernels
    // do.
    Workspace rotated(nullptr,
                      BlockFloats(QueryFloats(s)) + BlockFloats(KeyFloats(s)));
    float* q_rot = rotated.Take(QueryFloats(s));
    float* k_rot = rotated.Take(KeyFloats(s));
    const AttentionShape plain =
        RotateQueriesAndKeys(s, x.q, x.k, q_rot, k_rot);
    AttentionForwardOperands from_rotated = x;
    from_rotated.q = q_rot;
    from_rotated.k = k_rot;
    HWY_NAMESPACE::AttentionForward(plain, from_rotated,
                                    /*workspace=*/nullptr);
    return;
  }
  const size_t q_tiles = DivCeil(s.q_len, kQueryTile);
  const size_t heads = s.batch * s.q_heads;
  Workspace blocks(workspace, ForwardWorkspaceFloats(s));
  SharedTiles tiles;
  if (SharesKeyTiles(s) && s.bf16) {
    uint32_t* keys =
        reinterpret_cast<uint32_t*>(blocks.Take(PackedKeyValueWords(s)));
    uint32_t* values = keys + PackedKeyTileOffset(s, s.batch * s.kv_heads, 0);
    PackKeyValueTiles(s, x.k, x.v, keys, values);
    tiles.keys = keys;
    tiles.values = values;
  } else if (SharesKeyTiles(s)) {
    float* keys_t = blocks.Take(KeyTileFloats(s));
    TransposeKeyTiles(s, x.k, keys_t);
    tiles.keys_t = keys_t;
  }
  ParallelFor(heads * q_tiles, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
    TaskScratch scratch(s.head_dim);
    for (int64_t task = begin; task < end; ++task) {
      ForwardTask(s, task / q_tiles, (task % q_tiles) * kQueryTile, x, tiles,
                  scratch);
    }
  });
}

// delta_i = <dout_i, out_i> and dq_i = 0 for rows [t0, t0 + rows) of each
// head in [head0, head0 + heads). Null x.out: delta holds them already (the
// RoPE backward computes them from out where it lies).
void StartQueryRows(const AttentionShape& s, size_t head0, size_t heads,
                    size_t t0, size_t rows,
                    const AttentionBackwardOperands& x) {
  const size_t dim = s.head_dim;
  const float* HWY_RESTRICT out = x.out;
  const float* HWY_RESTRICT dout = x.dout;
  float* HWY_RESTRICT delta = x.delta;
  float* HWY_RESTRICT dq = x.dq;
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

// The probabilities and score gradients of query rows [i0, i0 + rows) of
// head `head` (of batch element b) against the key tile [k0, k0 + count),
// whose keys and values scratch holds transposed (TransposeTile):
//   p_ij  = exp(scale <q_i, k_j> - L_i)         -> scratch.probs [rows, keys]
//   dp_ij = <dout_i, v_j>
//   ds_ij = p_ij (dp_ij - delta_i)               -> scratch.grads [rows, keys]
// both 0 outside each row's visible keys. Every row given sees at least one
// key of the tile. q_rows and dout_rows point at row i0.
void TileGradients(const AttentionShape& s, size_t b, size_t head, size_t i0,
                   size_t rows, size_t k0, size_t count, size_t cols,
                   const float* HWY_RESTRICT q_rows, size_t q_stride,
                   const float* HWY_RESTRICT dout_rows, size_t o_stride,
                   const float* HWY_RESTRICT lse,
                   const float* HWY_RESTRICT delta, TaskScratch& scratch) {
  const size_t dim = s.head_dim;
  const PackedQueries* packed = scratch.queries_packed;
  Product<false>(
      s, scratch, rows, cols, dim, q_rows, q_stride, 1, scratch.keys_t,
      kKeyTile, s.scale, scratch.probs, kKeyTile,
      QueryRowsPacked(s, packed ? packed->q_rows : nullptr, head, i0),
      KeysPacked(s, scratch));
  Product<false>(
      s, scratch, rows, cols, dim, dout_rows, o_stride, 1, scratch.values_t,
      kKeyTile, 1.0f, scratch.grads, kKeyTile,
      QueryRowsPacked(s, packed ? packed->dout_rows : nullptr, head, i0),
      ValuesPacked(s, scratch));
  for (size_t r = 0; r < rows; ++r) {
    const size_t row = head * s.q_len + i0 + r;
    const TileKeys seen = VisibleInTile(s, b, i0 + r, k0, count);
    float* p = scratch.probs + r * kKeyTile;
    float* ds = scratch.grads + r * kKeyTile;
    (s.bf16 ? ProbsAndScoreGrads<true>
            : ProbsAndScoreGrads<false>)(lse[row], delta[row], p + seen.begin,
                                         ds + seen.begin, seen.count());
    std::fill(p, p + seen.begin, 0.0f);
    std::fill(ds, ds + seen.begin, 0.0f);
    std::fill(p + seen.end, p + count, 0.0f);
    std::fill(ds + seen.end, ds + count, 0.0f);
  }
}

// dst row r += src row r for r < rows (dim floats each).
void AddRows(const float* HWY_RESTRICT src, size_t src_stride,
             float* HWY_RESTRICT dst, size_t dst_stride, size_t rows,
             size_t dim) {
  for (size_t r = 0; r < rows; ++r) {
    const float* from = src + r * src_stride;
    float* to = dst + r * dst_stride;
    ForEachVector(dim, [&](auto d, size_t e) HWY_ATTR {
      hn::StoreU(hn::Add(hn::LoadU(d, to + e), hn::LoadU(d, from + e)), d,
                 to + e);
    });
  }
}

// The key and value tile [k0, count) of kv head `kv_head`, transposed into
// scratch, or in bf16 packed there (K^T and V^T as B of S and dp, K's rows
// in pairs as B of dq); returns its number of columns (count rounded up to
// vectors).
size_t LoadKeyValueTile(const AttentionShape& s, size_t kv_head, size_t k0,
                        size_t count, const AttentionBackwardOperands& x,
                        TaskScratch& scratch) {
  const hn::ScalableTag<float> d;
  const size_t cols = DivCeil(count, hn::Lanes(d)) * hn::Lanes(d);
  const float* keys = x.k + RowAt(s.k_strides, s.kv_heads, kv_head, k0);
  const float* values = x.v + RowAt(s.v_strides, s.kv_heads, kv_head, k0);
  if (s.bf16) {
    PackTransposedTile(keys, s.k_strides.row, count, s.head_dim,
                       scratch.packed_a, scratch.packed_keys);
    PackTransposedTile(values, s.v_strides.row, count, s.head_dim,
                       scratch.packed_a, scratch.packed_values);
    PackBf16PairRows(keys, s.k_strides.row, count, s.head_dim,
                     scratch.packed_key_rows, Bf16PackedColumns(s.head_dim));
    return cols;
  }
  TransposeTile(keys, s.k_strides.row, count, s.head_dim, cols, scratch.keys_t);
  TransposeTile(values, s.v_strides.row, count, s.head_dim, cols,
                scratch.values_t);
  return cols;
}

// Backward, pass 1, for query rows [q0, q0 + rows) of head `head`:
//   delta_i = <dout_i, out_i>          (stored for pass 2)
//   p_ij, ds_ij                        (TileGradients, from the saved L)
//   dq_i = scale * sum_j ds_ij k_j     (dq += ds K per key tile, in order)
void QueryGradTask(const AttentionShape& s, size_t head, size_t q0,
                   const AttentionBackwardOperands& x, TaskScratch& scratch) {
  const size_t dim = s.head_dim;
  const size_t rows = std::min(kQueryTile, s.q_len - q0);
  const size_t kv_head = KvHeadOf(s, head);
  const size_t q_stride = s.q_strides.row;
  const size_t k_stride = s.k_strides.row;
  const size_t o_stride = s.out_strides.row;
  const float* k_head = x.k + RowAt(s.k_strides, s.kv_heads, kv_head, 0);
  const float* q_head = x.q + RowAt(s.q_strides, s.q_heads, head, 0);
  const float* dout_head = x.dout + RowAt(s.out_strides, s.q_heads, head, 0);
  float* dq_head = x.dq + RowAt(s.q_strides, s.q_heads, head, 0);

  StartQueryRows(s, head, 1, q0, rows, x);
  const size_t b = head / s.q_heads;
  const size_t keys = VisibleKeys(s, q0 + rows - 1);
  for (size_t k0 = FirstKeyTile(s, b, q0); k0 < keys; k0 += kKeyTile) {
    const size_t count = std::min(kKeyTile, keys - k0);
    const size_t cols = LoadKeyValueTile(s, kv_head, k0, count, x, scratch);
    // Only rows r0 .. r1 - 1 see keys of this tile.
    const size_t r0 = FirstRowSeeing(s, q0, rows, k0);
    const size_t r1 = RowsSeeingBefore(s, b, q0, rows, k0 + count);
    const size_t i0 = q0 + r0;
    TileGradients(s, b, head, i0, r1 - r0, k0, count, cols,
                  q_head + i0 * q_stride, q_stride, dout_head + i0 * o_stride,
                  o_stride, x.lse, x.delta, scratch);
    Product<true>(s, scratch, r1 - r0, dim, count, scratch.grads, kKeyTile, 1,
                  k_head + k0 * k_stride, k_stride, 1.0f,
                  dq_head + i0 * q_stride, q_stride, Packed{},
                  KeyRowsPacked(s, scratch));
  }
  ScaleRows(s.scale, dq_head + q0 * q_stride, q_stride, rows, dim);
}

// One query head's share of the gradients of keys [k0, k0 + count) of its
// kv head, whose keys and values scratch holds transposed, over every query
// that sees them, query tile by query tile in order:
//   dv_j  = sum_i p_ij dout_i          (dv_dst += P^T dO)
//   dk_j' = sum_i ds_ij q_i            (dk_dst += ds^T Q; scale comes later)
// written (not added) to dk_dst and dv_dst (rows dk_stride and dv_stride
// floats apart). With
// `dq_unscaled` (the one-pass backward) it also adds the tile's share of
// dq_i / scale = sum_j ds_ij k_j to every query row, with the same ds and in
// the same order as QueryGradTask.
void HeadKeyTileGrads(const AttentionShape& s, size_t head, size_t k0,
                      size_t count, size_t cols,
                      const AttentionBackwardOperands& x,
                      const float* HWY_RESTRICT k_tile,
                      float* HWY_RESTRICT dk_dst, size_t dk_stride,
                      float* HWY_RESTRICT dv_dst, size_t dv_stride,
                      float* HWY_RESTRICT dq_unscaled, TaskScratch& scratch) {
  const size_t dim = s.head_dim;
  const size_t b = head / s.q_heads;
  const size_t q_stride = s.q_strides.row;
  const size_t o_stride = s.out_strides.row;
  const float* q_head = x.q + RowAt(s.q_strides, s.q_heads, head, 0);
  const float* dout_head = x.dout + RowAt(s.out_strides, s.q_heads, head, 0);
  // Only queries first_query .. end_query - 1 see any of these keys.
  const size_t first_query =
      (s.causal && k0 > s.q_offset) ? k0 - s.q_offset : 0;
  const size_t end_query = RowsSeeingBefore(s, b, 0, s.q_len, k0 + count);
  if (first_query >= end_query) {  // no query sees them
    for (size_t c = 0; c < count; ++c) {
      std::fill(dk_dst + c * dk_stride, dk_dst + c * dk_stride + dim, 0.0f);
      std::fill(dv_dst + c * dv_stride, dv_dst + c * dv_stride + dim, 0.0f);
    }
    return;
  }
  for (size_t i0 = first_query; i0 < end_query; i0 += kQueryTile) {
    const size_t rows = std::min(kQueryTile, end_query - i0);
    const float* q_rows = q_head + i0 * q_stride;
    const float* dout_rows = dout_head + i0 * o_stride;
    TileGradients(s, b, head, i0, rows, k0, count, cols, q_rows, q_stride,
                  dout_rows, o_stride, x.lse, x.delta, scratch);
    if (dq_unscaled != nullptr) {
      Product<true>(s, scratch, rows, dim, count, scratch.grads, kKeyTile, 1,
                    k_tile, s.k_strides.row, 1.0f,
                    dq_unscaled + RowAt(s.q_strides, s.q_heads, head, i0),
                    q_stride, Packed{}, KeyRowsPacked(s, scratch));
    }
    const PackedQueries* packed = scratch.queries_packed;
    const Packed dout_pairs = QueryPairsPacked(
        s, packed ? packed->dout_pairs : nullptr, head, i0, rows);
    const Packed q_pairs =
        QueryPairsPacked(s, packed ? packed->q_pairs : nullptr, head, i0, rows);
    // The first query tile writes, the others add.
    if (i0 == first_query) {
      Product<false>(s, scratch, count, dim, rows, scratch.probs, 1, kKeyTile,
                     dout_rows, o_stride, 1.0f, dv_dst, dv_stride, Packed{},
                     dout_pairs);
      Product<false>(s, scratch, count, dim, rows, scratch.grads, 1, kKeyTile,
                     q_rows, q_stride, 1.0f, dk_dst, dk_stride, Packed{},
                     q_pairs);
    } else {
      Product<true>(s, scratch, count, dim, rows, scratch.probs, 1, kKeyTile,
                    dout_rows, o_stride, 1.0f, dv_dst, dv_stride, Packed{},
                    dout_pairs);
      Product<true>(s, scratch, count, dim, rows, scratch.grads, 1, kKeyTile,
                    q_rows, q_stride, 1.0f, dk_dst, dk_stride, Packed{},
                    q_pairs);
    }
  }
}

// The first query head of kv head `kv_head`'s group.
size_t FirstHeadOf(const AttentionShape& s, size_t kv_head) {
  return (kv_head / s.kv_heads) * s.q_heads +
         (kv_head % s.kv_heads) * (s.q_heads / s.kv_heads);
}

// Backward, pass 2, for keys [k0, k0 + count) of kv head `kv_head`:
//   dv_j = sum_h sum_i p_ij dout_i,   dk_j = scale * sum_h sum_i ds_ij q_i
// over the group's query heads h. The first head's sums are written into dk
// and dv; each further head's go to a scratch tile, added after it in head
// order. That is the order every backward scheme sums in (the per-head
// scheme adds whole per-head arrays the same way), so all give the same
// bits. With `dq_unscaled` (the one-pass backward, FusedGradTask) it also
// adds this key tile's share of dq / scale.
void KeyGradTask(const AttentionShape& s, size_t kv_head, size_t k0,
                 const AttentionBackwardOperands& x,
                 float* HWY_RESTRICT dq_unscaled, TaskScratch& scratch) {
  const size_t dim = s.head_dim;
  const size_t group = s.q_heads / s.kv_heads;
  const size_t count = std::min(kKeyTile, s.kv_len - k0);
  const size_t k_stride = s.k_strides.row;
  const size_t v_stride = s.v_strides.row;
  const size_t k_at = RowAt(s.k_strides, s.kv_heads, kv_head, k0);
  const size_t v_at = RowAt(s.v_strides, s.kv_heads, kv_head, k0);
  float* dk_tile = x.dk + k_at;
  float* dv_tile = x.dv + v_at;
  const size_t cols = LoadKeyValueTile(s, kv_head, k0, count, x, scratch);
  const size_t first_head = FirstHeadOf(s, kv_head);
  for (size_t head = first_head; head < first_head + group; ++head) {
    const bool first = head == first_head;
    HeadKeyTileGrads(s, head, k0, count, cols, x, x.k + k_at,
                     first ? dk_tile : scratch.dk_part, first ? k_stride : dim,
                     first ? dv_tile : scratch.dv_part, first ? v_stride : dim,
                     dq_unscaled, scratch);
    if (!first) {
      AddRows(scratch.dk_part, dim, dk_tile, k_stride, count, dim);
      AddRows(scratch.dv_part, dim, dv_tile, v_stride, count, dim);
    }
  }
  ScaleRows(s.scale, dk_tile, k_stride, count, dim);
}

// The one-pass backward of kv head `kv_head` and its group of query heads:
// delta for all their rows, then KeyGradTask over the key tiles in order,
// each adding its share to dq. Every p_ij and ds_ij is computed once instead
// of once per pass, and the results are bitwise those of the two passes
// (the same sums in the same order).
void FusedGradTask(const AttentionShape& s, size_t kv_head,
                   const AttentionBackwardOperands& x, TaskScratch& scratch) {
  const size_t group = s.q_heads / s.kv_heads;
  const size_t first_head = FirstHeadOf(s, kv_head);
  StartQueryRows(s, first_head, group, 0, s.q_len, x);
  for (size_t k0 = 0; k0 < s.kv_len; k0 += kKeyTile) {
    KeyGradTask(s, kv_head, k0, x, x.dq, scratch);
  }
  for (size_t head = first_head; head < first_head + group; ++head) {
    ScaleRows(s.scale, x.dq + RowAt(s.q_strides, s.q_heads, head, 0),
              s.q_strides.row, s.q_len, s.head_dim);
  }
}

// Floats of one per-head partial of dk or dv (PerHeadBackward): kv_len rows.
size_t PartialFloats(const AttentionShape& s) {
  return BlockFloats(s.kv_len * s.head_dim);
}

// The one-pass backward of one query head `head`: delta and dq for its rows,
// and its own sums of dk and dv over every key tile in order, into dk and dv
// for the first head of each group and into its partials (rows of D floats)
// for the others; PerHeadBackward adds those in head order afterwards.
void HeadGradTask(const AttentionShape& s, size_t head,
                  const AttentionBackwardOperands& x,
                  float* HWY_RESTRICT dk_part, float* HWY_RESTRICT dv_part,
                  TaskScratch& scratch) {
  const size_t dim = s.head_dim;
  const size_t kv_head = KvHeadOf(s, head);
  const bool first = head == FirstHeadOf(s, kv_head);
  StartQueryRows(s, head, 1, 0, s.q_len, x);
  for (size_t k0 = 0; k0 < s.kv_len; k0 += kKeyTile) {
    const size_t count = std::min(kKeyTile, s.kv_len - k0);
    const size_t cols = LoadKeyValueTile(s, kv_head, k0, count, x, scratch);
    const size_t k_at = RowAt(s.k_strides, s.kv_heads, kv_head, k0);
    const size_t v_at = RowAt(s.v_strides, s.kv_heads, kv_head, k0);
    HeadKeyTileGrads(s, head, k0, count, cols, x, x.k + k_at,
                     first ? x.dk + k_at : dk_part + k0 * dim,
                     first ? s.k_strides.row : dim,
                     first ? x.dv + v_at : dv_part + k0 * dim,
                     first ? s.v_strides.row : dim, x.dq, scratch);
  }
  ScaleRows(s.scale, x.dq + RowAt(s.q_strides, s.q_heads, head, 0),
            s.q_strides.row, s.q_len, dim);
}

// How the backward splits its work over the threads. All three give the
// same bits (each sums in the same order), so the choice is speed alone:
//   kPerKvHead  one task per kv head and its query heads (FusedGradTask):
//               every p_ij and ds_ij once, 10 D flops per query-key pair;
//   kPerHead    one task per query head (HeadGradTask), its dk and dv
//               sums kept apart and added in head order after: 10 D flops
//               too, in group times more tasks, for 2 (group - 1) partial
//               arrays of k's size;
//   kTwoPasses  dq per query tile, then dk and dv per key tile (QueryGrad-
//               Task, KeyGradTask): tasks small enough to balance any
//               thread count, at 14 D flops per pair (p and ds twice).
// With H kv heads of group g on T threads the times go as ceil(H / T) g
// 10, ceil(H g / T) 10 and H g 14 / T. One thread, or many kv heads, takes
// kPerKvHead; SmolLM2's 3 kv heads of 3 on 2 threads kPerHead (50 against
// 60 and 63); one query head on 2 threads kTwoPasses.
enum class BackwardScheme { kPerKvHead, kPerHead, kTwoPasses };

BackwardScheme ChooseBackwardScheme(const AttentionShape& s, size_t threads) {
  const size_t kv_heads = s.batch * s.kv_heads;
  const size_t heads = s.batch * s.q_heads;
  const size_t group = s.q_heads / s.kv_heads;
  const size_t per_kv_head = DivCeil(kv_heads, threads) * group * 10 * threads;
  const size_t per_head = DivCeil(heads, threads) * 10 * threads;
  const size_t two_passes = heads * 14;
  if (per_kv_head <= per_head && per_kv_head <= two_passes) {
    return BackwardScheme::kPerKvHead;
  }
  return per_head <= two_passes ? BackwardScheme::kPerHead
                                : BackwardScheme::kTwoPasses;
}

// Floats of workspace the plain backward needs: the per-head partials.
size_t PartialsFloats(const AttentionShape& s) {
  if (ChooseBackwardScheme(s, static_cast<size_t>(NumThreads())) !=
      BackwardScheme::kPerHead) {
    return 0;
  }
  const size_t group = s.q_heads / s.kv_heads;
  return 2 * s.batch * s.kv_heads * (group - 1) * PartialFloats(s);
}

// Words of PackedQueries' rows and pairs of one operand (q or dout).
size_t QueryRowsWords(const AttentionShape& s) {
  return s.batch * s.q_heads * s.q_len * ((s.head_dim + 1) / 2);
}
size_t QueryPairsWords(const AttentionShape& s) {
  return s.batch * s.q_heads * DivCeil(s.q_len, 2) *
         Bf16PackedColumns(s.head_dim);
}

// The plain backward's workspace: the per-head partials, and in bf16 q and
// dout packed.
size_t PlainBackwardWorkspaceFloats(const AttentionShape& s) {
  const size_t packed = s.bf16 ? 2 * (BlockFloats(QueryRowsWords(s)) +
                                      BlockFloats(QueryPairsWords(s)))
                               : 0;
  return BlockFloats(PartialsFloats(s)) + packed;
}

// q and dout packed for the bf16 backward (PackedQueries), out of `blocks`,
// in parallel over the query heads.
PackedQueries PackQueries(const AttentionShape& s,
                          const AttentionBackwardOperands& x,
                          Workspace& blocks) {
  const size_t dim = s.head_dim, dim_pairs = (dim + 1) / 2;
  const size_t ld = Bf16PackedColumns(dim), head_pairs = DivCeil(s.q_len, 2);
  uint32_t* words[4];
  for (size_t i = 0; i < 4; ++i) {
    words[i] = reinterpret_cast<uint32_t*>(
        blocks.Take(i % 2 == 0 ? QueryRowsWords(s) : QueryPairsWords(s)));
  }
  ParallelFor(s.batch * s.q_heads, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
    for (int64_t head = begin; head < end; ++head) {
      const float* operands[2] = {
          x.q + RowAt(s.q_strides, s.q_heads, head, 0),
          x.dout + RowAt(s.out_strides, s.q_heads, head, 0)};
      const size_t strides[2] = {s.q_strides.row, s.out_strides.row};
      for (size_t i = 0; i < 2; ++i) {
        PackBf16Rows(operands[i], strides[i], s.q_len, dim,
                     words[2 * i] + head * s.q_len * dim_pairs, dim_pairs);
        PackBf16PairRows(operands[i], strides[i], s.q_len, dim,
                         words[2 * i + 1] + head * head_pairs * ld, ld);
      }
    }
  });
  return {words[0], words[1], words[2], words[3]};
}

// kPerHead: HeadGradTask for every query head, then per kv head dk += the
// partials of heads 2 .. g of its group in order (and dv alike), then
// dk *= scale, as KeyGradTask does tile by tile.
void PerHeadBackward(const AttentionShape& s,
                     const AttentionBackwardOperands& x,
                     float* HWY_RESTRICT partials,
                     const PackedQueries* packed) {
  const size_t dim = s.head_dim;
  const size_t group = s.q_heads / s.kv_heads;
  const size_t kv_heads = s.batch * s.kv_heads;
  // Partial p of kv head g (p = 0 .. group - 2, for its heads 2 .. group).
  float* dk_parts = partials;
  float* dv_parts = partials + kv_heads * (group - 1) * PartialFloats(s);
  auto part = [&](float* parts, size_t kv_head, size_t head) {
    const size_t p = kv_head * (group - 1) + (head - FirstHeadOf(s, kv_head));
    return parts + (p - 1) * PartialFloats(s);
  };
  ParallelFor(s.batch * s.q_heads, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
    TaskScratch scratch(dim);
    scratch.queries_packed = packed;
    for (int64_t head = begin; head < end; ++head) {
      const size_t kv_head = KvHeadOf(s, head);
      const bool first = static_cast<size_t>(head) == FirstHeadOf(s, kv_head);
      HeadGradTask(s, head, x, first ? nullptr : part(dk_parts, kv_head, head),
                   first ? nullptr : part(dv_parts, kv_head, head), scratch);
    }
  });
  ParallelFor(kv_heads, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
    for (int64_t kv_head = begin; kv_head < end; ++kv_head) {
      const size_t first_head = FirstHeadOf(s, kv_head);
      float* dk_head = x.dk + RowAt(s.k_strides, s.kv_heads, kv_head, 0);
      float* dv_head = x.dv + RowAt(s.v_strides, s.kv_heads, kv_head, 0);
      for (size_t head = first_head + 1; head < first_head + group; ++head) {
        AddRows(part(dk_parts, kv_head, head), dim, dk_head, s.k_strides.row,
                s.kv_len, dim);
        AddRows(part(dv_parts, kv_head, head), dim, dv_head, s.v_strides.row,
                s.kv_len, dim);
      }
      ScaleRows(s.scale, dk_head, s.k_strides.row, s.kv_len, dim);
    }
  });
}

// The backward without RoPE. x.out may be null when x.delta already holds
// <dout_i, out_i> (the RoPE path computes them itself). workspace: null or
// PlainBackwardWorkspaceFloats(s) floats. In bf16, q and dout are packed
// once for every task first (PackQueries).
void PlainBackward(const AttentionShape& s, const AttentionBackwardOperands& x,
                   float* HWY_RESTRICT workspace) {
  Workspace blocks(workspace, PlainBackwardWorkspaceFloats(s));
  float* partials = blocks.Take(PartialsFloats(s));
  PackedQueries queries;
  if (s.bf16) queries = PackQueries(s, x, blocks);
  const PackedQueries* packed = s.bf16 ? &queries : nullptr;
  switch (ChooseBackwardScheme(s, static_cast<size_t>(NumThreads()))) {
    case BackwardScheme::kPerKvHead:
      ParallelFor(s.batch * s.kv_heads, 1,
                  [&](int64_t begin, int64_t end) HWY_ATTR {
                    TaskScratch scratch(s.head_dim);
                    scratch.queries_packed = packed;
                    for (int64_t kv_head = begin; kv_head < end; ++kv_head) {
                      FusedGradTask(s, kv_head, x, scratch);
                    }
                  });
      return;
    case BackwardScheme::kPerHead:
      PerHeadBackward(s, x, partials, packed);
      return;
    case BackwardScheme::kTwoPasses:
      break;
  }
  const size_t q_tiles = DivCeil(s.q_len, kQueryTile);
  ParallelFor(s.batch * s.q_heads * q_tiles, 1,
              [&](int64_t begin, int64_t end) HWY_ATTR {
                TaskScratch scratch(s.head_dim);
                scratch.queries_packed = packed;
                for (int64_t task = begin; task < end; ++task) {
                  QueryGradTask(s, task / q_tiles,
                                (task % q_tiles) * kQueryTile, x, scratch);
                }
              });
  const size_t k_tiles = DivCeil(s.kv_len, kKeyTile);
  ParallelFor(s.batch * s.kv_heads * k_tiles, 1,
              [&](int64_t begin, int64_t end) HWY_ATTR {
                TaskScratch scratch(s.head_dim);
                scratch.queries_packed = packed;
                for (int64_t task = begin; task < end; ++task) {
                  KeyGradTask(s, task / k_tiles, (task % k_tiles) * kKeyTile, x,
                              /*dq_unscaled=*/nullptr, scratch);
                }
              });
}

// The rotated operands of the RoPE backward, then the plain backward's
// partials.
size_t BackwardWorkspaceFloats(const AttentionShape& s) {
  return RopeBackwardFloats(s) + PlainBackwardWorkspaceFloats(s);
}

// Backward with RoPE, on the plain kernels: q_rot = R(theta) q and k_rot =
// R(theta) k into the workspace (every query row is read once per key tile,
// so rotating on each load would repeat the work), and dout there too when
// it is not contiguous (see GathersOutputRows; delta is then taken from out
// where it lies), the backward without RoPE into dq_rot and dk_rot, then
// dq = R(-theta) dq_rot and dk = R(-theta) dk_rot into q's and k's layout.
// (Staging each kv head's rows inside its one-pass task instead, while they
// are in cache, measured no faster.)
void BackwardWithRope(const AttentionShape& s,
                      const AttentionBackwardOperands& x,
                      float* HWY_RESTRICT workspace) {
  const size_t dim = s.head_dim;
  Workspace blocks(workspace, BackwardWorkspaceFloats(s));
  float* q_rot = blocks.Take(QueryFloats(s));
  float* k_rot = blocks.Take(KeyFloats(s));
  float* dq_rot = blocks.Take(QueryFloats(s));
  float* dk_rot = blocks.Take(KeyFloats(s));
  const bool gather = GathersOutputRows(s);
  float* dout_rows = gather ? blocks.Take(QueryFloats(s)) : nullptr;
  float* plain_workspace = blocks.Take(PlainBackwardWorkspaceFloats(s));
  AttentionShape plain = RotateQueriesAndKeys(s, x.q, x.k, q_rot, k_rot);
  if (gather) {
    plain.out_strides = ContiguousAttentionStrides(s.q_heads, s.q_len, dim);
    ParallelFor(
        s.batch * s.q_heads, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
          for (int64_t head = begin; head < end; ++head) {
            for (size_t t = 0; t < s.q_len; ++t) {
              const size_t at = RowAt(s.out_strides, s.q_heads, head, t);
              x.delta[head * s.q_len + t] = Dot(x.dout + at, x.out + at, dim);
              std::copy(x.dout + at, x.dout + at + dim,
                        dout_rows + (head * s.q_len + t) * dim);
            }
          }
        });
  }
  AttentionBackwardOperands rotated = x;
  rotated.q = q_rot;
  rotated.k = k_rot;
  rotated.dq = dq_rot;
  rotated.dk = dk_rot;
  if (gather) {  // out is null: delta is ready
    rotated.out = nullptr;
    rotated.dout = dout_rows;
  }
  PlainBackward(plain, rotated, plain_workspace);
  RotateHeads<true>(s, s.q_heads, dq_rot, plain.q_strides, x.dq, s.q_strides);
  RotateHeads<true>(s, s.kv_heads, dk_rot, plain.k_strides, x.dk, s.k_strides);
}

void AttentionBackward(const AttentionShape& s,
                       const AttentionBackwardOperands& x,
                       float* HWY_RESTRICT workspace) {
  if (s.rope.rows != nullptr) {
    BackwardWithRope(s, x, workspace);
  } else {
    PlainBackward(s, x, workspace);
  }
}

const char* BackwardSchemeName(const AttentionShape& s) {
  switch (ChooseBackwardScheme(s, static_cast<size_t>(NumThreads()))) {
    case BackwardScheme::kPerKvHead:
      return "per kv head";
    case BackwardScheme::kPerHead:
      return "per head";
    case BackwardScheme::kTwoPasses:
      break;
  }
  return "two passes";
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
HWY_EXPORT(ForwardWorkspaceFloats);
HWY_EXPORT(BackwardWorkspaceFloats);
HWY_EXPORT(AttentionTarget);
HWY_EXPORT(BackwardSchemeName);

size_t AttentionTaskScratchFloats(size_t head_dim) {
  return 2 * head_dim * kAttentionKeyTile +
         2 * kAttentionQueryTile * kAttentionKeyTile +
         2 * kAttentionQueryTile * head_dim + 3 * kAttentionQueryTile +
         6 * PackedTileWords(head_dim);
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
  ROTOR_CHECK(!s.bf16 || Bf16DotSupported(),
              "attention in bf16: this CPU has no AVX512_BF16 (VDPBF16PS), "
              "which the bf16 tile products run on");
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

void AttentionForward(const AttentionShape& shape,
                      const AttentionForwardOperands& x, float* workspace) {
  HWY_DYNAMIC_DISPATCH(AttentionForward)(Resolved(shape), x, workspace);
}

void AttentionBackward(const AttentionShape& shape,
                       const AttentionBackwardOperands& x, float* workspace) {
  HWY_DYNAMIC_DISPATCH(AttentionBackward)(Resolved(shape), x, workspace);
}

const char* AttentionBackwardScheme(const AttentionShape& shape) {
  return HWY_DYNAMIC_DISPATCH(BackwardSchemeName)(Resolved(shape));
}

const char* AttentionTarget() {
  return HWY_DYNAMIC_DISPATCH(AttentionTarget)();
}

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

// Highway implementation of the RoPE kernels in core/kernels/rope.h,
// compiled once per SIMD target (foreach_target.h re-includes this file).
//
// Memory plan. RoPE is memory-bound: per element it does one multiply and
// one fused multiply-add, so the speed limit is how fast q and k stream
// through memory. The loops are ordered so that every byte of q and k is
// touched once and the table rows are loaded once per tile and reused from
// cache by every head:
//   for each (batch row b, tile of positions)                 [threads]
//     look up the table row of every position of the tile  (<= 256 KiB)
//     for each operand (q, then k), for each head h,
//       for each position t of the tile: rotate row (b, h, t)
// A tile of one head is a contiguous run of tile * head_dim floats when the
// array is contiguous, so each inner loop streams sequentially. In place,
// each cache line is read once and written back once; out of place, large
// outputs (either layout) are written with streaming stores to skip the
// write-allocate read.
#include "core/kernels/rope.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/kernels/rope.cc"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// Per-target helpers, after highway.h:
#include "core/kernels/rope-inl.h"
#include "core/kernels/simd-inl.h"
#include "core/parallel.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace kernels {
namespace HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// Table rows of one tile take at most kTileBytes (they stay in the 1 MiB L2
// while every head of q and k passes over them), and a tile holds at most
// kMaxTile positions. Long tiles matter more than keeping the rows in L1:
// each head's tile is one long sequential run that the hardware prefetcher
// can follow (measured: 16 KiB tiles reached ~27 GB/s, 256 KiB ~36 GB/s on
// one core for [8, 8, 1024, 64]; one position per tile, i.e. all heads per
// position, ran at under 10 GB/s out of place).
constexpr int64_t kTileBytes = 256 * 1024;
constexpr int64_t kMaxTile = 1024;
constexpr int64_t kMinTile = 16;
// Outputs at least this large are written with streaming stores.
constexpr double kStreamBytes = 16.0 * (1 << 20);
// The interleaved layout streams rows of at most this many rotary channels
// (its scratch row lives on the stack).
constexpr int64_t kMaxStreamRow = 1024;

// RotateSplitHalf writing with non-temporal (streaming) stores, for
// out-of-place outputs too large to stay in cache: a plain store first reads
// the destination line into cache ("write-allocate"), so an out-of-place
// pass would move three bytes per byte of output instead of two. Requires y
// aligned to the vector size and half a multiple of the lane count (no tail),
// and x, y not to overlap. Call hwy::FlushStream() before the data is used.
template <bool kInverse>
HWY_INLINE void RotateSplitHalfStream(const float* cos_sin, size_t half,
                                      const float* HWY_RESTRICT x,
                                      float* HWY_RESTRICT y) {
  const float* sin = cos_sin + half;
  const hn::ScalableTag<float> d;
  for (size_t i = 0; i < half; i += hn::Lanes(d)) {
    const auto c = hn::LoadU(d, cos_sin + i);
    const auto s = hn::LoadU(d, sin + i);
    auto y0 = hn::Zero(d);
    auto y1 = hn::Zero(d);
    Rotate<kInverse>(c, s, hn::LoadU(d, x + i), hn::LoadU(d, x + half + i), y0,
                     y1);
    hn::Stream(y0, d, y + i);
    hn::Stream(y1, d, y + half + i);
  }
}

// RotateInterleaved with streaming stores (see RotateSplitHalfStream). The
// pairs are re-interleaved in registers by StoreInterleaved2 into `row`, an
// aligned scratch row of 2 * half floats that stays in L1, which is then
// streamed to y a whole vector at a time. Requires y aligned to the vector
// size, half a multiple of the lane count and 2 * half <= kMaxStreamRow.
template <bool kInverse>
HWY_INLINE void RotateInterleavedStream(const float* cos_sin, size_t half,
                                        const float* HWY_RESTRICT x,
                                        float* HWY_RESTRICT row,
                                        float* HWY_RESTRICT y) {
  RotateInterleaved<kInverse, /*kAccumulate=*/false>(cos_sin, half, x, row);
  const hn::ScalableTag<float> d;
  for (size_t i = 0; i < 2 * half; i += hn::Lanes(d)) {
    hn::Stream(hn::Load(d, row + i), d, y + i);
  }
}

template <RopeLayout kLayout, bool kInverse, bool kAccumulate>
void ApplyAll(const RopeRows& rows, const RopeShape& shape,
              const RopePositions& positions, const RopeOperand& a,
              const RopeOperand& b) {
  const size_t half = static_cast<size_t>(shape.rotary_dim / 2);
  const size_t pass = static_cast<size_t>(shape.head_dim - shape.rotary_dim);
  // Positions per tile: as many as kTileBytes of table rows allow, but
  // short enough to give every thread about four tiles (load balance) unless
  // that would make tiles shorter than kMinTile positions. The result does
  // not depend on the tiling: every row is computed the same way.
  const int64_t tiles_wanted_per_row =
      (4 * NumThreads() + shape.batch - 1) / std::max<int64_t>(shape.batch, 1);
  const int64_t tile = std::min(
      std::clamp<int64_t>(
          kTileBytes / (shape.rotary_dim * static_cast<int64_t>(sizeof(float))),
          1, kMaxTile),
      std::max(kMinTile,
               (shape.seq + tiles_wanted_per_row - 1) / tiles_wanted_per_row));
  const int64_t tiles_per_row = (shape.seq + tile - 1) / tile;
  const RopeOperand* operands[2] = {&a, &b};
  // Stream the output (see RotateSplitHalfStream) when it is written out of
  // place, overwritten rather than accumulated, and large.
  const size_t lanes = hn::Lanes(hn::ScalableTag<float>());
  const double out_bytes = static_cast<double>(sizeof(float)) * shape.batch *
                           shape.seq * shape.head_dim * (a.heads + b.heads);
  const bool stream =
      (kLayout == RopeLayout::kSplitHalf ||
       shape.rotary_dim <= kMaxStreamRow) &&
      !kAccumulate && half % lanes == 0 && out_bytes >= kStreamBytes &&
      (a.heads == 0 || a.src != a.dst) && (b.heads == 0 || b.src != b.dst);
  const uintptr_t vector_bytes = lanes * sizeof(float);

  ParallelFor(
      shape.batch * tiles_per_row, 1, [&](int64_t begin, int64_t end) HWY_ATTR {
        const float* tile_rows[kMaxTile];
        HWY_ALIGN float
            stream_row[kLayout == RopeLayout::kInterleaved ? kMaxStreamRow : 1];
        for (int64_t item = begin; item < end; ++item) {
          const int64_t batch = item / tiles_per_row;
          const int64_t t0 = (item % tiles_per_row) * tile;
          const int64_t t1 = std::min(shape.seq, t0 + tile);
          for (int64_t t = t0; t < t1; ++t) {
            tile_rows[t - t0] =
                rows.row(RopePositionOf(positions, batch, t, shape.seq));
          }
          for (const RopeOperand* op : operands) {
            for (int64_t h = 0; h < op->heads; ++h) {
              const float* src = op->src + batch * op->src_strides.batch +
                                 h * op->src_strides.head;
              float* dst = op->dst + batch * op->dst_strides.batch +
                           h * op->dst_strides.head;
              for (int64_t t = t0; t < t1; ++t) {
                const float* x = src + t * op->src_strides.seq;
                float* y = dst + t * op->dst_strides.seq;
                const bool aligned =
                    reinterpret_cast<uintptr_t>(y) % vector_bytes == 0;
                if (stream && aligned && kLayout == RopeLayout::kSplitHalf) {
                  RotateSplitHalfStream<kInverse>(tile_rows[t - t0], half, x,
                                                  y);
                } else if (stream && aligned) {
                  RotateInterleavedStream<kInverse>(tile_rows[t - t0], half, x,
                                                    stream_row, y);
                } else if (kLayout == RopeLayout::kSplitHalf) {
                  RotateSplitHalf<kInverse, kAccumulate>(tile_rows[t - t0],
                                                         half, x, y);
                } else {
                  RotateInterleaved<kInverse, kAccumulate>(tile_rows[t - t0],
                                                           half, x, y);
                }
                PassThrough<kAccumulate>(x + 2 * half, y + 2 * half, pass);
              }
            }
          }
        }
        if (stream) hwy::FlushStream();
      });
}

// The exported per-target entry point: picks the instantiation once.
// Forward: inverse = accumulate = false; backward: inverse = true.
void RopeApply(const RopeRows& rows, const RopeShape& shape,
               const RopePositions& positions, const RopeOperand& a,
               const RopeOperand& b, bool inverse, bool accumulate) {
  constexpr RopeLayout kSplit = RopeLayout::kSplitHalf;
  constexpr RopeLayout kInter = RopeLayout::kInterleaved;
  const bool split = shape.layout == kSplit;
  if (!inverse) {
    split ? ApplyAll<kSplit, false, false>(rows, shape, positions, a, b)
          : ApplyAll<kInter, false, false>(rows, shape, positions, a, b);
  } else if (!accumulate) {
    split ? ApplyAll<kSplit, true, false>(rows, shape, positions, a, b)
          : ApplyAll<kInter, true, false>(rows, shape, positions, a, b);
  } else {
    split ? ApplyAll<kSplit, true, true>(rows, shape, positions, a, b)
          : ApplyAll<kInter, true, true>(rows, shape, positions, a, b);
  }
}

const char* RopeTarget() { return hwy::TargetName(HWY_TARGET); }

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace kernels
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/error.h"

namespace rotor {
namespace kernels {

HWY_EXPORT(RopeApply);
HWY_EXPORT(RopeTarget);

namespace {

void CheckOperand(const RopeShape& shape, const RopeOperand& op,
                  const char* name) {
  ROTOR_CHECK(op.heads >= 0, "RoPE: ", name, " has ", op.heads, " heads");
  if (op.heads == 0 || shape.batch == 0 || shape.seq == 0) return;
  ROTOR_CHECK(op.src != nullptr && op.dst != nullptr, "RoPE: ", name, " has ",
              op.heads, " heads but a null pointer");
}

// Everything the kernel relies on, checked once per call.
void CheckCall(const RopeRows& rows, const RopeShape& shape,
               const RopePositions& positions, const RopeOperand& a,
               const RopeOperand& b, const char* a_name, const char* b_name) {
  ROTOR_CHECK(shape.batch >= 0 && shape.seq >= 0, "RoPE: negative batch ",
              shape.batch, " or seq ", shape.seq);
  ROTOR_CHECK(shape.rotary_dim > 0 && shape.rotary_dim % 2 == 0,
              "RoPE: rotary dim must be even and positive (channels rotate "
              "in pairs), got ",
              shape.rotary_dim);
  ROTOR_CHECK(shape.rotary_dim <= shape.head_dim, "RoPE: rotary dim ",
              shape.rotary_dim, " exceeds head_dim ", shape.head_dim);
  ROTOR_CHECK(rows.rotary_dim() == shape.rotary_dim,
              "RoPE: the table was built for rotary dim ", rows.rotary_dim(),
              " but the call rotates ", shape.rotary_dim,
              " channels of head_dim ", shape.head_dim);
  CheckOperand(shape, a, a_name);
  CheckOperand(shape, b, b_name);
  const int64_t end = RopePositionsEnd(shape, positions);
  ROTOR_CHECK(shape.batch == 0 || shape.seq == 0 || end <= rows.num_positions(),
              "RoPE: position ", end - 1, " is past the end of the table (",
              rows.num_positions(),
              " positions); get rows from RopeTable::Rows(", end, ")");
}

}  // namespace

void RopeForward(const RopeRows& rows, const RopeShape& shape,
                 const RopePositions& positions, const RopeOperand& q,
                 const RopeOperand& k) {
  CheckCall(rows, shape, positions, q, k, "q", "k");
  HWY_DYNAMIC_DISPATCH(RopeApply)
  (rows, shape, positions, q, k, /*inverse=*/false,
   /*accumulate=*/false);
}

void RopeBackward(const RopeRows& rows, const RopeShape& shape,
                  const RopePositions& positions, const RopeOperand& dq,
                  const RopeOperand& dk, bool accumulate) {
  CheckCall(rows, shape, positions, dq, dk, "dq", "dk");
  HWY_DYNAMIC_DISPATCH(RopeApply)
  (rows, shape, positions, dq, dk, /*inverse=*/true, accumulate);
}

const char* RopeTarget() { return HWY_DYNAMIC_DISPATCH(RopeTarget)(); }

}  // namespace kernels
}  // namespace rotor
#endif  // HWY_ONCE

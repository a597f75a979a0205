// Internal helpers for the ops in core/ops/: walking N strided operands of
// one logical shape together (the general, non-contiguous and broadcasting
// path of elementwise ops), and dimension bookkeeping shared by several ops.
//
// A strided operand reads element (i0, ..., ik) at base[i0*s0 + ... + ik*sk].
// Broadcasting is a stride of 0: every index along that dimension reads the
// same element. Nothing here allocates per element.
#ifndef ROTOR_CORE_OPS_STRIDED_H_
#define ROTOR_CORE_OPS_STRIDED_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/ops/ops.h"
#include "core/parallel.h"
#include "core/profile.h"
#include "core/tensor.h"

namespace rotor {
namespace internal {

// Elementwise work is split into ranges of at least this many elements, so
// a second thread only helps on tensors large enough to amortise a task.
constexpr int64_t kElementwiseGrain = 16384;

// Strides that read a tensor of shape `shape` / `strides` as the (broadcast)
// shape `out_shape`: dimensions are aligned from the right; a missing or
// size-1 dimension gets stride 0.
inline Shape BroadcastStrides(const Shape& shape, const Shape& strides,
                              const Shape& out_shape) {
  Shape result(out_shape.size(), 0);
  const size_t shift = out_shape.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    result[d + shift] = shape[d] == 1 ? 0 : strides[d];
  }
  return result;
}

// N operands that share one logical shape, with the shape simplified: size-1
// dimensions are dropped and neighbouring dimensions that every operand
// walks as one (stride[d] == stride[d+1] * shape[d+1]) are merged. A
// contiguous tensor becomes one long dimension, so the inner loop is long.
template <size_t N>
struct StridedLayout {
  Shape shape;
  std::array<Shape, N> strides;

  StridedLayout(const Shape& full_shape,
                const std::array<Shape, N>& full_strides) {
    for (size_t d = 0; d < full_shape.size(); ++d) {
      if (full_shape[d] == 1) continue;
      bool merge = !shape.empty();
      for (size_t k = 0; k < N && merge; ++k) {
        merge = strides[k].back() == full_strides[k][d] * full_shape[d];
      }
      if (merge) {
        shape.back() *= full_shape[d];
        for (size_t k = 0; k < N; ++k) strides[k].back() = full_strides[k][d];
      } else {
        shape.push_back(full_shape[d]);
        for (size_t k = 0; k < N; ++k) {
          strides[k].push_back(full_strides[k][d]);
        }
      }
    }
    if (shape.empty()) {  // a single element
      shape.push_back(1);
      for (size_t k = 0; k < N; ++k) strides[k].push_back(0);
    }
  }
};

// Calls run(offsets, inner_strides, count) over pieces of the innermost
// dimension that together cover every element of `layout` once: operand k's
// elements are base_k[offsets[k] + i * inner_strides[k]] for i < count.
// Pieces run in parallel (ranges of kElementwiseGrain elements), so `run`
// must only write elements of its own piece.
template <size_t N, class Run>
void ForEachStridedPiece(const StridedLayout<N>& layout, const Run& run) {
  const Shape& shape = layout.shape;
  const int64_t rank = shape.size();
  const int64_t total = NumElements(shape);
  const int64_t inner = shape.back();
  std::array<int64_t, N> inner_strides;
  for (size_t k = 0; k < N; ++k) inner_strides[k] = layout.strides[k].back();
  ParallelFor(total, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    // Multi-index and operand offsets of element `begin`.
    std::vector<int64_t> index(rank);
    std::array<int64_t, N> offsets{};
    int64_t rest = begin;
    for (int64_t d = rank - 1; d >= 0; --d) {
      index[d] = rest % shape[d];
      rest /= shape[d];
      for (size_t k = 0; k < N; ++k) {
        offsets[k] += index[d] * layout.strides[k][d];
      }
    }
    int64_t position = begin;
    while (position < end) {
      const int64_t count = std::min(end - position, inner - index[rank - 1]);
      run(offsets, inner_strides, count);
      position += count;
      // Advance the multi-index by `count` (to the next row, or to `end`).
      index[rank - 1] += count;
      for (size_t k = 0; k < N; ++k) offsets[k] += count * inner_strides[k];
      for (int64_t d = rank - 1; d > 0 && index[d] == shape[d]; --d) {
        for (size_t k = 0; k < N; ++k) {
          offsets[k] +=
              layout.strides[k][d - 1] - shape[d] * layout.strides[k][d];
        }
        index[d] = 0;
        ++index[d - 1];
      }
    }
  });
}

// dst = src elementwise (same shape, any strides; dst may be a view).
inline void StridedCopy(Tensor dst, const Tensor& src) {
  ROTOR_CHECK(dst.shape() == src.shape(), "copy: source shape ",
              ShapeToString(src.shape()), " does not match destination shape ",
              ShapeToString(dst.shape()));
  const StridedLayout<2> layout(dst.shape(), {dst.strides(), src.strides()});
  float* pd = dst.data();
  const float* ps = src.data();
  ForEachStridedPiece(
      layout, [&](const std::array<int64_t, 2>& offset,
                  const std::array<int64_t, 2>& stride, int64_t count) {
        if (stride[0] == 1 && stride[1] == 1) {  // e.g. head rows of a permute
          std::memmove(pd + offset[0], ps + offset[1], count * sizeof(float));
          return;
        }
        for (int64_t i = 0; i < count; ++i) {
          pd[offset[0] + i * stride[0]] = ps[offset[1] + i * stride[1]];
        }
      });
}

// out = f(x) elementwise, into a fresh contiguous tensor.
template <class F>
Tensor MapUnary(const Tensor& x, const F& f) {
  profile::Scope scope(profile::Phase::kKernels);
  Tensor out = Tensor::Empty(x.shape());
  const StridedLayout<2> layout(x.shape(), {out.strides(), x.strides()});
  float* po = out.data();
  const float* px = x.data();
  ForEachStridedPiece(
      layout, [&](const std::array<int64_t, 2>& offset,
                  const std::array<int64_t, 2>& stride, int64_t count) {
        float* o = po + offset[0];
        const float* in = px + offset[1];
        if (stride[0] == 1 && stride[1] == 1) {  // the common, dense case
          for (int64_t i = 0; i < count; ++i) o[i] = f(in[i]);
        } else {
          for (int64_t i = 0; i < count; ++i) {
            o[i * stride[0]] = f(in[i * stride[1]]);
          }
        }
      });
  return out;
}

// out = f(a, b) elementwise with broadcasting, into a fresh contiguous tensor.
template <class F>
Tensor BroadcastBinary(const Tensor& a, const Tensor& b, const char* op,
                       const F& f) {
  const Shape out_shape = BroadcastShapes(a.shape(), b.shape(), op);
  Tensor out = Tensor::Empty(out_shape);
  const StridedLayout<3> layout(
      out_shape,
      {out.strides(), BroadcastStrides(a.shape(), a.strides(), out_shape),
       BroadcastStrides(b.shape(), b.strides(), out_shape)});
  float* po = out.data();
  const float* pa = a.data();
  const float* pb = b.data();
  ForEachStridedPiece(
      layout, [&](const std::array<int64_t, 3>& offset,
                  const std::array<int64_t, 3>& stride, int64_t count) {
        float* o = po + offset[0];
        const float* x = pa + offset[1];
        const float* y = pb + offset[2];
        // The usual cases get loops with constant strides, which the
        // compiler can vectorise: both dense, or one operand fixed along
        // the row (a bias or a per-row scale).
        if (stride[0] == 1 && stride[1] == 1 && stride[2] == 1) {
          for (int64_t i = 0; i < count; ++i) o[i] = f(x[i], y[i]);
        } else if (stride[0] == 1 && stride[1] == 1 && stride[2] == 0) {
          const float y0 = *y;
          for (int64_t i = 0; i < count; ++i) o[i] = f(x[i], y0);
        } else if (stride[0] == 1 && stride[1] == 0 && stride[2] == 1) {
          const float x0 = *x;
          for (int64_t i = 0; i < count; ++i) o[i] = f(x0, y[i]);
        } else {
          for (int64_t i = 0; i < count; ++i) {
            o[i * stride[0]] = f(x[i * stride[1]], y[i * stride[2]]);
          }
        }
      });
  return out;
}

// A fresh contiguous tensor with the values of `x` (any strides, including
// the stride-0 dimensions of a broadcast view). No autograd.
inline Tensor ContiguousCopy(const Tensor& x) {
  profile::Scope scope(profile::Phase::kCopies);
  Tensor out = Tensor::Empty(x.shape());
  StridedCopy(out, x);
  return out;
}

// `x` read as the larger shape `shape` it broadcasts to (a stride-0 view).
inline Tensor BroadcastView(const Tensor& x, const Shape& shape) {
  return x.ViewAs(shape, BroadcastStrides(x.shape(), x.strides(), shape), 0);
}

// Normalises a list of dimensions of a rank-`rank` tensor (negative counts
// from the end), rejecting out-of-range and repeated entries.
inline std::vector<bool> DimMask(const std::vector<int64_t>& dims, int64_t rank,
                                 const char* op, const Shape& shape) {
  std::vector<bool> mask(rank, false);
  for (int64_t d : dims) {
    const int64_t wrapped = d < 0 ? d + rank : d;
    ROTOR_CHECK(wrapped >= 0 && wrapped < rank, op, ": dimension ", d,
                " is out of range for a tensor of shape ",
                ShapeToString(shape));
    ROTOR_CHECK(!mask[wrapped], op, ": dimension ", d,
                " is listed twice for a tensor of shape ",
                ShapeToString(shape));
    mask[wrapped] = true;
  }
  return mask;
}

}  // namespace internal
}  // namespace rotor

#endif  // ROTOR_CORE_OPS_STRIDED_H_

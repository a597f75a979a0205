// Reductions: Sum and Mean over a set of dimensions, Max over one dimension.
//
// Determinism: how the inputs of an output are grouped and in which order
// they are added is fixed by the shapes alone (see SumForward), never by the
// thread count or scheduling, so results are bitwise reproducible.
#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/vector_ops.h"
#include "core/ops/ops.h"
#include "core/ops/strided.h"
#include "core/profile.h"

namespace rotor {

namespace {

// Shape of a reduction's result: reduced dimensions become 1 (keepdim) or
// disappear.
Shape ReducedShape(const Shape& shape, const std::vector<bool>& reduced,
                   bool keepdim) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) {
      out.push_back(shape[d]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

// The gradient g of a reduction (shape with or without the kept 1s) spread
// back over the input's shape: every input element of a slice receives its
// slice's gradient.
Tensor ExpandReducedGrad(const Tensor& g, const Shape& keepdim_shape,
                         const Shape& input_shape) {
  const Tensor g_contiguous =
      g.is_contiguous() ? g : internal::ContiguousCopy(g);
  const Tensor g_keepdim =
      g_contiguous.ViewAs(keepdim_shape, ContiguousStrides(keepdim_shape), 0);
  return internal::ContiguousCopy(
      internal::BroadcastView(g_keepdim, input_shape));
}

// Calls visit_row(offset, extent, stride) for every row of `layout` (its
// innermost dimension) in row-major order: the row's elements sit at
// offset + i * stride for i < extent. `index` is scratch space of the
// layout's rank; the layout must not be empty.
template <class VisitRow>
void WalkRows(const internal::StridedLayout<1>& layout,
              std::vector<int64_t>& index, const VisitRow& visit_row) {
  const Shape& shape = layout.shape;
  const Shape& strides = layout.strides[0];
  const int64_t last = shape.size() - 1;
  const int64_t rows = NumElements(shape) / shape[last];
  std::fill(index.begin(), index.end(), 0);
  int64_t offset = 0;
  for (int64_t row = 0; row < rows; ++row) {
    visit_row(offset, shape[last], strides[last]);
    for (int64_t d = last - 1; d >= 0; --d) {  // carry like an odometer
      offset += strides[d];
      if (++index[d] < shape[d]) break;
      offset -= shape[d] * strides[d];
      index[d] = 0;
    }
  }
}

// sum_i x[i * stride] for i < n, in double with four interleaved partial
// sums (independent additions keep the adder busy), combined in a fixed
// order.
double SumRow(const float* x, int64_t n, int64_t stride) {
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += x[i * stride];
    s1 += x[(i + 1) * stride];
    s2 += x[(i + 2) * stride];
    s3 += x[(i + 3) * stride];
  }
  for (; i < n; ++i) s0 += x[i * stride];
  return (s0 + s1) + (s2 + s3);
}

// Offset of element `e` (in row-major order) of a strided layout.
int64_t OffsetOf(const internal::StridedLayout<1>& layout, int64_t e) {
  int64_t offset = 0;
  for (int64_t d = static_cast<int64_t>(layout.shape.size()) - 1; d >= 0; --d) {
    offset += e % layout.shape[d] * layout.strides[0][d];
    e /= layout.shape[d];
  }
  return offset;
}

// Summing over leading dimensions adds whole input rows together; they are
// taken in fixed chunks of this many rows, each summed in float
// (vectorised) into a partial row, and the partial rows of one output row
// are then added in chunk order, in double. Chunks do not depend on the
// thread count, so neither does the result.
constexpr int64_t kRowChunk = 64;

// out[o] = sum of x over the reduced dimensions, for every kept multi-index
// o; out is contiguous with shape keepdim_shape. Two loop orders, chosen so
// that memory is read in order:
// - "columns": the innermost kept dimension is also the innermost in memory
//   (e.g. x [rows, dim] summed over rows, a bias gradient). Rows of x are
//   added in chunks of kRowChunk (parallel over chunks), then the chunks'
//   partial rows are combined.
// - "slices": otherwise (e.g. summing over the last dimension). Each output
//   is one task that walks its slice of x with double partial sums.
Tensor SumForward(const Tensor& x, const std::vector<bool>& reduced,
                  const Shape& keepdim_shape) {
  profile::Scope scope(profile::Phase::kKernels);
  Shape kept_shape, kept_strides, reduced_shape, reduced_strides;
  for (size_t d = 0; d < reduced.size(); ++d) {
    (reduced[d] ? reduced_shape : kept_shape).push_back(x.shape()[d]);
    (reduced[d] ? reduced_strides : kept_strides).push_back(x.strides()[d]);
  }
  Tensor out = Tensor::Empty(keepdim_shape);
  if (out.numel() == 0) return out;
  // Kept dimensions, walked in x and in out together; summed dimensions.
  const internal::StridedLayout<2> kept(
      kept_shape, {kept_strides, ContiguousStrides(kept_shape)});
  const internal::StridedLayout<1> summed(reduced_shape, {reduced_strides});
  const int64_t summed_count = NumElements(reduced_shape);
  const float* px = x.data();
  float* po = out.data();

  // x and out offsets of kept row `row` (all kept dimensions but the last).
  const int64_t rank = kept.shape.size();
  const int64_t columns = kept.shape[rank - 1];
  const int64_t x_column_stride = kept.strides[0][rank - 1];
  const int64_t out_column_stride = kept.strides[1][rank - 1];
  auto row_offsets = [&](int64_t row, int64_t& x_base, int64_t& out_base) {
    x_base = out_base = 0;
    for (int64_t d = rank - 2; d >= 0; --d) {
      x_base += row % kept.shape[d] * kept.strides[0][d];
      out_base += row % kept.shape[d] * kept.strides[1][d];
      row /= kept.shape[d];
    }
  };
  const int64_t rows = NumElements(kept.shape) / columns;

  int64_t smallest_summed_stride = INT64_MAX;
  for (int64_t stride : summed.strides[0]) {
    if (stride != 0) {
      smallest_summed_stride =
          std::min(smallest_summed_stride, std::abs(stride));
    }
  }
  const bool by_columns =
      columns > 1 && std::abs(x_column_stride) < smallest_summed_stride;

  if (!by_columns) {
    const int64_t grain = std::max<int64_t>(
        1, internal::kElementwiseGrain / std::max<int64_t>(summed_count, 1));
    ParallelFor(rows * columns, grain, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> index(summed.shape.size());
      for (int64_t o = begin; o < end; ++o) {
        int64_t x_base, out_base;
        row_offsets(o / columns, x_base, out_base);
        x_base += o % columns * x_column_stride;
        out_base += o % columns * out_column_stride;
        double sum = 0.0;
        if (summed_count > 0) {
          WalkRows(summed, index,
                   [&](int64_t offset, int64_t extent, int64_t stride) {
                     sum += SumRow(px + x_base + offset, extent, stride);
                   });
        }
        po[out_base] = static_cast<float>(sum);
      }
    });
    return out;
  }

  // "columns": partial[row][chunk] = sum of that chunk's input rows.
  const int64_t chunks = (summed_count + kRowChunk - 1) / kRowChunk;
  std::vector<float> partial(rows * chunks * columns, 0.0f);
  ParallelFor(
      rows * chunks,
      std::max<int64_t>(1, internal::kElementwiseGrain / (kRowChunk * columns)),
      [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          int64_t x_base, out_base;
          row_offsets(task / chunks, x_base, out_base);
          float* sums = partial.data() + task * columns;
          const int64_t first = task % chunks * kRowChunk;
          const int64_t last = std::min(summed_count, first + kRowChunk);
          for (int64_t e = first; e < last; ++e) {
            const float* in = px + x_base + OffsetOf(summed, e);
            if (x_column_stride == 1) {
              kernels::Axpy(1.0f, in, sums, columns);
            } else {
              for (int64_t j = 0; j < columns; ++j) {
                sums[j] += in[j * x_column_stride];
              }
            }
          }
        }
      });
  // Combine each row's chunks in chunk order, over column blocks.
  constexpr int64_t kBlock = 1024;
  const int64_t blocks = (columns + kBlock - 1) / kBlock;
  ParallelFor(rows * blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<double> total(kBlock);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t row = task / blocks;
      const int64_t first = task % blocks * kBlock;
      const int64_t width = std::min(kBlock, columns - first);
      std::fill(total.begin(), total.end(), 0.0);
      for (int64_t c = 0; c < chunks; ++c) {
        const float* sums =
            partial.data() + (row * chunks + c) * columns + first;
        for (int64_t j = 0; j < width; ++j) total[j] += sums[j];
      }
      int64_t x_base, out_base;
      row_offsets(row, x_base, out_base);
      for (int64_t j = 0; j < width; ++j) {
        po[out_base + (first + j) * out_column_stride] =
            static_cast<float>(total[j]);
      }
    }
  });
  return out;
}

}  // namespace

// y[o] = sum_{reduced i} x[o, i].   dL/dx[o, i] = g[o].
Tensor Sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  std::vector<bool> reduced =
      internal::DimMask(dims, x.dim(), "Sum", x.shape());
  if (dims.empty()) reduced.assign(x.dim(), true);
  const Shape keepdim_shape = ReducedShape(x.shape(), reduced, true);
  Tensor out = SumForward(x, reduced, keepdim_shape);
  if (!keepdim) {
    out = out.ViewAs(ReducedShape(x.shape(), reduced, false),
                     ContiguousStrides(ReducedShape(x.shape(), reduced, false)),
                     0);
  }
  const Shape input_shape = x.shape();
  return RecordOp(out, "Sum", {x},
                  [keepdim_shape, input_shape](const Tensor& g) {
                    return std::vector<Tensor>{
                        ExpandReducedGrad(g, keepdim_shape, input_shape)};
                  });
}

// y = Sum(x, dims) / count, count = number of elements summed per output.
Tensor Mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  int64_t count = 1;
  if (dims.empty()) {
    count = x.numel();
  } else {
    const std::vector<bool> reduced =
        internal::DimMask(dims, x.dim(), "Mean", x.shape());
    for (size_t d = 0; d < reduced.size(); ++d) {
      if (reduced[d]) count *= x.shape()[d];
    }
  }
  return Mul(Sum(x, dims, keepdim), 1.0f / static_cast<float>(count));
}

// Viewing a contiguous x as [outer, n, inner] with n = x.size(dim):
//   y[o, i] = max_j x[o, j, i],   argmax[o, i] = the first such j.
//   dL/dx[o, j, i] = g[o, i] if j == argmax[o, i], else 0.
Tensor Max(const Tensor& x, int64_t dim, bool keepdim) {
  profile::Scope scope(profile::Phase::kKernels);
  const int64_t d = x.WrapDim(dim, "Max");
  const Shape& shape = x.shape();
  const int64_t n = shape[d];
  ROTOR_CHECK(n > 0, "Max: dimension ", dim, " of shape ", ShapeToString(shape),
              " is empty");
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= shape[k];
  for (int64_t k = d + 1; k < x.dim(); ++k) inner *= shape[k];

  const Tensor xc = x.is_contiguous() ? x : internal::ContiguousCopy(x);
  std::vector<bool> reduced(x.dim(), false);
  reduced[d] = true;
  const Shape out_shape = ReducedShape(shape, reduced, keepdim);
  Tensor out = Tensor::Empty(out_shape);
  auto argmax = std::make_shared<std::vector<int64_t>>(outer * inner);
  const float* px = xc.data();
  float* po = out.data();
  ParallelFor(outer,
              std::max<int64_t>(1, internal::kElementwiseGrain / (n * inner)),
              [&](int64_t begin, int64_t end) {
                for (int64_t o = begin; o < end; ++o) {
                  for (int64_t i = 0; i < inner; ++i) {
                    const float* slice = px + o * n * inner + i;
                    int64_t best = 0;
                    for (int64_t j = 1; j < n; ++j) {
                      if (slice[j * inner] > slice[best * inner]) best = j;
                    }
                    po[o * inner + i] = slice[best * inner];
                    (*argmax)[o * inner + i] = best;
                  }
                }
              });
  return RecordOp(
      out, "Max", {x}, [argmax, shape, outer, n, inner](const Tensor& g) {
        const Tensor gc = g.is_contiguous() ? g : internal::ContiguousCopy(g);
        Tensor dx = Tensor::Zeros(shape);
        float* pd = dx.data();
        const float* pg = gc.data();
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t i = 0; i < inner; ++i) {
            pd[(o * n + (*argmax)[o * inner + i]) * inner + i] =
                pg[o * inner + i];
          }
        }
        return std::vector<Tensor>{dx};
      });
}

}  // namespace rotor

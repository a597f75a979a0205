// Reductions: Sum and Mean over a set of dimensions, Max over one dimension.
//
// Determinism: each output element is computed by one thread, which adds its
// inputs in a fixed order (in double, then rounds once), so results do not
// depend on the thread count.
#include <algorithm>
#include <limits>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/ops/strided.h"

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

// out[o] = sum of x over the reduced dimensions, for every kept multi-index o.
Tensor SumForward(const Tensor& x, const std::vector<bool>& reduced,
                  const Shape& keepdim_shape) {
  Shape kept_shape, kept_strides, reduced_shape, reduced_strides;
  for (size_t d = 0; d < reduced.size(); ++d) {
    (reduced[d] ? reduced_shape : kept_shape).push_back(x.shape()[d]);
    (reduced[d] ? reduced_strides : kept_strides).push_back(x.strides()[d]);
  }
  Tensor out = Tensor::Zeros(keepdim_shape);
  const int64_t outputs = NumElements(kept_shape);
  const internal::StridedLayout<1> inner(reduced_shape, {reduced_strides});
  const int64_t inner_count = NumElements(reduced_shape);
  const int64_t inner_rank = inner.shape.size();
  const float* px = x.data();
  float* po = out.data();
  const int64_t grain = std::max<int64_t>(
      1, internal::kElementwiseGrain / std::max<int64_t>(inner_count, 1));
  ParallelFor(outputs, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> index(inner_rank);
    for (int64_t o = begin; o < end; ++o) {
      // Offset of the slice's first element.
      int64_t base = 0;
      for (int64_t d = static_cast<int64_t>(kept_shape.size()) - 1, rest = o;
           d >= 0; --d) {
        base += (rest % kept_shape[d]) * kept_strides[d];
        rest /= kept_shape[d];
      }
      // Walk the slice as nested loops over the (merged) reduced dimensions.
      double sum = 0.0;
      std::fill(index.begin(), index.end(), 0);
      int64_t offset = base;
      const int64_t last = inner_rank - 1;
      const int64_t inner_extent = inner.shape[last];
      const int64_t inner_stride = inner.strides[0][last];
      for (int64_t done = 0; done < inner_count; done += inner_extent) {
        for (int64_t i = 0; i < inner_extent; ++i) {
          sum += px[offset + i * inner_stride];
        }
        for (int64_t d = last - 1; d >= 0; --d) {
          offset += inner.strides[0][d];
          if (++index[d] < inner.shape[d]) break;
          offset -= inner.shape[d] * inner.strides[0][d];
          index[d] = 0;
        }
      }
      po[o] = static_cast<float>(sum);
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
  Tensor out = Tensor::Zeros(out_shape);
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

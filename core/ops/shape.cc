// Shape ops. Reshape (of a contiguous tensor), Permute, Transpose, Narrow,
// Unsqueeze and Squeeze are views: the output shares the input's storage and
// only shape, strides and offset change, so writing through a view changes
// the input. Concat and Contiguous copy.
//
// Backward of a view maps the gradient back to the input's layout: the
// inverse reshape/permutation, or (Narrow) zeros with the slice filled in.
#include <algorithm>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/ops.h"
#include "core/ops/strided.h"

namespace rotor {

namespace {

// A contiguous tensor viewed with a new shape of the same size.
Tensor ViewContiguous(const Tensor& x, const Shape& shape) {
  return x.ViewAs(shape, ContiguousStrides(shape), 0);
}

}  // namespace

// A tensor with new extents, same row-major element order.
// dL/dx = Reshape(g, x.shape).
Tensor Reshape(const Tensor& x, const Shape& shape) {
  Shape resolved = shape;
  int64_t inferred = -1;
  int64_t known = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      ROTOR_CHECK(inferred < 0, "Reshape: more than one -1 in ",
                  ShapeToString(shape));
      inferred = d;
    } else {
      ROTOR_CHECK(shape[d] >= 0, "Reshape: negative extent in ",
                  ShapeToString(shape));
      known *= shape[d];
    }
  }
  if (inferred >= 0) {
    ROTOR_CHECK(known != 0 && x.numel() % known == 0, "Reshape: cannot view ",
                ShapeToString(x.shape()), " as ", ShapeToString(shape));
    resolved[inferred] = x.numel() / known;
  }
  ROTOR_CHECK(NumElements(resolved) == x.numel(), "Reshape: cannot view ",
              ShapeToString(x.shape()), " (", x.numel(), " elements) as ",
              ShapeToString(shape), " (", NumElements(resolved), " elements)");
  if (resolved == x.shape()) return x;
  // A non-contiguous input is first copied (differentiably).
  const Tensor source = x.is_contiguous() ? x : Contiguous(x);
  const Shape input_shape = x.shape();
  return RecordOp(ViewContiguous(source, resolved), "Reshape", {source},
                  [input_shape](const Tensor& g) {
                    return std::vector<Tensor>{Reshape(g, input_shape)};
                  });
}

// out.shape[i] = x.shape[dims[i]], out.strides[i] = x.strides[dims[i]].
// dL/dx = Permute(g, inverse of dims), made contiguous.
Tensor Permute(const Tensor& x, const std::vector<int64_t>& dims) {
  ROTOR_CHECK(
      static_cast<int64_t>(dims.size()) == x.dim(), "Permute: ", dims.size(),
      " dimensions given for a tensor of shape ", ShapeToString(x.shape()));
  std::vector<int64_t> inverse(dims.size());
  Shape shape(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = x.WrapDim(dims[i], "Permute");
    ROTOR_CHECK(!seen[d], "Permute: dimension ", dims[i],
                " appears twice for a tensor of shape ",
                ShapeToString(x.shape()));
    seen[d] = true;
    shape[i] = x.shape()[d];
    strides[i] = x.strides()[d];
    inverse[d] = i;
  }
  return RecordOp(x.ViewAs(shape, strides, 0), "Permute", {x},
                  [inverse](const Tensor& g) {
                    // Contiguous, so the engine's accumulation stays cheap.
                    return std::vector<Tensor>{
                        internal::ContiguousCopy(Permute(g, inverse))};
                  });
}

// Swaps two dimensions (a Permute). dL/dx = Transpose(g, dim0, dim1).
Tensor Transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  std::vector<int64_t> dims(x.dim());
  for (int64_t d = 0; d < x.dim(); ++d) dims[d] = d;
  std::swap(dims[x.WrapDim(dim0, "Transpose")],
            dims[x.WrapDim(dim1, "Transpose")]);
  return Permute(x, dims);
}

// Elements [start, start + length) of `dim`: the same strides, the offset
// moved by start * stride. dL/dx = zeros with g in the slice.
Tensor Narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  const int64_t d = x.WrapDim(dim, "Narrow");
  ROTOR_CHECK(start >= 0 && length >= 0 && start + length <= x.shape()[d],
              "Narrow: range [", start, ", ", start + length,
              ") is out of bounds for dimension ", dim, " of shape ",
              ShapeToString(x.shape()));
  Shape shape = x.shape();
  shape[d] = length;
  const Shape input_shape = x.shape();
  return RecordOp(
      x.ViewAs(shape, x.strides(), start * x.strides()[d]), "Narrow", {x},
      [input_shape, d, start, length](const Tensor& g) {
        Tensor dx = Tensor::Zeros(input_shape);
        Shape slice_shape = input_shape;
        slice_shape[d] = length;
        internal::StridedCopy(
            dx.ViewAs(slice_shape, dx.strides(), start * dx.strides()[d]), g);
        return std::vector<Tensor>{dx};
      });
}

// Inserts an extent-1 dimension at `dim` (in [-rank-1, rank]).
Tensor Unsqueeze(const Tensor& x, int64_t dim) {
  const int64_t rank = x.dim();
  const int64_t d = dim < 0 ? dim + rank + 1 : dim;
  ROTOR_CHECK(d >= 0 && d <= rank, "Unsqueeze: dimension ", dim,
              " is out of range for a tensor of shape ",
              ShapeToString(x.shape()));
  Shape shape = x.shape(), strides = x.strides();
  // Any stride works for an extent-1 dimension; this one keeps a contiguous
  // tensor contiguous.
  const int64_t stride = d < rank ? x.strides()[d] * x.shape()[d] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  const Shape input_shape = x.shape();
  return RecordOp(x.ViewAs(shape, strides, 0), "Unsqueeze", {x},
                  [input_shape](const Tensor& g) {
                    return std::vector<Tensor>{Reshape(g, input_shape)};
                  });
}

// Removes `dim`, which must have extent 1.
Tensor Squeeze(const Tensor& x, int64_t dim) {
  const int64_t d = x.WrapDim(dim, "Squeeze");
  ROTOR_CHECK(x.shape()[d] == 1, "Squeeze: dimension ", dim, " of shape ",
              ShapeToString(x.shape()), " has extent ", x.shape()[d],
              ", not 1");
  Shape shape = x.shape(), strides = x.strides();
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  const Shape input_shape = x.shape();
  return RecordOp(x.ViewAs(shape, strides, 0), "Squeeze", {x},
                  [input_shape](const Tensor& g) {
                    return std::vector<Tensor>{Reshape(g, input_shape)};
                  });
}

// out = [x_0 | x_1 | ...] along `dim`. dL/dx_i = the slice of g where x_i
// went.
Tensor Concat(const std::vector<Tensor>& xs, int64_t dim) {
  ROTOR_CHECK(!xs.empty(), "Concat: no tensors given");
  const int64_t d = xs[0].WrapDim(dim, "Concat");
  Shape shape = xs[0].shape();
  shape[d] = 0;
  std::vector<int64_t> starts;
  for (const Tensor& x : xs) {
    Shape expected = xs[0].shape();
    expected[d] = x.dim() == xs[0].dim() ? x.shape()[d] : -1;
    ROTOR_CHECK(x.shape() == expected, "Concat: shapes ",
                ShapeToString(xs[0].shape()), " and ", ShapeToString(x.shape()),
                " differ outside dimension ", dim);
    starts.push_back(shape[d]);
    shape[d] += x.shape()[d];
  }
  Tensor out = Tensor::Empty(shape);
  for (size_t i = 0; i < xs.size(); ++i) {
    Shape slice_shape = shape;
    slice_shape[d] = xs[i].shape()[d];
    internal::StridedCopy(
        out.ViewAs(slice_shape, out.strides(), starts[i] * out.strides()[d]),
        xs[i]);
  }
  std::vector<int64_t> lengths;
  for (const Tensor& x : xs) lengths.push_back(x.shape()[d]);
  return RecordOp(out, "Concat", xs, [d, starts, lengths](const Tensor& g) {
    std::vector<Tensor> grads;
    for (size_t i = 0; i < starts.size(); ++i) {
      grads.push_back(
          internal::ContiguousCopy(Narrow(g, d, starts[i], lengths[i])));
    }
    return grads;
  });
}

// x itself when contiguous, else a row-major copy. dL/dx = g.
Tensor Contiguous(const Tensor& x) {
  if (x.is_contiguous()) return x;
  return RecordOp(internal::ContiguousCopy(x), "Contiguous", {x},
                  [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

}  // namespace rotor

// Tensor: an n-dimensional float32 array with shape, strides and shared,
// SIMD-aligned storage, plus the autograd fields (requires_grad, grad, the
// node that produced it).
//
// A Tensor is a cheap handle: copying it copies a shared_ptr, so two handles
// see the same data (like torch.Tensor or numpy views). Views (Reshape of a
// contiguous tensor, Permute, Transpose, Narrow) share storage and only change
// shape/strides/offset; Contiguous() copies only when it has to.
//
// Element (i0, i1, ..., ik) lives at data()[i0*stride0 + ... + ik*stridek],
// where data() already includes the view's offset into the storage.
#ifndef ROTOR_CORE_TENSOR_H_
#define ROTOR_CORE_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer_pool.h"

namespace rotor {

using Shape = std::vector<int64_t>;

// "[2, 3, 4]"
std::string ShapeToString(const Shape& shape);
// Product of the extents (1 for a scalar, shape {}).
int64_t NumElements(const Shape& shape);
// Row-major strides for `shape`: the last dimension has stride 1.
Shape ContiguousStrides(const Shape& shape);

// Aligned float buffer shared by a tensor and its views.
//
// Buffers come from a caching pool (core/buffer_pool.h): a freed buffer is
// kept and handed to the next request of exactly the same size, so after a
// training step's first run no memory is requested from the system and no
// fresh pages fault in (a large cost for eager frameworks). The cached bytes
// are capped, by default at 1.5 times the most bytes ever held by live
// tensors at once; past the cap, the buffers freed longest ago return to the
// system first, so sizes a run stopped asking for do not pile up.
class Storage {
 public:
  // zero_fill = false leaves the contents unspecified (for outputs that are
  // overwritten completely).
  explicit Storage(size_t size, bool zero_fill = true);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  float* data_;
  size_t size_;
};

// The pool's figures (core/buffer_pool.h MemoryStats): bytes held by live
// tensors, their peak since the last ResetPeakMemory, the bytes of freed
// buffers cached for reuse and their cap, and counts of reused, fresh and
// evicted buffers.
MemoryStats GetMemoryStats();
void ResetPeakMemory();
// Returns the pool's cached buffers to the system.
void ReleaseCachedMemory();

struct TensorImpl;
class Node;

class Tensor {
 public:
  // An undefined tensor (defined() == false), e.g. a gradient not yet set.
  Tensor() = default;

  // --- Factories (all zero-initialised unless stated) ---
  // Contents unspecified: for outputs an op overwrites completely.
  static Tensor Empty(const Shape& shape, bool requires_grad = false);
  static Tensor Zeros(const Shape& shape, bool requires_grad = false);
  static Tensor Ones(const Shape& shape, bool requires_grad = false);
  static Tensor Full(const Shape& shape, float value,
                     bool requires_grad = false);
  // Copies `values` (row-major); their count must equal the shape's size.
  static Tensor FromVector(const Shape& shape, const std::vector<float>& values,
                           bool requires_grad = false);
  // A 0-dimensional tensor holding `value`.
  static Tensor Scalar(float value, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }

  // --- Shape ---
  const Shape& shape() const;
  const Shape& strides() const;
  int64_t dim() const;
  // Extent of dimension d; negative d counts from the end (-1 = last).
  int64_t size(int64_t d) const;
  int64_t numel() const;
  bool is_contiguous() const;
  // Normalises a possibly negative dimension index; throws if out of range.
  int64_t WrapDim(int64_t d, const char* op) const;

  // --- Data ---
  // Pointer to element (0, ..., 0). Writing through it changes every view.
  float* data();
  const float* data() const;
  // Element at a multi-index (bounds-checked).
  float at(std::initializer_list<int64_t> index) const;
  // The single value of a one-element tensor.
  float item() const;
  // Row-major copy of the elements.
  std::vector<float> ToVector() const;
  // Copies the values of `src` (same shape) into this tensor's elements,
  // writing through views; no autograd.
  void CopyFrom(const Tensor& src);
  // Sets every element to `value`; no autograd.
  void Fill(float value);

  // --- Views that share storage (no autograd: see core/ops/ops.h for the
  // differentiable versions, which are built on these) ---
  Tensor ViewAs(const Shape& shape, const Shape& strides,
                int64_t offset_delta) const;
  // Same data, a fresh handle with no autograd history.
  Tensor Detach() const;
  // A handle with this tensor's shape, strides, requires_grad and grad_fn but
  // no data (data() must not be called on it): what an autograd Node keeps of
  // an input produced by another op, so that the graph itself does not keep
  // activations alive (backward functions hold what they need).
  Tensor GraphEdge() const;

  // --- Autograd ---
  bool requires_grad() const;
  // Marks a leaf tensor as a parameter whose gradient Backward() accumulates.
  Tensor& set_requires_grad(bool value);
  // Accumulated gradient (undefined until a Backward() reaches this leaf).
  const Tensor& grad() const;
  Tensor& mutable_grad();
  // Drops the gradient (grad() becomes undefined, as PyTorch's
  // zero_grad(set_to_none=True)): the next Backward writes it instead of
  // zero-filling and adding. Readers treat an undefined gradient as zero;
  // AdamW skips the parameter.
  void ZeroGrad();
  // The op that produced this tensor (null for leaves and in no-grad mode).
  const std::shared_ptr<Node>& grad_fn() const;
  // Makes this (fresh) tensor the output of `node`: sets grad_fn and
  // requires_grad. Used by RecordOp.
  void AttachGradFn(std::shared_ptr<Node> node);
  // Reverse-mode differentiation from this scalar tensor: accumulates
  // d(this)/d(leaf) into every leaf that requires grad, then frees the graph.
  void Backward() const;
  // Backward from a non-scalar tensor with an explicit seed gradient
  // dL/dthis (same shape), as torch's y.backward(dy).
  void Backward(const Tensor& grad) const;

  // Identity of the underlying handle (for graph bookkeeping).
  const TensorImpl* impl() const { return impl_.get(); }
  // True when no other handle or view can see this tensor's data: this is
  // the only handle on its TensorImpl, which is the only one on its storage
  // and spans all of it contiguously. Autograd then adopts the tensor as a
  // leaf's gradient instead of copying it.
  bool IsSoleOwner() const;

  std::string ToString(int64_t max_elements = 16) const;

 private:
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  TensorImpl& checked_impl() const;
  std::shared_ptr<TensorImpl> impl_;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements, into storage
  Shape shape;
  Shape strides;
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
};

}  // namespace rotor

#endif  // ROTOR_CORE_TENSOR_H_

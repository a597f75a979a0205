#include "core/tensor.h"

#include <cstring>
#include <sstream>
#include <vector>

#include "core/autograd.h"
#include "core/buffer_pool.h"
#include "core/checked_math.h"
#include "core/error.h"
#include "core/profile.h"

namespace rotor {

std::string ShapeToString(const Shape& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out << (i ? ", " : "") << shape[i];
  }
  out << "]";
  return out.str();
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t extent : shape) {
    n = CheckedMul(n, extent, "the number of elements of a tensor");
  }
  return n;
}

Shape ContiguousStrides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride = CheckedMul(stride, shape[i], "the strides of a tensor");
  }
  return strides;
}

namespace {

// Never destroyed: tensors in static objects may be freed after main().
BufferPool& Pool() {
  static BufferPool* pool = new BufferPool;
  return *pool;
}

}  // namespace

Storage::Storage(size_t size, bool zero_fill)
    : data_([size] {
        profile::Scope scope(profile::Phase::kAllocator);
        return Pool().Allocate(size);
      }()),
      size_(size) {
  if (zero_fill) {
    profile::Scope scope(profile::Phase::kCopies);
    std::memset(data_, 0, size * sizeof(float));
  }
}

Storage::~Storage() {
  profile::Scope scope(profile::Phase::kAllocator);
  Pool().Release(data_, size_);
}

MemoryStats GetMemoryStats() { return Pool().Stats(); }
void ResetPeakMemory() { Pool().ResetPeak(); }
void ReleaseCachedMemory() { Pool().ReleaseCached(); }

namespace {

std::shared_ptr<TensorImpl> MakeImpl(const Shape& shape, bool requires_grad,
                                     bool zero_fill = true) {
  for (int64_t extent : shape) {
    ROTOR_CHECK(extent >= 0, "tensor shape ", ShapeToString(shape),
                " has a negative extent");
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(NumElements(shape), zero_fill);
  impl->shape = shape;
  impl->strides = ContiguousStrides(shape);
  impl->requires_grad = requires_grad;
  return impl;
}

// Calls fn(offset) for the storage offset of every element, in row-major
// order of the logical index.
template <typename Fn>
void ForEachOffset(const Shape& shape, const Shape& strides, Fn&& fn) {
  const int64_t n = NumElements(shape);
  if (n == 0) return;
  const size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t count = 0; count < n; ++count) {
    fn(offset);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (shape[d] - 1);
      index[d] = 0;
    }
  }
}

}  // namespace

Tensor Tensor::Zeros(const Shape& shape, bool requires_grad) {
  return Tensor(MakeImpl(shape, requires_grad));
}

Tensor Tensor::Empty(const Shape& shape, bool requires_grad) {
  return Tensor(MakeImpl(shape, requires_grad, /*zero_fill=*/false));
}

Tensor Tensor::Ones(const Shape& shape, bool requires_grad) {
  return Full(shape, 1.0f, requires_grad);
}

Tensor Tensor::Full(const Shape& shape, float value, bool requires_grad) {
  Tensor t(MakeImpl(shape, requires_grad, /*zero_fill=*/false));
  t.Fill(value);
  return t;
}

Tensor Tensor::FromVector(const Shape& shape, const std::vector<float>& values,
                          bool requires_grad) {
  ROTOR_CHECK(static_cast<int64_t>(values.size()) == NumElements(shape),
              "Tensor::FromVector: shape ", ShapeToString(shape), " needs ",
              NumElements(shape), " values, got ", values.size());
  Tensor t(MakeImpl(shape, requires_grad, /*zero_fill=*/false));
  // An empty vector's data() may be null, which memcpy never accepts.
  if (!values.empty()) {
    std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  }
  return t;
}

Tensor Tensor::Scalar(float value, bool requires_grad) {
  return Full({}, value, requires_grad);
}

TensorImpl& Tensor::checked_impl() const {
  ROTOR_CHECK(impl_ != nullptr, "use of an undefined tensor");
  return *impl_;
}

const Shape& Tensor::shape() const { return checked_impl().shape; }
const Shape& Tensor::strides() const { return checked_impl().strides; }
int64_t Tensor::dim() const { return shape().size(); }
int64_t Tensor::numel() const { return NumElements(shape()); }

int64_t Tensor::WrapDim(int64_t d, const char* op) const {
  const int64_t rank = dim();
  const int64_t wrapped = d < 0 ? d + rank : d;
  ROTOR_CHECK(wrapped >= 0 && wrapped < rank, op, ": dimension ", d,
              " is out of range for a tensor of shape ",
              ShapeToString(shape()));
  return wrapped;
}

int64_t Tensor::size(int64_t d) const { return shape()[WrapDim(d, "size")]; }

bool Tensor::is_contiguous() const {
  const TensorImpl& impl = checked_impl();
  int64_t expected = 1;
  for (size_t i = impl.shape.size(); i-- > 0;) {
    if (impl.shape[i] != 1 && impl.strides[i] != expected) return false;
    expected *= impl.shape[i];
  }
  return true;
}

float* Tensor::data() {
  TensorImpl& impl = checked_impl();
  return impl.storage->data() + impl.offset;
}

const float* Tensor::data() const {
  const TensorImpl& impl = checked_impl();
  return impl.storage->data() + impl.offset;
}

float Tensor::at(std::initializer_list<int64_t> index) const {
  ROTOR_CHECK(static_cast<int64_t>(index.size()) == dim(),
              "Tensor::at: ", index.size(), " indices for a tensor of shape ",
              ShapeToString(shape()));
  int64_t offset = 0;
  int64_t d = 0;
  for (int64_t i : index) {
    ROTOR_CHECK(i >= 0 && i < shape()[d], "Tensor::at: index ", i,
                " out of range for dimension ", d, " of shape ",
                ShapeToString(shape()));
    offset += i * strides()[d];
    ++d;
  }
  return data()[offset];
}

float Tensor::item() const {
  ROTOR_CHECK(numel() == 1, "Tensor::item: tensor of shape ",
              ShapeToString(shape()), " has ", numel(),
              " elements, expected 1");
  return data()[0];
}

std::vector<float> Tensor::ToVector() const {
  std::vector<float> values;
  values.reserve(numel());
  const float* base = data();
  ForEachOffset(shape(), strides(),
                [&](int64_t offset) { values.push_back(base[offset]); });
  return values;
}

void Tensor::CopyFrom(const Tensor& src) {
  ROTOR_CHECK(src.shape() == shape(), "CopyFrom: source shape ",
              ShapeToString(src.shape()), " does not match destination shape ",
              ShapeToString(shape()));
  profile::Scope scope(profile::Phase::kCopies);
  if (is_contiguous() && src.is_contiguous()) {
    std::memmove(data(), src.data(), numel() * sizeof(float));
    return;
  }
  // A contiguous source in another storage is read in place (the KV cache's
  // in-place writes); otherwise it is copied out first, as it may overlap.
  std::vector<float> copied;
  const float* values = nullptr;
  if (src.is_contiguous() &&
      src.checked_impl().storage != checked_impl().storage) {
    values = src.data();
  } else {
    copied = src.ToVector();
    values = copied.data();
  }
  float* base = data();
  size_t i = 0;
  ForEachOffset(shape(), strides(),
                [&](int64_t offset) { base[offset] = values[i++]; });
}

void Tensor::Fill(float value) {
  float* base = data();
  ForEachOffset(shape(), strides(),
                [&](int64_t offset) { base[offset] = value; });
}

Tensor Tensor::ViewAs(const Shape& new_shape, const Shape& new_strides,
                      int64_t offset_delta) const {
  const TensorImpl& impl = checked_impl();
  auto view = std::make_shared<TensorImpl>();
  view->storage = impl.storage;
  view->offset = impl.offset + offset_delta;
  view->shape = new_shape;
  view->strides = new_strides;
  return Tensor(std::move(view));
}

Tensor Tensor::Detach() const { return ViewAs(shape(), strides(), 0); }

Tensor Tensor::GraphEdge() const {
  const TensorImpl& impl = checked_impl();
  auto edge = std::make_shared<TensorImpl>();
  edge->shape = impl.shape;
  edge->strides = impl.strides;
  edge->requires_grad = impl.requires_grad;
  edge->grad_fn = impl.grad_fn;
  return Tensor(std::move(edge));
}

bool Tensor::requires_grad() const { return checked_impl().requires_grad; }

Tensor& Tensor::set_requires_grad(bool value) {
  ROTOR_CHECK(!value || grad_fn() == nullptr,
              "set_requires_grad: only leaf tensors can be marked; this one "
              "was produced by ",
              grad_fn()->name());
  checked_impl().requires_grad = value;
  return *this;
}

const Tensor& Tensor::grad() const { return checked_impl().grad; }
Tensor& Tensor::mutable_grad() { return checked_impl().grad; }

void Tensor::ZeroGrad() { checked_impl().grad = Tensor(); }

bool Tensor::IsSoleOwner() const {
  return impl_ != nullptr && impl_.use_count() == 1 && impl_->storage &&
         impl_->storage.use_count() == 1 && impl_->offset == 0 &&
         is_contiguous() &&
         static_cast<size_t>(numel()) == impl_->storage->size();
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  return checked_impl().grad_fn;
}

void Tensor::AttachGradFn(std::shared_ptr<Node> node) {
  TensorImpl& impl = checked_impl();
  impl.grad_fn = std::move(node);
  impl.requires_grad = true;
}

void Tensor::Backward() const { RunBackward(*this); }
void Tensor::Backward(const Tensor& grad) const { RunBackward(*this, grad); }

std::string Tensor::ToString(int64_t max_elements) const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream out;
  out << "Tensor(shape=" << ShapeToString(shape()) << ", values=[";
  const std::vector<float> values = ToVector();
  for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i) {
    if (i == max_elements) {
      out << ", ...";
      break;
    }
    out << (i ? ", " : "") << values[i];
  }
  out << "])";
  return out.str();
}

}  // namespace rotor

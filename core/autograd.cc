#include "core/autograd.h"

#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/kernels/vector_ops.h"

namespace rotor {

namespace {

thread_local bool grad_mode_enabled = true;

// A contiguous tensor with the values of src: src itself when it already is
// contiguous, else a copy.
Tensor ContiguousValues(const Tensor& src) {
  if (src.is_contiguous()) return src;
  Tensor copy = Tensor::Empty(src.shape());
  copy.CopyFrom(src);
  return copy;
}

// A leaf's gradient: dst += src (dst contiguous, same shape), or an owned
// copy of src when dst is still undefined. The leaf owns its gradient
// (clipping and ZeroGrad write into it), so src is never adopted here.
void AccumulateIntoLeaf(Tensor& dst, const Tensor& src) {
  if (!dst.defined()) {
    dst = Tensor::Empty(src.shape());
    dst.CopyFrom(src);
    return;
  }
  const Tensor values = ContiguousValues(src);
  kernels::Axpy(1.0f, values.data(), dst.data(), dst.numel());
}

// An intermediate tensor's pending gradient, dst = dst + src. The first
// contribution is adopted without copying (a backward function may return
// the very tensor it was given, e.g. Add's, so one gradient can reach
// several tensors); later ones make a fresh sum instead of adding in place,
// so an adopted tensor is never written to. Pending gradients stay
// contiguous, as backward functions expect.
void AccumulateIntoPending(Tensor& dst, const Tensor& src) {
  if (!dst.defined()) {
    dst = ContiguousValues(src);
    return;
  }
  const Tensor values = ContiguousValues(src);
  Tensor sum = Tensor::Empty(dst.shape());
  kernels::Add(dst.data(), values.data(), sum.data(), sum.numel());
  dst = sum;
}

}  // namespace

std::vector<Tensor> Node::Apply(const Tensor& grad_out) const {
  ROTOR_CHECK(backward_ != nullptr, "Backward through ", name_,
              " a second time: the graph was freed by the first Backward(); "
              "run the forward pass again");
  return backward_(grad_out);
}

void Node::Release() {
  inputs_.clear();
  backward_ = nullptr;
}

bool GradModeEnabled() { return grad_mode_enabled; }

NoGradGuard::NoGradGuard() : previous_(grad_mode_enabled) {
  grad_mode_enabled = false;
}

NoGradGuard::~NoGradGuard() { grad_mode_enabled = previous_; }

bool AnyRequiresGrad(std::initializer_list<const Tensor*> inputs) {
  if (!grad_mode_enabled) return false;
  for (const Tensor* t : inputs) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

bool AnyRequiresGrad(const std::vector<Tensor>& inputs) {
  if (!grad_mode_enabled) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

Tensor RecordOp(Tensor output, const char* name, std::vector<Tensor> inputs,
                Node::BackwardFn backward) {
  if (!AnyRequiresGrad(inputs)) return output;
  // Ops return fresh tensors or fresh view handles, never an existing leaf,
  // so attaching the node changes no one else's tensor.
  output.AttachGradFn(
      std::make_shared<Node>(name, std::move(inputs), std::move(backward)));
  return output;
}

void RunBackward(const Tensor& root, const Tensor& grad_root) {
  ROTOR_CHECK(root.defined(), "Backward() on an undefined tensor");
  if (grad_root.defined()) {
    ROTOR_CHECK(grad_root.shape() == root.shape(), "Backward(): gradient of ",
                "shape ", ShapeToString(grad_root.shape()),
                " for a tensor of shape ", ShapeToString(root.shape()));
  } else {
    ROTOR_CHECK(root.numel() == 1, "Backward() needs a scalar loss, got shape ",
                ShapeToString(root.shape()));
  }
  ROTOR_CHECK(root.requires_grad(),
              "Backward(): the loss does not require grad (no input requires "
              "grad, or it was computed under NoGradGuard)");

  // 1. Topological order of the tensors that have a grad_fn, by iterative
  //    depth-first search: a tensor is appended after all tensors it feeds
  //    from, so walking the list backwards visits consumers before producers.
  std::vector<Tensor> order;
  std::unordered_map<const TensorImpl*, bool> visited;
  std::vector<std::pair<Tensor, size_t>> stack;  // (tensor, next input index)
  if (root.grad_fn()) {
    stack.emplace_back(root, 0);
    visited[root.impl()] = true;
  }
  while (!stack.empty()) {
    auto& [tensor, next] = stack.back();
    const std::vector<Tensor>& inputs = tensor.grad_fn()->inputs();
    if (next < inputs.size()) {
      const Tensor& input = inputs[next++];
      if (input.defined() && input.grad_fn() && !visited[input.impl()]) {
        visited[input.impl()] = true;
        stack.emplace_back(input, 0);
      }
    } else {
      order.push_back(tensor);
      stack.pop_back();
    }
  }

  // 2. Propagate. `pending` holds the summed gradient of each non-leaf tensor
  //    until its own node runs.
  NoGradGuard no_grad;
  std::unordered_map<const TensorImpl*, Tensor> pending;
  const Tensor seed =
      grad_root.defined() ? grad_root : Tensor::Ones(root.shape());
  if (!root.grad_fn()) {  // the root is itself a leaf
    Tensor leaf = root;
    AccumulateIntoLeaf(leaf.mutable_grad(), seed);
    return;
  }
  pending[root.impl()] = seed;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Tensor& tensor = *it;
    const std::shared_ptr<Node> node = tensor.grad_fn();
    auto grad_it = pending.find(tensor.impl());
    if (grad_it == pending.end()) continue;  // no gradient reached it
    const Tensor grad_out = std::move(grad_it->second);
    pending.erase(grad_it);

    std::vector<Tensor> input_grads = node->Apply(grad_out);
    const std::vector<Tensor>& inputs = node->inputs();
    ROTOR_CHECK(input_grads.size() == inputs.size(), node->name(),
                " backward returned ", input_grads.size(), " gradients for ",
                inputs.size(), " inputs");
    for (size_t i = 0; i < inputs.size(); ++i) {
      Tensor input = inputs[i];
      const Tensor& g = input_grads[i];
      if (!input.defined() || !input.requires_grad() || !g.defined()) continue;
      ROTOR_CHECK(g.shape() == input.shape(), node->name(),
                  " backward: gradient of shape ", ShapeToString(g.shape()),
                  " for input ", i, " of shape ", ShapeToString(input.shape()));
      if (input.grad_fn()) {
        AccumulateIntoPending(pending[input.impl()], g);
      } else {
        AccumulateIntoLeaf(input.mutable_grad(), g);
      }
    }
    // 4. Free this part of the graph as soon as it has run.
    node->Release();
  }
}

}  // namespace rotor

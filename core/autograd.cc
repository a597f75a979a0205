#include "core/autograd.h"

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/kernels/vector_ops.h"
#include "core/profile.h"

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

// A leaf's gradient: dst += src (dst contiguous, same shape). When dst is
// still undefined (none yet, or ZeroGrad dropped it), src itself if nothing
// else can see its data, else an owned copy: the leaf owns its gradient
// (clipping writes into it), so a shared tensor is never adopted.
void AccumulateIntoLeaf(Tensor& dst, Tensor src) {
  if (!dst.defined()) {
    if (src.IsSoleOwner()) {
      dst = std::move(src);
      return;
    }
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

// Turns grad mode on for its lifetime (Checkpointed's recomputation runs
// inside a Backward, which turned it off).
class GradModeOn {
 public:
  GradModeOn() : previous_(grad_mode_enabled) { grad_mode_enabled = true; }
  ~GradModeOn() { grad_mode_enabled = previous_; }
  GradModeOn(const GradModeOn&) = delete;
  GradModeOn& operator=(const GradModeOn&) = delete;

 private:
  bool previous_;
};

// For RunBackward's on_leaf_ready: how many edges from nodes that have not
// run yet lead to each leaf. A leaf's count reaches zero exactly when the
// last node that could add to its grad() is done.
class LeafEdgeCounts {
 public:
  void CountEdgesOf(const std::vector<std::shared_ptr<Node>>& nodes) {
    for (const std::shared_ptr<Node>& node : nodes) {
      for (const Tensor& input : node->inputs()) {
        if (IsGradLeaf(input)) ++remaining_[input.impl()];
      }
    }
  }

  // Call after `node` has run or been skipped, before it is released.
  void NodeDone(const Node& node, const LeafGradReadyFn& on_leaf_ready) {
    for (const Tensor& input : node.inputs()) {
      if (IsGradLeaf(input) && --remaining_[input.impl()] == 0) {
        on_leaf_ready(input);
      }
    }
  }

 private:
  static bool IsGradLeaf(const Tensor& t) {
    return t.defined() && t.requires_grad() && !t.grad_fn();
  }
  std::unordered_map<const TensorImpl*, int64_t> remaining_;
};

}  // namespace

std::vector<Tensor> Node::Apply(const Tensor& grad_out) const {
  ROTOR_CHECK(backward_ != nullptr, "Backward through ", name_,
              " a second time: the graph was freed by the first Backward(); "
              "run the forward pass again");
  // A backward function's own work; its matmuls, copies and allocations
  // are charged to theirs.
  profile::Scope scope(profile::Phase::kKernels);
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
  // The node keeps what backward propagation needs of each input: a leaf
  // that requires grad as it is (its grad() is accumulated), an op's output
  // as a data-less edge to that op's node (so an activation is freed as soon
  // as neither the caller nor a backward function holds it), and nothing of
  // an input that needs no gradient.
  for (Tensor& input : inputs) {
    if (!input.defined() || !input.requires_grad()) {
      input = Tensor();
    } else if (input.grad_fn()) {
      input = input.GraphEdge();
    }
  }
  // Ops return fresh tensors or fresh view handles, never an existing leaf,
  // so attaching the node changes no one else's tensor.
  output.AttachGradFn(
      std::make_shared<Node>(name, std::move(inputs), std::move(backward)));
  return output;
}

std::pair<Tensor, Tensor> RecordPairOp(Tensor first, Tensor second,
                                       const char* name,
                                       std::vector<Tensor> inputs,
                                       PairBackwardFn backward) {
  if (!AnyRequiresGrad(inputs)) return {first, second};
  // dL/dsecond, from second's node (which runs first) to first's.
  auto handed_over = std::make_shared<Tensor>();
  const size_t num_inputs = inputs.size();
  first = RecordOp(first, name, std::move(inputs),
                   [backward = std::move(backward), handed_over,
                    num_inputs](const Tensor& grad_first) {
                     const Tensor grad_second = std::move(*handed_over);
                     *handed_over = Tensor();
                     if (!grad_first.defined() && !grad_second.defined()) {
                       return std::vector<Tensor>(num_inputs);
                     }
                     return backward(grad_first, grad_second);
                   });
  first.grad_fn()->set_runs_without_gradient();
  second = RecordOp(second, name, {first}, [handed_over](const Tensor& grad) {
    *handed_over = grad;
    return std::vector<Tensor>(1);  // first's gradient is first's own
  });
  return {first, second};
}

Tensor Checkpointed(const std::function<Tensor(const Tensor&)>& fn,
                    const Tensor& x, const std::vector<Tensor>& parameters) {
  std::vector<Tensor> inputs = {x};
  inputs.insert(inputs.end(), parameters.begin(), parameters.end());
  if (!AnyRequiresGrad(inputs)) return fn(x);
  Tensor y;
  {
    NoGradGuard no_grad;
    y = fn(x);
  }
  const Tensor saved = x.Detach();
  const bool x_needs_grad = x.requires_grad();
  const size_t num_inputs = inputs.size();
  // The parameters get their gradients from the inner Backward; the outer
  // graph only needs dL/dx.
  return RecordOp(
      y, "Checkpointed", std::move(inputs),
      [fn, saved, x_needs_grad, num_inputs](const Tensor& grad_out) {
        Tensor input = saved.Detach();  // a fresh leaf for dL/dx
        input.set_requires_grad(x_needs_grad);
        Tensor recomputed;
        {
          GradModeOn grad_mode;
          recomputed = fn(input);
        }
        RunBackward(recomputed, grad_out);
        std::vector<Tensor> grads(num_inputs);
        if (x_needs_grad) grads[0] = input.grad();
        return grads;
      });
}

void RunBackward(const Tensor& root, const Tensor& grad_root,
                 const LeafGradReadyFn& on_leaf_ready) {
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

  // 1. Topological order of the nodes reachable from the root, by iterative
  //    depth-first search: a node is appended after all nodes it feeds from,
  //    so walking the list backwards visits consumers before producers. Each
  //    op output has its own node, so a node stands for the tensor it made
  //    (the graph holds data-less edges, not the tensors themselves).
  //    `order` owns the nodes: releasing a node below drops its edges,
  //    which may hold the last reference to a producer's node.
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_map<const Node*, bool> visited;
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack;  // (node, next)
  if (root.grad_fn()) {
    stack.emplace_back(root.grad_fn(), 0);
    visited[root.grad_fn().get()] = true;
  }
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    const std::vector<Tensor>& inputs = node->inputs();
    if (next < inputs.size()) {
      const Tensor& input = inputs[next++];
      if (input.defined() && input.grad_fn() &&
          !visited[input.grad_fn().get()]) {
        visited[input.grad_fn().get()] = true;
        stack.emplace_back(input.grad_fn(), 0);
      }
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }

  // 2. Propagate. `pending` holds the summed gradient of each op output,
  //    keyed by its node, until that node runs.
  NoGradGuard no_grad;
  std::unordered_map<const Node*, Tensor> pending;
  const Tensor seed =
      grad_root.defined() ? grad_root : Tensor::Ones(root.shape());
  if (!root.grad_fn()) {  // the root is itself a leaf
    Tensor leaf = root;
    AccumulateIntoLeaf(leaf.mutable_grad(), seed);
    if (on_leaf_ready) on_leaf_ready(leaf);
    return;
  }
  // For on_leaf_ready: the edges from nodes still to run into each leaf.
  LeafEdgeCounts leaf_edges;
  if (on_leaf_ready) leaf_edges.CountEdgesOf(order);
  pending[root.grad_fn().get()] = seed;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = it->get();
    auto grad_it = pending.find(node);
    Tensor grad_out;  // undefined when no gradient reached the node
    if (grad_it != pending.end()) {
      grad_out = std::move(grad_it->second);
      pending.erase(grad_it);
    } else if (!node->runs_without_gradient()) {
      if (on_leaf_ready) leaf_edges.NodeDone(*node, on_leaf_ready);
      continue;
    }

    std::vector<Tensor> input_grads = node->Apply(grad_out);
    const std::vector<Tensor>& inputs = node->inputs();
    ROTOR_CHECK(input_grads.size() == inputs.size(), node->name(),
                " backward returned ", input_grads.size(), " gradients for ",
                inputs.size(), " inputs");
    for (size_t i = 0; i < inputs.size(); ++i) {
      Tensor input = inputs[i];
      Tensor& g = input_grads[i];
      if (!input.defined() || !input.requires_grad() || !g.defined()) continue;
      ROTOR_CHECK(g.shape() == input.shape(), node->name(),
                  " backward: gradient of shape ", ShapeToString(g.shape()),
                  " for input ", i, " of shape ", ShapeToString(input.shape()));
      if (input.grad_fn()) {
        AccumulateIntoPending(pending[input.grad_fn().get()], g);
      } else {
        // Moved: the vector's copy would keep g from being adopted.
        AccumulateIntoLeaf(input.mutable_grad(), std::move(g));
      }
    }
    if (on_leaf_ready) leaf_edges.NodeDone(*node, on_leaf_ready);
    // 4. Free this part of the graph as soon as it has run.
    node->Release();
  }
}

}  // namespace rotor

// Reverse-mode automatic differentiation over a dynamic graph.
//
// Every differentiable op (core/ops/ops.h) computes its output and, when grad
// mode is on and an input requires grad, records a Node on the output:
//
//   Node { name, inputs, backward }
//
// `inputs` are the graph's edges, one per op input: a leaf that requires grad
// as it is, an op's output as a data-less handle carrying that op's node
// (Tensor::GraphEdge), an input that needs no gradient as an undefined
// Tensor. So the graph keeps no activation alive by itself. `backward` is a
// function written next to the op's forward that maps the gradient of the
// output, dL/dy, to one gradient per input, dL/dx_i (an undefined Tensor for
// an input that does not need one). Whatever else backward needs (saved
// activations, statistics) it captures when the op records it.
//
// Tensor::Backward() on a scalar loss L:
//   1. orders the nodes reachable from L topologically (depth-first search),
//   2. seeds dL/dL = 1 and walks the order from L back to the leaves, calling
//      each node's backward and summing the gradients that reach each tensor,
//   3. accumulates (+=) into grad() of every leaf with requires_grad, so
//      gradients add up across calls until ZeroGrad(),
//   4. frees the graph: each node drops its inputs and saved tensors.
// Backward runs in no-grad mode: gradients of gradients are not recorded.
//
// A caller may also ask to hear, during step 3, of each leaf whose gradient
// is final in this Backward (data-parallel training starts summing a
// gradient over processes while the rest of the backward runs). Step 1
// counts, per leaf, the edges that lead to it from the nodes to run; every
// node decrements the counts of its leaf inputs once it has run (or been
// skipped because no gradient reached it), and a count that reaches zero
// means no later node can add to that leaf's grad().
#ifndef ROTOR_CORE_AUTOGRAD_H_
#define ROTOR_CORE_AUTOGRAD_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace rotor {

class Node {
 public:
  // dL/dy -> {dL/dx_0, dL/dx_1, ...}, one entry per input.
  using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_out)>;

  Node(std::string name, std::vector<Tensor> inputs, BackwardFn backward)
      : name_(std::move(name)),
        inputs_(std::move(inputs)),
        backward_(std::move(backward)) {}

  const std::string& name() const { return name_; }
  const std::vector<Tensor>& inputs() const { return inputs_; }
  bool released() const { return !backward_; }
  // Backward calls this node even when no gradient reached its output
  // (with an undefined grad_out): RecordPairOp's first node, whose backward
  // may still have the second output's gradient to pass on.
  bool runs_without_gradient() const { return runs_without_gradient_; }
  void set_runs_without_gradient() { runs_without_gradient_ = true; }
  std::vector<Tensor> Apply(const Tensor& grad_out) const;
  // Drops inputs and everything the backward function captured.
  void Release();

 private:
  std::string name_;
  std::vector<Tensor> inputs_;
  BackwardFn backward_;
  bool runs_without_gradient_ = false;
};

// Grad mode is per thread and on by default.
bool GradModeEnabled();

// Turns grad mode off for its lifetime (evaluation, generation, optimizer
// updates): ops then record nothing and outputs do not require grad.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// True when grad mode is on and some input requires grad: the op must record.
bool AnyRequiresGrad(std::initializer_list<const Tensor*> inputs);
bool AnyRequiresGrad(const std::vector<Tensor>& inputs);

// If any input requires grad (and grad mode is on), marks `output` as
// requiring grad and attaches a Node. Returns `output` for chaining.
Tensor RecordOp(Tensor output, const char* name, std::vector<Tensor> inputs,
                Node::BackwardFn backward);

// An op with two outputs whose backward needs both of their gradients at
// once (AddRmsNorm: the residual sum and its norm, backward in one pass).
// `backward` gets dL/dfirst and dL/dsecond, either undefined when no
// gradient reached that output (never both), and returns one gradient per
// input. It is recorded as two nodes: `second`'s node, whose only input is
// `first`, runs before `first`'s (a consumer before its producer) and hands
// its gradient over; `first`'s node then runs the backward, even when only
// `second` got a gradient.
using PairBackwardFn = std::function<std::vector<Tensor>(
    const Tensor& grad_first, const Tensor& grad_second)>;
std::pair<Tensor, Tensor> RecordPairOp(Tensor first, Tensor second,
                                       const char* name,
                                       std::vector<Tensor> inputs,
                                       PairBackwardFn backward);

// Activation checkpointing: y = fn(x), keeping none of fn's intermediate
// activations. The forward runs fn with grad mode off and saves only x. The
// backward recomputes fn(x) with grad mode on and runs Backward(dL/dy)
// through the recomputed graph: that accumulates the gradients of the
// parameters fn uses into their grad(), and gives dL/dx. Costs one more
// forward of fn; the gradients are the ones fn alone would give, bit for
// bit (fn must be deterministic: the same inputs, the same outputs).
// `parameters` are the leaves fn reads, so that a frozen x (no gradient)
// still records the op when fn's own parameters need gradients.
Tensor Checkpointed(const std::function<Tensor(const Tensor&)>& fn,
                    const Tensor& x, const std::vector<Tensor>& parameters);

// Called with a leaf (requires_grad, no grad_fn) once this Backward has added
// its last contribution to leaf.grad(). The leaf's grad() may then still be
// undefined (every node that reached it returned no gradient for it). Leaves
// the graph does not reach are never reported.
using LeafGradReadyFn = std::function<void(const Tensor& leaf)>;

// Runs reverse-mode differentiation from `root` (see the header comment).
// With an undefined `grad_root`, `root` must be a one-element tensor and the
// seed is dL/droot = 1; otherwise `grad_root` (same shape as root) is the
// seed, i.e. the gradient of some scalar L with respect to root.
// `on_leaf_ready`, when set, hears of each leaf whose gradient is final;
// without it Backward does no counting at all.
void RunBackward(const Tensor& root, const Tensor& grad_root = Tensor(),
                 const LeafGradReadyFn& on_leaf_ready = nullptr);

}  // namespace rotor

#endif  // ROTOR_CORE_AUTOGRAD_H_

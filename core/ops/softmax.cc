// Softmax, LogSoftmax and CrossEntropy (core/ops/ops.h): forward and backward
// side by side, both running the Highway kernels of core/kernels/softmax.h
// and core/kernels/cross_entropy.h on [rows, cols] views of the tensors.
#include "core/kernels/softmax.h"

#include <cstdint>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/cross_entropy.h"
#include "core/ops/kernel_inputs.h"
#include "core/ops/ops.h"
#include "core/profile.h"

namespace rotor {

using ops_internal::AsRows;
using ops_internal::ContiguousOrCopy;
using ops_internal::CountScoredTargets;

// y = softmax(x) over the last dimension; x: [..., cols] -> y: same shape.
// Backward: dx = y * (dy - sum(dy * y)), from the saved output y.
Tensor Softmax(const Tensor& x) {
  profile::Scope scope(profile::Phase::kKernels);
  ROTOR_CHECK(x.dim() >= 1, "Softmax: needs at least one dimension, got shape ",
              ShapeToString(x.shape()));
  const Tensor input = ContiguousOrCopy(x);
  const auto [rows, cols] = AsRows(x);
  Tensor y = Tensor::Empty(x.shape());
  kernels::SoftmaxForward(input.data(), y.data(), rows, cols);
  if (!AnyRequiresGrad({&x})) return y;
  const Tensor saved_y = y.Detach();  // no grad_fn: no reference cycle
  return RecordOp(y, "Softmax", {x},
                  [saved_y, rows = rows, cols = cols](const Tensor& dy) {
                    const Tensor grad = ContiguousOrCopy(dy);
                    Tensor dx = Tensor::Empty(saved_y.shape());
                    kernels::SoftmaxBackward(saved_y.data(), grad.data(),
                                             dx.data(), rows, cols);
                    return std::vector<Tensor>{dx};
                  });
}

// y = log softmax(x) = x - logsumexp(x) over the last dimension.
// Backward: dx = dy - softmax(x) * sum(dy), with softmax(x) = exp(y).
Tensor LogSoftmax(const Tensor& x) {
  profile::Scope scope(profile::Phase::kKernels);
  ROTOR_CHECK(x.dim() >= 1,
              "LogSoftmax: needs at least one dimension, got shape ",
              ShapeToString(x.shape()));
  const Tensor input = ContiguousOrCopy(x);
  const auto [rows, cols] = AsRows(x);
  Tensor y = Tensor::Empty(x.shape());
  kernels::LogSoftmaxForward(input.data(), y.data(), rows, cols);
  if (!AnyRequiresGrad({&x})) return y;
  const Tensor saved_y = y.Detach();
  return RecordOp(y, "LogSoftmax", {x},
                  [saved_y, rows = rows, cols = cols](const Tensor& dy) {
                    const Tensor grad = ContiguousOrCopy(dy);
                    Tensor dx = Tensor::Empty(saved_y.shape());
                    kernels::LogSoftmaxBackward(saved_y.data(), grad.data(),
                                                dx.data(), rows, cols);
                    return std::vector<Tensor>{dx};
                  });
}

// loss = (1/N) sum over the N rows with targets[r] != ignore_index of
//        logsumexp(logits[r]) - logits[r, targets[r]]
// logits: [rows, vocab], targets: rows entries -> a scalar (shape []).
// N = 0 gives NaN (0/0), as PyTorch does. The per-row losses are summed in
// row order in double, so the loss does not depend on the thread count.
// Backward: dlogits[r] = dL/dloss / N * (softmax(logits[r]) - onehot(t_r)),
// using the logsumexp saved per row by the forward kernel.
Tensor CrossEntropy(const Tensor& logits, const std::vector<int32_t>& targets,
                    int32_t ignore_index) {
  profile::Scope scope(profile::Phase::kKernels);
  ROTOR_CHECK(logits.dim() == 2,
              "CrossEntropy: logits must have shape [rows, vocab], got ",
              ShapeToString(logits.shape()));
  const int64_t rows = logits.size(0);
  const int64_t vocab = logits.size(1);
  ROTOR_CHECK(static_cast<int64_t>(targets.size()) == rows,
              "CrossEntropy: ", targets.size(), " targets for logits of shape ",
              ShapeToString(logits.shape()), " (expected ", rows, ")");
  const int64_t counted =
      CountScoredTargets(targets, vocab, ignore_index, "CrossEntropy");

  const Tensor input = ContiguousOrCopy(logits);
  Tensor row_losses = Tensor::Empty({rows});
  Tensor logsumexp = Tensor::Empty({rows});
  kernels::CrossEntropyForward(input.data(), targets.data(), rows, vocab,
                               ignore_index, row_losses.data(),
                               logsumexp.data());
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) total += row_losses.data()[r];
  Tensor loss = Tensor::Scalar(static_cast<float>(total / counted));
  if (!AnyRequiresGrad({&logits})) return loss;

  const Tensor saved_logits = input.Detach();
  return RecordOp(loss, "CrossEntropy", {logits},
                  [saved_logits, logsumexp, targets, ignore_index, counted,
                   rows, vocab](const Tensor& dloss) {
                    Tensor dlogits = Tensor::Empty(saved_logits.shape());
                    const float scale =
                        static_cast<float>(dloss.item() / double(counted));
                    kernels::CrossEntropyBackward(
                        saved_logits.data(), logsumexp.data(), targets.data(),
                        rows, vocab, ignore_index, scale, dlogits.data());
                    return std::vector<Tensor>{dlogits};
                  });
}

}  // namespace rotor

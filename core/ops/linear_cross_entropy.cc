// LinearCrossEntropy (core/ops/ops.h): the output head and the loss of a
// language model without its [rows, vocab] logits. Forward and backward are
// one pass over chunks of rows, because a chunk's gradients need exactly
// what its forward computed (as in Liger-Kernel's fused linear
// cross-entropy). For each chunk c of at most chunk_rows rows:
//
//   Z_c  = H_c W^T                        [n, vocab]  sgemm, the logits
//   l_r  = logsumexp(Z_r) - Z_r[t_r]      per row     (kept: [rows] floats)
//   G_c  = s (softmax(Z_c) - onehot(t))   [n, vocab]  in place over Z_c
//   dH_c = G_c W                          [n, in]     sgemm
//   dW  += G_c^T H_c                      [vocab, in] sgemm, beta 1 after
//                                                     the first chunk
//
// with s = 1 / (rows not ignored), the mean's weight. Only one chunk's
// logits exist at a time: at 8,192 rows and 49,152 classes the full logits
// would take 1.6 GB, and their gradient as much again; a chunk of 1,024 rows
// takes 201 MB. The backward only multiplies dH and dW by dL/dloss (nothing
// when it is 1, as in a step without gradient accumulation).
//
// Equality with CrossEntropy(Linear(H, W)): each chunk's logits and dH are
// the same sgemm rows as the unchunked products' and the loss kernel is
// bitwise CrossEntropyForward + CrossEntropyBackward, so the loss and dH
// differ only where OpenBLAS rounds a row differently for another number of
// rows; dW sums the rows chunk after chunk instead of in one call
// (tests/core/ops/linear_cross_entropy_test.cc states the bound).
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "core/error.h"
#include "core/kernels/cross_entropy.h"
#include "core/kernels/vector_ops.h"
#include "core/ops/gemm.h"
#include "core/ops/kernel_inputs.h"
#include "core/ops/ops.h"
#include "core/profile.h"

namespace rotor {

using ops_internal::ContiguousOrCopy;
using ops_internal::CountScoredTargets;

Tensor LinearCrossEntropy(const Tensor& hidden, const Tensor& weight,
                          const std::vector<int32_t>& targets,
                          int32_t ignore_index, int64_t chunk_rows) {
  profile::Scope scope(profile::Phase::kKernels);
  ROTOR_CHECK(hidden.dim() == 2 && weight.dim() == 2 &&
                  hidden.size(1) == weight.size(1),
              "LinearCrossEntropy: hidden shape ",
              ShapeToString(hidden.shape()), " and weight shape ",
              ShapeToString(weight.shape()),
              " do not match (need [rows, in] and [vocab, in])");
  const int64_t rows = hidden.size(0);
  const int64_t in = hidden.size(1);
  const int64_t vocab = weight.size(0);
  ROTOR_CHECK(static_cast<int64_t>(targets.size()) == rows,
              "LinearCrossEntropy: ", targets.size(), " targets for ", rows,
              " rows of hidden states");
  ROTOR_CHECK(chunk_rows >= 1, "LinearCrossEntropy: chunk_rows is ", chunk_rows,
              ", expected at least 1");
  const int64_t counted =
      CountScoredTargets(targets, vocab, ignore_index, "LinearCrossEntropy");

  const Tensor h = ContiguousOrCopy(hidden.Detach());
  const Tensor w = ContiguousOrCopy(weight.Detach());
  const bool grad_h = hidden.requires_grad(), grad_w = weight.requires_grad();
  const bool backward = AnyRequiresGrad({&hidden, &weight});
  Tensor dh = grad_h ? Tensor::Empty({rows, in}) : Tensor();
  Tensor dw = !grad_w     ? Tensor()
              : rows == 0 ? Tensor::Zeros({vocab, in})
                          : Tensor::Empty({vocab, in});
  // As CrossEntropy's backward computes it for dL/dloss = 1.
  const float scale = static_cast<float>(1.0 / static_cast<double>(counted));

  const int64_t chunk = std::min(chunk_rows, rows);
  Tensor logits = Tensor::Empty({chunk, vocab});
  Tensor losses = Tensor::Empty({rows});
  Tensor logsumexp = backward ? Tensor() : Tensor::Empty({chunk});
  const char* op = "LinearCrossEntropy";
  // In bf16, W is rounded once for every chunk's products, and each chunk's
  // G once for its dH and dW (core/ops/gemm.h BfloatCopy).
  const bool bf16 = ActiveMatmulPrecision() == MatmulPrecision::kBfloat16;
  const internal::BfloatCopy w_bf16 =
      bf16 ? internal::RoundedCopy(w.data(), vocab, in)
           : internal::BfloatCopy{};
  const internal::GemmOperand w_op{w.data(), in, w_bf16.data};
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t n = std::min(chunk, rows - r0);
    const float* h_chunk = h.data() + r0 * in;
    internal::ParallelGemm(CblasNoTrans, CblasTrans, n, vocab, in,
                           {h_chunk, in}, w_op, 0.0f, logits.data(), op);
    if (!backward) {
      kernels::CrossEntropyForward(logits.data(), targets.data() + r0, n, vocab,
                                   ignore_index, losses.data() + r0,
                                   logsumexp.data());
      continue;
    }
    kernels::CrossEntropyForwardBackwardInPlace(
        logits.data(), targets.data() + r0, n, vocab, ignore_index, scale,
        losses.data() + r0);
    const internal::BfloatCopy g_bf16 =
        bf16 && grad_h && grad_w
            ? internal::RoundedCopy(logits.data(), n, vocab)
            : internal::BfloatCopy{};
    const internal::GemmOperand g_op{logits.data(), vocab, g_bf16.data};
    if (grad_h) {  // dH_c [n, in] = G_c [n, vocab] W [vocab, in]
      internal::ParallelGemm(CblasNoTrans, CblasNoTrans, n, in, vocab, g_op,
                             w_op, 0.0f, dh.data() + r0 * in, op);
    }
    if (grad_w) {  // dW [vocab, in] += G_c^T [vocab, n] H_c [n, in]
      internal::ParallelGemm(CblasTrans, CblasNoTrans, vocab, in, n, g_op,
                             {h_chunk, in}, r0 == 0 ? 0.0f : 1.0f, dw.data(),
                             op);
    }
  }
  double total = 0.0;  // in row order, as CrossEntropy
  for (int64_t r = 0; r < rows; ++r) total += losses.data()[r];
  Tensor loss = Tensor::Scalar(static_cast<float>(total / counted));
  if (!backward) return loss;

  return RecordOp(loss, "LinearCrossEntropy", {hidden, weight},
                  [dh, dw](const Tensor& dloss) mutable {
                    // The node runs once, so the saved gradients are scaled
                    // in place and handed over.
                    const float s = dloss.item();
                    for (Tensor* g : {&dh, &dw}) {
                      if (s != 1.0f && g->defined()) {
                        kernels::Scale(s, g->data(), g->numel());
                      }
                    }
                    // Moved out, so a leaf can adopt them (core/autograd.cc).
                    return std::vector<Tensor>{std::move(dh), std::move(dw)};
                  });
}

}  // namespace rotor

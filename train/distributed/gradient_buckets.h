// Sums the gradients of a model's parameters over the ranks while the
// backward pass is still running, as PyTorch's DistributedDataParallel does.
//
// The parameters are grouped into buckets of about `bucket_bytes` each, in
// reverse order of the model's parameter list, which is roughly the order
// in which the backward pass finishes their gradients (the last layer's
// first). Autograd reports each parameter whose gradient is final in this
// Backward (RunBackward's on_leaf_ready, core/autograd.h); when the last
// parameter of a bucket is reported, its gradients are copied into the
// bucket's flat buffer and the sum over the ranks starts (MPI_Iallreduce),
// so the network carries one bucket while the cores compute the gradients
// of the next. Buckets start strictly in order (bucket k only after k - 1),
// so every rank issues the same collectives in the same order whatever the
// order of readiness. Finish() starts the buckets never reported (a
// parameter the graph does not reach), waits for every sum and copies the
// sums back into the gradients.
//
// Only the step's last backward needs this: with gradient accumulation the
// earlier micro-batches of a rank just add into grad() (autograd's +=), and
// the last one's hook sees the rank's whole gradient.
//
// Summing, in float, is MPI's: with two ranks each element is a + b, which
// is what a single process accumulating the same two micro-batches computes
// (docs/distributed.md says when this is bitwise).
#ifndef ROTOR_TRAIN_DISTRIBUTED_GRADIENT_BUCKETS_H_
#define ROTOR_TRAIN_DISTRIBUTED_GRADIENT_BUCKETS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/autograd.h"
#include "core/tensor.h"
#include "train/distributed/communicator.h"

namespace rotor::train {

class GradientBuckets {
 public:
  // `parameters` in the model's order; a bucket holds parameters until it
  // reaches `bucket_bytes` (at least one parameter each).
  GradientBuckets(Communicator& communicator, std::vector<Tensor> parameters,
                  int64_t bucket_bytes);

  // For RunBackward(loss, {}, buckets.ReadyHook(step)) of the last
  // micro-batch of optimizer step `step` (named in a timeout error). Leaves
  // that are not among the parameters are ignored.
  LeafGradReadyFn ReadyHook(int64_t step);

  // Starts what is left, waits for every sum and writes the sums into the
  // parameters' grad() (a parameter without one gets the sum of the other
  // ranks').
  void Finish();

  size_t num_buckets() const { return buckets_.size(); }
  // The parameters of bucket `b`, as indices into the constructor's list.
  const std::vector<size_t>& bucket(size_t b) const {
    return buckets_[b].parameters;
  }

 private:
  struct Bucket {
    std::vector<size_t> parameters;
    std::vector<float> sums;  // the flat buffer MPI sums in place
    size_t ready = 0;         // parameters reported in this step
    std::unique_ptr<PendingSum> pending;
  };

  void OnLeafReady(const Tensor& leaf);
  // Copies bucket b's gradients into its buffer and starts its sum.
  void Start(size_t b);

  Communicator& communicator_;
  std::vector<Tensor> parameters_;
  std::vector<Bucket> buckets_;
  std::unordered_map<const TensorImpl*, size_t> bucket_of_;
  size_t next_to_start_ = 0;
  int64_t step_ = 0;  // the step whose gradients are being summed
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DISTRIBUTED_GRADIENT_BUCKETS_H_

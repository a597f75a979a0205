#include "train/distributed/gradient_buckets.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace rotor::train {

GradientBuckets::GradientBuckets(Communicator& communicator,
                                 std::vector<Tensor> parameters,
                                 int64_t bucket_bytes)
    : communicator_(communicator), parameters_(std::move(parameters)) {
  ROTOR_CHECK(bucket_bytes > 0, "gradient buckets need a size > 0 bytes, got ",
              bucket_bytes);
  size_t bytes = 0;
  for (size_t i = parameters_.size(); i-- > 0;) {
    const size_t size = static_cast<size_t>(parameters_[i].numel()) * 4;
    if (buckets_.empty() ||
        (!buckets_.back().parameters.empty() &&
         bytes + size > static_cast<size_t>(bucket_bytes))) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().parameters.push_back(i);
    bytes += size;
    bucket_of_[parameters_[i].impl()] = buckets_.size() - 1;
  }
  for (Bucket& bucket : buckets_) {
    size_t count = 0;
    for (size_t i : bucket.parameters) count += parameters_[i].numel();
    bucket.sums.resize(count);
  }
}

LeafGradReadyFn GradientBuckets::ReadyHook(int64_t step) {
  step_ = step;
  return [this](const Tensor& leaf) { OnLeafReady(leaf); };
}

void GradientBuckets::OnLeafReady(const Tensor& leaf) {
  const auto found = bucket_of_.find(leaf.impl());
  if (found == bucket_of_.end()) return;
  Bucket& bucket = buckets_[found->second];
  ++bucket.ready;
  while (next_to_start_ < buckets_.size() &&
         buckets_[next_to_start_].ready ==
             buckets_[next_to_start_].parameters.size()) {
    Start(next_to_start_++);
  }
  // MPI moves a non-blocking sum along only inside its calls: a test per
  // finished gradient keeps the started ones going during the backward.
  for (size_t b = 0; b < next_to_start_; ++b) buckets_[b].pending->Test();
}

void GradientBuckets::Start(size_t b) {
  Bucket& bucket = buckets_[b];
  float* out = bucket.sums.data();
  for (size_t i : bucket.parameters) {
    const Tensor& grad = parameters_[i].grad();
    const size_t n = static_cast<size_t>(parameters_[i].numel());
    if (grad.defined()) {
      std::copy(grad.data(), grad.data() + n, out);
    } else {
      std::fill(out, out + n, 0.0f);
    }
    out += n;
  }
  bucket.pending =
      communicator_.StartSum(bucket.sums.data(), bucket.sums.size(),
                             StrCat("summing gradient bucket ", b + 1, " of ",
                                    buckets_.size(), " of step ", step_));
}

void GradientBuckets::Finish() {
  while (next_to_start_ < buckets_.size()) Start(next_to_start_++);
  for (Bucket& bucket : buckets_) {
    bucket.pending->Wait();
    const float* in = bucket.sums.data();
    for (size_t i : bucket.parameters) {
      Tensor parameter = parameters_[i];
      Tensor& grad = parameter.mutable_grad();
      if (!grad.defined()) grad = Tensor::Empty(parameter.shape());
      const size_t n = static_cast<size_t>(parameter.numel());
      std::copy(in, in + n, grad.data());
      in += n;
    }
    bucket.pending.reset();
    bucket.ready = 0;
  }
  next_to_start_ = 0;
}

}  // namespace rotor::train

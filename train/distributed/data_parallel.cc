#include "train/distributed/data_parallel.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/parallel.h"
#include "train/distributed/optimizer_shards.h"

namespace rotor::train {

int ThreadsPerRank(int64_t threads, const Communicator& communicator) {
  if (threads > 0) return static_cast<int>(threads);
  const int usable = HardwareThreads();
  const int machine = static_cast<int>(std::thread::hardware_concurrency());
  if (communicator.local_size() > 1 && usable >= machine) {
    return std::max(1, usable / communicator.local_size());
  }
  return 0;
}

void DataParallel::CheckRanksAgree(const StartingPoint& start,
                                   const std::string& file) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bits
  const auto mix = [&hash](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  };
  mix(&start.step, sizeof(start.step));
  mix(&start.sampler_rng_state, sizeof(start.sampler_rng_state));
  mix(&start.sampler_batches_drawn, sizeof(start.sampler_batches_drawn));
  for (const Tensor& weight : start.weights) {
    mix(weight.data(), static_cast<size_t>(weight.numel()) * sizeof(float));
  }
  ROTOR_CHECK(SameOnAllRanks(communicator_, hash,
                             "comparing the ranks' starting points"),
              file, ": the ranks start from different states (step ",
              start.step, " on rank ", rank(),
              "; the step, sampler or weights differ): every rank must see "
              "the same output_dir, data.path and train.init_from. Put them "
              "on a file system that all machines share");
}

void DataParallel::SetUp(int64_t batch_size, int64_t micro_batches,
                         std::vector<Tensor> parameters, double bucket_mb,
                         int zero_stage) {
  rows_per_rank_ = batch_size * micro_batches / size();
  bucket_mb_ = bucket_mb;
  parameters_ = std::move(parameters);
  rank_rows_ = RankRows(batch_size, micro_batches, size(), rank());
  gradient_buckets_ = std::make_unique<GradientBuckets>(
      communicator_, parameters_, static_cast<int64_t>(bucket_mb * (1 << 20)));
  if (zero_stage == 1) {
    std::vector<int64_t> sizes;
    for (const Tensor& p : parameters_) sizes.push_back(p.numel());
    parameter_owners_ = ParameterOwners(sizes, size());
  }
}

std::string DataParallel::Description() const {
  const size_t buckets = gradient_buckets_->num_buckets();
  std::ostringstream line;
  line << "data-parallel: " << size() << " ranks ("
       << communicator_.local_size() << " on this machine) x " << NumThreads()
       << " thread" << (NumThreads() == 1 ? "" : "s") << ", " << rows_per_rank_
       << " sequences each per step; gradients summed in " << buckets
       << " bucket" << (buckets == 1 ? "" : "s") << " of <= " << bucket_mb_
       << " MiB"
       << (shards_optimizer() ? "; AdamW moments sharded (ZeRO stage 1)" : "");
  return line.str();
}

LeafGradReadyFn DataParallel::GradientSumHook(int64_t step) {
  return gradient_buckets_->ReadyHook(step);
}

void DataParallel::FinishGradientSums() { gradient_buckets_->Finish(); }

double DataParallel::SumLoss(double rank_loss, int64_t step) {
  communicator_.Sum(&rank_loss, 1, StrCat("summing the loss of step ", step));
  return rank_loss;
}

std::vector<bool> DataParallel::OwnedParameters() const {
  std::vector<bool> owned;
  for (int owner : parameter_owners_) owned.push_back(owner == rank());
  return owned;
}

void DataParallel::ShareUpdatedWeights(int64_t step) {
  const std::string what = StrCat("sharing the updated weights of step ", step);
  for (size_t i = 0; i < parameters_.size(); ++i) {
    communicator_.Broadcast(parameters_[i].data(),
                            static_cast<size_t>(parameters_[i].numel()),
                            parameter_owners_[i], what);
  }
}

// The checkpoint holds every moment, as an unsharded run's does (so any
// rank count, sharded or not, resumes it): each owner sends its moments,
// which rank 0 receives into tensors it holds until the folder is written.
// The other ranks receive them too (a broadcast), into one scratch buffer.
void DataParallel::GatherMomentsOnRankZero(std::vector<Tensor>& first_moments,
                                           std::vector<Tensor>& second_moments,
                                           int64_t step) {
  const std::string what = StrCat("gathering the AdamW moments of step ", step,
                                  " for the checkpoint");
  std::vector<float> scratch;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& parameter = parameters_[i];
    const size_t count = static_cast<size_t>(parameter.numel());
    const bool owns = parameter_owners_[i] == rank();
    for (std::vector<Tensor>* moments : {&first_moments, &second_moments}) {
      Tensor& moment = (*moments)[i];
      float* data = nullptr;
      if (owns) {
        data = moment.data();
      } else if (rank() == 0) {
        moment = Tensor::Zeros(parameter.shape());
        data = moment.data();
      } else {
        scratch.resize(count);
        data = scratch.data();
      }
      communicator_.Broadcast(data, count, parameter_owners_[i], what);
    }
  }
}

}  // namespace rotor::train

// The trainer's side of a data-parallel job (docs/distributed.md), in one
// place: how many threads a rank runs, that the ranks start from the same
// state, which rows of each step this rank trains on, the gradient sums
// started during its last backward, and under ZeRO stage 1 which rank owns
// each parameter, with the weights and moments the owners send. It sees
// tensors and sizes, not the model, the optimizer or the batches:
// train/trainer.cc runs the loop and hands it those.
#ifndef ROTOR_TRAIN_DISTRIBUTED_DATA_PARALLEL_H_
#define ROTOR_TRAIN_DISTRIBUTED_DATA_PARALLEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/tensor.h"
#include "train/distributed/batch_split.h"
#include "train/distributed/communicator.h"
#include "train/distributed/gradient_buckets.h"

namespace rotor::train {

// train.threads per rank; 0 takes every core this process may run on.
// A launcher that binds each rank to its own cores (mpirun's default for
// up to two ranks: a core each) already limits what a rank sees; ranks
// free to run anywhere (mpirun --bind-to none) share the machine's cores,
// so N ranks on a machine never start more threads than it has cores.
int ThreadsPerRank(int64_t threads, const Communicator& communicator);

// Where a rank starts training: what the ranks compare before the first
// step.
struct StartingPoint {
  int64_t step = 0;
  uint64_t sampler_rng_state = 0;
  uint64_t sampler_batches_drawn = 0;
  std::vector<Tensor> weights;  // every parameter, frozen ones too
};

class DataParallel {
 public:
  // `communicator` must outlive this.
  explicit DataParallel(Communicator& communicator)
      : communicator_(communicator) {}

  Communicator& communicator() { return communicator_; }
  int rank() const { return communicator_.rank(); }
  int size() const { return communicator_.size(); }
  bool distributed() const { return size() > 1; }

  // The ranks hold the same config, but read output_dir, data.path and
  // train.init_from themselves: a rank on a machine that does not share the
  // folder would start fresh while rank 0 resumes, and silently train
  // another model. Throws rotor::Error (naming the config `file`) unless a
  // fingerprint of `start` is equal on every rank.
  void CheckRanksAgree(const StartingPoint& start, const std::string& file);

  // Distributed jobs only: splits each step's batch_size * micro_batches
  // rows over the ranks, and groups `parameters` (those that train, in the
  // model's order) into gradient buckets of at most bucket_mb MiB; with
  // zero_stage 1, also gives each parameter its owning rank.
  void SetUp(int64_t batch_size, int64_t micro_batches,
             std::vector<Tensor> parameters, double bucket_mb, int zero_stage);
  // The set-up in one line for the log: ranks, threads, sequences per rank,
  // buckets, sharding.
  std::string Description() const;

  // This rank's pieces of every step, in row order.
  const std::vector<RowRange>& rank_rows() const { return rank_rows_; }
  // For RunBackward of this rank's last piece of optimizer step `step`: the
  // gradient sums start as their buckets' gradients become final.
  LeafGradReadyFn GradientSumHook(int64_t step);
  // Returns once every gradient sum is in the parameters' grad().
  void FinishGradientSums();
  // The sum over the ranks of their losses of optimizer step `step`.
  double SumLoss(double rank_loss, int64_t step);

  // ZeRO stage 1: each rank keeps and updates the AdamW moments of its own
  // parameters (owned[i], for AdamW::ShardMoments).
  bool shards_optimizer() const { return !parameter_owners_.empty(); }
  std::vector<bool> OwnedParameters() const;
  // After the update of optimizer step `step`: each parameter's owner sends
  // its new values to the other ranks.
  void ShareUpdatedWeights(int64_t step);
  // Before the checkpoint of step `step`: rank 0 receives every moment into
  // `first_moments` and `second_moments` (AdamW's, one per parameter).
  void GatherMomentsOnRankZero(std::vector<Tensor>& first_moments,
                               std::vector<Tensor>& second_moments,
                               int64_t step);

 private:
  Communicator& communicator_;
  // Set by SetUp.
  int64_t rows_per_rank_ = 0;
  double bucket_mb_ = 0.0;
  std::vector<Tensor> parameters_;
  std::vector<RowRange> rank_rows_;
  std::unique_ptr<GradientBuckets> gradient_buckets_;
  std::vector<int> parameter_owners_;  // ZeRO stage 1 only
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DISTRIBUTED_DATA_PARALLEL_H_

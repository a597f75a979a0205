// ZeRO stage 1 (train.zero_stage: 1, docs/distributed.md): instead of every
// rank keeping AdamW's two moments of every parameter, each rank keeps and
// updates those of its own parameters, and after the update sends their
// new values to the other ranks. The update is elementwise, so each
// parameter is computed exactly as an unsharded run computes it: the
// weights are the same bits, with 1/N of the moments' memory per rank.
//
// The unit of a shard is a whole parameter (its AdamW update stays one
// kernel call): rank k owns a contiguous run of the parameter list, cut so
// each rank's element count is about 1/N of the total.
#ifndef ROTOR_TRAIN_DISTRIBUTED_OPTIMIZER_SHARDS_H_
#define ROTOR_TRAIN_DISTRIBUTED_OPTIMIZER_SHARDS_H_

#include <cstdint>
#include <vector>

namespace rotor::train {

// The owning rank of each parameter, given their element counts in order:
// parameter i goes to the rank whose share [k T/N, (k+1) T/N) of the T
// elements holds its middle element.
std::vector<int> ParameterOwners(const std::vector<int64_t>& sizes,
                                 int world_size);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DISTRIBUTED_OPTIMIZER_SHARDS_H_

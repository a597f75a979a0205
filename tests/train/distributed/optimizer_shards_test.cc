// Which rank owns each parameter under ZeRO stage 1
// (train/distributed/optimizer_shards.h): contiguous runs, every rank used
// when there are enough parameters, shares close to 1/N of the elements.
#include "train/distributed/optimizer_shards.h"

#include "tests/test_util.h"

namespace rotor::train {
namespace {

TEST(OptimizerShards, OwnersAreContiguousAndBalancedByElements) {
  EXPECT_EQ(ParameterOwners({10, 10, 10, 10}, 2),
            (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(ParameterOwners({10, 10, 10, 10}, 1),
            (std::vector<int>{0, 0, 0, 0}));
  // A large parameter goes to the rank that holds its middle element.
  EXPECT_EQ(ParameterOwners({100, 5, 5, 5, 5}, 2),
            (std::vector<int>{0, 1, 1, 1, 1}));
  EXPECT_EQ(ParameterOwners({1, 1, 1, 1, 1, 1, 1, 1}, 4),
            (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  // More ranks than parameters: some own none.
  EXPECT_EQ(ParameterOwners({4, 4}, 4), (std::vector<int>{1, 3}));
}

}  // namespace
}  // namespace rotor::train

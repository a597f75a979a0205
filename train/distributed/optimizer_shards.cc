#include "train/distributed/optimizer_shards.h"

#include <algorithm>

namespace rotor::train {

std::vector<int> ParameterOwners(const std::vector<int64_t>& sizes,
                                 int world_size) {
  int64_t total = 0;
  for (int64_t size : sizes) total += size;
  std::vector<int> owners;
  int64_t before = 0;
  for (int64_t size : sizes) {
    const int64_t middle = before + size / 2;
    owners.push_back(static_cast<int>(std::min<int64_t>(
        world_size - 1, total == 0 ? 0 : middle * world_size / total)));
    before += size;
  }
  return owners;
}

}  // namespace rotor::train

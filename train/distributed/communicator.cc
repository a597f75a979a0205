#include "train/distributed/communicator.h"

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "core/error.h"
#if ROTOR_WITH_MPI
#include "train/distributed/mpi_communicator.h"
#endif

namespace rotor::train {

namespace {

// A single process's sum is its own data: complete at once.
class CompleteSum final : public PendingSum {
 public:
  bool Test() override { return true; }
  void Wait() override {}
};

// The variables MPI launchers set in each process they start: Open MPI's
// mpirun (OMPI_COMM_WORLD_SIZE), PMIx launchers such as srun --mpi=pmix
// (PMIX_RANK) and PMI-2 ones such as srun --mpi=pmi2 or MPICH's hydra
// (PMI_RANK, PMI_SIZE).
bool StartedByMpiLauncher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

#if !ROTOR_WITH_MPI
// The job's size as the launcher announced it, when it did; 1 otherwise.
long LauncherJobSize() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* value = std::getenv(name)) return std::atol(value);
  }
  return 1;
}
#endif

}  // namespace

std::unique_ptr<PendingSum> SingleProcess::StartSum(float* data, size_t count,
                                                    const std::string& what) {
  return std::make_unique<CompleteSum>();
}

void SingleProcess::Abort(const std::string& message) {
  std::cerr << message << std::endl;
  std::exit(1);
}

Communicator& SingleProcessCommunicator() {
  static SingleProcess single;
  return single;
}

// Equal values have equal maxima and minima; max(-x) = -min(x). The 64-bit
// value goes as two 32-bit halves, which doubles hold exactly.
bool SameOnAllRanks(Communicator& communicator, uint64_t value,
                    const std::string& what) {
  const double high = static_cast<double>(value >> 32);
  const double low = static_cast<double>(value & 0xffffffffu);
  std::vector<double> extremes = {high, low, -high, -low};
  communicator.Max(extremes.data(), extremes.size(), what);
  return extremes[0] == -extremes[2] && extremes[1] == -extremes[3];
}

std::unique_ptr<Communicator> StartCommunicator() {
  if (!StartedByMpiLauncher()) return std::make_unique<SingleProcess>();
#if ROTOR_WITH_MPI
  return StartMpiCommunicator();
#else
  const long size = LauncherJobSize();
  ROTOR_CHECK(size <= 1, "an MPI launcher started this rotor as one of ", size,
              " processes, but it was built without MPI (no libopenmpi-dev "
              "when CMake ran, or -DROTOR_WITH_MPI=OFF), so each would train "
              "alone into the same output_dir. Install libopenmpi-dev and "
              "rebuild (bash scripts/setup.sh), or run rotor without mpirun");
  return std::make_unique<SingleProcess>();
#endif
}

}  // namespace rotor::train

// Data-parallel training's one view of the other processes of a job
// (docs/distributed.md). N copies of rotor, started by `mpirun -np N` or a
// cluster's `srun`, each hold the whole model, train on their own share of
// every step's batch and add their gradients together, so they take the same
// optimizer step. What they need from each other is small: a rank and a
// size, in-place sums (gradients in float; losses and token counts in
// double), a maximum, a broadcast (ZeRO stage 1's updated weights), a
// barrier, and a way to stop every rank at once.
//
// Two implementations: SingleProcess (rank 0 of 1: every collective is a
// no-op), and the MPI one in mpi_communicator.cc, the only file that
// includes mpi.h (cmake/check_layers.cmake). StartCommunicator picks one.
//
// Waits are bounded: a collective that the other ranks do not join within
// timeout_seconds() throws rotor::Error naming what it was waiting for
// (another rank died, or hangs), instead of blocking forever.
#ifndef ROTOR_TRAIN_DISTRIBUTED_COMMUNICATOR_H_
#define ROTOR_TRAIN_DISTRIBUTED_COMMUNICATOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace rotor::train {

// A sum over the ranks started by Communicator::StartSum that runs while the
// caller goes on working (the rest of the backward pass).
class PendingSum {
 public:
  virtual ~PendingSum() = default;
  // Lets the transport move the sum along (MPI makes progress only inside
  // its calls); true once it is complete. Never blocks.
  virtual bool Test() = 0;
  // Returns once the sum is in the buffer; throws rotor::Error after the
  // communicator's timeout.
  virtual void Wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;  // 0 .. size() - 1; rank 0 writes the files
  virtual int size() const = 0;  // processes in the job
  // Processes of this job on this machine, sharing its cores.
  virtual int local_size() const = 0;

  // Starts summing data[0, count) over the ranks, in place: when it is
  // complete every rank holds the same sum. All ranks start the same sums
  // in the same order; `what` names it in a timeout error.
  virtual std::unique_ptr<PendingSum> StartSum(float* data, size_t count,
                                               const std::string& what) = 0;
  // Blocking in-place sum and maximum over the ranks, in double.
  virtual void Sum(double* data, size_t count, const std::string& what) = 0;
  virtual void Max(double* data, size_t count, const std::string& what) = 0;
  // Copies rank `root`'s data[0, count) into every rank's `data`.
  virtual void Broadcast(float* data, size_t count, int root,
                         const std::string& what) = 0;
  // Returns once every rank has called it.
  virtual void Barrier(const std::string& what) = 0;
  // Prints `message` (this rank's error) and ends every rank of the job
  // with exit status 1. Only for jobs of more than one process: a single
  // process reports its error by returning it.
  [[noreturn]] virtual void Abort(const std::string& message) = 0;

  double timeout_seconds() const { return timeout_seconds_; }
  void set_timeout_seconds(double seconds) { timeout_seconds_ = seconds; }

 private:
  double timeout_seconds_ = 300.0;
};

// The communicator of a process that trains alone.
class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_size() const override { return 1; }
  std::unique_ptr<PendingSum> StartSum(float* data, size_t count,
                                       const std::string& what) override;
  void Sum(double* data, size_t count, const std::string& what) override {}
  void Max(double* data, size_t count, const std::string& what) override {}
  void Broadcast(float* data, size_t count, int root,
                 const std::string& what) override {}
  void Barrier(const std::string& what) override {}
  [[noreturn]] void Abort(const std::string& message) override;
};

// A process-wide SingleProcess, for code that trains alone.
Communicator& SingleProcessCommunicator();

// True when every rank holds the same `value` (a fingerprint of its state).
bool SameOnAllRanks(Communicator& communicator, uint64_t value,
                    const std::string& what);

// The communicator of this process: MPI's when an MPI launcher started it
// (mpirun/mpiexec, or srun with PMIx or PMI-2) and rotor was built with MPI,
// else SingleProcess. A rotor built without MPI that a launcher started as
// one of several processes throws rotor::Error: each would train alone and
// write the same output_dir. Call once per process, before any thread is
// started; MPI is shut down when the communicator is destroyed.
std::unique_ptr<Communicator> StartCommunicator();

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DISTRIBUTED_COMMUNICATOR_H_

// The MPI implementation of Communicator (communicator.h), for a process
// that an MPI launcher started. Built only with MPI (CMake's ROTOR_WITH_MPI);
// its .cc is the one file of rotor that includes mpi.h.
#ifndef ROTOR_TRAIN_DISTRIBUTED_MPI_COMMUNICATOR_H_
#define ROTOR_TRAIN_DISTRIBUTED_MPI_COMMUNICATOR_H_

#include <memory>

#include "train/distributed/communicator.h"

namespace rotor::train {

// Initialises MPI (MPI_THREAD_FUNNELED: only the main thread calls MPI; the
// oneTBB workers never do), has MPI calls return their errors instead of
// aborting, and, while it lives, reports a SIGTERM from the launcher (which
// ends every rank when one fails) on stderr before exiting. Its destructor
// finalises MPI.
std::unique_ptr<Communicator> StartMpiCommunicator();

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_DISTRIBUTED_MPI_COMMUNICATOR_H_

#include "train/distributed/mpi_communicator.h"

#include <mpi.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>

#include "core/error.h"

namespace rotor::train {

namespace {

// What a rank prints when the launcher stops it, prepared before the
// signal can come (a handler may only call async-signal-safe functions).
char sigterm_message[512];

void ReportSigtermAndExit(int) {
  ssize_t ignored = write(STDERR_FILENO, sigterm_message,
                          std::strlen(sigterm_message));
  (void)ignored;
  _exit(128 + SIGTERM);
}

std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

// MPI calls return their errors (MPI_ERRORS_RETURN below): any error names
// the call's purpose.
void Check(int code, const std::string& what) {
  ROTOR_CHECK(code == MPI_SUCCESS, "MPI failed while ", what, ": ",
              MpiErrorText(code));
}

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class MpiCommunicator;

class MpiPendingSum final : public PendingSum {
 public:
  MpiPendingSum(const MpiCommunicator& communicator, MPI_Request request,
                std::string what)
      : communicator_(communicator), request_(request), what_(std::move(what)) {}
  bool Test() override;
  void Wait() override;

 private:
  const MpiCommunicator& communicator_;
  MPI_Request request_;
  std::string what_;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    int provided = 0;
    Check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
          "starting (MPI_Init_thread)");
    ROTOR_CHECK(provided >= MPI_THREAD_FUNNELED,
                "this MPI library offers thread level ", provided,
                " only; rotor needs MPI_THREAD_FUNNELED (threads compute, "
                "the main thread alone calls MPI)");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    Check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                              MPI_INFO_NULL, &local),
          "finding the ranks of this machine");
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
    std::snprintf(
        sigterm_message, sizeof(sigterm_message),
        "rotor: rank %d of %d stopped by SIGTERM: the launcher ends every "
        "rank when one of them fails or is interrupted (see its message). "
        "Only checkpoints that every rank reached were published: run the "
        "same command again to resume from the newest.\n",
        rank_, size_);
    struct sigaction action = {};
    action.sa_handler = ReportSigtermAndExit;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, &previous_sigterm_);
  }

  ~MpiCommunicator() override {
    sigaction(SIGTERM, &previous_sigterm_, nullptr);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return local_size_; }

  std::unique_ptr<PendingSum> StartSum(float* data, size_t count,
                                       const std::string& what) override {
    MPI_Request request;
    Check(MPI_Iallreduce(MPI_IN_PLACE, data, CountOf(count, what), MPI_FLOAT,
                         MPI_SUM, MPI_COMM_WORLD, &request),
          what);
    return std::make_unique<MpiPendingSum>(*this, request, what);
  }

  void Sum(double* data, size_t count, const std::string& what) override {
    Reduce(data, count, MPI_SUM, what);
  }

  void Max(double* data, size_t count, const std::string& what) override {
    Reduce(data, count, MPI_MAX, what);
  }

  void Broadcast(float* data, size_t count, int root,
                 const std::string& what) override {
    MPI_Request request;
    Check(MPI_Ibcast(data, CountOf(count, what), MPI_FLOAT, root,
                     MPI_COMM_WORLD, &request),
          what);
    Wait(request, what);
  }

  void Barrier(const std::string& what) override {
    MPI_Request request;
    Check(MPI_Ibarrier(MPI_COMM_WORLD, &request), what);
    Wait(request, what);
  }

  void Abort(const std::string& message) override {
    std::cerr << message << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);  // MPI_Abort does not return; this is for the compiler
  }

  // Waits for `request` without blocking inside MPI, so that a rank that
  // never joins cannot hang this one: MPI_Test drives the transport; after
  // the first millisecond the loop sleeps 100 us between tests, leaving the
  // core to the other ranks' compute. Throws after timeout_seconds().
  void Wait(MPI_Request& request, const std::string& what) const {
    const double start = Now();
    for (;;) {
      int done = 0;
      Check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      const double waited = Now() - start;
      if (waited > timeout_seconds()) {
        throw Error(StrCat(
            "no answer from the other ranks for ", timeout_seconds(),
            " s while ", what,
            " (train.collective_timeout_seconds): a rank has died or stopped "
            "responding"));
      }
      if (waited > 1e-3) {
        const timespec pause = {0, 100000};
        nanosleep(&pause, nullptr);
      }
    }
  }

 private:
  int CountOf(size_t count, const std::string& what) const {
    ROTOR_CHECK(count <= static_cast<size_t>(INT32_MAX), "while ", what, ": ",
                count, " values in one MPI call (at most ", INT32_MAX, ")");
    return static_cast<int>(count);
  }

  void Reduce(double* data, size_t count, MPI_Op op, const std::string& what) {
    MPI_Request request;
    Check(MPI_Iallreduce(MPI_IN_PLACE, data, CountOf(count, what), MPI_DOUBLE,
                         op, MPI_COMM_WORLD, &request),
          what);
    Wait(request, what);
  }

  int rank_ = 0;
  int size_ = 1;
  int local_size_ = 1;
  struct sigaction previous_sigterm_ = {};
};

bool MpiPendingSum::Test() {
  if (request_ == MPI_REQUEST_NULL) return true;
  int done = 0;
  Check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), what_);
  return done != 0;
}

void MpiPendingSum::Wait() {
  if (request_ != MPI_REQUEST_NULL) communicator_.Wait(request_, what_);
}

}  // namespace

std::unique_ptr<Communicator> StartMpiCommunicator() {
  return std::make_unique<MpiCommunicator>();
}

}  // namespace rotor::train

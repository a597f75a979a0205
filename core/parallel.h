// One threading policy for all of rotor: oneTBB runs row-parallel kernels,
// sized by SetNumThreads(). Matrix products are split over row blocks on the
// same threads, each block one single-threaded oneDNN or OpenBLAS call
// (core/ops/gemm.h); neither library's own thread pool is used (OpenBLAS's
// threads busy-wait between calls and would compete with TBB's for the
// same cores; oneDNN's OpenMP team is one thread per caller).
//
// Determinism: kernels split work over independent rows only and never reduce
// floats across threads, so a given thread count (and seed) gives bitwise the
// same results run to run.
#ifndef ROTOR_CORE_PARALLEL_H_
#define ROTOR_CORE_PARALLEL_H_

#include <cstdint>
#include <functional>

namespace rotor {

// Sets the number of worker threads: 1 is the serial mode (no TBB tasks at
// all), 0 means every hardware thread. Keeps OpenBLAS single-threaded.
void SetNumThreads(int threads);
// The current thread count (>= 1).
int NumThreads();
// Hardware threads available to this process.
int HardwareThreads();

// Calls body(begin, end) over disjoint ranges that cover [0, n). Ranges hold
// at least `grain` items (except the last); with one thread, or n <= grain,
// it is a single call body(0, n) on the calling thread.
void ParallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t begin, int64_t end)>& body);

// For a program's main(), before anything else. OpenBLAS's pthread build
// starts its server threads when it is loaded, before main, and each one
// reserves a 128 MiB work buffer and retries forever if it cannot: under an
// address-space limit (`ulimit -v`, `prlimit --as`) below that, the process
// hangs, even at exit (which joins those threads). rotor never uses them, and
// OPENBLAS_NUM_THREADS=1 makes OpenBLAS start none. So when RLIMIT_AS is set
// and OPENBLAS_NUM_THREADS is not, this re-executes the program
// (/proc/self/exe, same arguments) with OPENBLAS_NUM_THREADS=1; otherwise,
// or if exec fails, it returns and the program goes on as it is.
void RestartWithoutBlasThreadsUnderAddressLimit(char** argv);

}  // namespace rotor

#endif  // ROTOR_CORE_PARALLEL_H_

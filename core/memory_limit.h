// How much memory this process may still use, so that a run too large for
// the machine is refused with a message before anything is allocated
// (train/config/memory_estimate.h), instead of failing mid-allocation.
#ifndef ROTOR_CORE_MEMORY_LIMIT_H_
#define ROTOR_CORE_MEMORY_LIMIT_H_

#include <cstdint>
#include <string>

namespace rotor {

struct MemoryLimit {
  uint64_t bytes = 0;  // what is left under the tightest limit
  std::string source;  // which limit, e.g. "physical memory"
};

// The least of: physical memory; the address-space limit (RLIMIT_AS, as set
// by `ulimit -v` or `prlimit --as`) minus the address space already mapped;
// the cgroup's memory.max minus its memory.current (containers).
MemoryLimit UsableMemory();

// Address space this process may still map under RLIMIT_AS (limit minus
// what is mapped now), or UINT64_MAX when there is no such limit. Unlike
// physical memory, reserving address space counts here even if it is never
// touched (e.g. OpenBLAS's work buffers, core/ops/gemm_openblas.cc).
uint64_t AddressSpaceLeft();

// Throws "OP: LIBRARY needs N of address space PURPOSE, but only M is left
// under the address-space limit (RLIMIT_AS); ..." unless `bytes` are left:
// for the libraries that do not fail cleanly when a reservation does
// (core/ops/gemm_openblas.cc, core/ops/gemm_onednn.cc).
void CheckAddressSpaceLeft(uint64_t bytes, const char* op, const char* library,
                           const char* purpose);

// The most physical memory this process has held at once so far (the peak
// resident set, getrusage's ru_maxrss).
uint64_t PeakResidentBytes();

// "1.5 GiB", "12.0 KiB", "100 bytes".
std::string FormatBytes(double bytes);

}  // namespace rotor

#endif  // ROTOR_CORE_MEMORY_LIMIT_H_

#include "core/memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "core/error.h"

namespace rotor {
namespace {

// The first unsigned integer in `path`, or nothing ("max", missing file).
bool ReadNumber(const char* path, uint64_t& value) {
  std::ifstream in(path);
  return static_cast<bool>(in >> value);
}

void Tighten(MemoryLimit& limit, uint64_t limit_bytes, uint64_t used_bytes,
             const char* source) {
  const uint64_t left = limit_bytes > used_bytes ? limit_bytes - used_bytes : 0;
  if (left < limit.bytes) limit = {left, source};
}

}  // namespace

uint64_t AddressSpaceLeft() {
  rlimit address_space{};
  uint64_t mapped_pages = 0;
  if (getrlimit(RLIMIT_AS, &address_space) != 0 ||
      address_space.rlim_cur == RLIM_INFINITY ||
      !ReadNumber("/proc/self/statm", mapped_pages)) {
    return UINT64_MAX;
  }
  const uint64_t mapped =
      mapped_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return address_space.rlim_cur > mapped ? address_space.rlim_cur - mapped : 0;
}

void CheckAddressSpaceLeft(uint64_t bytes, const char* op, const char* library,
                           const char* purpose) {
  const uint64_t left = AddressSpaceLeft();
  ROTOR_CHECK(left >= bytes, op, ": ", library, " needs ", FormatBytes(bytes),
              " of address space ", purpose, ", but only ", FormatBytes(left),
              " is left under the address-space limit (RLIMIT_AS); raise it "
              "(ulimit -v) or use fewer threads");
}

MemoryLimit UsableMemory() {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  MemoryLimit limit{static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * page,
                    "physical memory"};
  Tighten(limit, AddressSpaceLeft(), 0, "the address-space limit (RLIMIT_AS)");
  uint64_t cgroup_max = 0;
  uint64_t cgroup_current = 0;
  if (ReadNumber("/sys/fs/cgroup/memory.max", cgroup_max) &&
      ReadNumber("/sys/fs/cgroup/memory.current", cgroup_current)) {
    Tighten(limit, cgroup_max, cgroup_current, "the cgroup's memory.max");
  }
  return limit;
}

uint64_t PeakResidentBytes() {
  struct rusage usage {};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
}

std::string FormatBytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 6) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[64];
  if (unit == 0) {
    std::snprintf(text, sizeof(text), "%.0f bytes", bytes);
  } else {
    std::snprintf(text, sizeof(text), "%.1f %s", bytes, units[unit]);
  }
  return text;
}

}  // namespace rotor

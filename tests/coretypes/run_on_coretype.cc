// run_on_coretype CORETYPE COMMAND [ARGS...]: runs COMMAND with OpenBLAS
// forced to CORETYPE's kernels (OPENBLAS_CORETYPE), or exits 77, which ctest
// counts as skipped, when this CPU lacks the instructions those kernels use.
//
// OpenBLAS (DYNAMIC_ARCH, as Debian builds it) picks its kernels at load time
// from the CPU: SKYLAKEX on AVX-512 parts, HASWELL or ZEN on AVX2 parts,
// SANDYBRIDGE on AVX-only ones, NEHALEM before that. Their blocking and edge
// handling round differently, so a promise of equal bits has to be tested on
// each (tests/CMakeLists.txt, label coretypes). OPENBLAS_CORETYPE forces a
// kernel set without checking the CPU can run it, hence the check here; the
// test OpenBlas.RunsTheRequestedCoreType checks that OpenBLAS took it.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kSkipped = 77;

// The instructions each core type's kernels need (OpenBLAS's
// driver/others/dynamic.c picks them by the same features).
bool CpuRuns(const std::string& coretype) {
  __builtin_cpu_init();
  if (coretype == "Nehalem") return __builtin_cpu_supports("sse4.2");
  if (coretype == "Sandybridge") return __builtin_cpu_supports("avx");
  if (coretype == "Haswell" || coretype == "Zen") {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }
  if (coretype == "SkylakeX") {
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512cd");
  }
  std::fprintf(stderr, "run_on_coretype: unknown core type '%s'\n",
               coretype.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: run_on_coretype CORETYPE COMMAND [ARGS...]\n");
    return 2;
  }
  const std::string coretype = argv[1];
  if (!CpuRuns(coretype)) {
    std::printf(
        "run_on_coretype: skipped: this CPU lacks the instructions "
        "of OpenBLAS's %s kernels\n",
        coretype.c_str());
    return kSkipped;
  }
  setenv("OPENBLAS_CORETYPE", coretype.c_str(), 1);
  execvp(argv[2], argv + 2);
  std::fprintf(stderr, "run_on_coretype: cannot run %s: %s\n", argv[2],
               std::strerror(errno));
  return 2;
}

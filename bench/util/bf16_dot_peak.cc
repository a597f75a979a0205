// The bf16 dot-product limit of one thread (bench_util.h Bf16DotPeakGflops):
// kChains independent chains of AVX512_BF16's VDPBF16PS on 512-bit vectors,
//
//   acc_i <- acc_i + a[2j] b[2j] + a[2j+1] b[2j+1]   (16 float lanes, 32
//                                                     bf16 pairs)
//
// 64 FLOPs per instruction, timed in the thread's CPU time. This is the
// instruction Highway's ReorderWidenMulAccumulate would use for bf16 tiles
// (Highway 1.0.3 does not: it widens and runs two FMAs). Where it retires
// half as many instructions per cycle as 512-bit FMAs (measured on an
// Intel Xeon with AMX: 105 against 210 GFLOP/s), bf16 dot products are no
// faster than float32 ones, and bf16 runs fast only on AMX (oneDNN's
// matmuls). Intrinsics with a target attribute, outside Highway, since no
// Highway target of this version requires AVX512_BF16.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "bench/bench_util.h"
#include "core/profile.h"

namespace rotor {
namespace bench {
namespace {

constexpr int kChains = 12;

__attribute__((target("avx512f,avx512bf16"))) float DotChains(
    int64_t iterations) {
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // 1.0, 1.0
  const __m512bh b = (__m512bh)_mm512_set1_epi32(0x33d633d6);  // ~1e-7
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i));
  for (int64_t n = 0; n < iterations; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) {
      acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    }
  }
  float lanes[16];
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  _mm512_storeu_ps(lanes, sum);
  float total = 0.0f;
  for (const float lane : lanes) total += lane;
  return total;
}

}  // namespace

double Bf16DotPeakGflops() {
  static const double gflops = [] {
    if (!__builtin_cpu_supports("avx512bf16")) return 0.0;
    static volatile float sink = 0.0f;
    constexpr int64_t kIterations = 10'000'000;
    double best = 0.0;
    for (int run = 0; run < 3; ++run) {
      const double start = profile::ThreadCpuSeconds();
      sink = sink + DotChains(kIterations);
      const double seconds = profile::ThreadCpuSeconds() - start;
      best = std::max(best, 64.0 * kChains * kIterations / seconds / 1e9);
    }
    return best;
  }();
  return gflops;
}

}  // namespace bench
}  // namespace rotor

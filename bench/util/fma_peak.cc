// The machine's float32 multiply-add limit for one thread (bench_util.h
// FmaPeakGflops): kChains independent fused multiply-add chains of the
// widest vector Highway dispatches to, held in registers,
//
//   a_i <- a_i * b + c   for i = 0..kChains-1, `iterations` times,
//
// 2 * kChains * lanes FLOPs per iteration, timed in the thread's CPU time.
// Twelve chains cover the FMA latency (4 cycles) times the FMA ports (2) of
// every x86 core rotor runs on, with registers to spare (16 on AVX2, 32 on
// AVX-512), so the loop is bound by FMA throughput alone. This file is
// compiled once per Highway target (foreach_target.h re-includes it).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/util/fma_peak.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rotor {
namespace bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int kChains = 12;

// Runs the chains; returns their lanes summed (so nothing is optimised
// away) and the vector width in floats through `lanes`.
float FmaChains(int64_t iterations, size_t* lanes) {
  const hn::ScalableTag<float> d;
  *lanes = hn::Lanes(d);
  const auto b = hn::Set(d, 1.0000001f), c = hn::Set(d, 1e-7f);
  auto a0 = hn::Set(d, 0.0f), a1 = hn::Set(d, 1.0f), a2 = hn::Set(d, 2.0f);
  auto a3 = hn::Set(d, 3.0f), a4 = hn::Set(d, 4.0f), a5 = hn::Set(d, 5.0f);
  auto a6 = hn::Set(d, 6.0f), a7 = hn::Set(d, 7.0f), a8 = hn::Set(d, 8.0f);
  auto a9 = hn::Set(d, 9.0f), a10 = hn::Set(d, 10.0f), a11 = hn::Set(d, 11.f);
  for (int64_t i = 0; i < iterations; ++i) {
    a0 = hn::MulAdd(a0, b, c), a1 = hn::MulAdd(a1, b, c);
    a2 = hn::MulAdd(a2, b, c), a3 = hn::MulAdd(a3, b, c);
    a4 = hn::MulAdd(a4, b, c), a5 = hn::MulAdd(a5, b, c);
    a6 = hn::MulAdd(a6, b, c), a7 = hn::MulAdd(a7, b, c);
    a8 = hn::MulAdd(a8, b, c), a9 = hn::MulAdd(a9, b, c);
    a10 = hn::MulAdd(a10, b, c), a11 = hn::MulAdd(a11, b, c);
  }
  const auto sum = hn::Add(hn::Add(hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)),
                                   hn::Add(hn::Add(a4, a5), hn::Add(a6, a7))),
                           hn::Add(hn::Add(a8, a9), hn::Add(a10, a11)));
  return hn::GetLane(hn::SumOfLanes(d, sum));
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace bench
}  // namespace rotor
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "bench/bench_util.h"
#include "core/profile.h"

namespace rotor {
namespace bench {

HWY_EXPORT(FmaChains);
HWY_EXPORT(TargetName);

FmaPeak MeasureFmaPeak() {
  static volatile float sink = 0.0f;
  constexpr int64_t kIterations = 20'000'000;  // ~50 ms at 200 GFLOP/s
  FmaPeak peak;
  peak.target = HWY_DYNAMIC_DISPATCH(TargetName)();
  for (int run = 0; run < 3; ++run) {
    size_t lanes = 0;
    const double start = profile::ThreadCpuSeconds();
    sink = sink + HWY_DYNAMIC_DISPATCH(FmaChains)(kIterations, &lanes);
    const double seconds = profile::ThreadCpuSeconds() - start;
    peak.lanes = static_cast<int>(lanes);
    const double flops = 2.0 * HWY_NAMESPACE::kChains * lanes * kIterations;
    peak.gflops = std::max(peak.gflops, flops / seconds / 1e9);
  }
  return peak;
}

double FmaPeakGflops() {
  static const double gflops = MeasureFmaPeak().gflops;
  return gflops;
}

}  // namespace bench
}  // namespace rotor
#endif  // HWY_ONCE

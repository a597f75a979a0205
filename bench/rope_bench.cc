// RoPE kernel throughput (core/kernels/rope.h) against the machine's copy
// bandwidth measured in the same run, and against the scalar reference
// (core/kernels/rope_scalar.h) with the same thread split.
//
// Queries and keys both have the printed shape [batch, heads, seq, head_dim]
// and are rotated in one fused call (split-half layout unless a row says
// interleaved; positions 0..seq-1; full rotary). GB/s counts the bytes the
// kernel must read and write (1e9 bytes per GB), the table not included:
//   forward (out of place or in place):  read q, k; write q, k    2 x size
//   backward, accumulating (dq += R^T dy): read dy, dq; write dq  3 x size
//   backward, fresh gradient (dq = R^T dy, what the Rope op and PyTorch's
//     autograd do): read dy; write dq                              2 x size
//   backward, in place (dy <- R^T dy):   read dy; write dy        2 x size
// "copy" is memcpy over a buffer as large as the kernel's footprint (in +
// out), with the same thread count, counted as read + write.
//
//   build/bench/rope_bench            # both shapes, 1 and 2 threads
//   build/bench/rope_bench --quick    # smaller repeat count
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/kernels/rope.h"
#include "core/kernels/rope_scalar.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace rotor {
namespace {

using kernels::RopeOperand;
using kernels::RopeOperandRef;
using kernels::RopePositions;
using kernels::RopeShape;
using kernels::RopeStrides;
using kernels::RopeTable;

struct BenchShape {
  int64_t batch, heads, seq, head_dim;
};

void PrintRow(const char* what, double bytes, double seconds, double copy) {
  const double gbs = bytes / seconds / 1e9;
  std::printf("  %-34s %8.2f ms %8.2f GB/s %6.0f%% of copy\n", what,
              seconds * 1e3, gbs, 100.0 * gbs / copy);
}

void Run(const BenchShape& s, int threads, int repeats) {
  SetNumThreads(threads);
  const int64_t n = s.batch * s.heads * s.seq * s.head_dim;
  const double size = 2.0 * n * sizeof(float);  // q and k
  const RopeShape shape{s.batch, s.seq, s.head_dim, s.head_dim,
                        kernels::RopeLayout::kSplitHalf};
  const RopeStrides strides =
      kernels::ContiguousRopeStrides(s.heads, s.seq, s.head_dim);
  const RopePositions positions{};
  RopeTable table = RopeTable::Default(s.head_dim, 10000.0);
  const auto rows = table.Rows(s.seq);

  Tensor q = Tensor::Full({n}, 0.5f), k = Tensor::Full({n}, 0.25f);
  Tensor q_out = Tensor::Full({n}, 0.0f), k_out = Tensor::Full({n}, 0.0f);
  const double copy = bench::CopyBandwidthGBs(size, repeats);

  std::printf(
      "[%lld, %lld, %lld, %lld] q and k (%.0f MiB each), %d thread%s, "
      "copy %.2f GB/s\n",
      (long long)s.batch, (long long)s.heads, (long long)s.seq,
      (long long)s.head_dim, n * 4.0 / (1 << 20), threads,
      threads == 1 ? "" : "s", copy);

  auto operand = [&](Tensor& src, Tensor& dst) {
    return RopeOperand{src.data(), strides, dst.data(), strides, s.heads};
  };
  const RopeOperand q_oop = operand(q, q_out), k_oop = operand(k, k_out);
  const RopeOperand q_ip = operand(q, q), k_ip = operand(k, k);

  PrintRow(
      "forward, out of place", 2 * size,
      bench::BestSeconds(
          [&] { kernels::RopeForward(*rows, shape, positions, q_oop, k_oop); },
          repeats),
      copy);
  PrintRow(
      "forward, in place", 2 * size,
      bench::BestSeconds(
          [&] { kernels::RopeForward(*rows, shape, positions, q_ip, k_ip); },
          repeats),
      copy);
  PrintRow("backward, accumulating", 3 * size,
           bench::BestSeconds(
               [&] {
                 kernels::RopeBackward(*rows, shape, positions, q_oop, k_oop,
                                       true);
               },
               repeats),
           copy);
  PrintRow("backward, fresh gradient (Rope op)", 2 * size,
           bench::BestSeconds(
               [&] {
                 kernels::RopeBackward(*rows, shape, positions, q_oop, k_oop,
                                       false);
               },
               repeats),
           copy);
  PrintRow("backward, in place", 2 * size,
           bench::BestSeconds(
               [&] {
                 kernels::RopeBackward(*rows, shape, positions, q_ip, k_ip,
                                       false);
               },
               repeats),
           copy);

  RopeShape interleaved = shape;
  interleaved.layout = kernels::RopeLayout::kInterleaved;
  PrintRow("interleaved forward, out of place", 2 * size,
           bench::BestSeconds(
               [&] {
                 kernels::RopeForward(*rows, interleaved, positions, q_oop,
                                      k_oop);
               },
               repeats),
           copy);
  PrintRow("interleaved forward, in place", 2 * size,
           bench::BestSeconds(
               [&] {
                 kernels::RopeForward(*rows, interleaved, positions, q_ip,
                                      k_ip);
               },
               repeats),
           copy);

  // The scalar reference, split over tokens on the same threads.
  const float* ref_rows = rows->row(0);
  auto reference = [&](bool inverse, bool accumulate) {
    const RopeOperandRef<float> q_ref{q.data(), strides, q_out.data(), strides,
                                      s.heads};
    const RopeOperandRef<float> k_ref{k.data(), strides, k_out.data(), strides,
                                      s.heads};
    ParallelFor(s.batch * s.seq, 16, [&](int64_t begin, int64_t end) {
      kernels::RopeTokensRef(ref_rows, shape, positions, q_ref, inverse,
                             accumulate, begin, end);
      kernels::RopeTokensRef(ref_rows, shape, positions, k_ref, inverse,
                             accumulate, begin, end);
    });
  };
  PrintRow("scalar reference forward", 2 * size,
           bench::BestSeconds([&] { reference(false, false); }, repeats), copy);
  PrintRow("scalar reference backward, accum.", 3 * size,
           bench::BestSeconds([&] { reference(true, true); }, repeats), copy);
}

}  // namespace
}  // namespace rotor

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int repeats = quick ? 3 : 10;
  std::printf("RoPE kernels, target %s, fused q+k\n",
              rotor::kernels::RopeTarget());
  for (const rotor::BenchShape& shape : {rotor::BenchShape{8, 8, 1024, 64},
                                         rotor::BenchShape{1, 32, 4096, 128}}) {
    for (int threads : {1, 2}) rotor::Run(shape, threads, repeats);
  }
  return 0;
}

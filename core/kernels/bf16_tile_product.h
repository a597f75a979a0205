// The attention kernels' tile products in bfloat16 (train.precision: bf16):
// both operands rounded to bfloat16, products summed in float32 by
// AVX512_BF16's dot-product instruction VDPBF16PS, which on AMD Zen 4 and
// Zen 5 retires as many instructions as float32 FMAs, each with twice the
// multiply-adds (bench/gemm_bench prints both limits). Scalar twin:
// core/kernels/bf16_tile_product_scalar.h.
//
// Highway 1.0.3 (Debian bookworm's) has no target that requires
// AVX512_BF16 and runs its bf16 dot products (ReorderWidenMulAccumulate) as
// widening and two float32 FMAs, so these kernels are intrinsics compiled
// for AVX512_BF16 with a target attribute, run only where the CPU has it
// (Bf16DotSupported). The layouts are the instruction's:
//
//   a pair     a uint32 holding two bfloat16: element 2j in its low half,
//              2j + 1 in its high half, of one row of A along the depth;
//   packed A   pairs A(m, j), at a[m * a_row + j * a_col] (PackBf16Rows
//              gives a_row = its row length, a_col = 1; PackBf16PairRows
//              of A^T gives a_row = 1, a_col = its row length);
//   packed B   row j of pairs of B's rows 2j and 2j + 1, column by column:
//              b[j * ldb + n] = (B[2j, n], B[2j + 1, n]) (PackBf16PairRows),
//              ldb a multiple of 16 and every row zero-padded to it.
//
// The product, over the depth in pairs (an odd depth's last pair holds a
// zero):
//   C[m, n] = alpha * sum_j (A(m, 2j) B[2j, n] + A(m, 2j+1) B[2j+1, n])
//   C[m, n] += the same sum                                (accumulate)
// for m < rows, n < cols. Each element of C is one chain over j in order
// (per pair: the odd product added, then the even one, each product exact
// in float32 and each sum rounded to nearest even; denormal inputs read as
// zero and denormal sums flushed to zero, as the instruction does whatever
// MXCSR says), whatever the register blocking: a sub-block of a product is
// bitwise that part of the whole, and a zero pair adds nothing.
//
// Rounding to bfloat16 (the packers) is VCVTNE2PS2BF16's: to nearest even,
// a NaN stays a (quiet) NaN, and a denormal float becomes a zero of its
// sign. Every operand is read as given; C rows are c + m * ldc.
#ifndef ROTOR_CORE_KERNELS_BF16_TILE_PRODUCT_H_
#define ROTOR_CORE_KERNELS_BF16_TILE_PRODUCT_H_

#include <cstddef>
#include <cstdint>

namespace rotor {
namespace kernels {

// Whether this CPU runs the kernels below (AVX512_BF16 with AVX512 F, BW,
// VL and DQ); calling them elsewhere is undefined.
bool Bf16DotSupported();

// Whether bfloat16 tiles outrun float32 ones here: AVX512_BF16 on a CPU
// whose VDPBF16PS (32 multiply-adds) retires at the rate of a 512-bit FMA
// (16): AMD's Zen 4 and Zen 5 (gemm_bench's two limits on a Zen 4: 234
// against 117 GFLOP/s, one thread). Not on Intel's: the Xeon measured
// (AVX512_BF16 and AMX) ran them at half the FMA rate, 105 against 209
// GFLOP/s, where bf16 tiles would halve float32's speed.
bool Bf16DotOutrunsFloat32();

// Packed B's leading dimension for `cols` columns: cols rounded up to whole
// vectors of 16.
size_t Bf16PackedColumns(size_t cols);

// out[m * out_row + j] = (A[m, 2j], A[m, 2j + 1]) for m < rows, j <
// (depth + 1) / 2, with A[m, k] = a[m * lda + k] and A[m, depth] = 0: the
// rows of A, rounded, as packed A with a_row = out_row, a_col = 1.
void PackBf16Rows(const float* a, size_t lda, size_t rows, size_t depth,
                  uint32_t* out, size_t out_row);

// out[j * ldo + n] = (B[2j, n], B[2j + 1, n]) for j < (depth + 1) / 2 and n
// < cols, with B[k, n] = b[k * ldb + n] and B[depth, n] = 0; 0 for cols <=
// n < Bf16PackedColumns(cols) (ldo at least that). Packs B, or A^T (b = A
// stored transposed, cols = A's rows; then a_row = 1, a_col = ldo).
void PackBf16PairRows(const float* b, size_t ldb, size_t depth, size_t cols,
                      uint32_t* out, size_t ldo);

// The product above over `pairs` = (depth + 1) / 2 pairs, from packed A and
// packed B.
struct Bf16TileOperands {
  const uint32_t* a = nullptr;
  size_t a_row = 0;
  size_t a_col = 0;
  const uint32_t* b = nullptr;
  size_t ldb = 0;
  float* c = nullptr;
  size_t ldc = 0;
};
void Bf16TileProduct(bool accumulate, size_t rows, size_t cols, size_t pairs,
                     float alpha, const Bf16TileOperands& operands);

}  // namespace kernels
}  // namespace rotor

#endif  // ROTOR_CORE_KERNELS_BF16_TILE_PRODUCT_H_

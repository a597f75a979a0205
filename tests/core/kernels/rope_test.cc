// RoPE kernels (core/kernels/rope.h): the Highway kernels against the scalar
// reference on every compiled target; the reference against float64 and
// complex-step derivatives; the properties that make RoPE RoPE (relative
// positions, layouts equal up to a permutation, backward inverts forward,
// decoding matches the full sequence, pass-through channels untouched); the
// errors of a call. The table: rope_table_test.cc.
#include "core/kernels/rope.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernels/rope_scalar.h"
#include "core/tensor.h"
#include "tests/test_util.h"

namespace rotor {
namespace kernels {
namespace {

using test::ExpectNear;
using test::KernelTestMisalignments;
using test::RandomVector;

constexpr RopeLayout kLayouts[] = {RopeLayout::kSplitHalf,
                                   RopeLayout::kInterleaved};

// A [batch, heads, seq, head_dim] array inside a vector, `misalign` floats
// past an aligned start. `fused` lays it out as [batch, seq, heads,
// head_dim] in memory (the q or k view of a fused qkv projection).
struct Array {
  Array(int64_t batch, int64_t heads, int64_t seq, int64_t head_dim,
        size_t misalign, bool fused, std::mt19937& rng)
      : heads(heads), misalign(misalign) {
    values = RandomVector(batch * heads * seq * head_dim + misalign, rng);
    strides =
        fused ? RopeStrides{seq * heads * head_dim, head_dim, heads * head_dim}
              : ContiguousRopeStrides(heads, seq, head_dim);
  }
  float* data() { return values.data() + misalign; }
  int64_t heads;
  size_t misalign;
  std::vector<float> values;
  RopeStrides strides;
};

RopeOperand OperandOf(Array& src, Array& dst) {
  return {src.data(), src.strides, dst.data(), dst.strides, src.heads};
}
RopeOperandRef<float> RefOperandOf(Array& src, Array& dst) {
  return {src.data(), src.strides, dst.data(), dst.strides, src.heads};
}

// Random position ids in [0, max_position] for every (b, t).
RopePositions RandomIds(int64_t count, int64_t max_position,
                        std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> dist(0, max_position);
  RopePositions positions;
  for (int64_t i = 0; i < count; ++i) positions.ids.push_back(dist(rng));
  return positions;
}

// Runs forward, backward and accumulating backward for q and k through the
// kernel and through the float reference (same table) and compares them.
void CheckAgainstReference(const RopeShape& shape, int64_t q_heads,
                           int64_t k_heads, const RopePositions& positions,
                           size_t misalign, bool in_place, std::mt19937& rng,
                           const std::string& where) {
  RopeTable table(RopeTable::DefaultInvFreq(shape.rotary_dim, 10000.0), 1.25);
  const auto rows = table.Rows(RopePositionsEnd(shape, positions));
  const std::vector<float> ref_rows = RopeRowsRef<float>(
      table.inv_freq(), table.attention_factor(), rows->num_positions());
  const int64_t b = shape.batch, t = shape.seq, d = shape.head_dim;
  // q contiguous, k as the view of a fused buffer; outputs misaligned too.
  Array q(b, q_heads, t, d, misalign, false, rng);
  Array k(b, k_heads, t, d, misalign, true, rng);
  Array q_out(b, q_heads, t, d, (misalign * 3) % 7, true, rng);
  Array k_out(b, k_heads, t, d, (misalign * 5) % 7, false, rng);
  Array& q_dst = in_place ? q : q_out;
  Array& k_dst = in_place ? k : k_out;

  for (int pass = 0; pass < 3; ++pass) {
    const bool inverse = pass > 0;
    const bool accumulate = pass == 2;
    if (in_place && accumulate) continue;  // dst += R src with dst == src
    // Expected: the reference on copies of the same buffers.
    Array q_ref = q, k_ref = k, q_dst_ref = q_dst, k_dst_ref = k_dst;
    Array& q_ref_dst = in_place ? q_ref : q_dst_ref;
    Array& k_ref_dst = in_place ? k_ref : k_dst_ref;
    RopeTokensRef(ref_rows.data(), shape, positions,
                  RefOperandOf(q_ref, q_ref_dst), inverse, accumulate, 0,
                  shape.batch * shape.seq);
    RopeTokensRef(ref_rows.data(), shape, positions,
                  RefOperandOf(k_ref, k_ref_dst), inverse, accumulate, 0,
                  shape.batch * shape.seq);
    if (inverse) {
      RopeBackward(*rows, shape, positions, OperandOf(q, q_dst),
                   OperandOf(k, k_dst), accumulate);
    } else {
      RopeForward(*rows, shape, positions, OperandOf(q, q_dst),
                  OperandOf(k, k_dst));
    }
    const std::string what = where + " pass " + std::to_string(pass);
    // FMA (one rounding) against separate multiply and add: a few ulp.
    ExpectNear(q_dst.values.data(), q_ref_dst.values.data(),
               q_dst.values.size(), 1e-6, 1e-6, "q " + what);
    ExpectNear(k_dst.values.data(), k_ref_dst.values.data(),
               k_dst.values.size(), 1e-6, 1e-6, "k " + what);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

ROTOR_PER_TARGET_SUITE(RopeKernel);

// Every rotary half-size 1..34 (vector, tail and both) and the head dims the
// issue asks for, full and partial rotary, both layouts, misaligned
// pointers, position ids up to 100,000, in place and out of place.
ROTOR_PER_TARGET_TEST(RopeKernel, MatchesReference) {
  EXPECT_STREQ(RopeTarget(), TargetName());
  std::mt19937 rng(11);
  std::vector<std::pair<int64_t, int64_t>> dims;  // (head_dim, rotary_dim)
  for (int64_t r = 2; r <= 68; r += 2) dims.push_back({r, r});
  for (int64_t d : {2, 6, 14, 34, 130}) dims.push_back({d, d});
  for (auto [d, r] : std::vector<std::pair<int64_t, int64_t>>{
           {6, 2}, {14, 6}, {34, 16}, {130, 64}, {80, 20}, {67, 34}}) {
    dims.push_back({d, r});
  }
  for (RopeLayout layout : kLayouts) {
    for (size_t i = 0; i < dims.size(); ++i) {
      const auto [head_dim, rotary_dim] = dims[i];
      const RopeShape shape{2, 3, head_dim, rotary_dim, layout};
      const size_t misalign =
          KernelTestMisalignments()[i % KernelTestMisalignments().size()];
      const bool in_place = i % 2 == 1;
      const std::string where = std::string(RopeLayoutName(layout)) +
                                " head_dim " + std::to_string(head_dim) +
                                " rotary " + std::to_string(rotary_dim) +
                                " misalign " + std::to_string(misalign) +
                                (in_place ? " in place" : "");
      // Positions: an offset, then one id per (b, t).
      CheckAgainstReference(shape, 3, 1, RopePositions{7, {}}, misalign,
                            in_place, rng, where + " offset");
      // (Tables to 100,000 positions take a while to build: not every case.)
      const int64_t max_position = i % 8 == 0 ? 100000 : 500;
      CheckAgainstReference(shape, 2, 2, RandomIds(6, max_position, rng),
                            misalign, !in_place, rng, where + " ids");
      if (HasFatalFailure()) return;
    }
  }
}

// Empty batch or sequence: nothing to do, no table rows needed.
ROTOR_PER_TARGET_TEST(RopeKernel, EmptyIsANoOp) {
  RopeTable table = RopeTable::Default(8, 10000.0);
  const auto rows = table.Rows(1);
  std::vector<float> x(8, 1.0f);
  RopeOperand op{x.data(), {0, 0, 0}, x.data(), {0, 0, 0}, 1};
  RopeForward(*rows, RopeShape{0, 5, 8, 8, RopeLayout::kSplitHalf},
              RopePositions{}, op, RopeOperand());
  RopeForward(*rows, RopeShape{3, 0, 8, 8, RopeLayout::kInterleaved},
              RopePositions{}, op, RopeOperand());
  EXPECT_EQ(x, std::vector<float>(8, 1.0f));
}

// The two layouts are the same rotation up to the even/odd permutation
// perm = [0, 2, .., r-2, 1, 3, .., r-1]: split(x[perm]) == interleaved(x)[perm]
// bit for bit (same table entries, same operations per pair).
ROTOR_PER_TARGET_TEST(RopeKernel, LayoutsAgreeAfterPermutation) {
  std::mt19937 rng(12);
  for (int64_t r : {2, 6, 14, 34, 130}) {
    const int64_t seq = 9;
    RopeTable table = RopeTable::Default(r, 10000.0);
    const RopeShape split{1, seq, r, r, RopeLayout::kSplitHalf};
    RopeShape interleaved = split;
    interleaved.layout = RopeLayout::kInterleaved;
    const RopePositions positions{40000, {}};
    const std::vector<float> x = RandomVector(seq * r, rng);
    std::vector<float> x_perm(x.size());
    for (int64_t t = 0; t < seq; ++t) {
      for (int64_t i = 0; i < r / 2; ++i) {
        x_perm[t * r + i] = x[t * r + 2 * i];
        x_perm[t * r + r / 2 + i] = x[t * r + 2 * i + 1];
      }
    }
    std::vector<float> y_split(x.size()), y_inter(x.size());
    const RopeStrides strides = ContiguousRopeStrides(1, seq, r);
    RopeForward(table, split, positions,
                {x_perm.data(), strides, y_split.data(), strides, 1},
                RopeOperand());
    RopeForward(table, interleaved, positions,
                {x.data(), strides, y_inter.data(), strides, 1}, RopeOperand());
    for (int64_t t = 0; t < seq; ++t) {
      for (int64_t i = 0; i < r / 2; ++i) {
        ASSERT_EQ(y_split[t * r + i], y_inter[t * r + 2 * i])
            << "r " << r << " t " << t << " pair " << i;
        ASSERT_EQ(y_split[t * r + r / 2 + i], y_inter[t * r + 2 * i + 1])
            << "r " << r << " t " << t << " pair " << i;
      }
    }
  }
}

// Decoding one token at offset p (KV cache) gives exactly row p of the
// forward over the whole sequence, for q and k.
ROTOR_PER_TARGET_TEST(RopeKernel, DecodeMatchesFullSequence) {
  std::mt19937 rng(13);
  const int64_t seq = 37, heads = 2, d = 34;
  for (RopeLayout layout : kLayouts) {
    RopeTable table = RopeTable::Default(d, 500000.0);
    const std::vector<float> x = RandomVector(heads * seq * d, rng);
    std::vector<float> full(x.size());
    const RopeStrides strides = ContiguousRopeStrides(heads, seq, d);
    RopeForward(table, RopeShape{1, seq, d, d, layout}, RopePositions{},
                {x.data(), strides, full.data(), strides, heads},
                {x.data(), strides, full.data(), strides, 0});
    for (int64_t p : {0, 1, 17, 36}) {
      // Token p alone: same row strides, seq = 1, offset p.
      std::vector<float> one(heads * d);
      const RopeStrides one_strides{heads * d, d, d};
      const RopeStrides x_strides{heads * seq * d, seq * d, d};
      RopeForward(table, RopeShape{1, 1, d, d, layout}, RopePositions{p, {}},
                  {x.data() + p * d, x_strides, one.data(), one_strides, 1},
                  {x.data() + seq * d + p * d, x_strides, one.data() + d,
                   one_strides, 1});
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t j = 0; j < d; ++j) {
          ASSERT_EQ(one[h * d + j], full[(h * seq + p) * d + j])
              << RopeLayoutName(layout) << " p " << p << " h " << h << " j "
              << j;
        }
      }
    }
  }
}

// Partial rotary: channels [r, head_dim) come out bit-identical, forward and
// backward, in place and out of place; the accumulating backward adds them.
ROTOR_PER_TARGET_TEST(RopeKernel, PartialRotaryPassesThrough) {
  std::mt19937 rng(14);
  const int64_t seq = 5, d = 46, r = 12;
  for (RopeLayout layout : kLayouts) {
    RopeTable table = RopeTable::Default(r, 10000.0);
    const RopeShape shape{1, seq, d, r, layout};
    const RopeStrides strides = ContiguousRopeStrides(1, seq, d);
    const std::vector<float> x = RandomVector(seq * d, rng);
    std::vector<float> y(x.size()), in_place = x, grad = x;
    RopeForward(table, shape, RopePositions{3, {}},
                {x.data(), strides, y.data(), strides, 1}, RopeOperand());
    RopeForward(table, shape, RopePositions{3, {}},
                {in_place.data(), strides, in_place.data(), strides, 1},
                RopeOperand());
    RopeBackward(table, shape, RopePositions{3, {}},
                 {grad.data(), strides, grad.data(), strides, 1}, RopeOperand(),
                 false);
    std::vector<float> accumulated(x.size(), 0.5f);
    RopeBackward(table, shape, RopePositions{3, {}},
                 {x.data(), strides, accumulated.data(), strides, 1},
                 RopeOperand(), true);
    for (int64_t t = 0; t < seq; ++t) {
      for (int64_t j = r; j < d; ++j) {
        const float v = x[t * d + j];
        ASSERT_EQ(y[t * d + j], v) << "t " << t << " j " << j;
        ASSERT_EQ(in_place[t * d + j], v) << "t " << t << " j " << j;
        ASSERT_EQ(grad[t * d + j], v) << "t " << t << " j " << j;
        ASSERT_EQ(accumulated[t * d + j], 0.5f + v) << "t " << t << " j " << j;
      }
      // ... while the rotary channels did change.
      EXPECT_NE(y[t * d + 1], x[t * d + 1]);
    }
  }
}

// Outputs of 16 MiB and more, written out of place, take the streaming-store
// path: it must give bitwise the in-place (cached-store) result, with
// aligned rows (streamed) and misaligned ones (fallback), forward and
// backward, in both layouts.
ROTOR_PER_TARGET_TEST(RopeKernel, LargeOutOfPlaceMatchesInPlace) {
  std::mt19937 rng(16);
  const int64_t heads = 16, seq = 4096, d = 64;  // q + k: 2 x 16 MiB
  RopeTable table = RopeTable::Default(d, 10000.0);
  const RopeStrides strides = ContiguousRopeStrides(heads, seq, d);
  const int64_t n = heads * seq * d;
  const std::vector<float> x = RandomVector(n, rng);
  for (const RopeLayout layout :
       {RopeLayout::kSplitHalf, RopeLayout::kInterleaved}) {
    const RopeShape shape{1, seq, d, d, layout};
    for (size_t misalign : {0, 1}) {
      for (bool backward : {false, true}) {
        std::vector<float> in_place = x;
        // Tensor storage is 64-byte aligned (std::vector's is not).
        Tensor out = Tensor::Zeros({2 * n + 1});
        float* q_out = out.data() + misalign;
        float* k_out = q_out + n;
        const RopeOperand q_ip{in_place.data(), strides, in_place.data(),
                               strides, heads / 2};
        const RopeOperand k_ip{in_place.data() + n / 2, strides,
                               in_place.data() + n / 2, strides, heads / 2};
        const RopeOperand q{x.data(), strides, q_out, strides, heads / 2};
        const RopeOperand k{x.data() + n / 2, strides, k_out, strides,
                            heads / 2};
        if (backward) {
          RopeBackward(table, shape, RopePositions{}, q_ip, k_ip, false);
          RopeBackward(table, shape, RopePositions{}, q, k, false);
        } else {
          RopeForward(table, shape, RopePositions{}, q_ip, k_ip);
          RopeForward(table, shape, RopePositions{}, q, k);
        }
        ASSERT_TRUE(std::equal(q_out, q_out + n / 2, in_place.data()))
            << "q misalign " << misalign << " backward " << backward
            << " layout " << static_cast<int>(layout);
        ASSERT_TRUE(std::equal(k_out, k_out + n / 2, in_place.data() + n / 2))
            << "k misalign " << misalign << " backward " << backward;
      }
    }
  }
}

// One thread or two: bitwise the same (rows are independent).
ROTOR_PER_TARGET_TEST(RopeKernel, ThreadCountDoesNotChangeResults) {
  std::mt19937 rng(15);
  const int64_t batch = 3, heads = 4, seq = 300, d = 64;
  RopeTable table = RopeTable::Default(d, 10000.0);
  const RopeShape shape{batch, seq, d, d, RopeLayout::kInterleaved};
  const RopeStrides strides = ContiguousRopeStrides(heads, seq, d);
  const std::vector<float> x = RandomVector(batch * heads * seq * d, rng);
  auto forward = [&] {
    std::vector<float> y(x.size());
    RopeForward(table, shape, RopePositions{},
                {x.data(), strides, y.data(), strides, heads}, RopeOperand());
    return y;
  };
  const std::vector<float> serial = test::RunAtThreads(1, forward);
  EXPECT_EQ(serial, test::RunAtThreads(2, forward));
}

// ---- Target-independent tests ----

// The float kernel against the float64 truth (double table, double math):
// the only errors are float rounding of inputs, table and products, even at
// position 100,000 (the table's angles are formed in double).
TEST(RopeKernelNumerics, ForwardMatchesFloat64) {
  std::mt19937 rng(21);
  const int64_t heads = 2, seq = 6, d = 130;
  for (RopeLayout layout : kLayouts) {
    RopeTable table(RopeTable::DefaultInvFreq(d, 500000.0), 1.1);
    const RopeShape shape{1, seq, d, d, layout};
    const RopePositions positions{0, {0, 1, 4095, 30001, 99999, 100000}};
    const RopeStrides strides = ContiguousRopeStrides(heads, seq, d);
    const std::vector<float> x = RandomVector(heads * seq * d, rng);
    std::vector<float> y(x.size());
    RopeForward(table, shape, positions,
                {x.data(), strides, y.data(), strides, heads}, RopeOperand());
    const std::vector<double> rows64 =
        RopeRowsRef<double>(table.inv_freq(), 1.1, 100001);
    const std::vector<double> x64(x.begin(), x.end());
    std::vector<double> y64(x.size());
    RopeForwardRef<double>(rows64.data(), shape, positions,
                           {x64.data(), strides, y64.data(), strides, heads});
    ExpectNear(y.data(), y64.data(), y.size(), 5e-7, 5e-7, "float64");
  }
}

// The reference backward is the exact gradient of the reference forward:
// for L(x) = sum dy * forward(x), dL/dx by the complex step equals
// backward(dy), in double, for both layouts and partial rotary.
TEST(RopeKernelNumerics, ReferenceBackwardIsComplexStepGradient) {
  std::mt19937 rng(22);
  const int64_t heads = 2, seq = 3, d = 10, r = 6;
  for (RopeLayout layout : kLayouts) {
    const RopeShape shape{1, seq, d, r, layout};
    const RopePositions positions{0, {5, 1000, 77777}};
    const std::vector<double> inv_freq = RopeTable::DefaultInvFreq(r, 1e4);
    const RopeStrides strides = ContiguousRopeStrides(heads, seq, d);
    const std::vector<float> xf = RandomVector(heads * seq * d, rng);
    const std::vector<float> dyf = RandomVector(heads * seq * d, rng);
    const std::vector<double> x(xf.begin(), xf.end()),
        dy(dyf.begin(), dyf.end());
    using C = std::complex<double>;
    const std::vector<C> rows_c = RopeRowsRef<C>(inv_freq, 0.9, 77778);
    auto forward = [&](const std::vector<C>& xc) {
      std::vector<C> y(xc.size());
      RopeForwardRef<C>(rows_c.data(), shape, positions,
                        {xc.data(), strides, y.data(), strides, heads});
      return y;
    };
    const std::vector<double> expected =
        test::ComplexStepGradientOfWeightedSum(forward, x, dy);
    const std::vector<double> rows = RopeRowsRef<double>(inv_freq, 0.9, 77778);
    std::vector<double> dx(x.size(), 0.0);
    RopeBackwardRef<double>(rows.data(), shape, positions,
                            {dy.data(), strides, dx.data(), strides, heads},
                            false);
    ExpectNear(dx.data(), expected.data(), dx.size(), 1e-14, 1e-13,
               RopeLayoutName(layout));
  }
}

// <R(m) q, R(n) k> depends only on m - n: the reason RoPE encodes relative
// positions. With attention factor a the product scales by a^2.
TEST(RopeKernelProperties, DotProductDependsOnlyOnRelativePosition) {
  std::mt19937 rng(23);
  const int64_t d = 64;
  const std::vector<float> q = RandomVector(d, rng), k = RandomVector(d, rng);
  for (RopeLayout layout : kLayouts) {
    RopeTable table(RopeTable::DefaultInvFreq(d, 10000.0), 1.0);
    auto dot = [&](int64_t m, int64_t n) {
      std::vector<float> qr(d), kr(d);
      const RopeStrides s{d, d, d};
      RopeForward(table, RopeShape{1, 1, d, d, layout}, RopePositions{m, {}},
                  {q.data(), s, qr.data(), s, 1}, RopeOperand());
      RopeForward(table, RopeShape{1, 1, d, d, layout}, RopePositions{n, {}},
                  {k.data(), s, kr.data(), s, 1}, RopeOperand());
      double sum = 0;
      for (int64_t i = 0; i < d; ++i) sum += double(qr[i]) * kr[i];
      return sum;
    };
    const double at_3 = dot(3, 0);
    for (int64_t n : {1, 10, 1000, 100000}) {
      EXPECT_NEAR(dot(n + 3, n), at_3, 2e-5) << RopeLayoutName(layout);
    }
    // Not trivially constant: another distance gives another value.
    EXPECT_GT(std::abs(dot(10, 0) - at_3), 1e-2);
    // The attention factor scales both sides: a^2 on the product.
    table.Rebuild(RopeTable::DefaultInvFreq(d, 10000.0), 1.5);
    EXPECT_NEAR(dot(1003, 1000), 2.25 * at_3, 1e-4);
  }
}

// backward(forward(x)) == x when the attention factor is 1 (the rotation is
// orthogonal, so its transpose is its inverse); a scales by a^2.
TEST(RopeKernelProperties, BackwardInvertsForward) {
  std::mt19937 rng(24);
  const int64_t heads = 3, seq = 50, d = 34;
  for (RopeLayout layout : kLayouts) {
    for (double a : {1.0, 1.2}) {
      RopeTable table(RopeTable::DefaultInvFreq(d, 10000.0), a);
      const RopeShape shape{1, seq, d, d, layout};
      const RopeStrides strides = ContiguousRopeStrides(heads, seq, d);
      const std::vector<float> x = RandomVector(heads * seq * d, rng);
      std::vector<float> y = x;
      const RopePositions positions{99950, {}};
      RopeForward(table, shape, positions,
                  {y.data(), strides, y.data(), strides, heads}, RopeOperand());
      RopeBackward(table, shape, positions,
                   {y.data(), strides, y.data(), strides, heads}, RopeOperand(),
                   false);
      std::vector<double> expected(x.begin(), x.end());
      for (double& v : expected) v *= a * a;
      ExpectNear(y.data(), expected.data(), y.size(), 1e-6, 1e-6,
                 RopeLayoutName(layout));
    }
  }
}

// ---- Errors ----

TEST(RopeKernelErrors, BadCall) {
  RopeTable table = RopeTable::Default(8, 10000.0);
  std::vector<float> x(4 * 16);
  const RopeStrides s = ContiguousRopeStrides(1, 4, 16);
  const RopeOperand op{x.data(), s, x.data(), s, 1};
  const RopeShape shape{1, 4, 16, 8, RopeLayout::kSplitHalf};
  ROTOR_EXPECT_ERROR(RopeForward(table, shape, RopePositions{-1, {}}, op, {}),
                     "offset must be >= 0, got -1");
  ROTOR_EXPECT_ERROR(
      RopeForward(table, shape, RopePositions{0, {0, 1, -2, 3}}, op, {}),
      "position id 2 is -2");
  ROTOR_EXPECT_ERROR(
      RopeForward(table, shape, RopePositions{0, {0, 1}}, op, {}),
      "2 position ids for batch 1 and seq 4");
  // A huge position is an error, not a failed allocation of its table.
  ROTOR_EXPECT_ERROR(
      RopeForward(table, shape, RopePositions{0, {0, 1, int64_t{1} << 40, 3}},
                  op, {}),
      "position 1099511627776 is beyond the largest supported position");
  ROTOR_EXPECT_ERROR(
      RopeForward(table, shape, RopePositions{kMaxRopePositions, {}}, op, {}),
      "beyond the largest supported position");
  // Rows built for another rotary dim ("head_dim not matching the table").
  RopeShape wide = shape;
  wide.rotary_dim = 16;
  ROTOR_EXPECT_ERROR(
      RopeForward(*table.Rows(4), wide, RopePositions{}, op, {}),
      "table was built for rotary dim 8 but the call rotates 16");
  RopeShape odd = shape;
  odd.rotary_dim = 7;
  ROTOR_EXPECT_ERROR(RopeForward(table, odd, RopePositions{}, op, {}), "got 7");
  RopeShape narrow = shape;
  narrow.head_dim = 6;
  ROTOR_EXPECT_ERROR(RopeForward(table, narrow, RopePositions{}, op, {}),
                     "rotary dim 8 exceeds head_dim 6");
  ROTOR_EXPECT_ERROR(
      RopeForward(table, shape, RopePositions{2, {0, 1, 2, 3}}, op, {}),
      "give either position ids or an offset, not both (offset 2)");
  RopeShape negative = shape;
  negative.seq = -1;
  ROTOR_EXPECT_ERROR(
      RopeForward(*table.Rows(4), negative, RopePositions{}, op, {}),
      "negative batch 1 or seq -1");
  ROTOR_EXPECT_ERROR(RopeForward(table, shape, RopePositions{}, op,
                                 {x.data(), s, x.data(), s, -1}),
                     "RoPE: k has -1 heads");
  ROTOR_EXPECT_ERROR(RopeBackward(table, shape, RopePositions{},
                                  {nullptr, s, x.data(), s, 1}, {}, false),
                     "RoPE: dq has 1 heads but a null pointer");
  // A snapshot that is too short is an error, not a read past its end.
  const auto rows = RopeTable::Default(8, 10000.0).Rows(3);
  ROTOR_EXPECT_ERROR(
      RopeForward(*rows, shape, RopePositions{rows->num_positions(), {}}, op,
                  {}),
      "past the end of the table");
}

}  // namespace
}  // namespace kernels
}  // namespace rotor

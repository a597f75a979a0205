// Conversions between float32 and bfloat16 / IEEE half: the Highway kernels
// against their scalar twins, bit for bit, on every compiled target (every
// 16-bit pattern; sizes 0..33 and larger odd ones across ParallelFor tasks
// with misaligned pointers; the rounding cases of float32 -> bfloat16), and
// the twins against independent definitions: std::ldexp decoding of the
// fields, and rounding to bfloat16 done in double arithmetic.
#include "core/kernels/convert.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/kernels/convert_scalar.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using kernels::BitsOfFloat;
using kernels::FloatFromBits;

// Every 16-bit pattern, 0x0000 .. 0xffff.
std::vector<uint16_t> AllPatterns() {
  std::vector<uint16_t> patterns(65536);
  for (size_t i = 0; i < patterns.size(); ++i) {
    patterns[i] = static_cast<uint16_t>(i);
  }
  return patterns;
}

// Floats around every bfloat16 rounding decision: each of the 65536 top
// halves (every sign, exponent, subnormal, inf and NaN) with the low halves
// 0 (exact), 1 (just above), 0x7fff (just below half), 0x8000 (a tie),
// 0x8001 (just above half) and 0xffff (just below the next bfloat16).
std::vector<float> RoundingCases() {
  std::vector<float> cases;
  for (uint32_t top = 0; top < 65536; ++top) {
    for (uint32_t low : {0x0u, 0x1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      cases.push_back(FloatFromBits(top << 16 | low));
    }
  }
  return cases;
}

// `count` floats with uniformly random bit patterns (so NaNs, infinities and
// subnormals turn up too, in proportion to how many patterns they have).
std::vector<float> RandomBitPatterns(size_t count, std::mt19937& rng) {
  std::vector<float> values(count);
  for (float& value : values) value = FloatFromBits(rng());
  return values;
}

// Named float32 -> bfloat16 cases: input bits, expected bfloat16 bits.
struct RoundingCase {
  uint32_t f32;
  uint16_t bf16;
  const char* what;
};
const RoundingCase kNamedCases[] = {
    {0x3f800000, 0x3f80, "1 is exact"},
    {0x3f808000, 0x3f80, "1 + 2^-8, a tie, rounds to even 1"},
    {0x3f818000, 0x3f82, "a tie above an odd bfloat16 rounds up"},
    {0x3f807fff, 0x3f80, "just below half rounds down"},
    {0x3f808001, 0x3f81, "just above half rounds up"},
    {0xbf808001, 0xbf81, "negative: rounds by magnitude"},
    {0x3fffffff, 0x4000, "the carry raises the exponent"},
    {0x7f7f0000, 0x7f7f, "the largest bfloat16"},
    {0x7f7f7fff, 0x7f7f, "just below the overflow boundary"},
    {0x7f7f8000, 0x7f80, "the boundary, a tie above an odd value: inf"},
    {0x7f7fffff, 0x7f80, "FLT_MAX rounds to inf"},
    {0xff7fffff, 0xff80, "-FLT_MAX rounds to -inf"},
    {0x7f800000, 0x7f80, "inf"},
    {0xff800000, 0xff80, "-inf"},
    {0x7fc00000, 0x7fc0, "the default quiet NaN"},
    {0xffc00000, 0xffc0, "a negative quiet NaN keeps its sign"},
    {0x7f800001, 0x7fc0, "a NaN with its payload only in dropped bits"},
    {0xff800001, 0xffc0, "the same, negative"},
    {0x7fffffff, 0x7fff, "a NaN with every payload bit set"},
    {0x7f810000, 0x7fc1, "a signaling NaN is quieted, its payload kept"},
    {0x00000000, 0x0000, "+0"},
    {0x80000000, 0x8000, "-0"},
    {0x00008000, 0x0000, "a subnormal tie rounds to even 0"},
    {0x00018000, 0x0002, "a subnormal tie above an odd value rounds up"},
    {0x00008001, 0x0001, "just above half of the smallest bfloat16"},
    {0x80000001, 0x8000, "the smallest negative subnormal: -0"},
    {0x007fffff, 0x0080, "the largest subnormal rounds to FLT_MIN"},
};

// n values of T that start `misalign` elements past the start of their
// storage (as test::MisalignedFloats), between guard elements holding
// `fill` that a kernel must not overwrite.
template <typename T>
class GuardedArray {
 public:
  GuardedArray(size_t n, size_t misalign, T fill)
      : storage_(kGuard + misalign + n + kGuard, fill),
        begin_(kGuard + misalign),
        fill_(fill) {}
  GuardedArray(const GuardedArray&) = delete;
  GuardedArray& operator=(const GuardedArray&) = delete;

  T* data() { return storage_.data() + begin_; }
  // Whether every guard element still holds `fill`, compared as bits.
  bool GuardsIntact() const {
    const size_t end = storage_.size() - kGuard;
    for (size_t i = 0; i < storage_.size(); ++i) {
      if ((i < begin_ || i >= end) &&
          std::memcmp(&storage_[i], &fill_, sizeof(T)) != 0) {
        return false;
      }
    }
    return true;
  }

 private:
  static constexpr size_t kGuard = 16;
  std::vector<T> storage_;
  size_t begin_;
  T fill_;
};

// Expects out[i] to have the bits of expected(in[i]) for every i; floats are
// compared as bits, so NaN payloads and the sign of zero count.
template <typename In, typename Out, typename Expected>
void ExpectSameBits(const In* in, const Out* out, size_t n,
                    const Expected& expected, const std::string& where) {
  for (size_t i = 0; i < n; ++i) {
    const Out want = expected(in[i]);
    ASSERT_EQ(std::memcmp(&out[i], &want, sizeof(Out)), 0)
        << where << " element " << i << " of " << n << ": got " << out[i]
        << ", expected " << want;
  }
}

// The twins' results as bits, for ExpectDecodesLikeLdexp.
uint32_t BF16Bits(uint16_t bf16) {
  return BitsOfFloat(kernels::BF16ToF32Ref(bf16));
}
uint32_t F16Bits(uint16_t f16) {
  return BitsOfFloat(kernels::F16ToF32Ref(f16));
}

ROTOR_PER_TARGET_SUITE(ConvertKernel);

ROTOR_PER_TARGET_TEST(ConvertKernel, MatchesScalarTwin) {
  // Prove that dispatch really runs the target under test.
  EXPECT_STREQ(kernels::ConvertTarget(), TargetName());
  std::mt19937 rng(11);
  test::ForEachSizeAndMisalignment(
      test::KernelTestSizesAcrossTasks(), "n",
      [&](size_t n, size_t misalign, const std::string& where) {
        const uint16_t fill16 = 0x5a5a;
        const float fill32 = -123.0f;
        GuardedArray<uint16_t> halves(n, misalign, fill16);
        GuardedArray<float> floats(n, misalign, fill32);
        for (size_t i = 0; i < n; ++i) {
          halves.data()[i] = static_cast<uint16_t>(rng());
          floats.data()[i] = FloatFromBits(rng());
        }
        GuardedArray<float> decoded(n, misalign, fill32);
        GuardedArray<uint16_t> rounded(n, misalign, fill16);

        kernels::BF16ToF32(halves.data(), decoded.data(), n);
        ExpectSameBits(halves.data(), decoded.data(), n, kernels::BF16ToF32Ref,
                       "BF16ToF32 " + where);
        EXPECT_TRUE(decoded.GuardsIntact()) << "BF16ToF32 " << where;

        kernels::F16ToF32(halves.data(), decoded.data(), n);
        ExpectSameBits(halves.data(), decoded.data(), n, kernels::F16ToF32Ref,
                       "F16ToF32 " + where);
        EXPECT_TRUE(decoded.GuardsIntact()) << "F16ToF32 " << where;

        kernels::F32ToBF16(floats.data(), rounded.data(), n);
        ExpectSameBits(floats.data(), rounded.data(), n, kernels::F32ToBF16Ref,
                       "F32ToBF16 " + where);
        EXPECT_TRUE(rounded.GuardsIntact()) << "F32ToBF16 " << where;
        EXPECT_TRUE(halves.GuardsIntact() && floats.GuardsIntact()) << where;
      });
}

// Outputs of more than 1 MiB are written with streaming stores, which need
// aligned addresses: every misalignment of a decode of that size.
ROTOR_PER_TARGET_TEST(ConvertKernel, LargeDecodesMatchScalarTwin) {
  EXPECT_STREQ(kernels::ConvertTarget(), TargetName());
  std::mt19937 rng(14);
  test::ForEachSizeAndMisalignment(
      {(size_t{1} << 18) + 1001}, "n",
      [&](size_t n, size_t misalign, const std::string& where) {
        const float fill = -123.0f;
        std::vector<uint16_t> halves(n);
        for (uint16_t& half : halves) half = static_cast<uint16_t>(rng());
        GuardedArray<float> decoded(n, misalign, fill);
        kernels::BF16ToF32(halves.data(), decoded.data(), n);
        ExpectSameBits(halves.data(), decoded.data(), n, kernels::BF16ToF32Ref,
                       "BF16ToF32 " + where);
        kernels::F16ToF32(halves.data(), decoded.data(), n);
        ExpectSameBits(halves.data(), decoded.data(), n, kernels::F16ToF32Ref,
                       "F16ToF32 " + where);
        EXPECT_TRUE(decoded.GuardsIntact()) << where;
      });
}

// Exhaustive: every bfloat16 and every half, from an aligned and a
// misaligned input.
ROTOR_PER_TARGET_TEST(ConvertKernel, EverySixteenBitPattern) {
  EXPECT_STREQ(kernels::ConvertTarget(), TargetName());
  const std::vector<uint16_t> all = AllPatterns();
  for (size_t misalign : {0, 1}) {
    const std::string where = "misalign=" + std::to_string(misalign);
    const size_t n = all.size() - misalign;
    const uint16_t* in = all.data() + misalign;
    std::vector<float> out(n);
    kernels::BF16ToF32(in, out.data(), n);
    ExpectSameBits(in, out.data(), n, kernels::BF16ToF32Ref,
                   "BF16ToF32 " + where);
    kernels::F16ToF32(in, out.data(), n);
    ExpectSameBits(in, out.data(), n, kernels::F16ToF32Ref,
                   "F16ToF32 " + where);
  }
}

ROTOR_PER_TARGET_TEST(ConvertKernel, F32ToBF16RoundingCases) {
  EXPECT_STREQ(kernels::ConvertTarget(), TargetName());
  std::mt19937 rng(12);
  std::vector<float> in = RoundingCases();
  const std::vector<float> random = RandomBitPatterns(100003, rng);
  in.insert(in.end(), random.begin(), random.end());
  std::vector<uint16_t> out(in.size());
  kernels::F32ToBF16(in.data(), out.data(), in.size());
  ExpectSameBits(in.data(), out.data(), in.size(), kernels::F32ToBF16Ref,
                 "F32ToBF16");

  for (const RoundingCase& named : kNamedCases) {
    const float value = FloatFromBits(named.f32);
    uint16_t bf16 = 0;
    kernels::F32ToBF16(&value, &bf16, 1);
    EXPECT_EQ(bf16, named.bf16) << named.what;
  }
}

// The twins on their own. A 16-bit float with `mantissa_bits` (10 for half,
// 7 for bfloat16) and 15 - mantissa_bits exponent bits of bias b: for
// exponent e and mantissa m, (-1)^s * 2^(e - b) * (1 + m / 2^mantissa_bits),
// and 2^(1 - b) * m / 2^mantissa_bits for e = 0; the largest e is inf
// (m = 0) or NaN.
double DecodeByLdexp(uint16_t bits, int mantissa_bits) {
  const int exponent_bits = 15 - mantissa_bits;
  const int max_exponent = (1 << exponent_bits) - 1;
  const int bias = max_exponent / 2;
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent = (bits >> mantissa_bits) & max_exponent;
  const int mantissa = bits & ((1 << mantissa_bits) - 1);
  if (exponent == max_exponent) return mantissa == 0 ? sign * HUGE_VAL : NAN;
  if (exponent == 0) {
    return sign * std::ldexp(mantissa, 1 - bias - mantissa_bits);
  }
  return sign * std::ldexp((1 << mantissa_bits) + mantissa,
                           exponent - bias - mantissa_bits);
}

// For every pattern: a number decodes to the same value, with the same sign
// (so -0 stays -0); a NaN to a NaN with its sign and payload, the payload in
// the top bits of the float mantissa.
void ExpectDecodesLikeLdexp(const char* name, uint32_t (*twin_bits)(uint16_t),
                            int mantissa_bits) {
  for (uint16_t pattern : AllPatterns()) {
    const uint32_t got = twin_bits(pattern);
    const double want = DecodeByLdexp(pattern, mantissa_bits);
    const uint32_t sign = uint32_t{pattern & 0x8000u} << 16;
    if (std::isnan(want)) {
      const uint32_t payload_mask = (1u << mantissa_bits) - 1;
      EXPECT_TRUE(
          std::isnan(FloatFromBits(got)) && (got & 0x80000000u) == sign &&
          (got & 0x7fffff) == (pattern & payload_mask) << (23 - mantissa_bits))
          << name << " pattern " << pattern << " gave bits " << got;
    } else {
      ASSERT_EQ(got, BitsOfFloat(static_cast<float>(want)))
          << name << " pattern " << pattern << " should be " << want;
      ASSERT_EQ(got & 0x80000000u, sign) << name << " pattern " << pattern;
    }
  }
}

TEST(ConvertScalar, DecodersMatchLdexp) {
  ExpectDecodesLikeLdexp("F16ToF32Ref", F16Bits, 10);
  ExpectDecodesLikeLdexp("BF16ToF32Ref", BF16Bits, 7);
}

// float32 -> bfloat16 in double arithmetic: the bfloat16 spacing at x is
// q = 2^(max(e, -126) - 7) for x's exponent e (the subnormals share the
// smallest normal's spacing), and std::nearbyint rounds x / q to an integer
// with ties to even (the default rounding mode). Both steps are exact in
// double. A result of magnitude 2^128 or more is inf.
uint16_t BFloat16ByDoubleRounding(float x) {
  const double q = std::ldexp(1.0, std::max(std::ilogb(x), -126) - 7);
  const double rounded = std::nearbyint(x / q) * q;
  const float narrowed = std::fabs(rounded) >= std::ldexp(1.0, 128)
                             ? std::copysign(HUGE_VALF, x)
                             : static_cast<float>(rounded);
  EXPECT_EQ(BitsOfFloat(narrowed) & 0xffff, 0u)
      << x << " rounded to " << rounded;
  return static_cast<uint16_t>(BitsOfFloat(narrowed) >> 16);
}

TEST(ConvertScalar, F32ToBF16RoundsLikeDoubleArithmetic) {
  std::mt19937 rng(13);
  std::vector<float> cases = RoundingCases();
  const std::vector<float> random = RandomBitPatterns(1000000, rng);
  cases.insert(cases.end(), random.begin(), random.end());
  for (float x : cases) {
    const uint16_t got = kernels::F32ToBF16Ref(x);
    if (std::isnan(x)) {
      // A quiet NaN of the same sign, its payload's top bits kept.
      EXPECT_TRUE(std::isnan(kernels::BF16ToF32Ref(got)) && (got & 0x40) &&
                  (got & 0x8000) == (BitsOfFloat(x) >> 16 & 0x8000) &&
                  (got & 0x3f) == (BitsOfFloat(x) >> 16 & 0x3f))
          << "NaN bits " << BitsOfFloat(x) << " gave " << got;
    } else if (std::isinf(x)) {
      EXPECT_EQ(got, BitsOfFloat(x) >> 16);
    } else {
      ASSERT_EQ(got, BFloat16ByDoubleRounding(x))
          << "x = " << x << " (bits " << BitsOfFloat(x) << ")";
    }
  }
  for (const RoundingCase& named : kNamedCases) {
    EXPECT_EQ(kernels::F32ToBF16Ref(FloatFromBits(named.f32)), named.bf16)
        << named.what;
  }
}

}  // namespace
}  // namespace rotor

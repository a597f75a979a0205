// Checked products and sums: exact results, or an error naming what was
// being computed.
#include "core/checked_math.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "tests/test_util.h"

namespace rotor {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(CheckedMath, ExactResultsPassThrough) {
  EXPECT_EQ(CheckedMul<int64_t>(3, 7, "x"), 21);
  EXPECT_EQ(CheckedMul<int64_t>(kMax, 1, "x"), kMax);
  EXPECT_EQ(CheckedMul<int64_t>(-4, 5, "x"), -20);
  EXPECT_EQ(CheckedAdd<int64_t>(kMax - 1, 1, "x"), kMax);
  EXPECT_EQ(CheckedMul<uint64_t>(uint64_t{1} << 63, 1, "x"), uint64_t{1} << 63);
  EXPECT_EQ(CheckedElementCount({}, "x"), 1);
  EXPECT_EQ(CheckedElementCount({2, 0, 5}, "x"), 0);
  EXPECT_EQ(CheckedByteCount({3, 5}, 4, "x"), 60u);
}

TEST(CheckedMath, OverflowIsAnErrorNamingTheComputation) {
  ROTOR_EXPECT_ERROR(CheckedMul<int64_t>(int64_t{1} << 62, 32, "rows"),
                     "integer overflow computing rows: 4611686018427387904 * "
                     "32");
  ROTOR_EXPECT_ERROR(CheckedAdd<int64_t>(kMax, 1, "length"),
                     "integer overflow computing length: "
                     "9223372036854775807 + 1");
  ROTOR_EXPECT_ERROR(CheckedMul<uint64_t>(~uint64_t{0}, 2, "y"),
                     "integer overflow computing y");
  ROTOR_EXPECT_ERROR(CheckedMul<int64_t>(-kMax, 2, "z"),
                     "integer overflow computing z");
}

TEST(CheckedMath, CountsRefuseNegativeExtentsAndOverflow) {
  ROTOR_EXPECT_ERROR(CheckedElementCount({2, -3}, "shape"),
                     "shape: negative extent -3");
  ROTOR_EXPECT_ERROR(
      CheckedElementCount({int64_t{1} << 32, int64_t{1} << 31}, "shape"),
      "integer overflow computing shape");
  // 2^62 elements fit in int64_t; their bytes do not fit in 64 bits.
  ROTOR_EXPECT_ERROR(CheckedByteCount({int64_t{1} << 62}, 4, "bytes"),
                     "integer overflow computing bytes");
}

}  // namespace
}  // namespace rotor

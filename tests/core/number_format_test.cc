// core/number_format.h: full double precision, without trailing zeros.
#include "core/number_format.h"

#include <gtest/gtest.h>

namespace rotor {
namespace {

TEST(NumberFormat, FullDigitsIsFullDoublePrecision) {
  EXPECT_EQ(FullDigits(0.1), "0.10000000000000001");
  EXPECT_EQ(FullDigits(32), "32");
  EXPECT_EQ(FullDigits(-1.5e-300), "-1.5000000000000001e-300");
}

}  // namespace
}  // namespace rotor

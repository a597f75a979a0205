// The RoPE cos/sin table (core/kernels/rope_table.cc): the default
// frequencies, growing on demand while earlier snapshots stay valid,
// rebuilding when the frequencies change, and every configuration error.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/kernels/rope.h"
#include "core/kernels/rope_scalar.h"
#include "tests/test_util.h"

namespace rotor {
namespace kernels {
namespace {

TEST(RopeTable, DefaultFrequencies) {
  const std::vector<double> f = RopeTable::DefaultInvFreq(8, 10000.0);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], 1.0);
  EXPECT_DOUBLE_EQ(f[1], 0.1);   // 10000^(-2/8)
  EXPECT_DOUBLE_EQ(f[2], 0.01);  // 10000^(-4/8)
  EXPECT_DOUBLE_EQ(f[3], 0.001);
  EXPECT_EQ(RopeTable::Default(8, 10000.0).rotary_dim(), 8);
  EXPECT_EQ(RopeRotaryDim(80, 0.25), 20);
  EXPECT_EQ(RopeRotaryDim(64, 1.0), 64);
}

// Rows equal the reference rows exactly (double math, one rounding); the
// table grows past its end on demand and older snapshots stay valid.
TEST(RopeTable, GrowsOnDemandAndKeepsSnapshots) {
  RopeTable table(RopeTable::DefaultInvFreq(6, 10000.0), 0.75);
  EXPECT_EQ(table.num_positions(), 0);
  const auto small = table.Rows(10);
  ASSERT_GE(small->num_positions(), 10);
  const int64_t small_count = small->num_positions();
  const std::vector<float> small_copy(small->row(0),
                                      small->row(0) + small_count * 6);
  const auto big = table.Rows(100001);
  ASSERT_GE(big->num_positions(), 100001);
  EXPECT_EQ(table.Rows(50).get(), big.get());  // no regrowth when covered
  const std::vector<float> expected =
      RopeRowsRef<float>(table.inv_freq(), 0.75, big->num_positions());
  for (int64_t p = 0; p < big->num_positions(); ++p) {
    for (int64_t j = 0; j < 6; ++j) {
      ASSERT_EQ(big->row(p)[j], expected[p * 6 + j]) << "p " << p << " j " << j;
    }
  }
  EXPECT_EQ(std::vector<float>(small->row(0), small->row(0) + small_count * 6),
            small_copy);
}

// Rebuild with new frequencies recomputes the rows; with the same ones it
// keeps them; snapshots taken before keep the old values.
TEST(RopeTable, RebuildsWhenFrequenciesChange) {
  RopeTable table = RopeTable::Default(4, 10000.0);
  const auto before = table.Rows(20);
  table.Rebuild(RopeTable::DefaultInvFreq(4, 10000.0), 1.0);
  EXPECT_EQ(table.Rows(20).get(), before.get());
  table.Rebuild({0.5, 0.25}, 2.0);
  const auto after = table.Rows(20);
  EXPECT_NE(after.get(), before.get());
  EXPECT_EQ(after->row(3)[0], static_cast<float>(2.0 * std::cos(1.5)));
  EXPECT_EQ(after->row(3)[3], static_cast<float>(2.0 * std::sin(0.75)));
  EXPECT_EQ(before->row(3)[0], static_cast<float>(std::cos(3.0)));
  table.Rebuild({0.5, 0.25, 0.125}, 1.0);  // the rotary dim may change too
  EXPECT_EQ(table.rotary_dim(), 6);
  EXPECT_EQ(table.Rows(2)->rotary_dim(), 6);
}

TEST(RopeTableErrors, BadConfiguration) {
  ROTOR_EXPECT_ERROR(RopeTable::DefaultInvFreq(7, 10000.0), "got 7");
  ROTOR_EXPECT_ERROR(RopeTable::DefaultInvFreq(0, 10000.0),
                     "even and positive");
  ROTOR_EXPECT_ERROR(RopeRotaryDim(64, 0.4), "= 25 must be even");
  ROTOR_EXPECT_ERROR(RopeRotaryDim(64, 0.0), "partial_rotary_factor");
  ROTOR_EXPECT_ERROR(RopeRotaryDim(64, 1.5), "partial_rotary_factor");
  ROTOR_EXPECT_ERROR(RopeTable::DefaultInvFreq(8, 0.0), "base (rope_theta)");
  ROTOR_EXPECT_ERROR(RopeTable::DefaultInvFreq(8, -10.0), "got -10");
  ROTOR_EXPECT_ERROR(RopeTable::DefaultInvFreq(8, NAN), "base (rope_theta)");
  ROTOR_EXPECT_ERROR(RopeTable({}, 1.0), "inv_freq is empty");
  ROTOR_EXPECT_ERROR(RopeTable({1.0, INFINITY}, 1.0), "inv_freq[1]");
  ROTOR_EXPECT_ERROR(RopeTable({1.0}, 0.0), "attention_factor");
  RopeTable table = RopeTable::Default(4, 100.0);
  ROTOR_EXPECT_ERROR(table.Rebuild({1.0}, -1.0), "attention_factor");
}

}  // namespace
}  // namespace kernels
}  // namespace rotor

// The scaled frequencies of nn/rope_scaling.h feed the RoPE op
// (core/ops/rope.h) unchanged: a RopeTable built from ComputeRopeFrequencies'
// inv_freq and attention factor rotates q exactly as the double-precision
// definition does, for every method, with partial rotary and positions
// beyond L0.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/ops/rope.h"
#include "core/tensor.h"
#include "nn/rope_scaling.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

RopeScalingConfig ConfigFor(RopeType type) {
  RopeScalingConfig config;
  config.rope_type = type;
  config.head_dim = 40;
  config.partial_rotary_factor = 0.8;  // r = 32, channels 32..39 pass
  config.rope_theta = 10000.0;
  config.max_position_embeddings = 256;
  config.factor = 4.0;
  config.original_max_position_embeddings = 64;
  config.low_freq_factor = 1.0;
  config.high_freq_factor = 4.0;
  config.short_factor = std::vector<double>(16, 1.0);
  config.long_factor.emplace();
  for (int i = 0; i < 16; ++i) config.long_factor->push_back(1.0 + 0.2 * i);
  return config;
}

TEST(RopeScalingTables, FeedTheRopeKernelsUnchanged) {
  constexpr int64_t kHeads = 2, kSeq = 5, kHeadDim = 40;
  const std::vector<int64_t> position_ids = {0, 1, 63, 64, 250};
  std::mt19937 rng(3);
  const std::vector<float> values =
      test::RandomVector(kHeads * kSeq * kHeadDim, rng);
  const Tensor x = Tensor::FromVector({1, kHeads, kSeq, kHeadDim}, values);

  for (RopeType type : {RopeType::kDefault, RopeType::kLinear, RopeType::kNtk,
                        RopeType::kDynamic, RopeType::kYarn, RopeType::kLlama3,
                        RopeType::kLongRope}) {
    const RopeScalingConfig config = ConfigFor(type);
    // A 1024-token sequence: past L0 for dynamic (1024 > 256) and longrope
    // (1024 > 64: long factors).
    const RopeFrequencies f = ComputeRopeFrequencies(config, 1024);
    RopeTable table(f.inv_freq, f.attention_factor);
    ASSERT_EQ(table.rotary_dim(), f.rotary_dim);
    const std::vector<float> y =
        Rope(x, table, RopePositions{0, position_ids}, RopeLayout::kSplitHalf,
             config.partial_rotary_factor)
            .ToVector();
    const size_t half = f.inv_freq.size();
    for (int64_t h = 0; h < kHeads; ++h) {
      for (int64_t t = 0; t < kSeq; ++t) {
        const float* in = &values[(h * kSeq + t) * kHeadDim];
        const float* out = &y[(h * kSeq + t) * kHeadDim];
        for (size_t i = 0; i < half; ++i) {
          const double angle = position_ids[t] * f.inv_freq[i];
          const double c = f.attention_factor * std::cos(angle);
          const double s = f.attention_factor * std::sin(angle);
          EXPECT_NEAR(out[i], in[i] * c - in[i + half] * s, 2e-6)
              << RopeTypeName(type) << " t " << t << " pair " << i;
          EXPECT_NEAR(out[i + half], in[i + half] * c + in[i] * s, 2e-6)
              << RopeTypeName(type) << " t " << t << " pair " << i;
        }
        for (int64_t j = f.rotary_dim; j < kHeadDim; ++j) {
          EXPECT_EQ(out[j], in[j]) << RopeTypeName(type) << " channel " << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace rotor

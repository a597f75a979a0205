// Batch sampling: window/target alignment, uniform coverage, determinism
// and exact resume from a saved state; the sequential validation windows.
#include "train/data/batches.h"

#include <gtest/gtest.h>

#include "tests/temp_dir.h"
#include "tests/test_util.h"

namespace rotor::train {
namespace {

// A token file holding 0, 1, ..., n-1 (mod 257), so a token's value tells
// its position.
TokenFile CountingFile(const test::TempDir& dir, size_t n) {
  std::vector<TokenId> tokens(n);
  for (size_t i = 0; i < n; ++i) tokens[i] = static_cast<TokenId>(i % 257);
  WriteTokenFile(dir.Path("count.bin"), tokens, {257, 1, 256, n - 1});
  return TokenFile(dir.Path("count.bin"));
}

// The sampler's generator (core/random.h) must be SplitMix64 exactly, or
// resumed runs and prepared splits would change between versions.
TEST(Rng, MatchesTheSplitMix64ReferenceSequence) {
  // First outputs for seed 1234567 of the reference algorithm (the values
  // of the Rosetta Code task "Pseudo-random numbers/Splitmix64").
  Rng rng(1234567);
  EXPECT_EQ(rng.NextU64(), 6457827717110365317ull);
  EXPECT_EQ(rng.NextU64(), 3203168211198807973ull);
  EXPECT_EQ(rng.NextU64(), 9817491932198370423ull);
}

TEST(Rng, BelowStaysInRangeAndCoversIt) {
  Rng rng(5);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const uint64_t x = rng.Below(7);
    ASSERT_LT(x, 7u);
    ++counts[x];
  }
  for (int c : counts) EXPECT_NEAR(c, 1000, 150);
  EXPECT_EQ(rng.Below(1), 0u);
}

TEST(BatchSampler, TargetsAreInputsShiftedByOne) {
  test::TempDir dir;
  const TokenFile file = CountingFile(dir, 200);
  BatchSampler sampler(file, 4, 16, 42);
  Batch batch;
  sampler.Next(batch);
  EXPECT_EQ(batch.batch_size, 4);
  EXPECT_EQ(batch.seq_len, 16);
  ASSERT_EQ(batch.inputs.size(), 64u);
  for (int b = 0; b < 4; ++b) {
    const TokenId start = batch.inputs[b * 16];
    EXPECT_LE(start, 200 - 17);
    for (int t = 0; t < 16; ++t) {
      EXPECT_EQ(batch.inputs[b * 16 + t], start + t);
      EXPECT_EQ(batch.targets[b * 16 + t], start + t + 1);
    }
  }
}

// batch_size * seq_len wrapped to 0 once, and the window copy wrote past
// the empty buffer.
TEST(BatchSampler, ABatchTooLargeToCountIsAnError) {
  test::TempDir dir;
  const TokenFile file = CountingFile(dir, 200);
  BatchSampler sampler(file, int64_t{1} << 62, 32, 42);
  Batch batch;
  ROTOR_EXPECT_ERROR(sampler.Next(batch),
                     "integer overflow computing the tokens of a batch "
                     "(batch_size * seq_len): 4611686018427387904 * 32");
}

TEST(BatchSampler, EveryStartIsReachableIncludingTheLast) {
  test::TempDir dir;
  const TokenFile file = CountingFile(dir, 10);  // starts 0..6 for T = 3
  BatchSampler sampler(file, 8, 3, 1);
  std::vector<int> seen(10, 0);
  Batch batch;
  for (int i = 0; i < 100; ++i) {
    sampler.Next(batch);
    for (int b = 0; b < 8; ++b) ++seen[batch.inputs[b * 3]];
  }
  for (int start = 0; start <= 6; ++start) EXPECT_GT(seen[start], 0) << start;
  for (int start = 7; start < 10; ++start) EXPECT_EQ(seen[start], 0) << start;
}

TEST(BatchSampler, SameSeedSameBatchesAndStateResumesExactly) {
  test::TempDir dir;
  const TokenFile file = CountingFile(dir, 5000);
  BatchSampler a(file, 3, 8, 7), b(file, 3, 8, 7), other(file, 3, 8, 8);
  Batch x, y, z;
  a.Next(x);
  b.Next(y);
  other.Next(z);
  EXPECT_EQ(x.inputs, y.inputs);
  EXPECT_NE(x.inputs, z.inputs);

  // Save after two batches, draw two more, restore into a fresh sampler.
  a.Next(x);
  const SamplerState saved = a.state();
  EXPECT_EQ(saved.batches_drawn, 2u);
  Batch third, fourth;
  a.Next(third);
  a.Next(fourth);
  BatchSampler resumed(file, 3, 8, 999);
  resumed.set_state(saved);
  resumed.Next(x);
  EXPECT_EQ(x.inputs, third.inputs);
  resumed.Next(x);
  EXPECT_EQ(x.targets, fourth.targets);
  EXPECT_EQ(resumed.state().batches_drawn, 4u);
}

TEST(BatchSampler, RejectsBadShapes) {
  test::TempDir dir;
  const TokenFile file = CountingFile(dir, 10);
  ROTOR_EXPECT_ERROR(BatchSampler(file, 1, 10, 0), "count.bin", "10 tokens",
                     "seq_len + 1 = 11");
  ROTOR_EXPECT_ERROR(BatchSampler(file, 0, 4, 0), "batch_size must be >= 1");
  ROTOR_EXPECT_ERROR(BatchSampler(file, 1, 0, 0), "seq_len must be >= 1");
}

TEST(ValidationBatches, NonOverlappingWindowsInOrder) {
  test::TempDir dir;
  const TokenFile file = CountingFile(dir, 23);  // (23 - 1) / 4 = 5 windows
  ValidationBatches batches(file, 2, 4);
  EXPECT_EQ(batches.num_windows(), 5);
  std::vector<TokenId> starts;
  std::vector<int64_t> sizes;
  Batch batch;
  while (batches.Next(batch)) {
    sizes.push_back(batch.batch_size);
    for (int64_t b = 0; b < batch.batch_size; ++b) {
      starts.push_back(batch.inputs[b * 4]);
      for (int t = 0; t < 4; ++t) {
        EXPECT_EQ(batch.targets[b * 4 + t], batch.inputs[b * 4] + t + 1);
      }
    }
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(starts, (std::vector<TokenId>{0, 4, 8, 12, 16}));
  // Target 20 (the last scored) is token 20; tokens 21, 22 are not scored.
  EXPECT_EQ(batch.targets[3], 20);
  batches.Reset();
  ASSERT_TRUE(batches.Next(batch));
  EXPECT_EQ(batch.inputs[0], 0);
}

// A document begins at each separator (256 here) and, in a row that begins
// mid-document, at 0; rows are independent.
TEST(DocumentStarts, BeginAtEachSeparatorAndAtZero) {
  Batch batch;
  batch.batch_size = 3;
  batch.seq_len = 5;
  batch.inputs = {7,   8,   256, 9, 256,  //
                  256, 256, 1,   2, 3,    //
                  4,   5,   6,   7, 8};
  EXPECT_EQ(DocumentStarts(batch, 256), (std::vector<int32_t>{0, 0, 2, 2, 4,  //
                                                              0, 1, 1, 1, 1,  //
                                                              0, 0, 0, 0, 0}));
}

}  // namespace
}  // namespace rotor::train

// Embedding: row lookup, scatter-add gradient with repeated ids, bad ids.
#include <random>

#include "core/ops/ops.h"
#include "tests/test_util.h"

namespace rotor {
namespace {

using test::GradCheck;
using test::RandomTensor;
using Inputs = std::vector<Tensor>;

TEST(Embedding, LooksUpRows) {
  const Tensor table =
      Tensor::FromVector({3, 2}, {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f});
  const Tensor out = Embedding(table, {2, 0, 2, 1}, {2, 2});
  ASSERT_EQ(out.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(out.ToVector(), (std::vector<float>{2.0f, 2.5f, 0.0f, 0.5f, 2.0f,
                                                2.5f, 1.0f, 1.5f}));
}

TEST(Embedding, RepeatedIdsAddGradients) {
  Tensor table = Tensor::Zeros({4, 3}, true);
  Sum(Embedding(table, {1, 3, 1, 1}, {4})).Backward();
  EXPECT_EQ(table.grad().ToVector(),
            (std::vector<float>{0, 0, 0, 3, 3, 3, 0, 0, 0, 1, 1, 1}));
  std::mt19937 rng(51);
  const Inputs in = {RandomTensor({5, 3}, rng)};
  GradCheck(
      [](const Inputs& x) {
        return Embedding(x[0], {4, 0, 4, 2, 0, 4}, {2, 3});
      },
      in);
}

TEST(Embedding, BadIdsThrow) {
  const Tensor table = Tensor::Zeros({5, 2});
  ROTOR_EXPECT_ERROR(Embedding(table, {1, 5}, {2}),
                     "Embedding: id 5 at position 1 is out of range for vocab "
                     "size 5");
  ROTOR_EXPECT_ERROR(Embedding(table, {-1}, {1}), "Embedding: id -1");
  ROTOR_EXPECT_ERROR(Embedding(table, {1, 2}, {3}),
                     "Embedding: ids shape [3] needs 3 ids, got 2");
}

}  // namespace
}  // namespace rotor

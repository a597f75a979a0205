// The base-weights hash (train/io/weights_hash.h): its format, that it
// depends on every name, shape and value and on their order, and that a
// bfloat16 Hugging Face folder and its float32 export, loaded, hash alike.
#include "train/io/weights_hash.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/config/model_config.h"
#include "train/hf/hf_model.h"

namespace rotor::train {
namespace {

using Named = std::vector<std::pair<std::string, Tensor>>;

Named Example() {
  return {{"a.weight", Tensor::FromVector({2, 3}, {1, 2, 3, 4, 5, 6})},
          {"b.weight", Tensor::FromVector({3}, {0.5f, -1, 2})}};
}

TEST(WeightsHash, IsXxh3OfNamesShapesAndValues) {
  const std::string hash = WeightsHash(Example());
  ASSERT_EQ(hash.size(), 8u + 16u);
  EXPECT_EQ(hash.substr(0, 8), "xxh3-64:");
  EXPECT_EQ(hash.find_first_not_of("0123456789abcdef", 8), std::string::npos);
  EXPECT_EQ(WeightsHash(Example()), hash);

  Named value = Example();
  value[1].second.data()[2] = 2.0000002f;  // one ulp
  Named name = Example();
  name[0].first = "a.weights";
  Named shape = Example();
  shape[0].second = Tensor::FromVector({3, 2}, {1, 2, 3, 4, 5, 6});
  Named order = Example();
  std::swap(order[0], order[1]);
  Named fewer = Example();
  fewer.pop_back();
  for (const Named* other : {&value, &name, &shape, &order, &fewer}) {
    EXPECT_NE(WeightsHash(*other), hash);
  }
}

TEST(WeightsHash, DependsOnTheLoadedValuesNotTheFilesDtype) {
  test::TempDir dir;
  const ModelConfig model = ParseModelConfigText(
      "model: {vocab_size: 40, hidden_size: 16, intermediate_size: 24, "
      "num_hidden_layers: 1, num_attention_heads: 2, "
      "max_position_embeddings: 16}\n",
      "model.yaml");
  const nn::Transformer random(ResolveTransformerConfig(model), 5);
  HfExportOptions bf16;
  bf16.dtype = "bfloat16";
  WriteHfModelFolder(dir.Path("bf16"), random, model, "byte", bf16);
  const auto loaded = LoadCheckpointModel(dir.Path("bf16"), {});
  WriteHfModelFolder(dir.Path("f32"), *loaded, model, "byte");
  const auto copy = LoadCheckpointModel(dir.Path("f32"), {});
  EXPECT_EQ(WeightsHash(copy->NamedParameters()),
            WeightsHash(loaded->NamedParameters()));
  // The rounding to bfloat16 changed the values, so the hash.
  EXPECT_NE(WeightsHash(random.NamedParameters()),
            WeightsHash(loaded->NamedParameters()));
}

}  // namespace
}  // namespace rotor::train

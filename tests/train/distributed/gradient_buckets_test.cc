// Bucketed gradient sums (train/distributed/gradient_buckets.h) against a
// fake communicator whose other ranks mirror this one: every sum is this
// rank's values times the rank count, so the result is known exactly. The
// fake records when each sum starts, counted in leaves reported so far, to
// show that the first buckets start while the backward pass still runs.
#include "train/distributed/gradient_buckets.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "nn/transformer.h"
#include "tests/test_util.h"
#include "tests/train/train_test_util.h"

namespace rotor::train {
namespace {

class MirroredRanks final : public Communicator {
 public:
  struct Start {
    std::string what;
    int reported;  // leaves reported when the sum started
  };

  MirroredRanks(int size, const int& reported)
      : size_(size), reported_(reported) {}

  int rank() const override { return 0; }
  int size() const override { return size_; }
  int local_size() const override { return size_; }
  std::unique_ptr<PendingSum> StartSum(float* data, size_t count,
                                       const std::string& what) override {
    starts.push_back({what, reported_});
    return std::make_unique<Scaled>(data, count, size_);
  }
  void Sum(double* data, size_t count, const std::string&) override {
    for (size_t i = 0; i < count; ++i) data[i] *= size_;
  }
  void Max(double*, size_t, const std::string&) override {}
  void Broadcast(float*, size_t, int, const std::string&) override {}
  void Barrier(const std::string&) override {}
  void Abort(const std::string& message) override {
    ADD_FAILURE() << "Abort: " << message;
    std::abort();
  }

  std::vector<Start> starts;

 private:
  // N equal addends: the sum is exact, N times each value.
  class Scaled final : public PendingSum {
   public:
    Scaled(float* data, size_t count, int factor)
        : data_(data), count_(count), factor_(factor) {}
    bool Test() override { return done_; }
    void Wait() override {
      if (done_) return;
      for (size_t i = 0; i < count_; ++i) data_[i] *= factor_;
      done_ = true;
    }

   private:
    float* data_;
    size_t count_;
    int factor_;
    bool done_ = false;
  };

  int size_;
  const int& reported_;
};

// The tiny model's loss on a fixed batch, backward run with `hook`.
void Backward(nn::Transformer& model, const LeafGradReadyFn& hook) {
  const std::vector<int32_t> ids = {5, 9, 12, 7, 3, 3, 8, 1};
  const std::vector<int32_t> targets = {9, 12, 7, 3, 3, 8, 1, 4};
  RunBackward(model.Loss(ids, targets, 2, 4), Tensor(), hook);
}

TEST(GradientBuckets, BucketsTakeParametersInReverseOrderUpToTheirSize) {
  const nn::Transformer model(test::TinyTransformerConfig(16), 1);
  const std::vector<Tensor> parameters = model.Parameters();
  const int reported = 0;
  MirroredRanks ranks(2, reported);
  const int64_t limit = 4 * 600;  // 600 floats
  GradientBuckets buckets(ranks, parameters, limit);
  std::vector<size_t> order;
  for (size_t b = 0; b < buckets.num_buckets(); ++b) {
    int64_t bytes = 0;
    for (size_t i : buckets.bucket(b)) {
      order.push_back(i);
      bytes += parameters[i].numel() * 4;
    }
    // Full, unless one parameter alone is larger.
    if (buckets.bucket(b).size() > 1) EXPECT_LE(bytes, limit);
    if (b + 1 < buckets.num_buckets()) {
      const size_t next = buckets.bucket(b + 1).front();
      EXPECT_GT(bytes + parameters[next].numel() * 4, limit);
    }
  }
  ASSERT_EQ(order.size(), parameters.size());
  for (size_t k = 0; k < order.size(); ++k) {
    EXPECT_EQ(order[k], parameters.size() - 1 - k);
  }
  EXPECT_GT(buckets.num_buckets(), 2u);
}

// With two mirrored ranks each gradient comes back doubled, bit for bit;
// the buckets start in order, the first ones before the backward ends.
TEST(GradientBuckets, SumsStartDuringTheBackwardAndLandInTheGradients) {
  nn::Transformer reference(test::TinyTransformerConfig(16), 1);
  Backward(reference, nullptr);
  nn::Transformer model(test::TinyTransformerConfig(16), 1);
  const std::vector<Tensor> parameters = model.Parameters();
  int reported = 0;
  MirroredRanks ranks(2, reported);
  GradientBuckets buckets(ranks, parameters, 4 * 600);
  LeafGradReadyFn hook = buckets.ReadyHook(7);
  Backward(model, [&](const Tensor& leaf) {
    ++reported;
    hook(leaf);
  });
  EXPECT_EQ(reported, static_cast<int>(parameters.size()));
  ASSERT_FALSE(ranks.starts.empty());
  EXPECT_LT(ranks.starts.front().reported, reported);
  buckets.Finish();
  ASSERT_EQ(ranks.starts.size(), buckets.num_buckets());
  for (size_t b = 0; b < ranks.starts.size(); ++b) {
    EXPECT_EQ(ranks.starts[b].what,
              StrCat("summing gradient bucket ", b + 1, " of ",
                     buckets.num_buckets(), " of step 7"));
  }
  const std::vector<Tensor> expected = reference.Parameters();
  for (size_t i = 0; i < parameters.size(); ++i) {
    std::vector<float> doubled = expected[i].grad().ToVector();
    for (float& value : doubled) value *= 2;
    EXPECT_EQ(parameters[i].grad().ToVector(), doubled) << "parameter " << i;
  }

  // The next step reuses the buckets: counts start again from zero.
  ranks.starts.clear();
  model.ZeroGrad();
  Backward(model, buckets.ReadyHook(8));
  EXPECT_EQ(ranks.starts.size(), buckets.num_buckets());
  buckets.Finish();
  EXPECT_EQ(parameters[0].grad().ToVector(),
            [&] {
              std::vector<float> doubled = expected[0].grad().ToVector();
              for (float& value : doubled) value *= 2;
              return doubled;
            }());
}

// A parameter the graph does not reach is never reported: Finish starts
// its bucket and gives it the other ranks' sum (here zeros) as grad().
TEST(GradientBuckets, AParameterTheBackwardNeverReachesStillGetsItsSum) {
  nn::Transformer model(test::TinyTransformerConfig(16), 1);
  std::vector<Tensor> parameters = model.Parameters();
  Tensor unused = Tensor::Ones({3}, true);
  parameters.insert(parameters.begin(), unused);  // the last bucket's
  int reported = 0;
  MirroredRanks ranks(2, reported);
  GradientBuckets buckets(ranks, parameters, 4 * 600);
  Backward(model, buckets.ReadyHook(1));
  EXPECT_EQ(ranks.starts.size(), buckets.num_buckets() - 1);
  buckets.Finish();
  EXPECT_EQ(ranks.starts.size(), buckets.num_buckets());
  EXPECT_EQ(unused.grad().ToVector(), std::vector<float>(3, 0.0f));
}

}  // namespace
}  // namespace rotor::train

// The trainer's side of a data-parallel job (train/distributed/
// data_parallel.h) against a fake second rank: every broadcast from it
// delivers the value root + 100, every broadcast is recorded, and it can
// start from another state than this rank. The whole job runs in
// tests/tools/mpi_train_command_test.cc.
#include "train/distributed/data_parallel.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace rotor::train {
namespace {

class FakeSecondRank final : public Communicator {
 public:
  struct Sent {
    int root;
    size_t count;
    std::string what;
  };

  explicit FakeSecondRank(int rank) : rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return 2; }
  int local_size() const override { return 2; }
  std::unique_ptr<PendingSum> StartSum(float*, size_t,
                                       const std::string& what) override {
    ADD_FAILURE() << "unexpected sum: " << what;
    return nullptr;
  }
  void Sum(double* data, size_t count, const std::string&) override {
    for (size_t i = 0; i < count; ++i) data[i] *= 2;  // both ranks alike
  }
  // The other rank's values are this rank's, plus 1 when it starts apart.
  void Max(double* data, size_t count, const std::string&) override {
    for (size_t i = 0; i < count; ++i) {
      data[i] = std::max(data[i], data[i] + (starts_apart ? 1 : 0));
    }
  }
  void Broadcast(float* data, size_t count, int root,
                 const std::string& what) override {
    sent.push_back({root, count, what});
    if (root == rank_) return;
    for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>(root + 100);
  }
  void Barrier(const std::string&) override {}
  void Abort(const std::string& message) override {
    ADD_FAILURE() << "Abort: " << message;
    std::abort();
  }

  bool starts_apart = false;
  std::vector<Sent> sent;

 private:
  int rank_;
};

// Four parameters of 10 elements, which ZeRO stage 1 shares as {0, 0, 1, 1}.
std::vector<Tensor> FourParameters() {
  std::vector<Tensor> parameters;
  for (int i = 0; i < 4; ++i) parameters.push_back(Tensor::Full({10}, 1.0f));
  return parameters;
}

TEST(DataParallel, EachOwnerSendsItsUpdatedWeights) {
  FakeSecondRank communicator(/*rank=*/1);
  DataParallel ranks(communicator);
  const std::vector<Tensor> parameters = FourParameters();
  ranks.SetUp(/*batch_size=*/4, /*micro_batches=*/2, parameters,
              /*bucket_mb=*/1.0, /*zero_stage=*/1);
  ASSERT_TRUE(ranks.shards_optimizer());
  EXPECT_EQ(ranks.OwnedParameters(),
            (std::vector<bool>{false, false, true, true}));
  ranks.ShareUpdatedWeights(7);
  ASSERT_EQ(communicator.sent.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(communicator.sent[i].root, i < 2 ? 0 : 1);
    EXPECT_EQ(communicator.sent[i].count, 10u);
    EXPECT_EQ(communicator.sent[i].what,
              "sharing the updated weights of step 7");
    // Rank 0's parameters arrive; this rank's own stay as they are.
    EXPECT_EQ(parameters[i].data()[9], i < 2 ? 100.0f : 1.0f);
  }
}

TEST(DataParallel, RankZeroGathersEveryMomentForTheCheckpoint) {
  FakeSecondRank communicator(/*rank=*/0);
  DataParallel ranks(communicator);
  ranks.SetUp(4, 2, FourParameters(), 1.0, 1);
  // Sharded: rank 0 holds the moments of parameters 0 and 1 alone.
  const auto held_by_rank_zero = [] {
    return std::vector<Tensor>{Tensor::Full({10}, 3.0f),
                               Tensor::Full({10}, 3.0f), Tensor(), Tensor()};
  };
  std::vector<Tensor> first = held_by_rank_zero();
  std::vector<Tensor> second = held_by_rank_zero();
  ranks.GatherMomentsOnRankZero(first, second, 12);
  ASSERT_EQ(communicator.sent.size(), 8u);  // two moments per parameter
  EXPECT_EQ(communicator.sent[0].what,
            "gathering the AdamW moments of step 12 for the checkpoint");
  for (const std::vector<Tensor>* moments : {&first, &second}) {
    for (size_t i = 0; i < 4; ++i) {
      const Tensor& moment = (*moments)[i];
      ASSERT_EQ(moment.shape(), (Shape{10}));
      EXPECT_EQ(moment.data()[0], i < 2 ? 3.0f : 101.0f);
    }
  }
}

TEST(DataParallel, RanksThatStartApartAreRefused) {
  FakeSecondRank communicator(/*rank=*/0);
  DataParallel ranks(communicator);
  const StartingPoint start{3, 42, 6, FourParameters()};
  ranks.CheckRanksAgree(start, "run.yaml");  // the same start passes
  communicator.starts_apart = true;
  ROTOR_EXPECT_ERROR(ranks.CheckRanksAgree(start, "run.yaml"),
                     "run.yaml: the ranks start from different states "
                     "(step 3 on rank 0; the step, sampler or weights "
                     "differ)");
}

TEST(DataParallel, ReportsItsSetUpInOneLine) {
  FakeSecondRank communicator(/*rank=*/0);
  DataParallel ranks(communicator);
  ranks.SetUp(4, 3, FourParameters(), 1.0, 0);
  EXPECT_FALSE(ranks.shards_optimizer());
  const std::string line = ranks.Description();
  EXPECT_CONTAINS(line, "data-parallel: 2 ranks (2 on this machine) x ");
  EXPECT_CONTAINS(line,
                  ", 6 sequences each per step; gradients summed in 1 bucket "
                  "of <= 1 MiB");
  EXPECT_EQ(line.find("ZeRO"), std::string::npos);
}

}  // namespace
}  // namespace rotor::train

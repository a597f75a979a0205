#include "core/suggest.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rotor {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndSwaps) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("lr", "lr"), 0u);
  EXPECT_EQ(EditDistance("lrr", "lr"), 1u);          // a deletion
  EXPECT_EQ(EditDistance("evl", "eval"), 1u);        // an insertion
  EXPECT_EQ(EditDistance("hiddne", "hidden"), 1u);   // a swap
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);  // the textbook case
  EXPECT_EQ(EditDistance("abc", "xyz"), 3u);
}

TEST(NearestName, TakesTheClosestWithinAThirdOrAPrefix) {
  const std::vector<std::string> keys = {"lr", "min_lr", "warmup_steps",
                                         "max_steps", "seq_len"};
  EXPECT_EQ(NearestName("lrr", keys), "lr");
  EXPECT_EQ(NearestName("max_stesp", keys), "max_steps");
  EXPECT_EQ(NearestName("warmup", keys), "warmup_steps");  // a prefix
  EXPECT_EQ(NearestName("bogus", keys), "");
  EXPECT_EQ(NearestName("lr", keys), "");  // known: nothing to suggest
  EXPECT_EQ(NearestName("x", {}), "");
  EXPECT_EQ(NearestName("fly", {"train", "eval", "generate"}), "");
  EXPECT_EQ(DidYouMean("evl", {"train", "eval"}), ", did you mean 'eval'?");
  EXPECT_EQ(DidYouMean("fly", {"train", "eval"}), "");
  // A long name is never near a short one.
  EXPECT_EQ(NearestName(std::string(300, 'l'), keys), "");
}

}  // namespace
}  // namespace rotor

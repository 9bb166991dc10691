#include "common/text.hpp"

#include <gtest/gtest.h>

namespace tessera {

TEST(EditDistance, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("banks", "banks"), 0);
  EXPECT_EQ(edit_distance("bnaks", "banks"), 2);
  EXPECT_EQ(edit_distance("bank", "banks"), 1);
  EXPECT_EQ(edit_distance("", "abc"), 3);
}

TEST(DidYouMean, SuggestsTheClosePlausibleTypoOnly) {
  const std::vector<std::string> keys = {"kib", "banks", "bank_width_bytes"};
  EXPECT_EQ(did_you_mean("bnaks", keys), "; did you mean 'banks'?");
  EXPECT_EQ(did_you_mean("bank_width", keys), "; did you mean 'bank_width_bytes'?");  // the unit left off
  EXPECT_EQ(did_you_mean("zzzzzz", keys), "");
}

TEST(JoinAlternatives, UsesCommasAndAFinalOr) {
  EXPECT_EQ(join_alternatives({"ws"}), "ws");
  EXPECT_EQ(join_alternatives({"ws", "os", "is"}), "ws, os or is");
}

}  // namespace tessera

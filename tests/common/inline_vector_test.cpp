#include "common/inline_vector.hpp"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace tessera {
namespace {

struct Pair {
  int a = 0, b = 0;
  bool operator==(const Pair& other) const { return a == other.a && b == other.b; }
};

using Small = InlineVector<Pair, 2>;

std::vector<Pair> contents(const Small& list) {
  return std::vector<Pair>(list.begin(), list.end());
}

Small counted(int count) {
  Small list;
  for (int i = 0; i < count; ++i) list.push_back(Pair{i, -i});
  return list;
}

std::vector<Pair> expected(int count) {
  std::vector<Pair> values;
  for (int i = 0; i < count; ++i) values.push_back(Pair{i, -i});
  return values;
}

TEST(InlineVector, KeepsItsFirstElementsInPlaceAndTheRestOnTheHeapInOrder) {
  for (int count : {0, 1, 2, 3, 4, 5, 17}) {
    const Small list = counted(count);
    EXPECT_EQ(list.size(), static_cast<size_t>(count));
    EXPECT_EQ(list.empty(), count == 0);
    EXPECT_EQ(contents(list), expected(count)) << count;
    EXPECT_GE(list.capacity(), list.size());
    if (count <= 2) {
      EXPECT_EQ(list.capacity(), 2u) << "in place up to N";
    }
  }
}

TEST(InlineVector, CopiesAndMovesInPlaceOrOnTheHeapLeaveEqualContentsAndAnEmptySource) {
  for (int count : {0, 2, 3, 9}) {
    Small source = counted(count);
    const Small copy = source;
    EXPECT_EQ(copy, source);
    Small assigned = counted(5);
    assigned = source;
    EXPECT_EQ(contents(assigned), expected(count));
    Small moved = std::move(source);
    EXPECT_EQ(contents(moved), expected(count));
    EXPECT_TRUE(source.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty, reusable
    source.push_back(Pair{7, 7});
    EXPECT_EQ(contents(source), (std::vector<Pair>{Pair{7, 7}}));
    Small move_assigned = counted(4);
    move_assigned = std::move(moved);
    EXPECT_EQ(contents(move_assigned), expected(count));
    // Pushing one of its own elements while it grows.
    Small self = counted(2);
    self.push_back(self[0]);
    EXPECT_EQ(contents(self), (std::vector<Pair>{{0, 0}, {1, -1}, {0, 0}}));
  }
}

TEST(InlineVector, InsertsAtAnyPlaceErasesAndComparesByContents) {
  Small list = {Pair{1, 1}, Pair{3, 3}};
  list.insert(list.begin(), Pair{0, 0});  // grows past N
  list.insert(list.begin() + 2, Pair{2, 2});
  list.insert(list.end(), Pair{4, 4});
  EXPECT_EQ(contents(list), (std::vector<Pair>{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}}));
  list.erase(list.begin() + 1);
  EXPECT_EQ(contents(list), (std::vector<Pair>{{0, 0}, {2, 2}, {3, 3}, {4, 4}}));
  EXPECT_EQ(list.front(), (Pair{0, 0}));
  EXPECT_EQ(list.back(), (Pair{4, 4}));
  EXPECT_NE(list, counted(4));
  EXPECT_EQ(counted(3), counted(3));
  EXPECT_NE(counted(3), counted(2));
  list.clear();
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list, Small{});
  Small reserved;
  reserved.reserve(10);
  EXPECT_GE(reserved.capacity(), 10u);
  EXPECT_TRUE(reserved.empty());
  EXPECT_EQ(reserved.emplace_back(Pair{5, 6}), (Pair{5, 6}));
}

}  // namespace
}  // namespace tessera

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

TEST(Utf8, FindsTheFirstByteThatIsNotWellFormed) {
  EXPECT_EQ(invalid_utf8_at("plain"), std::string_view::npos);
  EXPECT_EQ(invalid_utf8_at("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82"),
            std::string_view::npos);                   // é € 🙂
  EXPECT_EQ(invalid_utf8_at("caf\xe9"), 3u);           // Latin-1
  EXPECT_EQ(invalid_utf8_at("a\xc0\xaf"), 1u);         // overlong '/'
  EXPECT_EQ(invalid_utf8_at("ab\xed\xa0\x80"), 2u);    // a surrogate
  EXPECT_EQ(invalid_utf8_at("\xf4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(invalid_utf8_at("x\xe2\x82"), 1u);         // cut short
  EXPECT_EQ(invalid_utf8_at("\x80"), 0u);              // a continuation alone
}

TEST(ParseCount, TakesDecimalDigitsAloneUpTo18OfThem) {
  EXPECT_EQ(parse_count("0"), 0u);
  EXPECT_EQ(parse_count("42"), 42u);
  EXPECT_EQ(parse_count("999999999999999999"), 999999999999999999u);
  EXPECT_EQ(parse_count("1000000000000000000"), std::nullopt);   // 19 digits
  EXPECT_EQ(parse_count("18446744073709551616"), std::nullopt);  // past uint64
  EXPECT_EQ(parse_count(""), std::nullopt);
  EXPECT_EQ(parse_count("-1"), std::nullopt);
  EXPECT_EQ(parse_count("1e3"), std::nullopt);
  EXPECT_EQ(parse_count(" 7"), std::nullopt);
}

TEST(PathName, RefusesWhatWouldLeaveItsFolderOrNoFileSystemTakes) {
  EXPECT_EQ(path_name_problem("llama3-8b-decode"), "");
  EXPECT_EQ(path_name_problem("a b.c"), "");
  EXPECT_EQ(path_name_problem(std::string(kMaxPathNameBytes, 'x')), "");
  EXPECT_EQ(path_name_problem(""), "is empty");
  EXPECT_EQ(path_name_problem(".."), "'..' names a folder, not a file");
  EXPECT_EQ(path_name_problem("."), "'.' names a folder, not a file");
  EXPECT_EQ(path_name_problem("../../x/evil"), "holds a '/'");
  EXPECT_EQ(path_name_problem("tab\there"), "holds a control character (byte 0x09)");
  EXPECT_EQ(path_name_problem("del\x7f"), "holds a control character (byte 0x7f)");
  EXPECT_EQ(path_name_problem("caf\xe9"), "is not valid UTF-8");
  EXPECT_EQ(path_name_problem(std::string(kMaxPathNameBytes + 1, 'x')), "is 201 bytes long, more than 200");
}

}  // namespace tessera

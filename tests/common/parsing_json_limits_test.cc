#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/json_codec.h"
#include "common/json_limits.h"

namespace {

using nlohmann::json;
constexpr auto npos = std::string_view::npos;

std::string nested(std::size_t levels, char open = '[', char close = ']') {
  return std::string(levels, open) + std::string(levels, close);
}

struct DepthCase {
  const char* name;
  std::string text;
  std::size_t max_depth;
  std::size_t expected;  // offset of the bracket past the limit, or npos
};

TEST(JsonDepth, TableOfTexts) {
  const std::vector<DepthCase> cases = {
      {"empty text", "", 64, npos},
      {"scalar", "42", 0, npos},
      {"exactly 64 arrays", nested(64), 64, npos},
      {"65 arrays", nested(65), 64, 64},
      {"exactly 64 objects", R"({"a":)" + nested(63) + "}", 64, npos},
      {"65 mixed levels", R"({"a":[{"b":[)" + nested(61) + "]}]}", 64, 12 + 60},
      {"siblings do not add up", "[[],[],[[]],{}]", 3, npos},
      {"the deepest sibling counts", "[[],[],[[]],{}]", 2, 8},
      {"brackets inside a string", R"(["[[[[[[[[[[{{{{{{"])", 1, npos},
      {"escaped quote keeps the string open", R"(["\"[[[[", 1])", 1, npos},
      {"escaped backslash closes the string", R"(["\\", [[1]]])", 2, 8},
      {"three backslashes then a quote", R"(["\\\"[[", []])", 1, 11},
      {"unicode escape", R"(["\u005b\u007b", {"k":[1]}])", 2, 22},
      {"key with brackets", R"({"[[[[": {"]]]]": 1}})", 2, npos},
      {"closers never go below zero", "]]]][[", 1, 5},
      {"unterminated string stops the scan", "[\"[[[[[[", 1, npos},
      {"limit zero refuses any container", "[]", 0, 0},
  };
  for (const auto& row : cases) {
    EXPECT_EQ(common::findExcessNesting(row.text, row.max_depth), row.expected) << row.name;
  }
}

TEST(JsonDepth, MixedNestingPastTheLimitIsFound) {
  // 2 outer levels ({ and [) plus 63 arrays: 65 levels; the 65th opener is the last '['.
  const std::string text = R"({"a":[)" + nested(63) + "]}";
  EXPECT_EQ(common::findExcessNesting(text, 64), std::string(R"({"a":[)").size() + 62);
  EXPECT_EQ(common::findExcessNesting(text, 65), npos);
}

TEST(JsonDepth, ParseJsonAcceptsTheLimitAndRefusesOneMore) {
  EXPECT_EQ(common::parseJson(nested(64)), json::parse(nested(64)));
  try {
    (void)common::parseJson(nested(65));
    FAIL() << "65 levels were accepted";
  } catch (const json::parse_error& e) {
    EXPECT_NE(std::string(e.what()).find("JSON nested deeper than 64 levels"), std::string::npos)
        << e.what();
  }
}

TEST(JsonDepth, ParseJsonRefusesAMillionLevelsWithoutRecursing) {
  const std::string text = std::string(1'000'000, '[');  // unterminated too: depth is seen first
  EXPECT_THROW((void)common::parseJson(text), json::parse_error);
  // A long string elsewhere takes parseJson's bulk path; the check still comes first.
  const std::string bulk = R"({"a":")" + std::string(5000, 'x') + R"(","b":)" + nested(100) + "}";
  EXPECT_THROW((void)common::parseJson(bulk), json::parse_error);
}

// Found by the JSON-RPC fuzzer: nlohmann throws out_of_range for a number past a double's range,
// which the transports did not catch (a stdio line with 1e400 ended the server).
TEST(JsonDepth, NumberOverflowIsAParseError) {
  const std::vector<std::string> texts = {"[1e400]", "-1e309",
                                          R"({"a":")" + std::string(2000, 'x') + R"(","n":1e999})"};
  for (const auto& text : texts) {
    EXPECT_THROW((void)common::parseJson(text), json::parse_error) << text.substr(0, 40);
  }
}

TEST(JsonDepth, RequireJsonDepthNamesTheByte) {
  try {
    common::requireJsonDepth("[[[", 2);
    FAIL() << "3 levels were accepted with a limit of 2";
  } catch (const json::parse_error& e) {
    EXPECT_EQ(e.byte, 3U);
    EXPECT_NE(std::string(e.what()).find("deeper than 2 levels"), std::string::npos) << e.what();
  }
}

}  // namespace

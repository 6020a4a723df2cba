#include "common/json_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using nlohmann::json;

std::string longText(std::size_t n, char fill = 'A') { return std::string(n, fill); }

// parseJson must give exactly what nlohmann gives: the same tree, or a parse error.
TEST(JsonCodec, ParsesLikeNlohmann) {
  const std::string big = longText(5000);
  const std::vector<std::string> inputs = {
      R"({"a":1})",
      R"([1, 2.5, "x", null, true])",
      R"({"jsonrpc":"2.0","id":7,"params":{"arguments":{"content":")" + big + R"("}}})",
      R"({")" + big + R"(": 1, "v": ")" + big + R"("})",  // a long key stays nlohmann's
      R"(["a\"b)" + big + R"(", ")" + big + R"("])",      // escapes: left to nlohmann
      R"({"v": ")" + big + "\xc3\xa9" + R"(", "w":  ")" + big + R"("  })",  // UTF-8, spaces
      R"({"v": ")" + big + R"(" , "after": "\u00e9"})",
      R"({"v": ")" + std::string(1023, 'b') + R"("})",            // just under the threshold
      R"({"v": ")" + big + R"(", "x": "\u0001sandbox-json:0"})",  // looks like a placeholder
      R"({"nested": [[{"deep": ")" + big + R"("}]], "n": -1e3})",
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(common::parseJson(inputs[i]), json::parse(inputs[i])) << "input #" << i;
  }
}

TEST(JsonCodec, RejectsWhatNlohmannRejects) {
  const std::string big = longText(5000);
  const std::vector<std::string> bad = {
      R"({"v": ")" + big + "\x01" + R"("})",      // raw control character
      R"({"v": ")" + big + "\xff\xfe" + R"("})",  // invalid UTF-8
      R"({"v": ")" + big,                         // unterminated string
      R"({"v": ")" + big + R"(" "w": 1})",        // missing comma
      R"([")" + big + R"(",])",                   // trailing comma
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    EXPECT_THROW(json parsed = common::parseJson(bad[i]), json::parse_error) << "input #" << i;
    EXPECT_THROW(json parsed = json::parse(bad[i]), json::parse_error) << "input #" << i;
  }
}

TEST(JsonCodec, DumpsLikeNlohmannWithReplacement) {
  const std::vector<json> values = {
      json::object(),
      json::array(),
      json{{"b", 1}, {"a", {1.5, -2, "x"}}, {"c", nullptr}, {"d", true}},
      json("quote \" backslash \\ controls \b\f\n\r\t \x01\x1f del \x7f"),
      json("unicode é ✓ 𝄞"),
      json(longText(100000, 'z')),
      json{{"key\nwith\tcontrols", "v"}},
      json(std::string("bad \xff utf-8 \xc3")),  // replaced with U+FFFD
      json{{std::string("bad key \xfe"), 1}},
      json{
          {"n", 3.141592653589793}, {"big", 18446744073709551615ULL}, {"neg", -9007199254740993LL}},
  };
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(common::dumpJson(values[i]),
              values[i].dump(-1, ' ', false, json::error_handler_t::replace))
        << "value #" << i;
  }
}

TEST(JsonCodec, RoundTripsALargeUpload) {
  std::string content(std::size_t{13} * 1024 * 1024, 'Q');
  const std::string_view letters = "abcdefghijklmnopqrstuvwxyz";
  for (std::size_t i = 0; i < content.size(); i += 7) content[i] = letters[i % letters.size()];
  const json message = {
      {"jsonrpc", "2.0"},
      {"id", 1},
      {"method", "tools/call"},
      {"params", {{"name", "upload_file"}, {"arguments", {{"content", content}}}}}};
  const std::string text = common::dumpJson(message);
  EXPECT_EQ(text, message.dump());
  EXPECT_EQ(common::parseJson(text), message);
}

}  // namespace

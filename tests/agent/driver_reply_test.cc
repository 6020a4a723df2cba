// resultFromDriverReply: an interpreter's reply line is user-writable, so every field is checked.
#include "agent/driver_reply.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using agent::DriverReplyLimits;
using agent::resultFromDriverReply;
using nlohmann::json;
using protocol::ExecStatus;

const DriverReplyLimits kPlain{100, false, {}};

TEST(DriverReply, AWellFormedReplyIsTakenAsGiven) {
  const auto result = resultFromDriverReply(
      {{"cell", 1}, {"status", "success"}, {"exit_code", 0}, {"result", "42"}, {"exec_ms", 1.5}},
      kPlain);
  EXPECT_EQ(result.status, ExecStatus::kSuccess);
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.result, "42");
  EXPECT_EQ(result.exec_ms, 1.5);
}

TEST(DriverReply, FieldsOfTheWrongTypeOrRangeFallBackOrAreClamped) {
  struct Case {
    json reply;
    ExecStatus status;
    int exit_code;
    bool has_result;
    bool has_exec_ms;
  };
  const Case cases[] = {
      {json::object(), ExecStatus::kError, 1, false, false},
      {{{"status", "pwned"}, {"exit_code", 0}}, ExecStatus::kError, 0, false, false},
      {{{"status", true}, {"exit_code", "0"}}, ExecStatus::kError, 1, false, false},
      {{{"status", "success"}, {"exit_code", 1e6}}, ExecStatus::kSuccess, 1, false, false},
      {{{"status", "error"}, {"exit_code", 1000000}}, ExecStatus::kError, 255, false, false},
      {{{"exit_code", -1000000}}, ExecStatus::kError, -255, false, false},
      {{{"result", json{{"a", 1}}}, {"exec_ms", -3}}, ExecStatus::kError, 1, false, false},
      {{{"result", nullptr}, {"exec_ms", "1"}}, ExecStatus::kError, 1, false, false},
      {{{"result", ""}, {"exec_ms", 0}}, ExecStatus::kError, 1, true, true},
  };
  for (const auto& c : cases) {
    const auto result = resultFromDriverReply(c.reply, kPlain);
    EXPECT_EQ(result.status, c.status) << c.reply;
    EXPECT_EQ(result.exit_code, c.exit_code) << c.reply;
    EXPECT_EQ(result.result.has_value(), c.has_result) << c.reply;
    EXPECT_EQ(result.exec_ms.has_value(), c.has_exec_ms) << c.reply;
  }
}

TEST(DriverReply, TheResultIsCutAtItsLimit) {
  const auto result = resultFromDriverReply({{"result", std::string(150, 'x')}}, kPlain);
  EXPECT_EQ(result.result, std::string(100, 'x') + "...[result cut]");
}

TEST(DriverReply, RichOutputIsReadOnlyForLanguagesThatHaveIt) {
  const json reply = {{"status", "success"},
                      {"images", json::array({{{"data_b64", "bm90IGEgcG5n"}}})},
                      {"table", {{"kind", "DataFrame"}, {"shape", {2, 3}}}}};
  const auto plain = resultFromDriverReply(reply, kPlain);
  EXPECT_TRUE(plain.rich.images.empty());
  EXPECT_FALSE(plain.rich.table);
  EXPECT_TRUE(plain.rich.dropped.empty());

  const auto rich = resultFromDriverReply(reply, {100, true, {4, 1 << 20, 4096}});
  EXPECT_TRUE(rich.rich.images.empty());
  ASSERT_EQ(rich.rich.dropped.size(), 1U);
  EXPECT_NE(rich.rich.dropped[0].find("not a PNG"), std::string::npos) << rich.rich.dropped[0];
  EXPECT_TRUE(rich.rich.table);
}

}  // namespace

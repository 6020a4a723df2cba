// The tokens file: table tests of what it accepts and how it says what is wrong.
#include "config/principals.h"

#include <gtest/gtest.h>

#include <string>

#include "config/config.h"

namespace {

using nlohmann::json;

const std::string kTokenA(32, 'a');
const std::string kTokenB(40, 'b');

TEST(Unit, PrincipalsFileNamesPrincipalsWithTheirQuotas) {
  const auto principals = config::principalsFromJson(
      json::parse(R"({"principals": [{"name": "alice", "token": ")" + kTokenA +
                  R"(", "max_sessions": 4, "max_concurrent_executions": 2},
          {"name": "ci.bot-1", "token": ")" +
                  kTokenB + R"("}]})"));
  ASSERT_EQ(principals.size(), 2U);
  EXPECT_EQ(principals[0].name, "alice");
  EXPECT_EQ(principals[0].token, kTokenA);
  EXPECT_EQ(principals[0].max_sessions, 4);
  EXPECT_EQ(principals[0].max_concurrent_executions, 2);
  EXPECT_EQ(principals[1].name, "ci.bot-1");
  EXPECT_FALSE(principals[1].max_sessions);
  EXPECT_FALSE(principals[1].max_concurrent_executions);
}

struct BadFile {
  const char* label;
  json document;
  const char* message;  // a part of the error
};

class PrincipalsFileTable : public ::testing::TestWithParam<BadFile> {};

TEST_P(PrincipalsFileTable, IsRefusedWithAnErrorNamingTheField) {
  const auto& bad = GetParam();
  try {
    (void)config::principalsFromJson(bad.document);
    FAIL() << "accepted";
  } catch (const config::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(bad.message), std::string::npos) << what;
    EXPECT_EQ(what.find(kTokenA), std::string::npos) << "the error shows a token: " << what;
  }
}

json entry(const std::string& name, const std::string& token) {
  return {{"name", name}, {"token", token}};
}

INSTANTIATE_TEST_SUITE_P(
    Unit, PrincipalsFileTable,
    ::testing::Values(
        BadFile{"NotAnObject", json::array(), "\"principals\" array"},
        BadFile{"Empty", {{"principals", json::array()}}, "name at least one principal"},
        BadFile{"UnknownTopKey",
                {{"principals", {entry("alice", kTokenA)}}, {"tokens", 1}},
                "tokens is not a known setting"},
        BadFile{"UnknownEntryKey",
                {{"principals", {{{"name", "a"}, {"token", kTokenA}, {"quota", 1}}}}},
                "principals[0].quota is not a known setting"},
        BadFile{"NoName", {{"principals", {{{"token", kTokenA}}}}}, "principals[0].name"},
        BadFile{"BadName", {{"principals", {entry("al ice", kTokenA)}}}, "1 to 64 letters"},
        BadFile{"ReservedLocal", {{"principals", {entry("local", kTokenA)}}}, "is reserved"},
        BadFile{"ReservedDefault", {{"principals", {entry("default", kTokenA)}}}, "is reserved"},
        BadFile{
            "ShortToken", {{"principals", {entry("alice", std::string(31, 'a'))}}}, "at least 32"},
        BadFile{
            "TokenWithSpace",
            {{"principals", {entry("alice", std::string(16, 'a') + " " + std::string(16, 'a'))}}},
            "without spaces"},
        BadFile{"SameNameTwice",
                {{"principals", {entry("alice", kTokenA), entry("alice", kTokenB)}}},
                "principals[1].name 'alice' is named twice"},
        BadFile{"SameTokenTwice",
                {{"principals", {entry("alice", kTokenA), entry("bob", kTokenA)}}},
                "principals[1].token is the token of an earlier principal"},
        BadFile{"ZeroQuota",
                {{"principals", {{{"name", "a"}, {"token", kTokenA}, {"max_sessions", 0}}}}},
                "max_sessions must be an integer >= 1"}),
    [](const ::testing::TestParamInfo<BadFile>& param) { return std::string(param.param.label); });

}  // namespace

// The sidecar's MCP body check against bodies built to confuse or crash it: nesting past
// common::kMaxJsonDepth (refused before parsing: no tree, no recursion) and duplicate keys
// (nlohmann keeps the last, other parsers the first: the check must not pick one).
#include <gtest/gtest.h>

#include <string>

#include "sidecar/mcp_body_check.h"

namespace {

using nlohmann::json;

policy::Rule restrictedRule() {
  const auto policy =
      policy::loadPolicy(json::array({json{{"url", "http://127.0.0.1:9000/mcp"},
                                           {"id", "restricted"},
                                           {"methods", {"tools/list", "tools/call"}},
                                           {"tools", {"echo"}}}}));
  return policy->rules.front();
}

std::string nested(std::size_t levels) {
  return std::string(levels, '[') + std::string(levels, ']');
}

TEST(McpBodyLimits, DeepNestingIsA400WithoutParsing) {
  const auto rule = restrictedRule();
  for (const std::string& body :
       {R"({"jsonrpc":"2.0","id":)" + nested(500'000) + R"(,"method":"resources/list"})",
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":)" +
            nested(100) + "}}"}) {
    const auto check = sidecar::checkMcpBody(rule, body, "");
    ASSERT_FALSE(check.decision.allowed());
    EXPECT_EQ(check.http_status, 400U);
    EXPECT_NE(check.decision.reason.find("deeper than 64 levels"), std::string::npos)
        << check.decision.reason;
    EXPECT_EQ((*check.error_response)["error"]["code"], sidecar::kJsonRpcParseError);
  }
}

TEST(McpBodyLimits, SixtyFourLevelsAreChecked) {
  // Object, params, arguments: 3 levels, then 61 arrays.
  const std::string body =
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":)" +
      nested(61) + "}}}";
  EXPECT_TRUE(sidecar::checkMcpBody(restrictedRule(), body, "").decision.allowed());
}

TEST(McpBodyLimits, DuplicateKeysAreA400NamingTheKey) {
  const auto rule = restrictedRule();
  for (
      const std::string body : {
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell","name":"echo"}})",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"echo"}})",
          R"([{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"id":2,"id":3,"jsonrpc":"2.0","method":"tools/list"}])",
          // Go's encoding/json matches keys ignoring case and keeps the last: "exec" would run.
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","Name":"shell"}})",
      }) {
    const auto check = sidecar::checkMcpBody(rule, body, "");
    ASSERT_FALSE(check.decision.allowed()) << body;
    EXPECT_EQ(check.http_status, 400U);
    EXPECT_NE(check.decision.reason.find("repeats the key"), std::string::npos)
        << check.decision.reason;
    EXPECT_EQ((*check.error_response)["error"]["code"], sidecar::kJsonRpcInvalidRequest);
  }
}

TEST(McpBodyLimits, SameKeyInSiblingObjectsIsFine) {
  const std::string body =
      R"([{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"name":"x","nested":{"name":"y"}}}}])";
  const auto check = sidecar::checkMcpBody(restrictedRule(), body, "");
  EXPECT_TRUE(check.decision.allowed()) << check.decision.reason;
}

TEST(McpBodyLimits, PolicyRefusalsStay403) {
  const auto check = sidecar::checkMcpBody(
      restrictedRule(), R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rm"}})",
      "");
  ASSERT_FALSE(check.decision.allowed());
  EXPECT_EQ(check.http_status, 403U);
}

}  // namespace

TEST(McpBodyLimits, AMethodSpelledInAnotherCaseIsNotTakenForAResponse) {
  // No "method" key, so the check would see a response; a case-blind upstream sees tools/call.
  const std::string body =
      R"({"jsonrpc":"2.0","id":1,"result":{},"Method":"tools/call","Params":{"name":"shell"}})";
  const auto check = sidecar::checkMcpBody(restrictedRule(), body, "");
  EXPECT_FALSE(check.decision.allowed());
  EXPECT_NE(check.decision.reason.find("only in case"), std::string::npos) << check.decision.reason;
}

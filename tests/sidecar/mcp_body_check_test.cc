#include "sidecar/mcp_body_check.h"

#include <gtest/gtest.h>

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

TEST(McpBodyCheck, AllowedCallsAndLifecyclePass) {
  const auto rule = restrictedRule();
  EXPECT_TRUE(sidecar::ruleRestrictsMcp(rule));
  EXPECT_TRUE(
      sidecar::checkMcpBody(
          rule, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}})", "")
          .decision.allowed());
  EXPECT_TRUE(
      sidecar::checkMcpBody(rule, R"({"jsonrpc":"2.0","id":1,"method":"initialize"})", "identity")
          .decision.allowed());
  EXPECT_TRUE(sidecar::checkMcpBody(rule, "", "").decision.allowed());
}

TEST(McpBodyCheck, ToolOutsideTheListIsInvalidParams) {
  const auto check = sidecar::checkMcpBody(
      restrictedRule(), R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rm"}})",
      "");
  ASSERT_FALSE(check.decision.allowed());
  ASSERT_TRUE(check.error_response);
  EXPECT_EQ((*check.error_response)["id"], 7);
  EXPECT_EQ((*check.error_response)["error"]["code"], sidecar::kJsonRpcInvalidParams);
  EXPECT_NE((*check.error_response)["error"]["message"].get<std::string>().find(
                "refused by the sandbox network policy"),
            std::string::npos);
}

TEST(McpBodyCheck, MethodOutsideTheListIsMethodNotFound) {
  const auto check = sidecar::checkMcpBody(
      restrictedRule(), R"({"jsonrpc":"2.0","id":"a","method":"resources/read"})", "");
  ASSERT_FALSE(check.decision.allowed());
  EXPECT_EQ((*check.error_response)["id"], "a");
  EXPECT_EQ((*check.error_response)["error"]["code"], sidecar::kJsonRpcMethodNotFound);
}

TEST(McpBodyCheck, BatchWithOneRefusedCallAnswersEveryRequest) {
  const auto check = sidecar::checkMcpBody(restrictedRule(),
                                           R"([{"jsonrpc":"2.0","id":1,"method":"tools/list"},
          {"jsonrpc":"2.0","method":"notifications/initialized"},
          {"jsonrpc":"2.0","id":2,"method":"prompts/list"}])",
                                           "");
  ASSERT_FALSE(check.decision.allowed());
  const auto& errors = *check.error_response;
  ASSERT_TRUE(errors.is_array());
  ASSERT_EQ(errors.size(), 2U);
  EXPECT_EQ(errors[0]["id"], 1);
  EXPECT_NE(errors[0]["error"]["message"].get<std::string>().find("not forwarded"),
            std::string::npos);
  EXPECT_EQ(errors[1]["id"], 2);
  EXPECT_EQ(errors[1]["error"]["code"], sidecar::kJsonRpcMethodNotFound);
}

TEST(McpBodyCheck, UnreadableBodiesAreRefused) {
  const auto rule = restrictedRule();
  const auto garbage = sidecar::checkMcpBody(rule, "{not json", "");
  ASSERT_FALSE(garbage.decision.allowed());
  EXPECT_EQ((*garbage.error_response)["error"]["code"], sidecar::kJsonRpcParseError);
  const auto gzip = sidecar::checkMcpBody(rule, "\x1f\x8b", "gzip");
  ASSERT_FALSE(gzip.decision.allowed());
  EXPECT_NE(gzip.decision.reason.find("Content-Encoding"), std::string::npos);
}

}  // namespace

#include "sidecar/target_resolver.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace {

std::shared_ptr<const policy::Policy> testPolicy() {
  return policy::loadPolicy(nlohmann::json::array(
      {"https://mcp.example.com/mcp", "http://127.0.0.1:8080/api",
       nlohmann::json{{"url", "http://tools.example.org/"}, {"id", "tools"}}}));
}

TEST(TargetResolver, AbsoluteFormIsParsedAndChecked) {
  const auto policy = testPolicy();
  const auto target = sidecar::resolveTarget(*policy, "https://MCP.example.com/mcp/x?a=1", "");
  ASSERT_TRUE(target.decision.allowed()) << target.decision.reason;
  ASSERT_NE(target.rule, nullptr);
  EXPECT_EQ(target.url->host, "mcp.example.com");
  EXPECT_EQ(target.url->port, 443);
  EXPECT_EQ(target.display_url, "https://mcp.example.com/mcp/x?a=1");
}

TEST(TargetResolver, OriginFormTakesTheSchemeFromTheMatchingRule) {
  const auto policy = testPolicy();
  const auto https = sidecar::resolveTarget(*policy, "/mcp", "mcp.example.com");
  ASSERT_TRUE(https.decision.allowed()) << https.decision.reason;
  EXPECT_EQ(https.url->scheme, "https");
  EXPECT_EQ(https.url->port, 443);
  const auto http = sidecar::resolveTarget(*policy, "/api/v1", "127.0.0.1:8080");
  ASSERT_TRUE(http.decision.allowed()) << http.decision.reason;
  EXPECT_EQ(http.url->scheme, "http");
  const auto named = sidecar::resolveTarget(*policy, "/anything", "tools.example.org");
  ASSERT_TRUE(named.decision.allowed());
  EXPECT_EQ(named.decision.rule_id, "tools");
}

TEST(TargetResolver, UncoveredTargetsAreDeniedWithTheReason) {
  const auto policy = testPolicy();
  const auto other_path = sidecar::resolveTarget(*policy, "/admin", "127.0.0.1:8080");
  EXPECT_FALSE(other_path.decision.allowed());
  EXPECT_EQ(other_path.rule, nullptr);
  EXPECT_NE(other_path.decision.reason.find("outside the allowed prefixes"), std::string::npos);

  const auto other_host = sidecar::resolveTarget(*policy, "http://evil.example.net/mcp", "");
  EXPECT_FALSE(other_host.decision.allowed());
  EXPECT_NE(other_host.decision.reason.find("no allowlist entry"), std::string::npos);

  // Plain http to an https-only entry is a different origin.
  EXPECT_FALSE(
      sidecar::resolveTarget(*policy, "http://mcp.example.com/mcp", "").decision.allowed());
  // Prefixes match on segment boundaries.
  EXPECT_FALSE(sidecar::resolveTarget(*policy, "/mcpx", "mcp.example.com").decision.allowed());
}

TEST(TargetResolver, UnusableTargetsAreDenied) {
  const auto policy = testPolicy();
  const auto no_host = sidecar::resolveTarget(*policy, "/mcp", "");
  EXPECT_FALSE(no_host.decision.allowed());
  EXPECT_NE(no_host.decision.reason.find("Host header"), std::string::npos);
  EXPECT_FALSE(sidecar::resolveTarget(*policy, "mcp.example.com:443", "").decision.allowed());
  EXPECT_FALSE(sidecar::resolveTarget(*policy, "*", "mcp.example.com").decision.allowed());
  const auto garbage = sidecar::resolveTarget(*policy, "http://[zz/mcp", "");
  EXPECT_FALSE(garbage.decision.allowed());
  EXPECT_NE(garbage.decision.reason.find("cannot parse"), std::string::npos);
}

}  // namespace
